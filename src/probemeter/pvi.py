"""Pointwise V-information (PVI): how much a representation makes each test example easier to
label than the label's marginal alone (Ethayarajh, Choi & Swayamdipta 2022).

For a probe family V, the probe ``g`` trained on pairs (x, y) and the null model ``g'`` of the
same family trained on (∅, y), the pointwise V-information of one held-out example is::

    PVI(x → y) = −log2 g'[∅](y) + log2 g[x](y)          (bits)

and its mean over held-out examples estimates the V-usable information
I_V(X → Y) = H_V(Y) − H_V(Y | X) (Xu et al. 2020). A model of the family fed no input can only
learn the label's marginal, so the null model here *is* that marginal, fitted on the same
training examples as ``g``: the class frequencies of the probe's training labels, with
Laplace's add-one rule, ``p(y) = (count(y) + 1) / (n + K)``, so that a test label absent from
the training examples costs a finite log2(n + K) bits, as a softmax trained on no input never
gives a class zero probability either. (No probe is trained for it: its optimum is this
marginal up to the add-one term.) High PVI: the representation makes the example easy;
negative PVI: the probe does worse on it than guessing from label frequencies (hard or
mislabelled examples, which the paper finds this way).

Per-example values are reported per test example, per seed (data order) and averaged over
seeds. Aggregates by label or by a user's grouping (:meth:`PVIResult.by_group`) are means of the
seed-averaged values with a percentile bootstrap interval that resamples the unit the test
examples were drawn in: whole sentences where the data record them (``ProbeData.clusters_test``,
the words of one sentence are not independent draws), else single examples.

References:
    Ethayarajh, K., Choi, Y. & Swayamdipta, S. (2022). Understanding Dataset Difficulty with
    V-Usable Information. *ICML 2022*, PMLR 162. arXiv:2110.08420

    Xu, Y., Zhao, S., Song, J., Stewart, R. & Ermon, S. (2020). A Theory of Usable Information
    under Computational Constraints. *ICLR 2020*. arXiv:2002.10689
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probemeter._exports import write_frame
from probemeter._figures import FigureOptions
from probemeter._io import classes_from_json, classes_to_json, read_json, write_json_atomic
from probemeter._validation import check_scalar

__all__ = [
    "PVIResult",
    "null_codelengths",
    "plot_pvi",
    "pointwise_v_information",
    "pvi_figure",
]

#: how the null model's probabilities are smoothed, recorded in :attr:`PVIResult.metadata`
NULL_MODEL = "training-label frequencies, add-one (Laplace): (count(y) + 1) / (n + K)"
#: per-seed columns of :meth:`PVIResult.to_frame` are ``pvi_seed<s>``
_SEED_PREFIX = "pvi_seed"
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".json": "json"}


def null_codelengths(train_labels: Any, labels: Any, n_classes: int) -> np.ndarray:
    """−log2 g'[∅](y) in bits for each of ``labels``: the null model's codelength, with g'[∅]
    the add-one-smoothed class frequencies of ``train_labels`` (module docstring).

    Args:
        train_labels: (n,) class indices the null model is fitted on (the probe's training
            labels).
        labels: (m,) class indices to code.
        n_classes: K, the size of the label alphabet.

    Raises:
        ValueError: label sets (2-D labels), or a label outside [0, K).
    """
    check_scalar(n_classes, "n_classes", int, min_val=1)
    train = _class_indices(train_labels, n_classes, "train_labels")
    coded = _class_indices(labels, n_classes, "labels")
    counts = np.bincount(train, minlength=n_classes).astype(np.float64)
    probabilities = (counts + 1.0) / (train.size + n_classes)
    return -np.log2(probabilities)[coded]


def _class_indices(values: Any, n_classes: int, argument: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(
            f"{argument}: pointwise V-information takes one class index per example; got an "
            f"array of shape {array.shape} (label sets are not supported)"
        )
    if not np.issubdtype(array.dtype, np.integer) and array.size:
        raise ValueError(f"{argument}: class indices must be integers; got dtype {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= n_classes):
        raise ValueError(f"{argument}: class indices must lie in [0, {n_classes})")
    return array.astype(np.int64)


def pointwise_v_information(
    nll: Any,
    labels: Any,
    train_labels: Any,
    n_classes: int,
    *,
    seeds: Sequence[int] | None = None,
    name: str = "representation",
    classes: Sequence[Any] | None = None,
    sentences: Any = None,
    texts: Sequence[str] | None = None,
    examples: Any = None,
) -> PVIResult:
    """PVI of every test example, per seed: ``null_codelengths − nll / ln 2`` in bits.

    Args:
        nll: (S, m) the probes' per-example test cross-entropy −ln g[x](y) in **nats**, one
            row per seed (the engine's ``ProbeEvaluation.nll`` of the probes trained on the
            largest size); a 1-D array is one seed.
        labels: (m,) the test examples' class indices.
        train_labels: the labels each seed's probe trained on, which the null model is fitted
            on: one (n,) array for all seeds, or a sequence of S arrays.
        n_classes: K.
        seeds: the seed id of each row of ``nll`` (default 0..S−1).
        name: the representation's name.
        classes: the original label of each class index (``ProbeData.classes``), for tables.
        sentences: (m,) the sentence (sampling unit) of each test example
            (``ProbeData.clusters_test``), resampled by the bootstrap of :meth:`PVIResult.by_group`.
        texts: (m,) each test example's word or text, where the caller has it.
        examples: (m,) each example's row index in the test set (default 0..m−1).

    Returns:
        :class:`PVIResult`.

    Raises:
        ValueError: naming the argument, for shapes that disagree, non-finite losses, or labels
            outside [0, K).
    """
    losses = np.asarray(nll, dtype=np.float64)
    losses = losses[None, :] if losses.ndim == 1 else losses
    if losses.ndim != 2 or losses.shape[1] == 0:
        raise ValueError(f"nll must be (seeds, examples); got shape {np.shape(nll)}")
    if not np.isfinite(losses).all() or (losses < 0).any():
        raise ValueError("nll must hold finite cross-entropies >= 0 (nats)")
    n_seeds, n_examples = losses.shape
    coded = _class_indices(labels, n_classes, "labels")
    if coded.size != n_examples:
        raise ValueError(f"labels has {coded.size} entries; nll has {n_examples} examples")
    pools = _per_seed(train_labels, n_seeds)
    null = np.stack([null_codelengths(pool, coded, n_classes) for pool in pools])
    seed_ids = tuple(range(n_seeds)) if seeds is None else tuple(int(s) for s in seeds)
    if len(seed_ids) != n_seeds:
        raise ValueError(f"seeds has {len(seed_ids)} ids; nll has {n_seeds} rows")
    gold = coded.tolist() if classes is None else [classes[i] for i in coded]
    return PVIResult(
        name=name,
        examples=np.arange(n_examples) if examples is None else np.asarray(examples),
        labels=tuple(gold),
        seeds=seed_ids,
        values=null - losses / math.log(2),
        sentences=None if sentences is None else np.asarray(sentences),
        texts=None if texts is None else tuple(str(text) for text in texts),
        metadata={
            "unit": "bits",
            "null_model": NULL_MODEL,
            "n_train": [int(np.asarray(pool).size) for pool in pools],
            "classes": classes_to_json(classes),
        },
    )


def _per_seed(train_labels: Any, n_seeds: int) -> list[np.ndarray]:
    """One array of training labels per seed: ``train_labels`` itself when it is one array."""
    if isinstance(train_labels, np.ndarray) or (
        isinstance(train_labels, Sequence) and not any(np.ndim(t) for t in train_labels)
    ):
        return [np.asarray(train_labels)] * n_seeds
    pools = [np.asarray(pool) for pool in train_labels]
    if len(pools) != n_seeds:
        raise ValueError(f"train_labels has {len(pools)} arrays; nll has {n_seeds} seeds")
    return pools


@dataclass(frozen=True, eq=False)
class PVIResult:
    """Pointwise V-information of one representation's test examples (module docstring).

    Attributes:
        name: the representation's name.
        examples: (m,) each example's row index in the test set.
        labels: (m,) each example's gold label (the original label where the data had one).
        seeds: the seed (data order) of each row of ``values``.
        values: (S, m) PVI in bits, per seed and example.
        sentences: (m,) the sentence (sampling unit) of each example, or None.
        texts: (m,) each example's word or text, or None.
        metadata: unit, the null model, the training-set size per seed, the classes.
    """

    name: str
    examples: np.ndarray = field(repr=False)
    labels: tuple[Any, ...] = field(repr=False)
    seeds: tuple[int, ...]
    values: np.ndarray = field(repr=False)
    sentences: np.ndarray | None = field(default=None, repr=False)
    texts: tuple[str, ...] | None = field(default=None, repr=False)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        n_examples = len(self.examples)
        if values.shape != (len(self.seeds), n_examples):
            raise ValueError(
                f"values must be (seeds, examples) = ({len(self.seeds)}, {n_examples}); got "
                f"{values.shape}"
            )
        for argument in ("labels", "sentences", "texts"):
            column = getattr(self, argument)
            if column is not None and len(column) != n_examples:
                raise ValueError(f"{argument} has {len(column)} entries; {n_examples} examples")
        object.__setattr__(self, "values", values)

    @property
    def pvi(self) -> np.ndarray:
        """(m,) each example's PVI averaged over seeds, in bits."""
        return self.values.mean(axis=0)

    @property
    def v_information(self) -> float:
        """The mean PVI: the test-set estimate of I_V(X → Y) in bits."""
        return float(self.pvi.mean())

    @property
    def resampled(self) -> str:
        """What :meth:`by_group`'s bootstrap resamples: ``"sentences"`` or ``"examples"``."""
        return "examples" if self.sentences is None else "sentences"

    def to_frame(self) -> pd.DataFrame:
        """One row per test example: ``representation, example``, ``sentence`` and ``text``
        where known, ``label``, ``pvi_seed<s>`` per seed and ``pvi`` (their mean), in bits."""
        columns: dict[str, Any] = {"representation": self.name, "example": self.examples}
        if self.sentences is not None:
            columns["sentence"] = self.sentences
        if self.texts is not None:
            columns["text"] = list(self.texts)
        columns["label"] = list(self.labels)
        for seed, row in zip(self.seeds, self.values):
            columns[f"{_SEED_PREFIX}{seed}"] = row
        columns["pvi"] = self.pvi
        return pd.DataFrame(columns)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, metadata: dict[str, Any] | None = None) -> PVIResult:
        """The result :meth:`to_frame` tabulated (one representation's rows)."""
        names = frame["representation"].unique()
        if len(names) != 1:
            raise ValueError(f"frame holds {len(names)} representations; select one first")
        seeds = [column for column in frame.columns if column.startswith(_SEED_PREFIX)]
        if not seeds:
            raise ValueError(f"frame has no {_SEED_PREFIX}<s> column")
        return cls(
            name=str(names[0]),
            examples=frame["example"].to_numpy(),
            labels=tuple(_plain(label) for label in frame["label"]),
            seeds=tuple(int(column[len(_SEED_PREFIX) :]) for column in seeds),
            values=frame[seeds].to_numpy(dtype=np.float64).T,
            sentences=frame["sentence"].to_numpy() if "sentence" in frame else None,
            texts=tuple(frame["text"].astype(str)) if "text" in frame else None,
            metadata=dict(metadata or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary; :meth:`from_dict` restores the result exactly."""
        return {
            "name": self.name,
            "unit": "bits",
            "seeds": list(self.seeds),
            "examples": self.examples.tolist(),
            "labels": classes_to_json(self.labels),
            "values": self.values.tolist(),
            "sentences": None if self.sentences is None else self.sentences.tolist(),
            "texts": None if self.texts is None else list(self.texts),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> PVIResult:
        if payload.get("unit", "bits") != "bits":
            raise ValueError(f"PVI must be stored in bits; got {payload['unit']!r}")
        try:
            sentences, texts = payload.get("sentences"), payload.get("texts")
            return cls(
                name=payload["name"],
                examples=np.asarray(payload["examples"], dtype=np.int64),
                labels=classes_from_json(payload["labels"]) or (),
                seeds=tuple(int(s) for s in payload["seeds"]),
                values=np.asarray(payload["values"], dtype=np.float64),
                sentences=None if sentences is None else np.asarray(sentences),
                texts=None if texts is None else tuple(texts),
                metadata=payload.get("metadata", {}),
            )
        except KeyError as missing:
            raise ValueError(f"PVI dictionary lacks the key {missing}") from None

    def save(self, path: str | Path) -> Path:
        """Write the result to ``path`` by its suffix: ``.json`` (everything), ``.csv`` or
        ``.parquet`` (:meth:`to_frame`: the per-example table, without ``metadata``),
        atomically. Returns the path."""
        fmt = _format(path)
        if fmt == "json":
            write_json_atomic(path, self.to_dict())
            return Path(path)
        return write_frame(path, self.to_frame(), fmt)

    @classmethod
    def load(cls, path: str | Path) -> PVIResult:
        """The result :meth:`save` wrote to ``path`` (CSV floats read back exactly)."""
        fmt = _format(path)
        if fmt == "json":
            return cls.from_dict(read_json(path, "PVI file"))
        if fmt == "csv":
            frame = pd.read_csv(path, keep_default_na=False)
        else:
            frame = pd.read_parquet(path)
        return cls.from_frame(frame)

    def by_label(
        self, *, confidence: float = 0.95, n_boot: int = 1000, random_state: int = 0
    ) -> pd.DataFrame:
        """:meth:`by_group` of the gold labels."""
        return self.by_group(
            self.labels,
            name="label",
            confidence=confidence,
            n_boot=n_boot,
            random_state=random_state,
        )

    def by_group(
        self,
        groups: Any,
        *,
        name: str = "group",
        confidence: float = 0.95,
        n_boot: int = 1000,
        random_state: int = 0,
    ) -> pd.DataFrame:
        """Mean PVI (bits, averaged over seeds) per group of test examples, with a percentile
        bootstrap interval over :attr:`resampled` units (whole sentences where recorded).

        Args:
            groups: (m,) a group of each example, in the order of :attr:`examples` (a word's
                frequency band, its tag, a sentence length bin, ...).
            name: the groups' column name.
            confidence: the interval's coverage.
            n_boot: bootstrap resamples.
            random_state: seeds the resampling.

        Returns:
            One row per group (sorted by mean PVI, highest first): ``n``, ``mean``,
            ``ci_low``, ``ci_high``, ``seed_min``, ``seed_max`` (the group's mean PVI under
            each seed's probes alone, lowest and highest) and ``resampled``.
        """
        check_scalar(confidence, "confidence", float, min_val=0, max_val=1,
                     include_boundaries="neither")  # fmt: skip
        check_scalar(n_boot, "n_boot", int, min_val=1)
        check_scalar(random_state, "random_state", int, min_val=0)
        keys = pd.Series(list(groups) if not isinstance(groups, pd.Series) else groups.array)
        if len(keys) != len(self.examples):
            raise ValueError(f"groups has {len(keys)} entries; {len(self.examples)} examples")
        codes, uniques = pd.factorize(keys, use_na_sentinel=False)
        units = (
            np.arange(len(codes))
            if self.sentences is None
            else pd.factorize(pd.Series(self.sentences))[0]
        )
        n_units, n_groups = int(units.max()) + 1, len(uniques)
        flat = units * n_groups + codes
        size = n_units * n_groups
        sums = np.bincount(flat, weights=self.pvi, minlength=size).reshape(n_units, n_groups)
        counts = np.bincount(flat, minlength=size).reshape(n_units, n_groups).astype(float)
        rng = np.random.default_rng(random_state)
        draws = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (draws @ sums) / (draws @ counts)
        tail = 50 * (1 - confidence)
        low, high = np.nanpercentile(means, [tail, 100 - tail], axis=0)
        per_seed = np.stack(
            [np.bincount(codes, weights=row, minlength=n_groups) for row in self.values]
        ) / counts.sum(axis=0)
        table = pd.DataFrame(
            {
                "n": counts.sum(axis=0).astype(np.int64),
                "mean": sums.sum(axis=0) / counts.sum(axis=0),
                "ci_low": low,
                "ci_high": high,
                "seed_min": per_seed.min(axis=0),
                "seed_max": per_seed.max(axis=0),
                "resampled": self.resampled,
            },
            index=pd.Index([_plain(u) for u in uniques], name=name),
        )
        return table.sort_values("mean", ascending=False, kind="stable")

    def plot(self, ax: Any = None, *, kind: str = "box") -> Any:
        """PVI (bits, averaged over seeds) by gold label, labels ordered by mean PVI: a box
        plot (``kind="box"``: quartiles, whiskers to 1.5 interquartile ranges, points beyond
        them not drawn) or one dot per example (``"strip"``), the mean marked, with the line
        PVI = 0 (no better than the label frequencies). Returns the matplotlib axes."""
        if kind not in ("box", "strip"):
            raise ValueError(f"kind must be 'box' or 'strip'; got {kind!r}")
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(set(self.labels)) + 1.5), 3.5))
        frame = pd.DataFrame({"label": [str(label) for label in self.labels], "pvi": self.pvi})
        order = frame.groupby("label")["pvi"].mean().sort_values(ascending=False)
        samples = [frame.loc[frame["label"] == label, "pvi"].to_numpy() for label in order.index]
        positions = np.arange(1, len(order) + 1)
        if kind == "box":
            ax.boxplot(samples, positions=positions, widths=0.6, showfliers=False)
        else:
            jitter = np.random.default_rng(0)
            for position, sample in zip(positions, samples):
                spread = jitter.uniform(-0.2, 0.2, sample.size)
                ax.plot(position + spread, sample, ".", ms=2, alpha=0.3, color="C0")
        ax.plot(positions, order.to_numpy(), "D", ms=4, color="C3", label="mean")
        ax.axhline(0.0, color="0.5", lw=0.8, ls="--")
        ax.set_xticks(positions, list(order.index), rotation=90, fontsize="small")
        ax.set_ylabel("PVI (bits)")
        ax.set_title(self.name, fontsize=10)
        return ax


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _format(path: str | Path) -> str:
    fmt = _SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValueError(f"path must end in one of {sorted(_SUFFIXES)}; got {str(path)!r}")
    return fmt


def pvi_figure(results: Sequence[PVIResult]) -> Any:
    """PVI by gold label: one representation's box plot (:meth:`PVIResult.plot`); several
    (the layers of a sweep) as a heat map of the mean PVI in bits, one row per representation
    and one column per label (labels ordered by their mean over representations), each cell
    written in it. Returns the matplotlib figure."""
    from matplotlib.figure import Figure

    if not results:
        raise ValueError("results: no PVI result to draw")
    if len(results) == 1:
        figure = Figure(figsize=(max(5.0, 0.4 * len(set(results[0].labels)) + 2), 4))
        results[0].plot(figure.subplots())
        figure.suptitle("pointwise V-information by label (Ethayarajh et al. 2022)", fontsize=10)
        return figure
    means = pd.DataFrame(
        {
            result.name: pd.Series(result.pvi).groupby([str(x) for x in result.labels]).mean()
            for result in results
        }
    ).T
    means = means[means.mean(axis=0).sort_values(ascending=False).index]
    width = max(6.0, 0.55 * means.shape[1] + 2.5)
    figure = Figure(figsize=(width, 0.45 * len(means) + 1.8), layout="constrained")
    ax = figure.subplots()
    bound = float(np.nanmax(np.abs(means.to_numpy()))) or 1.0
    image = ax.imshow(means.to_numpy(), cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    ax.set_xticks(range(means.shape[1]), list(means.columns), rotation=90, fontsize="small")
    ax.set_yticks(range(len(means)), list(means.index), fontsize="small")
    for (row, column), value in np.ndenumerate(means.to_numpy()):
        if np.isfinite(value):
            shade = "white" if abs(value) > 0.6 * bound else "black"  # legible on dark cells
            ax.text(column, row, f"{value:.1f}", ha="center", va="center", fontsize=6, color=shade)
    figure.colorbar(image, ax=ax, label="mean PVI (bits)")
    ax.set_title(
        "pointwise V-information by label, mean over test examples and seeds "
        "(Ethayarajh et al. 2022)",
        fontsize=9,
    )
    return figure


def plot_pvi(
    results: Sequence[PVIResult], stem: str | Path, options: FigureOptions | None = None
) -> tuple[Path, ...]:
    """Save :func:`pvi_figure` as ``stem.<format>`` for each of ``options.formats``; returns
    the paths."""
    return (options or FigureOptions()).save(pvi_figure(results), stem)
