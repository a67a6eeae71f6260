"""A family of structural probes over ranks and seeds, scored on held-out sentences, with the
Pareto frontier of UUAS (or root accuracy) against rank.

Hewitt & Manning (2019) §4 (Figure 4) vary the probe's rank and find UUAS saturating at a low
rank; with rank as the complexity axis, Pimentel et al. (2020, §3)'s Pareto frontier applies:
:meth:`StructuralFamily.frontier` keeps the ranks whose mean score beats every lower rank's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from probemeter._io import JsonResult, environment
from probemeter._validation import check_scalar, one_of
from probemeter.pareto.frontiers import pareto_frontier, pareto_hypervolume
from probemeter.structural.scoring import fitted_scale, mean_loss, predict_sentences, score
from probemeter.structural.training import (
    TARGETS,
    ProbeSpec,
    StructuralTraining,
    check_features,
    fit_structural_probes,
)
from probemeter.structural.trees import TreeData, sentence_split
from probemeter.training.probe_runs import Stopwatch

__all__ = ["HEADLINE", "POINT_COLUMNS", "StructuralFamily", "structural_probes"]

#: the headline score of each probe kind
HEADLINE = {"distance": "uuas", "depth": "root_accuracy"}
#: the columns of :attr:`StructuralFamily.points`
POINT_COLUMNS = (
    "rank",
    "seed",
    "n_train",
    "train_loss",
    "loss",
    "uuas",
    "root_accuracy",
    "spearman",
    "scale",
    "codelength",
    "uniform_codelength",
)


@dataclass(frozen=True)
class StructuralFamily(JsonResult):
    """Structural probes of several ranks and seeds, trained on one pool, scored on a test set.

    Attributes:
        name: the representation's name.
        target: ``"distance"`` or ``"depth"``.
        points: one row per probe (:data:`POINT_COLUMNS`): ``rank``, ``seed``, ``n_train``
            (training sentences), ``train_loss`` and ``loss`` (the paper's normalised L1 loss on
            the pool and the test sentences), ``uuas`` (distance) or ``root_accuracy`` (depth;
            the other NaN), ``spearman`` (DSpr. or NSpr.), ``scale`` (the Laplace scale fitted
            on the pool), ``codelength`` and ``uniform_codelength`` (the test targets under the
            probe's discretised Laplace and under the uniform code, **nats**).
        n_pool: training sentences; n_test: test sentences.
        metadata: training protocol, source of the trees, versions, timings.
        projections: the trained B (d, r) of each row (not saved, not compared).
    """

    name: str
    target: str
    points: pd.DataFrame = field(repr=False)
    n_pool: int
    n_test: int
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    projections: tuple[np.ndarray, ...] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        one_of(*TARGETS)(self.target, "target")
        missing = set(POINT_COLUMNS) - set(self.points.columns)
        if missing:
            raise ValueError(f"points lacks column(s) {sorted(missing)}")

    @property
    def metric(self) -> str:
        """The headline score: ``"uuas"`` for distance probes, ``"root_accuracy"`` for depth."""
        return HEADLINE[self.target]

    def summary(self) -> pd.DataFrame:
        """Per rank: the mean over seeds of every score, and the number of seeds."""
        columns = ["train_loss", "loss", self.metric, "spearman", "codelength"]
        grouped = self.points.groupby("rank")
        return grouped[columns].mean().assign(seeds=grouped.size())

    def frontier(self, metric: str | None = None) -> pd.DataFrame:
        """The Pareto frontier of the mean ``metric`` (default the headline) against rank
        (:func:`probemeter.pareto.pareto_frontier`): the rows of :meth:`summary` whose score is
        higher than that of every lower rank. ``metric`` is a score where higher is better: the
        headline or ``"spearman"``."""
        metric = metric or self.metric
        one_of(self.metric, "spearman")(metric, "metric")
        table = self.summary()
        table = table[np.isfinite(table[metric])]
        if table.empty:
            raise ValueError(f"no probe has a finite {metric}")
        kept = pareto_frontier(table.index.to_numpy(float), table[metric].to_numpy(float))
        return table.iloc[np.sort(kept)]

    def hypervolume(self, cap: float | None = None, metric: str | None = None) -> float:
        """Pareto hypervolume of the mean ``metric`` over ranks in [0, cap] (default: the
        largest rank), normalised by the cap (Pimentel et al. 2020, §3); ``metric`` as in
        :meth:`frontier`."""
        metric = metric or self.metric
        one_of(self.metric, "spearman")(metric, "metric")
        table = self.summary()
        cap = float(table.index.max()) if cap is None else cap
        return pareto_hypervolume(table.index.to_numpy(float), table[metric].to_numpy(float), cap)

    def to_frame(self) -> pd.DataFrame:
        """The tidy per-probe table with the representation's name and the target."""
        return self.points.assign(representation=self.name, target=self.target)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (codelengths in nats); :meth:`from_dict` restores it."""
        return {
            "name": self.name,
            "target": self.target,
            "unit": "nats",
            "n_pool": self.n_pool,
            "n_test": self.n_test,
            "points": {c: self.points[c].tolist() for c in POINT_COLUMNS},
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> StructuralFamily:
        if payload.get("unit", "nats") != "nats":
            raise ValueError(f"codelengths must be stored in nats; got {payload['unit']!r}")
        return cls(
            name=payload["name"],
            target=payload["target"],
            points=pd.DataFrame(payload["points"]).astype({"rank": "int64", "seed": "int64"}),
            n_pool=int(payload["n_pool"]),
            n_test=int(payload["n_test"]),
            metadata=payload.get("metadata", {}),
        )

    def plot(self, ax: Any = None, *, metric: str | None = None, label: str | None = None) -> Any:
        """Mean ``metric`` (default the headline) against rank (log₂ axis) with the min–max
        band over seeds; frontier points filled. Returns the matplotlib axes."""
        import matplotlib.pyplot as plt

        metric = metric or self.metric
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        grouped = self.points.groupby("rank")[metric]
        ranks = grouped.mean().index.to_numpy()
        line = ax.plot(ranks, grouped.mean(), marker="o", mfc="white", label=label or self.name)
        colour = line[0].get_color()
        ax.fill_between(ranks, grouped.min(), grouped.max(), color=colour, alpha=0.2, lw=0)
        front = self.frontier(metric)
        ax.plot(front.index, front[metric], "o", color=colour, ls="none")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("probe rank r")
        ax.set_ylabel(_AXIS_LABELS.get(metric, metric))
        return ax


_AXIS_LABELS = {
    "uuas": "UUAS",
    "root_accuracy": "root accuracy",
    "spearman": "Spearman (lengths 5–50)",
    "loss": "test L1 loss",
    "codelength": "test codelength (nats)",
}


def structural_probes(
    features: object,
    trees: TreeData,
    target: str = "distance",
    *,
    ranks: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
    seeds: int = 1,
    test_size: float = 0.2,
    split: tuple[Sequence[int], Sequence[int]] | None = None,
    config: StructuralTraining | None = None,
    name: str | None = None,
) -> StructuralFamily:
    """Train distance or depth probes of every rank × seed on the pool sentences, all at once
    (:func:`~probemeter.structural.training.fit_structural_probes`), and score each on the test
    sentences: UUAS or root accuracy, Spearman, L1 loss, and the codelength of the test targets
    under the Laplace scale fitted on the pool (Hewitt & Manning 2019, §3–4).

    Args:
        features: (n_words, d) per-word features, sentence after sentence as in ``trees``.
        trees: the sentences' trees.
        target: ``"distance"`` or ``"depth"``.
        ranks: the probe ranks r (each ≤ d is the useful range; any positive rank works).
        seeds: seeds per rank (different initial B and minibatch orders).
        test_size: the share of sentences held out (:func:`sentence_split`), unless ``split``
            gives (pool, test) sentence indices.
        config: the training protocol (default :class:`StructuralTraining`).
        name: the representation's name for results.

    Raises:
        ValueError: bad features, target, ranks, seeds or split.
    """
    one_of(*TARGETS)(target, "target")
    config = config or StructuralTraining()
    array = check_features(features, trees)
    check_scalar(seeds, "seeds", int, min_val=1)
    if not ranks:
        raise ValueError("ranks is empty; give at least one rank")
    pool, test = _split(trees, test_size, split, config.random_state)
    specs = [ProbeSpec(int(r), seed, pool) for r in ranks for seed in range(seeds)]
    with Stopwatch() as training:
        projections = fit_structural_probes(array, trees, target, specs, config)
    rows = []
    with Stopwatch() as scoring:
        for spec, projection in zip(specs, projections):
            on_pool = predict_sentences(projection, array, trees, target, pool)
            scale = fitted_scale(on_pool, target)
            tested = score(
                predict_sentences(projection, array, trees, target, test), trees, target, scale
            )
            rows.append(
                {
                    "rank": spec.rank,
                    "seed": spec.seed,
                    "n_train": spec.n,
                    "train_loss": mean_loss(on_pool, target),
                    "loss": tested.loss,
                    "uuas": tested.uuas,
                    "root_accuracy": tested.root_accuracy,
                    "spearman": tested.spearman,
                    "scale": scale,
                    "codelength": tested.codelength,
                    "uniform_codelength": tested.uniform_codelength,
                }
            )
    return StructuralFamily(
        name=name or "features",
        target=target,
        points=pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
        n_pool=int(pool.size),
        n_test=int(test.size),
        metadata=_metadata(trees, config, {"train": training.seconds, "score": scoring.seconds}),
        projections=tuple(projections),
    )


def _split(
    trees: TreeData,
    test_size: float,
    split: tuple[Sequence[int], Sequence[int]] | None,
    random_state: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The (pool, test) sentence indices: ``split`` checked, or :func:`sentence_split`."""
    if split is None:
        return sentence_split(trees.n_sentences, test_size, random_state)
    pool, test = (np.asarray(part, dtype=np.int64).reshape(-1) for part in split)
    for part, label in ((pool, "pool"), (test, "test")):
        if part.size == 0 or part.min() < 0 or part.max() >= trees.n_sentences:
            raise ValueError(
                f"split's {label} sentences must be a non-empty set of indices in "
                f"0..{trees.n_sentences - 1}"
            )
    if np.intersect1d(pool, test).size:
        raise ValueError("split's pool and test sentences overlap")
    return pool, test


def _metadata(trees: TreeData, config: StructuralTraining, seconds: dict[str, float]) -> dict:
    """What every structural result records: protocol, trees, timings and versions."""
    return {
        "training": config.to_dict(),
        "trees": {"source": trees.source, "silver": trees.silver, "sentences": trees.n_sentences},
        "likelihood": "Laplace discretised to the integers, truncated to the support",
        "seconds": seconds,
        "versions": environment(),
    }
