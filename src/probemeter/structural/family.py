"""A family of structural probes over ranks and seeds, scored on held-out sentences, with the
Pareto frontier of UUAS (or root accuracy) against rank.

Hewitt & Manning (2019) §4 (Figure 4) vary the probe's rank and find UUAS saturating at a low
rank; with rank as the complexity axis, Pimentel et al. (2020, §3)'s Pareto frontier applies:
:meth:`StructuralFamily.frontier` keeps the ranks whose mean score beats every lower rank's.

The pool's sentences are split once (:func:`~probemeter.structural.trees.development_split`,
a seeded share h = ``holdout``, default 0.1): every probe trains on the training part and is
scored on the **development** sentences and on the test sentences. The development sentences
serve two choices, neither of which may see the test sentences:

* each probe's Laplace scale b (:mod:`probemeter.structural.likelihood`) is fitted on them,
  b = argmin_b Σ_{s ∈ dev} −ln Q(y_s | B, b), and the test codelength is coded with it. A
  scale fitted on the probe's own training sentences is as small as its training residuals:
  the more the probe overfits (high rank, few sentences), the more over-confident its code,
  which biases codelength against high ranks;
* the best rank (:meth:`StructuralFamily.best_rank`): the highest mean development UUAS
  (root accuracy) over seeds. The test scores reported at that rank are then unbiased by the
  choice; picking the rank by its test score would make them optimistic.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419

    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
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
from probemeter.structural.defaults import STRUCTURAL_RANKS, STRUCTURAL_SEEDS
from probemeter.structural.scoring import fitted_scale, mean_loss, predict_sentences, score
from probemeter.structural.training import (
    TARGETS,
    ProbeSpec,
    StructuralTraining,
    check_features,
    fit_structural_layers,
)
from probemeter.structural.trees import HOLDOUT, TreeData, development_split, sentence_split
from probemeter.training.config import config_or_default
from probemeter.training.probe_runs import Stopwatch

__all__ = [
    "FAMILY_SCHEMA",
    "HEADLINE",
    "POINT_COLUMNS",
    "StructuralFamily",
    "structural_families",
    "structural_probes",
]

#: the schema of :meth:`StructuralFamily.to_dict`
FAMILY_SCHEMA = "probemeter.structural-family/2"
#: the headline score of each probe kind
HEADLINE = {"distance": "uuas", "depth": "root_accuracy"}
#: the columns of :attr:`StructuralFamily.points`
POINT_COLUMNS = (
    "rank",
    "seed",
    "n_train",
    "train_loss",
    "dev_loss",
    "dev_uuas",
    "dev_root_accuracy",
    "dev_spearman",
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
    """Structural probes of several ranks and seeds, trained on the training part of a pool,
    scored on its development part and on a test set (module docstring).

    Attributes:
        name: the representation's name.
        target: ``"distance"`` or ``"depth"``.
        points: one row per probe (:data:`POINT_COLUMNS`): ``rank``, ``seed``, ``n_train``
            (training sentences), ``train_loss``, ``dev_loss`` and ``loss`` (the paper's
            normalised L1 loss on the training, development and test sentences),
            ``dev_uuas``/``uuas`` (distance) or ``dev_root_accuracy``/``root_accuracy``
            (depth; the other NaN) and ``dev_spearman``/``spearman`` (DSpr. or NSpr.) on the
            development and test sentences, ``scale`` (the Laplace scale fitted on the
            development sentences), ``codelength`` and ``uniform_codelength`` (the test
            targets under the probe's discretised Laplace and under the uniform code,
            **nats**).
        n_pool: the pool's sentences (training and development); n_dev: the development
            sentences among them; n_test: test sentences.
        metadata: training protocol, source of the trees, the development split, versions,
            timings.
        projections: the trained B (d, r) of each row (not saved, not compared).
    """

    name: str
    target: str
    points: pd.DataFrame = field(repr=False)
    n_pool: int
    n_dev: int
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

    @property
    def rank_chosen_on(self) -> str:
        """Which sentences chose :meth:`best_rank`, in words."""
        return f"dev: {self.n_dev} sentences held out of the pool"

    def summary(self) -> pd.DataFrame:
        """Per rank: the mean over seeds of every score, and the number of seeds."""
        columns = [
            "train_loss",
            "dev_loss",
            f"dev_{self.metric}",
            "dev_spearman",
            "loss",
            self.metric,
            "spearman",
            "codelength",
        ]
        grouped = self.points.groupby("rank")
        return grouped[columns].mean().assign(seeds=grouped.size())

    def best_rank(self) -> int:
        """The rank chosen on the development sentences: the highest mean development UUAS
        (root accuracy) over the seeds that have one (the lowest such rank on ties). Where no
        rank has one (no development sentence has two non-punctuation words), the lowest
        mean development L1 loss. Never a test score (module docstring)."""
        grouped = self.points.groupby("rank")
        means = grouped[f"dev_{self.metric}"].mean()
        finite = means[np.isfinite(means)]
        if finite.empty:
            return int(grouped["dev_loss"].mean().idxmin())
        return int(finite.idxmax())

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
            "schema": FAMILY_SCHEMA,
            "name": self.name,
            "target": self.target,
            "unit": "nats",
            "n_pool": self.n_pool,
            "n_dev": self.n_dev,
            "n_test": self.n_test,
            "points": {c: self.points[c].tolist() for c in POINT_COLUMNS},
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> StructuralFamily:
        """The family of :meth:`to_dict`.

        Raises:
            ValueError: a family stored by an older version (its scale fitted on the training
                sentences, no development scores), or codelengths not in nats.
        """
        if payload.get("schema") != FAMILY_SCHEMA:
            raise ValueError(
                f"a structural family of schema {payload.get('schema')!r}, not {FAMILY_SCHEMA!r}: "
                "stored by an older version, which fitted the Laplace scale on the probes' "
                "training sentences and held out no development sentences; compute it again"
            )
        if payload.get("unit", "nats") != "nats":
            raise ValueError(f"codelengths must be stored in nats; got {payload['unit']!r}")
        return cls(
            name=payload["name"],
            target=payload["target"],
            points=pd.DataFrame(payload["points"]).astype({"rank": "int64", "seed": "int64"}),
            n_pool=int(payload["n_pool"]),
            n_dev=int(payload["n_dev"]),
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
    ranks: Sequence[int] = STRUCTURAL_RANKS,
    seeds: int = STRUCTURAL_SEEDS,
    test_size: float = 0.2,
    split: tuple[Sequence[int], Sequence[int]] | None = None,
    config: StructuralTraining | None = None,
    name: str | None = None,
    holdout: float = HOLDOUT,
) -> StructuralFamily:
    """Train distance or depth probes of every rank × seed on the training part of the pool,
    all at once (:func:`~probemeter.structural.training.fit_structural_probes`), and score each
    on the development and the test sentences: UUAS or root accuracy, Spearman, L1 loss, and
    the codelength of the test targets under the Laplace scale fitted on the development
    sentences (Hewitt & Manning 2019, §3–4; module docstring). The one-layer, one-target case
    of :func:`structural_families`.

    Args:
        features: (n_words, d) per-word features, sentence after sentence as in ``trees``.
        trees: the sentences' trees.
        target: ``"distance"`` or ``"depth"``.
        ranks: the probe ranks r (each ≤ d is the useful range; any positive rank works).
        seeds: seeds per rank (different initial B and minibatch orders).
        test_size: the share of sentences held out (:func:`sentence_split`), unless ``split``
            gives (pool, test) sentence indices.
        config: the training protocol (default :class:`StructuralTraining`); its
            ``random_state`` also draws the development sentences.
        name: the representation's name for results.
        holdout: h, the share of the pool's sentences held out as development sentences
            (:func:`~probemeter.structural.trees.development_split`: ⌈h·m⌉ of m, at least one,
            and at least one left to train on).

    Raises:
        ValueError: bad features, target, ranks, seeds, holdout or split (a pool of fewer
            than 2 sentences).
    """
    one_of(*TARGETS)(target, "target")
    [families] = structural_families(
        [features],
        trees,
        (target,),
        ranks=ranks,
        seeds=seeds,
        test_size=test_size,
        split=split,
        config=config,
        names=[name or "features"],
        holdout=holdout,
    )
    return families[target]


def structural_families(
    layers: Sequence[object],
    trees: TreeData,
    targets: Sequence[str] = TARGETS,
    *,
    ranks: Sequence[int] = STRUCTURAL_RANKS,
    seeds: int = STRUCTURAL_SEEDS,
    test_size: float = 0.2,
    split: tuple[Sequence[int], Sequence[int]] | None = None,
    config: StructuralTraining | None = None,
    names: Sequence[str] | None = None,
    holdout: float = HOLDOUT,
    n_jobs: int | None = 1,
) -> list[dict[str, StructuralFamily]]:
    """Per layer, a family (:func:`structural_probes`) of each target, every probe of every
    layer and target trained together on one split
    (:func:`~probemeter.structural.training.fit_structural_layers`: the probes of a spec
    share their minibatches). Each family's ``metadata["seconds"]["train"]`` is the time of
    that joint training.

    Args:
        layers: per layer, (n_words, d) per-word features, sentence after sentence as in
            ``trees``.
        trees, ranks, seeds, test_size, split, config, holdout: as :func:`structural_probes`.
        targets: distinct probe kinds, ``"distance"`` and/or ``"depth"``.
        names: each layer's name for results (default ``"layer 0"``, ``"layer 1"``, …).
        n_jobs: worker processes sharing the training
            (:func:`~probemeter.structural.training.fit_structural_layers`); the results do
            not depend on it.

    Raises:
        ValueError: as :func:`structural_probes`; no layers, bad or repeated targets, or
            names not one per layer.
    """
    config = config_or_default(config, StructuralTraining())
    if not layers:
        raise ValueError("layers is empty; give at least one layer's features")
    arrays = [check_features(features, trees) for features in layers]
    names = [f"layer {number}" for number in range(len(arrays))] if names is None else names
    if len(names) != len(arrays):
        raise ValueError(f"names must name each of the {len(arrays)} layers; got {len(names)}")
    check_scalar(seeds, "seeds", int, min_val=1)
    if not ranks:
        raise ValueError("ranks is empty; give at least one rank")
    pool, test = _split(trees, test_size, split, config.random_state)
    train, dev = development_split(pool, holdout, config.random_state)
    specs = [ProbeSpec(int(r), seed, train) for r in ranks for seed in range(seeds)]
    with Stopwatch() as training:
        trained = fit_structural_layers(arrays, trees, targets, specs, config, n_jobs=n_jobs)
    setting = (pool, dev, test, config, holdout, training.seconds)
    return [
        {
            target: _scored(array, trees, target, specs, layer[target], name, *setting)
            for target in targets
        }
        for array, layer, name in zip(arrays, trained, names)
    ]


def _scored(
    array: np.ndarray,
    trees: TreeData,
    target: str,
    specs: Sequence[ProbeSpec],
    projections: Sequence[np.ndarray],
    name: str,
    pool: np.ndarray,
    dev: np.ndarray,
    test: np.ndarray,
    config: StructuralTraining,
    holdout: float,
    train_seconds: float,
) -> StructuralFamily:
    """The family of trained probes ``projections`` (one per spec), each scored on its
    training, development and test sentences (:func:`structural_probes`)."""
    train = specs[0].sentences
    rows = []
    with Stopwatch() as scoring:
        for spec, projection in zip(specs, projections):
            on_train = predict_sentences(projection, array, trees, target, train)
            on_dev = predict_sentences(projection, array, trees, target, dev)
            scale = fitted_scale(on_dev, target)
            developed = score(on_dev, trees, target)
            tested = score(
                predict_sentences(projection, array, trees, target, test), trees, target, scale
            )
            rows.append(
                {
                    "rank": spec.rank,
                    "seed": spec.seed,
                    "n_train": spec.n,
                    "train_loss": mean_loss(on_train, target),
                    "dev_loss": developed.loss,
                    "dev_uuas": developed.uuas,
                    "dev_root_accuracy": developed.root_accuracy,
                    "dev_spearman": developed.spearman,
                    "loss": tested.loss,
                    "uuas": tested.uuas,
                    "root_accuracy": tested.root_accuracy,
                    "spearman": tested.spearman,
                    "scale": scale,
                    "codelength": tested.codelength,
                    "uniform_codelength": tested.uniform_codelength,
                }
            )
    seconds = {"train": train_seconds, "score": scoring.seconds}
    return StructuralFamily(
        name=name,
        target=target,
        points=pd.DataFrame(rows, columns=list(POINT_COLUMNS)),
        n_pool=int(pool.size),
        n_dev=int(dev.size),
        n_test=int(test.size),
        metadata=_metadata(trees, config, seconds)
        | {
            "holdout": holdout,
            "scale": "fitted on the development sentences held out of the pool",
            "rank_chosen_on": f"dev: {dev.size} sentences held out of the pool",
        },
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
        "trees": {
            "source": trees.source,
            "silver": trees.silver,
            "sentences": trees.n_sentences,
            "punctuation": trees.punctuation_rule,
        },
        "likelihood": "Laplace discretised to the integers, truncated to the support",
        "seconds": seconds,
        "versions": environment(),
    }
