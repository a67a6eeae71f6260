"""Variational description length of labels given representations (Voita & Titov 2020, §2.2.1).

Eq. 3: with a prior α over probe parameters and a posterior β chosen to minimise it,

    L_var(y_{1:n} | x_{1:n}) = KL(β ‖ α) − E_{θ~β} Σ_i log2 p_θ(y_i | x_i)   (bits).

The first term is the **model** code, the second the **data** code. The probe is the
group-sparse variational MLP of :mod:`probemeter.mdl.bayesian` (Louizos et al. 2017; prior,
KL approximation and pruning threshold documented there). Training minimises eq. 3 divided by n
(the negative ELBO per example) with Adam at a fixed learning rate for a fixed number of epochs,
without annealing (§3.1: "we do not anneal learning rate and train probes for 200 epochs; long
training is recommended to enable pruning"). The expectation of the data term is estimated with
one draw per example of the local reparameterisation over the whole pool.

Several seeds (initialisations and minibatch orders) are trained at once, stacked on a probe
axis; every probe trains on the whole pool.

On edge-probing span rows (``data.span_tokens``) the probe pools each span with a learned
self-attention first (Voita & Titov, Fig. 4). Those poolings are variational too, not point
estimates: Gaussian posteriors under an N(0, 1) prior whose exact KL is added to the model code
(:mod:`probemeter.mdl.bayesian_spans`), so the codelength pays for every parameter of the
probe; they are not pruned (``architecture`` counts the MLP's groups, the first layer's being
the pooled spans' S · q units).

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description
    length. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Louizos, C., Ullrich, K. & Welling, M. (2017). Bayesian compression for deep learning.
    *NeurIPS 2017*. arXiv:1705.08665
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from probemeter._device import resolve_device, single_threaded
from probemeter._io import classes_from_json, classes_to_json
from probemeter._validation import check_scalar
from probemeter.data import ProbeData, check_probe_data, check_single_label, seed_ids
from probemeter.mdl.bayesian import BayesianMLP, StackedBayesianMLP
from probemeter.mdl.defaults import MDL_PROBE, VARIATIONAL_TRAINING
from probemeter.mdl.online import BITS_PER_KBIT, BITS_PER_NAT, SeedResults, uniform_codelength
from probemeter.training.config import VariationalTraining, config_or_default
from probemeter.training.probe_runs import Stopwatch, run_metadata

__all__ = ["VariationalCode", "variational_codelength"]


@dataclass(frozen=True)
class VariationalCode(SeedResults):
    """Variational codelength of one representation's labels, per seed.

    Attributes:
        name: the representation.
        n_classes: K.
        n: examples transmitted (the pool).
        seeds: one row per seed: ``codelength_bits`` (eq. 3), ``model_bits`` (KL(β‖α)),
            ``data_bits`` (expected cross-entropy on the pool), ``uniform_bits``,
            ``compression``, ``accuracy`` (test accuracy of the pruned probe at the posterior
            means) and ``architecture`` (kept groups per layer, e.g. ``"406-33-49"``).
        metadata: probe, training settings, random state, versions, timings.
        classes: the original label of each class index (``ProbeData.classes``); None when
            the data had none (and in results written before labels were recorded).
    """

    name: str
    n_classes: int
    n: int
    seeds: pd.DataFrame = field(repr=False)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    classes: tuple[Any, ...] | None = field(default=None, repr=False)

    @property
    def codelength_bits(self) -> float:
        return self.mean("codelength_bits")

    @property
    def compression(self) -> float:
        return self.mean("compression")

    @property
    def architecture(self) -> np.ndarray:
        """(seeds, layers) kept input groups of each layer."""
        return np.array([[int(v) for v in a.split("-")] for a in self.seeds["architecture"]])

    def to_frame(self) -> pd.DataFrame:
        return self.seeds.assign(representation=self.name)

    def __str__(self) -> str:
        """Codelengths in kbits of 1024 bits (:data:`~probemeter.mdl.online.BITS_PER_KBIT`),
        the unit of the paper's tables."""
        kbits = BITS_PER_KBIT
        return (
            f"variational code of {self.name}: {self.codelength_bits / kbits:.2f} "
            f"± {self.std('codelength_bits') / kbits:.2f} kbits over {len(self.seeds)} seed(s), "
            f"compression {self.compression:.2f}; data {self.mean('data_bits') / kbits:.2f} + "
            f"model {self.mean('model_bits') / kbits:.2f} kbits (1 kbit = {kbits} bits); "
            f"pruned architecture {', '.join(self.seeds['architecture'])}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "variational_code",
            "unit": "bits",
            "name": self.name,
            "n_classes": self.n_classes,
            "classes": classes_to_json(self.classes),
            "n": self.n,
            "seeds": self.seeds.to_dict(orient="list"),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> VariationalCode:
        if payload.get("kind") != "variational_code" or payload.get("unit") != "bits":
            raise ValueError("payload is not a variational code in bits")
        return cls(
            name=payload["name"],
            n_classes=int(payload["n_classes"]),
            n=int(payload["n"]),
            seeds=pd.DataFrame(payload["seeds"]),
            metadata=payload.get("metadata", {}),
            classes=classes_from_json(payload.get("classes")),
        )


def variational_codelength(
    data: ProbeData,
    probe: BayesianMLP | None = None,
    seeds: int | Sequence[int] = 1,
    *,
    config: VariationalTraining | None = None,
    random_state: int = 0,
    device: str = "auto",
    progress: bool = False,
) -> VariationalCode:
    """Train group-sparse variational probes on the pool and report eq. 3 in bits.

    Args:
        data: the pool is transmitted; the test set gives the pruned probe's accuracy.
        probe: default ``BayesianMLP.for_data(data, MDL_PROBE)``: MLP-2 with h = 64, the
            ``mdl`` method's (:data:`~probemeter.mdl.defaults.MDL_PROBE`), with span pooling on
            span rows; the paper's MLP-2 with h = 1000 (§3.1) is
            ``BayesianMLP.for_data(data, PAPER_PROBE)``
            (:data:`~probemeter.mdl.defaults.PAPER_PROBE`).
        seeds: a count or explicit seed ids (initialisation, minibatch order and noise).
        config: epochs over the pool, minibatch size and Adam's learning rate
            (:class:`~probemeter.training.config.VariationalTraining`); default
            :data:`~probemeter.mdl.defaults.VARIATIONAL_TRAINING`, the ``mdl`` method's: 30 epochs
            at lr 1e-2 on minibatches of 256 (§3.1 trains 200 epochs at lr 1e-3).
        random_state: global seed; probe s draws from ``default_rng([random_state, s])``.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``.
        progress: show a progress bar over epochs.

    Raises:
        ValueError: a ``config`` that is not a ``VariationalTraining``, bad seeds or
            random_state; a probe whose spans are not those of the data's rows (a probe
            without spans on span rows, or one with spans on other rows).

    Examples:
        A linear variational probe on three separable classes, three epochs:

        >>> import numpy as np
        >>> from probemeter import Linear, ProbeData
        >>> rng = np.random.default_rng(0)
        >>> labels = np.arange(300) % 3
        >>> data = ProbeData.from_arrays(rng.normal(size=(300, 4)) + 2 * labels[:, None], labels)
        >>> from probemeter.mdl import BayesianMLP, variational_codelength
        >>> from probemeter.training import VariationalTraining
        >>> config = VariationalTraining(epochs=3, batch_size=32, lr=1e-2)
        >>> code = variational_codelength(data, BayesianMLP(()), config=config, device="cpu")
        >>> round(code.codelength_bits, 1), round(code.compression, 2)
        (316.2, 1.2)
        >>> code.seeds["architecture"].tolist()  # input groups kept
        ['4']
    """
    check_single_label(check_probe_data(data), "the variational code (a softmax probe)")
    config = config_or_default(config, VARIATIONAL_TRAINING)
    check_scalar(random_state, "random_state", int, min_val=0)
    probe = BayesianMLP.for_data(data, MDL_PROBE) if probe is None else probe
    if probe.span != (data.span_tokens or ()):
        raise ValueError(
            f"probe pools spans {probe.span or 'none'} but the data's rows hold "
            f"{'spans ' + str(data.span_tokens) if data.span_tokens else 'no spans'}: use "
            "BayesianMLP.for_data(data, hidden)"
        )
    seeds_used = seed_ids(seeds)
    torch_device = resolve_device(device)
    rngs = [np.random.default_rng([random_state, seed]) for seed in seeds_used]
    model = probe.stack(rngs, data.n_features, data.n_classes, torch_device)
    generator = torch.Generator(device=torch_device).manual_seed(int(random_state))
    pool_x = torch.as_tensor(data.X_train, device=torch_device)
    pool_y = torch.as_tensor(data.y_train, device=torch_device)
    n, n_probes = data.pool_size, len(seeds_used)
    optimizer = torch.optim.Adam(model.parameters, lr=config.lr)
    with Stopwatch() as watch, single_threaded(torch_device.type == "cpu"):
        # small matmuls: threads only cost
        _train(model, optimizer, pool_x, pool_y, rngs, config, generator, progress)
    with torch.no_grad():
        kl_bits = model.kl().cpu().numpy().astype(np.float64) * BITS_PER_NAT
        data_bits = np.zeros(n_probes)
        for start in range(0, n, 4096):
            x = pool_x[start : start + 4096].expand(n_probes, -1, -1)
            y = pool_y[start : start + 4096].expand(n_probes, -1)
            nll = F.cross_entropy(
                model.sample_logits(x, generator).transpose(1, 2), y, reduction="none"
            )
            data_bits += nll.sum(dim=1, dtype=torch.float64).cpu().numpy() * BITS_PER_NAT
        test_x = torch.as_tensor(data.X_test, device=torch_device).expand(n_probes, -1, -1)
        test_y = torch.as_tensor(data.y_test, device=torch_device)
        accuracy = (model.pruned_logits(test_x).argmax(dim=2) == test_y).float().mean(dim=1)
    uniform = uniform_codelength(n, data.n_classes)
    codelength = kl_bits + data_bits
    seeds_table = pd.DataFrame(
        {
            "seed": seeds_used,
            "codelength_bits": codelength,
            "model_bits": kl_bits,
            "data_bits": data_bits,
            "uniform_bits": uniform,
            "compression": uniform / codelength,
            "accuracy": accuracy.cpu().numpy().astype(np.float64),
            "architecture": ["-".join(str(int(v)) for v in row) for row in model.architecture()],
        }
    )
    metadata = run_metadata(
        probe,
        config.to_dict(),
        random_state=random_state,
        device=torch_device,
        seconds=watch.seconds,
        data=data,
        data_fields={"n_test": len(data.y_test)},
    )
    return VariationalCode(data.name, data.n_classes, n, seeds_table, metadata, data.classes)


def _train(
    model: StackedBayesianMLP,
    optimizer: torch.optim.Optimizer,
    pool_x: torch.Tensor,
    pool_y: torch.Tensor,
    rngs: list[np.random.Generator],
    config: VariationalTraining,
    generator: torch.Generator,
    progress: bool,
) -> None:
    """Minimise eq. 3 / n: ``config.epochs`` over the pool, each probe in its own order."""
    n, batch_size = pool_x.shape[0], config.batch_size
    epochs = tqdm(
        range(config.epochs), disable=not progress, desc="variational probes", unit="epoch"
    )
    for _ in epochs:
        orders = torch.as_tensor(
            np.stack([rng.permutation(n) for rng in rngs]), device=pool_x.device
        )
        for start in range(0, n, batch_size):
            index = orders[:, start : start + batch_size]
            logits = model.sample_logits(pool_x[index], generator)
            nll = F.cross_entropy(logits.transpose(1, 2), pool_y[index], reduction="none")
            loss = (nll.mean(dim=1) + model.kl() / n).sum()
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            optimizer.step()
