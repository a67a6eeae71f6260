"""What a method reports of one representation, for comparisons across representations.

Every method (curves, MDL, power, Pareto) reduces a representation's stored result to a
:class:`Summary`: its headline measures (:class:`Headline`) as :class:`Estimate` values with their
range over seeds, the test accuracy of its best probes, and which test examples those probes
classified correctly, per seed (:class:`SeedCorrectness`), so that two representations evaluated
on the same test set can be compared with McNemar's test (Zhu et al. 2022, §3.5).
:mod:`probemeter.runs.layers` turns the summaries of a layer sweep into the layer table, figure and
verdict.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from probemeter._io import pack_bits, unpack_bits
from probemeter._validation import one_of

__all__ = [
    "BETTER",
    "POOL_SELECTION",
    "Estimate",
    "Headline",
    "LayerWeights",
    "SeedCorrectness",
    "Summary",
    "labels_digest",
    "measured_headlines",
]

#: which way a measure improves
BETTER = ("lower", "higher")
#: :attr:`Summary.selection_split` of a code measured on the pool it transmits (online,
#: variational, switching codes): their headlines never read the test set, so they choose
POOL_SELECTION = "pool (codes of the transmitted data; the test set is not read)"


@dataclass(frozen=True)
class Estimate:
    """A measure of one representation: its value and its range over seeds.

    Attributes:
        value: the method's estimate (e.g. the measure of the seed-averaged curve).
        low, high: the smallest and largest value over seeds; None with a single seed.
        lower_bound: the value is only a lower bound (the data ran out before the measure was
            reached: Whitney et al., §4); the true value lies above it.
        low_bound, high_bound: the seed giving ``low`` (``high``) has only a lower bound: its
            true value lies above it.
    """

    value: float
    low: float | None = None
    high: float | None = None
    lower_bound: bool = False
    low_bound: bool = False
    high_bound: bool = False

    @classmethod
    def over_seeds(
        cls,
        per_seed: Sequence[float],
        value: float | None = None,
        *,
        lower_bound: bool = False,
        seed_bounds: Sequence[bool] = (),
    ) -> Estimate:
        """``value`` (default: the mean of ``per_seed``) with the range of ``per_seed``;
        ``seed_bounds`` flags the seeds whose value is only a lower bound."""
        values = np.asarray(per_seed, dtype=np.float64)
        if values.size == 0:
            raise ValueError("per_seed is empty: an estimate needs at least one seed")
        centre = float(values.mean()) if value is None else float(value)
        if values.size == 1:
            return cls(centre, lower_bound=lower_bound)
        bounds = (
            np.asarray(seed_bounds, dtype=bool) if len(seed_bounds) else np.zeros_like(values, bool)
        )
        low, high = values.min(), values.max()
        return cls(
            centre,
            float(low),
            float(high),
            lower_bound,
            bool(bounds[values == low].any()),
            bool(bounds[values == high].any()),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "lower_bound": self.lower_bound,
            "low_bound": self.low_bound,
            "high_bound": self.high_bound,
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> Estimate:
        return cls(**payload)

    def format(self) -> str:
        """``"v [low, high]"`` (the range over seeds, when there are several), each number
        written ``"> x"`` when it is only a lower bound."""
        shown = _number(self.value, self.lower_bound)
        if self.low is None or self.high is None:
            return shown
        return (
            f"{shown} [{_number(self.low, self.low_bound)}, {_number(self.high, self.high_bound)}]"
        )


def _number(value: float, lower_bound: bool) -> str:
    """A measure for reading: thousands separators from 100 on (counts, codelengths), three
    significant digits below; ``"> "`` before a lower bound."""
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"> {text}" if lower_bound else text


@dataclass(frozen=True)
class Headline:
    """One headline measure of a method, as a table column and a figure line.

    Attributes:
        name: its key in :attr:`Summary.estimates`.
        label: column label, with the unit.
        better: ``"lower"`` or ``"higher"``.
        panel: figure panel (axis label with unit); headlines of one panel share its axes, e.g.
            a task and its control task.
        dashed: drawn dashed (a control task), not solid.
    """

    name: str
    label: str
    better: str
    panel: str
    dashed: bool = False

    def __post_init__(self) -> None:
        one_of(*BETTER)(self.better, "better")

    def best_first(self, estimates: Sequence[Estimate]) -> list[int]:
        """Indices of ``estimates``, best first; lower bounds after every tight value (their
        true values are unknown beyond the bound), each group ordered by value."""
        sign = 1.0 if self.better == "lower" else -1.0
        return sorted(
            range(len(estimates)),
            key=lambda i: (estimates[i].lower_bound, sign * estimates[i].value),
        )


def measured_headlines(
    headlines: Sequence[Headline], summaries: Iterable[Summary]
) -> tuple[Headline, ...]:
    """The ``headlines`` that every one of ``summaries`` estimates, in order: a method may
    declare measures that only some tasks have (the curve method's monitor metrics, of
    two-class tasks alone), and a table shows a column only where every row has a value."""
    summaries = list(summaries)
    return tuple(
        headline
        for headline in headlines
        if all(headline.name in summary.estimates for summary in summaries)
    )


def labels_digest(labels: np.ndarray) -> str:
    """A short hash of test labels: equal digests tell that two results were evaluated on test
    sets with the same labels in the same order (a condition of a paired test)."""
    values = np.ascontiguousarray(np.asarray(labels, dtype=np.int64))
    return hashlib.sha256(values).hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class SeedCorrectness:
    """Per seed, which test examples a representation's best probes classified correctly.

    Attributes:
        seeds: the seed of each probe.
        correct: per seed, a boolean array over the test set.
        labels_digest: :func:`labels_digest` of the test labels.
        n_train: training examples of these probes.
        clusters: the unit each test example was sampled in, as an integer id per example (the
            sentence of a word or of a tree edge); None when every example is its own unit
            (a sentence, an image). Words of one sentence are not independent draws, so a
            paired test of two representations resamples and compares whole clusters
            (:func:`probemeter.power.clustered.sign_flip_test`).
    """

    seeds: tuple[int, ...]
    correct: tuple[np.ndarray, ...] = field(repr=False)
    labels_digest: str
    n_train: int
    clusters: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if len(self.seeds) != len(self.correct) or not self.seeds:
            raise ValueError(
                f"correct needs one array per seed: {len(self.seeds)} seeds, "
                f"{len(self.correct)} arrays"
            )
        if len({len(values) for values in self.correct}) != 1:
            raise ValueError("every seed's correctness must cover the same test set")
        if self.clusters is not None:
            clusters = np.asarray(self.clusters)
            if clusters.shape != (len(self.correct[0]),) or clusters.dtype.kind not in "iu":
                raise ValueError(
                    f"clusters must give one integer id per test example "
                    f"({len(self.correct[0])}); got shape {clusters.shape}, dtype {clusters.dtype}"
                )
            object.__setattr__(self, "clusters", clusters.astype(np.int64, copy=False))

    @classmethod
    def from_predictions(
        cls,
        seeds: Sequence[int],
        predictions: np.ndarray,
        labels: np.ndarray,
        n_train: int,
        clusters: np.ndarray | None = None,
    ) -> SeedCorrectness:
        """From (seeds, n_test) arg-max ``predictions`` of the test ``labels``; or, for label
        sets, (seeds, n_test, K) 0/1 predictions of (n_test, K) ``labels``, an example being
        correct when its whole set is predicted (exact set match). ``clusters``: the sampling
        unit of each test example (see the class docstring)."""
        labels = np.asarray(labels)
        correct = np.asarray(predictions) == labels[None, :]
        if correct.ndim == 3:
            correct = correct.all(axis=2)
        return cls(
            tuple(int(s) for s in seeds),
            tuple(correct),
            labels_digest(labels),
            int(n_train),
            clusters,
        )

    @property
    def n_test(self) -> int:
        return len(self.correct[0])

    def select(self, seeds: Sequence[int]) -> SeedCorrectness | None:
        """Only the probes of ``seeds`` (None when none of them is here)."""
        chosen = [i for i, seed in enumerate(self.seeds) if seed in set(seeds)]
        if not chosen:
            return None
        return SeedCorrectness(
            tuple(self.seeds[i] for i in chosen),
            tuple(self.correct[i] for i in chosen),
            self.labels_digest,
            self.n_train,
            self.clusters,
        )

    @property
    def n_clusters(self) -> int:
        """Sampling units of the test set (its examples when they are not clustered)."""
        return self.n_test if self.clusters is None else int(np.unique(self.clusters).size)

    @property
    def accuracy(self) -> Estimate:
        """Test accuracy: mean over seeds, with the range over seeds."""
        return Estimate.over_seeds([float(values.mean()) for values in self.correct])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, correctness bit-packed (base64)."""
        return {
            "seeds": list(self.seeds),
            "correct": [pack_bits(values) for values in self.correct],
            "n_test": self.n_test,
            "labels_digest": self.labels_digest,
            "n_train": self.n_train,
            "clusters": None if self.clusters is None else _runs(self.clusters),
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> SeedCorrectness:
        length = int(payload["n_test"])
        runs = payload.get("clusters")
        return cls(
            tuple(int(s) for s in payload["seeds"]),
            tuple(unpack_bits(text, length) for text in payload["correct"]),
            str(payload["labels_digest"]),
            int(payload["n_train"]),
            None if runs is None else np.repeat(*np.asarray(runs, dtype=np.int64).reshape(-1, 2).T),
        )


def _runs(values: np.ndarray) -> list[list[int]]:
    """Run-length pairs ``[value, length]`` of ``values``: the words of a sentence are
    consecutive test examples, so a test set's clusters take a pair per sentence in JSON."""
    starts = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    lengths = np.diff(np.append(starts, values.size))
    return [[int(values[a]), int(n)] for a, n in zip(starts, lengths)]


@dataclass(frozen=True)
class LayerWeights:
    """The layer weights a learned scalar mix settled on (Peters et al. 2018, eq. 1): per
    seed, s = softmax(a) over the mixed layers, and the scale γ.

    Attributes:
        layers: the model layers mixed, in feature order.
        seeds: the seed of each probe.
        weights: per seed, s (sums to 1).
        scale: per seed, γ.
    """

    layers: tuple[int, ...]
    seeds: tuple[int, ...]
    weights: tuple[tuple[float, ...], ...]
    scale: tuple[float, ...]

    @classmethod
    def from_logits(
        cls, layers: Sequence[int], seeds: Sequence[int], logits: np.ndarray, scale: np.ndarray
    ) -> LayerWeights:
        """From the probes' mixing logits a, (seeds, L), and scales γ, (seeds,)."""
        logits = np.asarray(logits, dtype=np.float64)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        return cls(
            tuple(int(layer) for layer in layers),
            tuple(int(seed) for seed in seeds),
            tuple(tuple(float(w) for w in row) for row in weights),
            tuple(float(g) for g in np.asarray(scale, dtype=np.float64)),
        )

    @property
    def mean_weights(self) -> tuple[float, ...]:
        """s averaged over seeds."""
        return tuple(float(w) for w in np.mean(self.weights, axis=0))

    @property
    def center_of_gravity(self) -> Estimate:
        """E_s[layer] = Σ_l layer_l · s_l (Tenney et al. 2019, §3.1), over seeds."""
        per_seed = np.asarray(self.weights) @ np.asarray(self.layers, dtype=np.float64)
        return Estimate.over_seeds(per_seed.tolist())

    def describe(self) -> str:
        """The learned weights by layer and their center of gravity, in words."""
        shown = ", ".join(f"{layer}: {w:.2f}" for layer, w in zip(self.layers, self.mean_weights))
        seeds = len(self.seeds)
        return (
            f"learned scalar-mix weights by layer ({shown}; mean of {seeds} "
            f"seed{'s' if seeds > 1 else ''}), center of gravity "
            f"{self.center_of_gravity.format()} (Tenney et al. 2019)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "layers": list(self.layers),
            "seeds": list(self.seeds),
            "weights": [list(row) for row in self.weights],
            "scale": list(self.scale),
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> LayerWeights:
        return cls(
            tuple(payload["layers"]),
            tuple(payload["seeds"]),
            tuple(tuple(row) for row in payload["weights"]),
            tuple(payload["scale"]),
        )


@dataclass(frozen=True, eq=False)
class Summary:
    """A method's view of one representation (see the module docstring).

    Attributes:
        estimates: by :attr:`Headline.name`.
        accuracy: test accuracy of the best probes (mean and range over seeds).
        correctness: the best probes' per-seed test correctness (None when the result holds no
            per-example predictions, e.g. a result stored by an older version).
        probe: hidden widths of those probes (``()``: linear), for the data bound.
        n_features, n_classes: their input width and classes (None when the result does not
            record them).
        layer_weights: with a learned scalar mix, the weights its best probes settled on.
        selection: the headline measures by :attr:`Headline.name` on data held out from the
            test set, from which a comparison chooses the best representation before testing
            it on the test set (a choice made on the test scores and tested on them would be
            optimistic); None when the method measured none.
        selection_split: which data gave ``selection``, in words (e.g. ``"dev: 10 % of the
            pool's sentences, held out from training"``).
    """

    estimates: Mapping[str, Estimate]
    accuracy: Estimate
    correctness: SeedCorrectness | None
    probe: tuple[int, ...]
    n_features: int | None
    n_classes: int | None
    layer_weights: LayerWeights | None = None
    selection: Mapping[str, Estimate] | None = None
    selection_split: str = ""
