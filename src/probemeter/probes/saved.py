"""Trained probes kept for inspection: weights, test predictions and test losses, in one file.

A :class:`SavedProbe` is one trained ReLU MLP probe — its architecture, its layers, its mean
test cross-entropy and accuracy, and its arg-max prediction for every test example — with
``info`` saying which probe it is (e.g. ``{"n": 50, "seed": 0}`` on a loss-data curve).
:meth:`SavedProbe.module` gives it back as an ordinary ``torch.nn.Sequential``, for direction
analyses and error inspection. A :class:`ProbeSet` holds the probes of one representation;
:meth:`ProbeSet.save` writes them to one ``.safetensors`` file and :func:`load_probes` reads it.

:meth:`ProbeSet.evaluate` recomputes every probe's test metrics with the engine's own
arithmetic, the probe placed in memory as it sat in the engine's stack
(:func:`~probemeter.probes.stacked_mlp.evaluate_as_row`), so a reloaded probe reproduces its
stored test loss exactly, and that loss is the engine's (on the device it was evaluated on).

File format (schema ``probemeter.probes/1``)::

    probe.<i>.<k>.weight   float32 (fan_out, fan_in)   probe i's affine layer at position k of
    probe.<i>.<k>.bias     float32 (fan_out,)          its nn.Sequential (k = 0, 2, 4, ...;
                                                       1, 3, 5, ... after a scalar mix or a
                                                       span pooling)
    probe.<i>.0.logits     float32 (L,)                with a scalar mix (architecture "mix":
    probe.<i>.0.scale      float32 (1,)                L): its logits a and scale γ
    probe.<i>.0.weight     float32 (S, d, q)           with span pooling (architecture "span":
    probe.<i>.0.bias       float32 (S, q)              S spans, "projection": q): each span's
    probe.<i>.0.score      float32 (S, q)              W_s, b_s and w_s (a SpanAttention)
    predictions.<i>        int32 (n_test,)             probe i's arg-max test predictions
    pool.mean, pool.std    float64 (d,)                the pool's μ and σ the features were
                                                       standardised with, where known
    header metadata        "format": "probemeter.probes/1", "name": the representation,
                           "probes": JSON list, per probe {"architecture": MLP.to_dict(),
                           "loss": nats, "accuracy", "stack_row", "info": {...}}

so probe i's tensors without their prefix ``probe.<i>.`` are the ``state_dict`` of its
:meth:`SavedProbe.module`, loadable without probemeter. Saving and loading need safetensors
(``pip install 'probemeter[encoders]'``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import torch

from probemeter._device import resolve_device
from probemeter._io import write_bytes_atomic
from probemeter._validation import check_scalar, is_number
from probemeter.probes.mlp import MLP
from probemeter.probes.scalar_mix import ScalarMix
from probemeter.probes.span_attention import SpanPooling
from probemeter.probes.stacked_mlp import evaluate_as_row

__all__ = ["FORMAT", "ProbeSet", "SavedProbe", "load_probes", "safetensors_problem"]

#: the ``format`` entry of a probes file's header
FORMAT = "probemeter.probes/1"

#: a span pooling's tensors in a probes file, in :class:`SpanPooling`'s order
_SPAN_PARTS = ("weight", "bias", "score")

#: columns of :meth:`ProbeSet.to_frame` besides a probe's ``info``: no info key may take them
_COLUMNS = ("representation", "architecture", "n_test", "loss", "loss_truncated", "accuracy")


@dataclass(frozen=True, eq=False)
class SavedProbe:
    """One trained probe and what it did on its test set.

    Attributes:
        architecture: the probe's :class:`~probemeter.probes.MLP` (dropout, if any, acted in
            training only).
        layers: per affine layer ``(W, b)``, float32, ``W`` of shape (fan_in, fan_out) and
            ``b`` of shape (fan_out,) (the engine's layout): ``h = relu(h @ W + b)`` layer after
            layer, no ReLU after the last, whose outputs are the K logits.
        loss: mean cross-entropy on its test set, in nats.
        accuracy: fraction of its test examples whose arg-max prediction is the label.
        predictions: (n_test,) int32 arg-max predictions, in test-set order.
        info: which probe it is, as JSON scalars by name (e.g. ``n``, ``seed``).
        stack_row: the row it held in the engine's stack of probes when it was evaluated
            (``ProbeEvaluation.stack_rows``), with which :meth:`evaluate` reproduces the
            engine's numbers bit for bit.
        mix: with a scalar mix (``architecture.mix`` = L): its logits a, (L,) float32, and its
            scale γ; the probe then reads L layers side by side and mixes them first.
        span: with self-attentive span pooling (``architecture.span``): its trained poolings
            (W_s, b_s, w_s of each span); the probe then reads edge-probing span rows
            (:class:`~probemeter.datasets.edge_probing.SpanLayout`) and pools them first.

    Raises:
        ValueError: layers that do not chain, do not fit the architecture or are not float32;
            a mix missing, unwanted or not L float32 logits; span poolings missing, unwanted
            or not those of the architecture's spans and projection;
            predictions that are not a 1-D array of class indices; an accuracy outside
            [0, 1]; info that is not JSON scalars or uses a name of :meth:`ProbeSet.to_frame`'s
            own columns; a negative stack row.
    """

    architecture: MLP
    layers: tuple[tuple[np.ndarray, np.ndarray], ...] = field(repr=False)
    loss: float
    accuracy: float
    predictions: np.ndarray = field(repr=False)
    info: Mapping[str, Any] = field(default_factory=dict)
    stack_row: int = 0
    mix: tuple[np.ndarray, float] | None = field(default=None, repr=False)
    span: SpanPooling | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.architecture, MLP):
            raise ValueError(f"architecture must be an MLP; got {self.architecture!r}")
        layers = tuple(_check_layer(index, layer) for index, layer in enumerate(self.layers))
        if not layers:
            raise ValueError("layers is empty: a probe has at least one affine layer")
        object.__setattr__(self, "mix", _check_mix(self.mix, self.architecture.mix))
        _check_span(self.span, self.architecture)
        widths = (layers[0][0].shape[0], *(weight.shape[1] for weight, _ in layers))
        read = _features_read(widths[0], self.architecture, self.span)
        expected = self.architecture.layer_shapes(read, widths[-1])
        if [weight.shape for weight, _ in layers] != expected:
            raise ValueError(
                f"layers have shapes {[w.shape for w, _ in layers]}, not those of "
                f"{self.architecture.name}: {expected}"
            )
        object.__setattr__(self, "layers", layers)
        predictions = np.asarray(self.predictions)
        if predictions.ndim != 1 or not np.issubdtype(predictions.dtype, np.integer):
            raise ValueError("predictions must be a 1-D integer array (one class per example)")
        if predictions.size and (predictions.min() < 0 or predictions.max() >= widths[-1]):
            raise ValueError(f"predictions hold classes outside [0, {widths[-1]})")
        object.__setattr__(self, "predictions", predictions.astype(np.int32, copy=False))
        if not is_number(self.loss):  # a diverged probe's loss may be inf or NaN
            raise ValueError(f"loss must be a number of nats; got {self.loss!r}")
        object.__setattr__(self, "loss", float(self.loss))
        if not is_number(self.accuracy) or not 0.0 <= self.accuracy <= 1.0:
            raise ValueError(f"accuracy must be in [0, 1]; got {self.accuracy!r}")
        object.__setattr__(self, "accuracy", float(self.accuracy))
        object.__setattr__(self, "info", _check_info(self.info))
        row = check_scalar(self.stack_row, "stack_row", int, min_val=0)
        object.__setattr__(self, "stack_row", int(row))

    @property
    def n_features(self) -> int:
        """d, the features the probe reads (L layers side by side with a scalar mix; the span
        counts and padded token vectors with span pooling)."""
        return _features_read(int(self.layers[0][0].shape[0]), self.architecture, self.span)

    @property
    def n_classes(self) -> int:
        """K, its logits."""
        return int(self.layers[-1][0].shape[1])

    @property
    def n_test(self) -> int:
        """The examples of its test set."""
        return int(self.predictions.size)

    def module(self) -> torch.nn.Sequential:
        """The probe as an ordinary ``torch.nn.Sequential`` of ``nn.Linear`` layers with
        ``nn.ReLU`` between them (after a :class:`~probemeter.probes.scalar_mix.ScalarMix`
        when it has a mix, a :class:`~probemeter.probes.span_attention.SpanAttention` when it
        pools spans), in eval mode, on the CPU: ``module(x)`` gives the (n, K) logits of
        float32 features ``x`` (n, d).

        Its parameters are copies of :attr:`layers`, ``W`` transposed into ``nn.Linear``'s
        (out, in) layout. ``nn.Linear`` multiplies in another order than the engine, so its
        logits may differ from the engine's in the last float32 bits; :meth:`ProbeSet.evaluate`
        reproduces the stored loss exactly. Building it draws no random numbers.
        """
        from torch import nn

        modules: list[nn.Module] = []
        if self.mix is not None:
            mix = ScalarMix(self.architecture.mix, self.layers[0][0].shape[0])
            with torch.no_grad():
                mix.logits.copy_(torch.from_numpy(self.mix[0]))
                mix.scale.fill_(self.mix[1])
            modules.append(mix)
        if self.span is not None:
            modules.append(self.span.module())
        for index, (weight, bias) in enumerate(self.layers):
            linear = nn.utils.skip_init(nn.Linear, weight.shape[0], weight.shape[1])
            with torch.no_grad():
                linear.weight.copy_(torch.from_numpy(weight.T))
                linear.bias.copy_(torch.from_numpy(bias))
            modules.append(linear)
            if index < len(self.layers) - 1:
                modules.append(nn.ReLU())
        return nn.Sequential(*modules).eval()

    def evaluate(
        self, X: np.ndarray, y: np.ndarray, *, device: str | torch.device = "cpu"
    ) -> dict[str, Any]:
        """Mean cross-entropy ``loss`` (nats), ``loss_truncated`` (mean of min(CE, 1)),
        ``accuracy`` and (n,) int32 ``predictions`` on ``(X, y)``, computed as the engine
        computed them in its stack (:func:`~probemeter.probes.stacked_mlp.evaluate_as_row`).

        Raises:
            ValueError: ``X`` not (n, n_features), or ``y`` not n class indices below K.
        """
        features, labels = _eval_tensors(X, y, self.n_features, self.n_classes, device)
        return _evaluate(self.layers, self.stack_row, features, labels, self.mix, self.span)

    def predict(self, X: np.ndarray, *, device: str | torch.device = "cpu") -> np.ndarray:
        """The (n,) int32 arg-max classes of the rows ``X`` (n, n_features), computed as
        :meth:`evaluate` computes its ``predictions`` (the engine's arithmetic).

        Raises:
            ValueError: ``X`` not (n, n_features) or empty.
        """
        rows = np.asarray(X)
        placeholder = np.zeros(rows.shape[0] if rows.ndim else 0, dtype=np.int64)
        return self.evaluate(rows, placeholder, device=device)["predictions"]


def _check_layer(index: int, layer: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of layer ``index`` as C-contiguous float32 arrays, or a ValueError."""
    try:
        weight, bias = layer
    except (TypeError, ValueError):
        raise ValueError(f"layers[{index}] must be a pair (W, b)") from None
    weight, bias = np.asarray(weight), np.asarray(bias)
    if weight.dtype != np.float32 or bias.dtype != np.float32:
        raise ValueError(
            f"layers[{index}] must be float32 (the trained values); got {weight.dtype}, "
            f"{bias.dtype}"
        )
    if weight.ndim != 2 or bias.shape != (weight.shape[1],):
        raise ValueError(
            f"layers[{index}] must be W (fan_in, fan_out) and b (fan_out,); got shapes "
            f"{weight.shape} and {bias.shape}"
        )
    return np.ascontiguousarray(weight), np.ascontiguousarray(bias)


def _check_mix(mix: Any, n_layers: int) -> tuple[np.ndarray, float] | None:
    """``mix`` as (float32 logits (L,), float scale), None without one, or a ValueError."""
    if not n_layers:
        if mix is not None:
            raise ValueError("mix is given but the architecture has no scalar mix (mix = 0)")
        return None
    try:
        logits, scale = mix
    except (TypeError, ValueError):
        message = f"the architecture mixes {n_layers} layers: mix must be (logits, scale)"
        raise ValueError(message) from None
    logits = np.asarray(logits)
    if logits.dtype != np.float32 or logits.shape != (n_layers,) or not is_number(scale):
        raise ValueError(
            f"mix must be {n_layers} float32 logits and a scale; got {logits.dtype} "
            f"{logits.shape} and {scale!r}"
        )
    return np.ascontiguousarray(logits), float(scale)


def _check_span(span: Any, architecture: MLP) -> None:
    """A ValueError unless ``span`` is the poolings the architecture's spans need (None
    without spans)."""
    if not architecture.span:
        if span is not None:
            raise ValueError("span is given but the architecture pools no spans (span = ())")
        return
    if not isinstance(span, SpanPooling):
        raise ValueError(
            f"the architecture pools spans {architecture.span}: span must be a SpanPooling; "
            f"got {type(span).__name__}"
        )
    ours = (span.tokens, span.projection, span.pooling)
    if ours != (architecture.span, architecture.projection, architecture.span_pooling):
        raise ValueError(
            f"span poolings of tokens {span.tokens}, projection {span.projection}, pooling "
            f"{span.pooling!r} do not fit the architecture's spans {architecture.span}, "
            f"projection {architecture.projection}, pooling {architecture.span_pooling!r}"
        )


def _features_read(first_fan_in: int, architecture: MLP, span: SpanPooling | None) -> int:
    """The features a probe reads whose first layer reads ``first_fan_in``."""
    if span is not None:
        return len(span.tokens) + sum(span.tokens) * span.width
    return first_fan_in * max(architecture.mix, 1)


def _check_info(info: Any) -> dict[str, Any]:
    """``info`` as a dict of JSON scalars, or a ValueError naming the bad entry."""
    if not isinstance(info, Mapping):
        raise ValueError(f"info must be a mapping; got {type(info).__name__}")
    for name, value in info.items():
        if not isinstance(name, str) or name in _COLUMNS:
            raise ValueError(f"info key {name!r} must be a string other than {', '.join(_COLUMNS)}")
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise ValueError(
                f"info[{name!r}] must be None, a bool, int, float or str; got "
                f"{type(value).__name__}"
            )
    return dict(info)


def _eval_tensors(
    X: Any, y: Any, n_features: int, n_classes: int, device: str | torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(X, y)`` as the engine's float32 and int64 tensors on ``device``, checked."""
    features = np.asarray(X, dtype=np.float32)
    labels = np.asarray(y)
    if features.ndim != 2 or features.shape[1] != n_features:
        raise ValueError(f"X must have shape (n, {n_features}); got {features.shape}")
    if labels.shape != (features.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"y must be {features.shape[0]} integer labels; got shape {labels.shape}")
    if labels.size == 0:
        raise ValueError("X and y are empty: evaluation needs examples")
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"y holds labels outside [0, n_classes={n_classes})")
    target = resolve_device(device)
    return (
        torch.as_tensor(features, dtype=torch.float32, device=target),
        torch.as_tensor(labels, dtype=torch.int64, device=target),
    )


def _evaluate(
    layers: Sequence[tuple[np.ndarray, np.ndarray]],
    stack_row: int,
    features: torch.Tensor,
    labels: torch.Tensor,
    mix: tuple[np.ndarray, float] | None = None,
    span: SpanPooling | None = None,
) -> dict[str, Any]:
    """One probe's metrics and predictions, as the engine computed them at ``stack_row``."""
    metrics = evaluate_as_row(
        layers, stack_row, features, labels, per_example=True, mix=mix, span=span
    )
    return {
        "loss": float(metrics["loss"][0]),
        "loss_truncated": float(metrics["loss_truncated"][0]),
        "accuracy": float(metrics["accuracy"][0]),
        "predictions": metrics["predictions"][0],
    }


@dataclass(frozen=True, eq=False)
class ProbeSet:
    """The kept probes of one representation (e.g. every (n, seed) probe of its curve).

    Attributes:
        name: the representation.
        probes: the probes, all reading the same d features.
        moments: the pool's mean μ and standard deviation σ (float64 (d,) each) the features
            were standardised with (:attr:`~probemeter.data.ProbeData.pool_mean`), with which
            a linear probe is written back in the raw features' space
            (:meth:`~probemeter.probes.direction.ProbeDirection.from_set`); None where unknown.

    Raises:
        ValueError: no probes, an entry that is not a :class:`SavedProbe`, probes of
            different feature counts, or moments that are not two finite (d,) arrays.
    """

    name: str
    probes: tuple[SavedProbe, ...]
    moments: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string; got {self.name!r}")
        probes = tuple(self.probes)
        if not probes:
            raise ValueError("a probe set needs at least one probe")
        for index, probe in enumerate(probes):
            if not isinstance(probe, SavedProbe):
                raise ValueError(f"probes[{index}] is a {type(probe).__name__}, not a SavedProbe")
            if probe.n_features != probes[0].n_features:
                raise ValueError(
                    f"probes[{index}] reads {probe.n_features} features but probes[0] reads "
                    f"{probes[0].n_features}: a set holds the probes of one representation"
                )
        object.__setattr__(self, "probes", probes)
        if self.moments is not None:
            mean, std = (np.asarray(part, dtype=np.float64) for part in self.moments)
            d = probes[0].n_features
            if mean.shape != (d,) or std.shape != (d,) or not np.isfinite([mean, std]).all():
                raise ValueError(f"moments must be the pool's finite mean and std of {d} features")
            object.__setattr__(self, "moments", (mean, std))

    @classmethod
    def from_stacked(
        cls,
        name: str,
        architecture: MLP,
        parameters: Sequence[tuple[np.ndarray, np.ndarray]],
        infos: Sequence[Mapping[str, Any]],
        X_test: np.ndarray,
        y_test: np.ndarray,
        *,
        stack_rows: Sequence[int] | np.ndarray | None = None,
        mixes: tuple[np.ndarray, np.ndarray] | None = None,
        spans: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        device: str | torch.device = "cpu",
        evaluated: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> ProbeSet:
        """The probes of stacked parameters (the engine's ``ProbeEvaluation.parameters``: per
        layer ``W`` (P, fan_in, fan_out) and ``b`` (P, fan_out); with a scalar mix ``mixes``,
        its ``mix_logits`` (P, L) and ``mix_scale`` (P,); with span pooling ``spans``, its
        ``span_weight`` (P, S, d, q), ``span_bias`` (P, S, q) and ``span_score`` (P, S, q)),
        each evaluated on
        ``(X_test, y_test)`` on ``device`` (:meth:`SavedProbe.evaluate`) for its stored loss,
        accuracy and predictions; ``infos[i]`` is probe i's ``info`` and ``stack_rows[i]``
        its ``stack_row`` (the engine's ``ProbeEvaluation.stack_rows``; default 0). On the
        engine's evaluation set and device, the losses are the engine's, bit for bit on the
        CPU; on a GPU, where cuBLAS picks its kernels by the stack's shape, they can differ in
        the last bits, so a caller holding the engine's own metrics of these probes on
        ``(X_test, y_test)`` passes them as ``evaluated`` (loss (P,), accuracy (P,),
        predictions (P, n_test)) and they are stored as they are.

        Raises:
            ValueError: ``infos`` or ``stack_rows`` not one per probe, or as
                :class:`SavedProbe` and :meth:`SavedProbe.evaluate`.
        """
        if not parameters:
            raise ValueError("parameters is empty: a probe has at least one affine layer")
        if bool(architecture.span) != (spans is not None):
            raise ValueError(
                "spans (the engine's span_weight, span_bias, span_score) must be given exactly "
                f"when the architecture pools spans; it pools {architecture.span or 'none'}"
            )
        if np.ndim(y_test) == 2:
            raise ValueError(
                "probes of label sets (multi-label targets, K sigmoid outputs) cannot be kept "
                "yet: a saved probe predicts one class per example"
            )
        n_probes = len(parameters[0][0])
        rows = [0] * n_probes if stack_rows is None else [int(row) for row in stack_rows]
        for argument, values in (("infos", infos), ("stack_rows", rows)):
            if len(values) != n_probes:
                raise ValueError(f"got {len(values)} {argument} for {n_probes} stacked probes")
        n_classes = parameters[-1][0].shape[2]
        pooling = [None] * n_probes
        if spans is not None:
            pooling = [
                SpanPooling(architecture.span, *(a[i] for a in spans), architecture.span_pooling)
                for i in range(n_probes)
            ]
        n_features = _features_read(parameters[0][0].shape[1], architecture, pooling[0])
        features, labels = _eval_tensors(X_test, y_test, n_features, n_classes, device)
        probes = []
        for index, (info, row) in enumerate(zip(infos, rows)):
            layers = tuple((weights[index], biases[index]) for weights, biases in parameters)
            mix = None if mixes is None else (mixes[0][index], float(mixes[1][index]))
            if evaluated is None:
                metrics = _evaluate(layers, row, features, labels, mix, pooling[index])
            else:
                loss, accuracy, predictions = (values[index] for values in evaluated)
                metrics = {"loss": float(loss), "accuracy": float(accuracy)}
                metrics["predictions"] = np.asarray(predictions, dtype=np.int32)
            probes.append(
                SavedProbe(
                    architecture,
                    layers,
                    metrics["loss"],
                    metrics["accuracy"],
                    metrics["predictions"],
                    info,
                    row,
                    mix,
                    pooling[index],
                )
            )
        return cls(name, tuple(probes))

    def __len__(self) -> int:
        return len(self.probes)

    def __iter__(self) -> Iterator[SavedProbe]:
        return iter(self.probes)

    def __getitem__(self, index: int) -> SavedProbe:
        return self.probes[index]

    def select(self, **info: Any) -> ProbeSet:
        """The probes whose ``info`` has every given value, e.g. ``select(n=50, seed=0)``.

        Raises:
            ValueError: no probe matches (the message lists the values there are).
        """
        kept = tuple(
            probe
            for probe in self.probes
            if all(name in probe.info and probe.info[name] == v for name, v in info.items())
        )
        if not kept:
            present = {name: sorted({str(p.info.get(name)) for p in self.probes}) for name in info}
            raise ValueError(f"no probe of {self.name!r} has {info}; present: {present}")
        return ProbeSet(self.name, kept, self.moments)

    def to_frame(self) -> pd.DataFrame:
        """One row per probe: ``representation``, its ``info`` (a column per name, missing
        values NaN), ``architecture`` (:attr:`MLP.name`), ``n_test``, and its stored ``loss``
        (nats) and ``accuracy``."""
        return pd.DataFrame(
            [
                {
                    "representation": self.name,
                    **probe.info,
                    "architecture": probe.architecture.name,
                    "n_test": probe.n_test,
                    "loss": probe.loss,
                    "accuracy": probe.accuracy,
                }
                for probe in self.probes
            ]
        )

    def evaluate(
        self, X: np.ndarray, y: np.ndarray, *, device: str | torch.device = "cpu"
    ) -> pd.DataFrame:
        """Every probe's metrics on ``(X, y)`` (:meth:`SavedProbe.evaluate`): :meth:`to_frame`
        with ``loss``, ``accuracy`` and ``n_test`` recomputed and ``loss_truncated`` added.
        On the data's test set, on the CPU that trained them, ``loss`` equals the stored loss
        exactly; on a GPU (``device`` the one that trained them) to about 1e-6 relative, cuBLAS
        picking its kernels by the shape of the stack.

        Raises:
            ValueError: as :meth:`SavedProbe.evaluate`.
        """
        frame = self.to_frame()
        results = [probe.evaluate(X, y, device=device) for probe in self.probes]
        frame["n_test"] = len(np.asarray(y))
        for column in ("loss", "loss_truncated", "accuracy"):
            frame[column] = [result[column] for result in results]
        return frame

    def save(self, path: str | Path) -> None:
        """Write the set to ``path`` as one ``.safetensors`` file (the module docstring's
        format), atomically: a temporary file in the same folder, flushed, then renamed.

        Raises:
            ValueError: safetensors is not installed.
        """
        safetensors = _safetensors(path)
        tensors: dict[str, np.ndarray] = {}
        entries = []
        for index, probe in enumerate(self.probes):
            first = 0 if probe.mix is None and probe.span is None else 1  # positions in its module
            if probe.mix is not None:
                tensors[f"probe.{index}.0.logits"] = probe.mix[0]
                tensors[f"probe.{index}.0.scale"] = np.array([probe.mix[1]], dtype=np.float32)
            if probe.span is not None:
                for part in _SPAN_PARTS:
                    tensors[f"probe.{index}.0.{part}"] = getattr(probe.span, part)
            for layer, (weight, bias) in enumerate(probe.layers):
                position = first + 2 * layer
                tensors[f"probe.{index}.{position}.weight"] = np.ascontiguousarray(weight.T)
                tensors[f"probe.{index}.{position}.bias"] = bias
            tensors[f"predictions.{index}"] = probe.predictions
            entries.append(
                {
                    "architecture": probe.architecture.to_dict(),
                    "loss": probe.loss,
                    "accuracy": probe.accuracy,
                    "stack_row": probe.stack_row,
                    "info": dict(probe.info),
                }
            )
        if self.moments is not None:
            tensors["pool.mean"], tensors["pool.std"] = self.moments
        header = {"format": FORMAT, "name": self.name, "probes": json.dumps(entries)}
        write_bytes_atomic(path, safetensors.numpy.save(tensors, metadata=header))


def load_probes(path: str | Path) -> ProbeSet:
    """The :class:`ProbeSet` that :meth:`ProbeSet.save` wrote to ``path``.

    Raises:
        ValueError: naming ``path``: it does not exist, is not a safetensors file, is not a
            probemeter probes file (a foreign safetensors file), or is damaged (tensors or
            header entries missing or inconsistent); safetensors is not installed.
    """
    safetensors = _safetensors(path)
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"probes file {str(path)!r} does not exist")
    try:
        with safetensors.safe_open(str(path), framework="numpy") as stored:
            header = stored.metadata() or {}
            if header.get("format") != FORMAT:
                raise ValueError(
                    f"{str(path)!r} is a safetensors file but no probemeter probes file (its "
                    f"header has no format {FORMAT!r})"
                )
            tensors = {name: stored.get_tensor(name) for name in stored.keys()}
    except safetensors.SafetensorError as error:
        raise ValueError(f"{str(path)!r} is no readable safetensors file: {error}") from None
    try:
        return _probe_set(header, tensors)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"probes file {str(path)!r} is damaged: {error}") from None


def _probe_set(header: Mapping[str, str], tensors: Mapping[str, np.ndarray]) -> ProbeSet:
    """The set a probes file's header and tensors describe (KeyError/ValueError if damaged)."""
    entries = json.loads(header["probes"])
    if not isinstance(entries, list):
        raise ValueError("its header's probes entry is not a list")
    expected = {f"predictions.{index}" for index in range(len(entries))}
    probes = []
    for index, entry in enumerate(entries):
        architecture = MLP.from_dict(entry["architecture"])
        mix, span, first = None, None, 0
        if architecture.mix:
            names = (f"probe.{index}.0.logits", f"probe.{index}.0.scale")
            expected |= set(names)
            mix, first = (tensors[names[0]], float(tensors[names[1]][0])), 1
        if architecture.span:
            names = tuple(f"probe.{index}.0.{part}" for part in _SPAN_PARTS)
            expected |= set(names)
            parts = (tensors[n] for n in names)
            span, first = SpanPooling(architecture.span, *parts, architecture.span_pooling), 1
        layers = []
        for layer in range(len(architecture.hidden) + 1):
            prefix = f"probe.{index}.{first + 2 * layer}"
            expected |= {f"{prefix}.weight", f"{prefix}.bias"}
            layers.append((tensors[f"{prefix}.weight"].T, tensors[f"{prefix}.bias"]))
        predictions = tensors[f"predictions.{index}"]
        if predictions.dtype != np.int32:
            raise ValueError(f"predictions.{index} is {predictions.dtype}, not int32")
        probes.append(
            SavedProbe(
                architecture,
                tuple(layers),
                entry["loss"],
                entry["accuracy"],
                predictions,
                entry["info"],
                entry["stack_row"],
                mix,
                span,
            )
        )
    moments = None
    if "pool.mean" in tensors or "pool.std" in tensors:
        expected |= {"pool.mean", "pool.std"}
        moments = (tensors["pool.mean"], tensors["pool.std"])
    unexpected = sorted(set(tensors) - expected)
    if unexpected:
        raise ValueError(f"tensors {unexpected[:3]} belong to no probe of its header")
    return ProbeSet(header["name"], tuple(probes), moments)


def _safetensors(path: str | Path) -> ModuleType:
    """The ``safetensors`` package (with ``safetensors.numpy``), or a ValueError naming
    ``path``."""
    problem = safetensors_problem()
    if problem:
        raise ValueError(f"{str(path)!r}: {problem}")
    import safetensors
    import safetensors.numpy

    return safetensors


def safetensors_problem() -> str | None:
    """Why probes cannot be saved or loaded here (safetensors missing), or None."""
    import importlib.util

    if importlib.util.find_spec("safetensors") is None:
        return "keeping probes needs safetensors: pip install 'probemeter[encoders]'"
    return None
