"""A kept linear probe written back into the model: a direction and a bias in the model's own
activation space, at the hook it was read at.

probemeter trains probes on *standardised* features: the pool's mean μ and standard deviation σ
(per feature, :func:`~probemeter.data.pool_moments`) turn an activation x into
z = (x − μ)/σ. A linear probe (one affine layer: ``Linear``, or a ``Direction`` such as
``Direction("diff-means")``, whose closed-form fit is one affine layer too) with weights
W (d, K) and bias b (K,) gives the logits ``z @ W + b``. Undoing the standardisation,

    logit_k(x) = Σ_j W_jk (x_j − μ_j)/σ_j + b_k = v_k · x + c_k,
    v_k = W_:k / σ,   c_k = b_k − v_k · μ,

so the probe *is* the affine map x ↦ v·x + c of the raw activation. With two classes the
probe's decision is the logit difference, ``logit_1 − logit_0 = v · x + c`` with
v = (W_:1 − W_:0)/σ and c = (b_1 − b_0) − v·μ, the log-odds of class 1 (``which =
"logit-difference"``); with K classes each class has its own row (``which = "class-logits"``,
direction (K, d)).

Two consequences a test can check exactly, since the logit is affine in x:

- **Steering.** Adding α·v to the activation at the hook moves the logit by
  v·(x + αv) + c − (v·x + c) = α‖v‖², whatever x (Turner et al. 2023's activation addition
  with the probe's own direction).
- **Ablation.** Projecting v out, x' = x − (v·x / ‖v‖²) v, leaves v·x' = 0, so the logit
  becomes the bias c alone for every text: the probe can no longer tell the classes apart
  (accuracy at chance on balanced classes; Ravfogel et al. 2020's nullspace projection, one
  direction of it).

These hold for the activation *at the hook* the features were read at (``hook_name``, a
TransformerLens name such as ``blocks.1.hook_resid_post``); a pooled representation (mean over
tokens) is linear in the token activations, so adding α·v at every token moves the mean's logit
by α‖v‖² too, while ``"last"`` pooling reads the last token's alone.

References:
    Nanda, N. and Bloom, J. (2022). TransformerLens. https://github.com/TransformerLensOrg/TransformerLens
    Ravfogel, S. et al. (2020). Null It Out: Guarding Protected Attributes by Iterative
    Nullspace Projection. ACL. arXiv:2004.07667
    Turner, A. M. et al. (2023). Steering Language Models With Activation Engineering.
    arXiv:2308.10248
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from probemeter._io import write_bytes_atomic
from probemeter.probes.saved import ProbeSet, SavedProbe, _safetensors

__all__ = ["CLASS_LOGITS", "DIRECTION_FORMAT", "LOGIT_DIFFERENCE", "ProbeDirection"]

#: the ``format`` entry of a direction file's header
DIRECTION_FORMAT = "probemeter.direction/1"
#: two classes: one direction, the logit of class 1 minus that of class 0
LOGIT_DIFFERENCE = "logit-difference"
#: K classes: one direction per class, each class's logit
CLASS_LOGITS = "class-logits"


@dataclass(frozen=True, eq=False)
class ProbeDirection:
    """A linear probe as an affine map of the model's own activations at one hook.

    Attributes:
        direction: float32, (d_model,) for ``which = "logit-difference"`` (two classes) or
            (K, d_model) for ``"class-logits"``.
        bias: float32, () or (K,): the logit (difference) is ``direction · x + bias``.
        hook_name: the hook the activation x is read at (a TransformerLens hook name).
        classes: the classes' labels, in logit order (class 1 is the positive side of a logit
            difference).
        which: ``"logit-difference"`` or ``"class-logits"``.
        source: where it came from (representation, run folder, the probe's info), JSON
            scalars.

    Raises:
        ValueError: shapes that do not fit ``which`` and ``classes``, non-finite values.
    """

    direction: np.ndarray = field(repr=False)
    bias: np.ndarray = field(repr=False)
    hook_name: str
    classes: tuple[Any, ...]
    which: str
    source: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # np.array, not ascontiguousarray, which makes a 0-d bias 1-d
        direction = np.array(self.direction, dtype=np.float32, order="C")
        bias = np.array(self.bias, dtype=np.float32)
        if self.which == LOGIT_DIFFERENCE:
            good = direction.ndim == 1 and bias.ndim == 0 and len(self.classes) == 2
        elif self.which == CLASS_LOGITS:
            k = len(self.classes)
            good = direction.ndim == 2 and direction.shape[0] == k and bias.shape == (k,)
        else:
            raise ValueError(f"which must be {LOGIT_DIFFERENCE!r} or {CLASS_LOGITS!r}")
        if not good:
            raise ValueError(
                f"a {self.which} direction for {len(self.classes)} classes cannot have shape "
                f"{direction.shape} with a bias of shape {bias.shape}"
            )
        if not (np.isfinite(direction).all() and np.isfinite(bias).all()):
            raise ValueError("direction and bias must be finite")
        if not isinstance(self.hook_name, str) or not self.hook_name:
            raise ValueError(f"hook_name must be a non-empty string; got {self.hook_name!r}")
        object.__setattr__(self, "direction", direction)
        object.__setattr__(self, "bias", bias)
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "source", dict(self.source))

    @property
    def d_model(self) -> int:
        """The width of the activation at :attr:`hook_name`."""
        return int(self.direction.shape[-1])

    @classmethod
    def from_probe(
        cls,
        probe: SavedProbe,
        mean: Sequence[float] | np.ndarray,
        std: Sequence[float] | np.ndarray,
        *,
        hook_name: str,
        classes: Sequence[Any] | None = None,
        source: Mapping[str, Any] | None = None,
    ) -> ProbeDirection:
        """The kept linear ``probe``, trained on features standardised by the pool's ``mean``
        and ``std`` (:func:`~probemeter.data.pool_moments` of the raw pool), as the module
        docstring's v and c: the logit difference with two classes, one direction per class
        with more. The arithmetic is float64, the result rounded to float32.

        Raises:
            ValueError: a probe with hidden layers, a scalar mix or span pooling (not one
                affine map of one activation), ``mean``/``std`` not its d features or ``std``
                not positive, ``classes`` not one per logit.
        """
        if len(probe.layers) != 1 or probe.mix is not None or probe.span is not None:
            raise ValueError(
                f"probe {probe.architecture.name} is not linear (hidden layers, a scalar mix or "
                "span pooling): only a linear probe is a direction in the model's space"
            )
        weight, bias = (np.asarray(part, dtype=np.float64) for part in probe.layers[0])
        mu, sigma = (np.asarray(part, dtype=np.float64) for part in (mean, std))
        d = weight.shape[0]
        if mu.shape != (d,) or sigma.shape != (d,):
            raise ValueError(
                f"mean and std must be the probe's {d} features; got {mu.shape}, {sigma.shape}"
            )
        if not (sigma > 0).all():
            raise ValueError("std must be positive (pool_moments takes a constant feature's as 1)")
        k = weight.shape[1]
        names = tuple(range(k)) if classes is None else tuple(classes)
        if len(names) != k:
            raise ValueError(f"classes must name the probe's {k} logits; got {len(names)}")
        per_class = weight.T / sigma  # v_k = W_:k / σ
        offsets = bias - per_class @ mu  # c_k = b_k − v_k · μ
        info = {"probe": probe.architecture.name, **dict(probe.info), **dict(source or {})}
        if k == 2:
            return cls(
                per_class[1] - per_class[0],
                offsets[1] - offsets[0],
                hook_name,
                names,
                LOGIT_DIFFERENCE,
                info,
            )
        return cls(per_class, offsets, hook_name, names, CLASS_LOGITS, info)

    @classmethod
    def from_set(
        cls,
        probes: ProbeSet,
        *,
        hook_name: str,
        classes: Sequence[Any] | None = None,
        source: Mapping[str, Any] | None = None,
        **info: Any,
    ) -> ProbeDirection:
        """A kept probe of ``probes`` (e.g. ``load_run_probes(run)[name]``) with the pool's μ
        and σ the set recorded (:attr:`ProbeSet.moments`): the probe ``probes.select(**info)``
        leaves (e.g. ``n=500, seed=0``), the last of them where several do (a curve's largest
        size and seed), as :meth:`from_probe` writes it.

        Raises:
            ValueError: a set without moments (kept before they were recorded, or of sparse or
                unstandardised features: give them to :meth:`from_probe`), no probe matching
                ``info``, and what :meth:`from_probe` refuses.
        """
        if probes.moments is None:
            raise ValueError(
                f"probes of {probes.name!r} record no pool mean and std: pass them to "
                "ProbeDirection.from_probe (pool_moments of the raw pool)"
            )
        chosen = probes.select(**info) if info else probes
        return cls.from_probe(
            chosen[len(chosen) - 1],
            *probes.moments,
            hook_name=hook_name,
            classes=classes,
            source={"representation": probes.name, **dict(source or {})},
        )

    def logits(self, activations: Any) -> np.ndarray:
        """``activations @ direction.T + bias`` in float64: (n,) logit differences, or (n, K)
        class logits, of activations (n, d_model) (a numpy array or a torch tensor)."""
        x = np.asarray(_numpy(activations), dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.d_model:
            raise ValueError(f"activations must have shape (n, {self.d_model}); got {x.shape}")
        return x @ self.direction.astype(np.float64).T + self.bias.astype(np.float64)

    def tensor(self, like: Any = None) -> Any:
        """The direction as a torch tensor, with ``like``'s dtype and device when given (to add
        it in a hook: ``activation + alpha * direction.tensor(activation)``)."""
        import torch

        value = torch.from_numpy(self.direction.copy())
        return value if like is None else value.to(dtype=like.dtype, device=like.device)

    def save(self, path: str | Path) -> None:
        """Write ``direction`` and ``bias`` to one ``.safetensors`` file with the rest as JSON
        in its header (``format``: ``probemeter.direction/1``), atomically.

        Raises:
            ValueError: safetensors is not installed; classes or source not JSON.
        """
        safetensors = _safetensors(path)
        header = {
            "format": DIRECTION_FORMAT,
            "hook_name": self.hook_name,
            "which": self.which,
            "classes": _json(list(self.classes), "classes"),
            "source": _json(self.source, "source"),
        }
        tensors = {"direction": self.direction, "bias": self.bias.reshape(-1)}
        write_bytes_atomic(path, safetensors.numpy.save(tensors, metadata=header))

    @classmethod
    def load(cls, path: str | Path) -> ProbeDirection:
        """The direction :meth:`save` wrote to ``path``.

        Raises:
            ValueError: naming ``path``: missing, not a direction file, or damaged.
        """
        safetensors = _safetensors(path)
        if not Path(path).is_file():
            raise ValueError(f"direction file {str(path)!r} does not exist")
        try:
            with safetensors.safe_open(str(path), framework="numpy") as stored:
                header = stored.metadata() or {}
                tensors = {name: stored.get_tensor(name) for name in stored.keys()}
        except safetensors.SafetensorError as error:
            raise ValueError(f"{str(path)!r} is no readable safetensors file: {error}") from None
        if header.get("format") != DIRECTION_FORMAT:
            raise ValueError(f"{str(path)!r} is no probemeter direction file ({DIRECTION_FORMAT})")
        try:
            bias = tensors["bias"]
            if header["which"] == LOGIT_DIFFERENCE:
                bias = bias.reshape(())
            return cls(
                tensors["direction"],
                bias,
                header["hook_name"],
                tuple(json.loads(header["classes"])),
                header["which"],
                json.loads(header["source"]),
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"direction file {str(path)!r} is damaged: {error}") from None


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value)
    except TypeError as error:
        raise ValueError(f"{what} must be JSON values to be saved: {error}") from None


def _numpy(value: Any) -> Any:
    """A torch tensor as a numpy array (detached, on the CPU); anything else as it is."""
    detach = getattr(value, "detach", None)
    return value if detach is None else detach().cpu().numpy()
