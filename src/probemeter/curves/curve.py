"""Loss-data curves: test loss of probes trained on nested subsets of growing size n.

Whitney et al. §2.1 and Fig. 1: plot the loss L(A_φ, n) of the predictor learned from n points
against n. Every measure of :mod:`probemeter.curves.measures` is a function of this curve: points at
fixed n (VA, MI), areas along n (MDL), areas and crossings along the loss axis (SDL, εSC).

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020).
    Evaluating representations by the complexity of learning low-loss predictors.
    arXiv:2009.07368

    Tenney, I., Xia, P., Chen, B., Wang, A., Poliak, A., McCoy, R. T., Kim, N., Van Durme, B.,
    Bowman, S. R., Das, D. & Pavlick, E. (2019). What do you learn from context? Probing for
    sentence structure in contextualized word representations. *ICLR 2019*. arXiv:1905.06316
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from probemeter._execution import Execution, execution_of
from probemeter._io import JsonResult, classes_from_json, classes_to_json
from probemeter._summary import SeedCorrectness
from probemeter._validation import check_scalar, one_of
from probemeter.curves.defaults import (
    CURVE_DEV_FRACTION,
    CURVE_PROBE,
    CURVE_SEEDS,
    CURVE_TRAINING,
)
from probemeter.curves.shifted import shifted_evaluations
from probemeter.data import ProbeData, check_probe_data, nested_subset
from probemeter.probes import MLP, Direction
from probemeter.probes.saved import ProbeSet
from probemeter.pvi import PVIResult, pointwise_v_information
from probemeter.training.config import TrainingConfig, config_or_default, grid_settings
from probemeter.training.engine import fit_evaluate
from probemeter.training.precision import resolve_precision
from probemeter.training.probe_runs import (
    Stopwatch,
    held_out_split,
    kept_spans,
    learned_mix,
    run_metadata,
    seed_grid,
)

__all__ = ["LossDataCurve", "default_sizes", "loss_data_curve"]

#: per-probe columns of :meth:`LossDataCurve.to_frame`
METRICS = ("loss", "loss_truncated", "accuracy")
#: per-probe columns a curve of label sets adds (:attr:`LossDataCurve.multilabel`)
F1_METRICS = ("micro_f1", "macro_f1")
#: per-probe columns measured on a development split held out of the pool (``dev_fraction``)
DEV_METRICS = tuple(f"dev_{metric}" for metric in METRICS)
#: :func:`loss_data_curve`'s default probe, the ``curve`` method's, built once (an MLP is a
#: frozen value)
_PROBE = MLP(CURVE_PROBE)


def default_sizes(pool_size: int, n_points: int | None = None, smallest: int = 10) -> np.ndarray:
    """Log-uniform training-set sizes from ``smallest`` to the pool size, as distinct integers.

    ``n_points`` defaults to 10 for pools up to 10³ points, growing linearly in log10(pool) to
    20 for pools of 10⁶ and more (the papers use 10–20 sizes: Whitney et al., App. A and C).
    Sizes are rounded, so none exceeds the pool, and the largest is always the full pool.
    """
    check_scalar(pool_size, "pool_size", int, min_val=1)
    smallest = min(smallest, pool_size)
    if n_points is None:
        n_points = int(np.clip(round(10 + (np.log10(pool_size) - 3) * 10 / 3), 10, 20))
    sizes = np.unique(np.round(np.geomspace(smallest, pool_size, n_points)).astype(np.int64))
    sizes = sizes[(sizes >= 1) & (sizes <= pool_size)]
    return sizes


@dataclass(frozen=True)
class LossDataCurve(JsonResult):
    """The loss-data curve of one representation: one row per trained probe.

    Attributes:
        name: the representation's name.
        points: tidy table, one row per probe, columns ``n, seed, loss, loss_truncated,
            accuracy``; ``loss`` is the mean test cross-entropy in **nats**, ``loss_truncated``
            the mean of min(CE, 1 nat), ``accuracy`` the test accuracy. For label sets
            (``multilabel``) ``loss`` is the binary cross-entropy summed over the K labels (nats
            per example), ``accuracy`` the exact-set-match rate, and the columns ``micro_f1``
            and ``macro_f1`` are added (:mod:`probemeter._multilabel`).
        n_classes: K, so the uniform code costs log K nats per label (K·log 2 for label sets).
        pool_size: size of the training pool (the largest n possible).
        n_test: number of test examples each probe was evaluated on.
        metadata: probe, training config (with its stopping rule), random state, device,
            library versions, timings; for ``precision="auto"``, ``"precision"``: what it
            chose, why, and the two measured rates
            (:meth:`~probemeter.training.precision.PrecisionChoice.to_dict`).
        final_correct: per seed, which test examples the probe trained on the largest size
            classified correctly (for McNemar's test between representations evaluated on one
            test set); None for curves stored before it was recorded.
        classes: the original label of each class index (``ProbeData.classes``, from
            ``labels="encode"`` or a task's tag set); None when the data had none.
        probes: with ``loss_data_curve(..., keep_probes=True)``, the trained probes, one per
            point and in the order of ``points``, with ``info`` ``{"n", "seed"}``
            (:class:`~probemeter.probes.ProbeSet`); else None. Not part of :meth:`to_dict`
            (nor of saved results or equality), and not carried by :meth:`truncate` and
            :meth:`merge`.
        multilabel: the labels were label sets (multi-label targets; Tenney et al. 2019): K
            sigmoid outputs, binary cross-entropy per label.
        pvi: with ``loss_data_curve(..., pvi=True)``, the pointwise V-information of every test
            example under the probes of the largest size, per seed
            (:class:`~probemeter.pvi.PVIResult`); else None. Written by :meth:`to_dict` when
            present; not carried by :meth:`truncate`, :meth:`for_seed` and :meth:`merge`.
        monitor: for two classes (single labels), the monitor metrics of the probes of the
            largest size, per seed and their mean (:func:`probemeter.monitor.monitor_metrics`:
            AUROC, recall at 1 % and 5 % FPR with thresholds fixed on the development split,
            Brier score, ECE, cluster-bootstrap intervals over the test set), with
            ``"positive"`` (the positive class's index and label); None for more classes or
            label sets. Written by :meth:`to_dict` when present; not carried by
            :meth:`truncate`, :meth:`for_seed` and :meth:`merge`.

        shifted: for data with shifted test sets (:attr:`~probemeter.data.ProbeData.shifted`),
            the probes of the largest size on each, per seed and example
            (:func:`probemeter.curves.shifted.shifted_evaluations`); else None. Written by
            :meth:`to_dict` when present; not carried by :meth:`truncate`, :meth:`for_seed`
            and :meth:`merge`.

    A curve measured with a development split (``loss_data_curve(..., dev_fraction=...)``)
    has the columns ``dev_loss, dev_loss_truncated, dev_accuracy`` too: the same probes on
    pool examples held out of their training (:meth:`development_curve`).
    """

    name: str
    points: pd.DataFrame = field(repr=False)
    n_classes: int
    pool_size: int
    n_test: int
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    final_correct: SeedCorrectness | None = field(default=None, repr=False, compare=False)
    classes: tuple[Any, ...] | None = field(default=None, repr=False)
    probes: ProbeSet | None = field(default=None, repr=False, compare=False)
    multilabel: bool = False
    pvi: PVIResult | None = field(default=None, repr=False, compare=False)
    monitor: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    shifted: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        needed = {"n", "seed", *METRICS, *(F1_METRICS if self.multilabel else ())}
        missing = needed - set(self.points.columns)
        if missing:
            raise ValueError(f"points lacks column(s) {sorted(missing)}")
        if self.points.empty:
            raise ValueError("a loss-data curve needs at least one point")
        _check_points(self.points, self.pool_size)
        points = self.points.sort_values(["n", "seed"], kind="stable").reset_index(drop=True)
        object.__setattr__(self, "points", points)

    @property
    def sizes(self) -> np.ndarray:
        """The distinct training-set sizes n, ascending."""
        return np.unique(self.points["n"].to_numpy())

    @property
    def n_seeds(self) -> int:
        """The smallest number of seeds measured at any size."""
        return int(self.points.groupby("n")["seed"].nunique().min())

    @property
    def metrics(self) -> tuple[str, ...]:
        """The per-probe metric columns: :data:`METRICS`, and :data:`F1_METRICS` for label
        sets."""
        return METRICS + (F1_METRICS if self.multilabel else ())

    @property
    def has_development(self) -> bool:
        """Whether the probes were also measured on a held-out development split."""
        return set(DEV_METRICS) <= set(self.points.columns)

    def development_curve(self) -> LossDataCurve:
        """The curve of the same probes measured on the development split held out of the
        pool (its ``dev_*`` columns as ``loss``, ``loss_truncated``, ``accuracy``): what a
        comparison chooses on before it tests on the test set.

        Raises:
            ValueError: the curve was measured without a development split.
        """
        if not self.has_development:
            raise ValueError(
                f"curve {self.name!r} was measured without a development split (dev_fraction)"
            )
        points = self.points[["n", "seed", *DEV_METRICS]].rename(
            columns=dict(zip(DEV_METRICS, METRICS))
        )
        metadata = {**self.metadata, "evaluated_on": "development split"}
        n_dev = int(self.metadata.get("development", {}).get("n_dev", 0)) or self.n_test
        return LossDataCurve(
            self.name, points, self.n_classes, self.pool_size, n_dev, metadata,
            classes=self.classes,
        )  # fmt: skip

    @property
    def has_settings_grid(self) -> bool:
        """Whether the probes' settings were chosen from a grid on the development split
        (``loss_data_curve(..., settings=...)``; :meth:`settings_frame`)."""
        return "settings" in self.metadata

    def settings_frame(self) -> pd.DataFrame:
        """The grid of probe settings this curve chose from: one row per size n and setting,
        columns ``n, weight_decay, lr, dev_loss`` (mean over seeds, nats), ``chosen`` (the
        setting whose probes give the points at n), ``chosen_on`` (``"dev"``) and
        ``tested_on`` (``"test"``).

        Raises:
            ValueError: the curve was measured with one setting (no ``settings`` grid).
        """
        if not self.has_settings_grid:
            raise ValueError(f"curve {self.name!r} was measured without a grid of settings")
        record = self.metadata["settings"]
        rows = pd.DataFrame(record["dev_loss"]).drop(columns="dev_loss_seeds", errors="ignore")
        chosen = {(c["n"], c["weight_decay"], c["lr"]) for c in record["chosen"]}
        keys = zip(rows["n"], rows["weight_decay"], rows["lr"])
        rows["chosen"] = [key in chosen for key in keys]
        rows = rows[["n", "weight_decay", "lr", "dev_loss", "chosen"]]
        return rows.assign(chosen_on=record["chosen_on"], tested_on=record["tested_on"])

    def summary(self, metric: str = "loss") -> pd.DataFrame:
        """Per size n: mean, standard deviation, min and max of ``metric`` over seeds."""
        one_of(*self.metrics)(metric, "metric")
        grouped = self.points.groupby("n")[metric]
        return pd.DataFrame(
            {
                "mean": grouped.mean(),
                "std": grouped.std(ddof=1).fillna(0.0),
                "min": grouped.min(),
                "max": grouped.max(),
                "seeds": grouped.size(),
            }
        )

    def mean(self, metric: str = "loss") -> pd.Series:
        """Mean of ``metric`` over seeds at each n (the estimate of L(A_φ, n))."""
        return self.summary(metric)["mean"]

    def truncate(self, n_max: int) -> LossDataCurve:
        """The curve as it would be with data only up to ``n_max`` (sizes ≤ n_max); the final
        probes' correctness is kept only when they are still the largest, kept probes not."""
        kept = self.points[self.points["n"] <= n_max]
        if kept.empty:
            raise ValueError(
                f"no measured size is <= {n_max}; the smallest is {int(self.sizes[0])}"
            )
        final = self._final_correct_at(int(kept["n"].max()), self.final_correct)
        return replace(
            self,
            points=kept,
            pool_size=int(n_max),
            metadata=dict(self.metadata),
            final_correct=final,
            probes=None,
            pvi=None,
            monitor=None,
            shifted=None,
        )

    def for_seed(self, seed: int) -> LossDataCurve:
        """The curve of one seed's probes alone (one data order), e.g. for a measure's spread
        over seeds."""
        kept = self.points[self.points["seed"] == seed]
        if kept.empty:
            raise ValueError(f"seed {seed} has no point; seeds: {sorted(set(self.points.seed))}")
        final = None if self.final_correct is None else self.final_correct.select([seed])
        final = self._final_correct_at(int(kept["n"].max()), final)
        metadata = dict(self.metadata)
        return replace(
            self, points=kept, metadata=metadata, final_correct=final, probes=None, pvi=None,
            monitor=None, shifted=None,
        )  # fmt: skip

    @staticmethod
    def _final_correct_at(
        largest: int, *candidates: SeedCorrectness | None
    ) -> SeedCorrectness | None:
        """The first candidate whose probes were trained on ``largest`` examples."""
        return next((c for c in candidates if c is not None and c.n_train == largest), None)

    def merge(self, other: LossDataCurve) -> LossDataCurve:
        """This curve with the points of ``other`` (same representation) added; a point
        (n, seed) present in both is kept from ``other``."""
        if (other.n_classes, other.pool_size, other.n_test, other.classes, other.multilabel) != (
            self.n_classes,
            self.pool_size,
            self.n_test,
            self.classes,
            self.multilabel,
        ):
            raise ValueError(
                "cannot merge curves of different data (classes, class labels, pool or test size)"
            )
        points = pd.concat([self.points, other.points]).drop_duplicates(["n", "seed"], keep="last")
        final = self._final_correct_at(
            int(points["n"].max()), other.final_correct, self.final_correct
        )
        metadata = dict(self.metadata)
        return replace(
            self, points=points, metadata=metadata, final_correct=final, probes=None, pvi=None,
            monitor=None, shifted=None,
        )  # fmt: skip

    def to_frame(self) -> pd.DataFrame:
        """The tidy per-probe table, with the representation's name as a column."""
        return self.points.assign(representation=self.name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary; :meth:`from_dict` restores the curve exactly. ``classes``
        is the list of original labels (:func:`~probemeter._io.classes_to_json`) or null;
        ``multilabel`` is written only for label sets (true), ``pvi`` only when measured."""
        columns = ("n", "seed", *self.metrics, *(DEV_METRICS if self.has_development else ()))
        return {
            "name": self.name,
            "unit": "nats",
            "n_classes": self.n_classes,
            "classes": classes_to_json(self.classes),
            "pool_size": self.pool_size,
            "n_test": self.n_test,
            "points": {column: self.points[column].tolist() for column in columns},
            "metadata": self.metadata,
            "final_correct": None if self.final_correct is None else self.final_correct.to_dict(),
            **({"multilabel": True} if self.multilabel else {}),
            **({} if self.pvi is None else {"pvi": self.pvi.to_dict()}),
            **({} if self.monitor is None else {"monitor": self.monitor}),
            **({} if self.shifted is None else {"shifted": self.shifted}),
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> LossDataCurve:
        if payload.get("unit", "nats") != "nats":
            raise ValueError(f"curve losses must be stored in nats; got {payload['unit']!r}")
        final, pvi = payload.get("final_correct"), payload.get("pvi")
        try:
            points = pd.DataFrame(payload["points"])
            return cls(
                name=payload["name"],
                points=points.astype({"n": "int64", "seed": "int64"}),
                n_classes=int(payload["n_classes"]),
                pool_size=int(payload["pool_size"]),
                n_test=int(payload["n_test"]),
                metadata=payload.get("metadata", {}),
                final_correct=None if final is None else SeedCorrectness.from_dict(final),
                classes=classes_from_json(payload.get("classes")),
                multilabel=bool(payload.get("multilabel", False)),
                pvi=None if pvi is None else PVIResult.from_dict(pvi),
                monitor=payload.get("monitor"),
                shifted=payload.get("shifted"),
            )
        except KeyError as missing:
            raise ValueError(f"curve dictionary lacks the key {missing}") from None

    def plot(
        self,
        ax: Any = None,
        *,
        metric: str = "loss",
        epsilon: float | None = None,
        shade_sdl: bool = True,
        label: str | None = None,
        color: Any = None,
    ) -> Any:
        """Draw the mean curve against n (log x) with a min–max band over seeds.

        With ``epsilon`` (nats), draw the line y = ε (labelled, for a legend) and
        (``shade_sdl``) shade the SDL area between the curve and ε, as a left-edge step function
        (the Riemann sum of :func:`measures.sdl`). Returns the matplotlib axes.
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        stats = self.summary(metric)
        sizes = stats.index.to_numpy()
        line = ax.plot(
            sizes, stats["mean"], marker="o", ms=3, label=label or self.name, color=color
        )
        colour = line[0].get_color()
        ax.fill_between(sizes, stats["min"], stats["max"], alpha=0.2, color=colour, lw=0)
        if epsilon is not None:
            ax.axhline(epsilon, color="0.3", ls="--", lw=1, label=f"ε = {epsilon:g} nats")
            if shade_sdl:
                edges = np.append(sizes, self.pool_size)
                heights = np.append(stats["mean"].to_numpy(), stats["mean"].iloc[-1])
                ax.fill_between(
                    edges,
                    np.maximum(heights, epsilon),
                    epsilon,
                    step="post",
                    alpha=0.12,
                    color=colour,
                    lw=0,
                )
        ax.set_xscale("log")
        ax.set_xlabel("training examples n")
        labels = {
            "loss": "test loss (nats)",
            "accuracy": "test accuracy",
            "micro_f1": "test micro-F1",
        }
        ax.set_ylabel(labels.get(metric, metric))
        return ax


def _check_points(points: pd.DataFrame, pool_size: int) -> None:
    """Values no probe can produce (an edited or corrupted results file): a negative loss, an
    accuracy or truncated loss outside [0, 1], a size outside [1, pool_size]."""
    problems = {
        "loss": points["loss"] < 0,
        "loss_truncated": (points["loss_truncated"] < 0) | (points["loss_truncated"] > 1),
        "accuracy": (points["accuracy"] < 0) | (points["accuracy"] > 1),
        "n": (points["n"] < 1) | (points["n"] > pool_size),
    }
    for column, bad in problems.items():
        if bad.any():
            value = points.loc[bad, column].iloc[0]
            valid = {"loss": ">= 0 (nats)", "n": f"in [1, {pool_size}]"}.get(column, "in [0, 1]")
            raise ValueError(f"points.{column} must be {valid}; got {value}")


def _check_sizes(sizes: Any, pool_size: int, data: ProbeData) -> list[int]:
    """``data.check_sizes`` against the pool the probes train on (less a held-out split)."""
    values = data.check_sizes(sizes)
    if max(values) > pool_size:
        raise ValueError(
            f"sizes: {max(values)} exceeds the {pool_size} pool examples left for training "
            f"after the development split (of a pool of {data.pool_size})"
        )
    return values


def _development_points(evaluation: Any, data: ProbeData, dev_rows: np.ndarray) -> dict:
    """Each probe's loss, truncated loss (min(cross-entropy, 1 nat), as the engine's) and
    accuracy on the held-out development rows, from their per-example scores."""
    labels = np.asarray(data.y_train)[dev_rows]
    nll = np.stack(evaluation.pool_nll).astype(np.float64)
    predictions = np.stack(evaluation.pool_predictions)
    correct = predictions == labels[None, :]
    if correct.ndim == 3:  # label sets: the whole set predicted
        correct = correct.all(axis=2)
    return {
        "dev_loss": nll.mean(axis=1),
        "dev_loss_truncated": np.minimum(nll, 1.0).mean(axis=1),
        "dev_accuracy": correct.mean(axis=1),
    }


def _choose_settings(
    configs: Sequence[TrainingConfig],
    dev_loss: np.ndarray,
    points: Sequence[tuple[int, int]],
) -> tuple[np.ndarray, dict[str, Any]]:
    """Per size, the setting of ``configs`` with the lowest development loss, mean over seeds
    (the first on ties): the positions of its probes among every setting's (setting after
    setting, each over ``points``, the (seed, n) of one setting's probes) in the order of
    ``points``, and the record of the choice (``metadata["settings"]``). Only development
    losses enter: the test set is not looked at."""
    per_setting = dev_loss.reshape(len(configs), len(points))
    sizes = np.array([n for _, n in points])
    chosen = np.empty(len(points), dtype=np.int64)
    chosen_rows, dev_rows = [], []
    for n in np.unique(sizes):
        at_n = np.flatnonzero(sizes == n)
        means = per_setting[:, at_n].mean(axis=1)
        best = int(np.argmin(means))
        chosen[at_n] = best * len(points) + at_n
        chosen_rows.append(_setting_row(configs[best], n=int(n)))
        for config, mean, seeds in zip(configs, means, per_setting[:, at_n]):
            row = _setting_row(config, n=int(n), dev_loss=float(mean))
            dev_rows.append({**row, "dev_loss_seeds": [float(v) for v in seeds]})
    record = {
        "grid": {
            name: list(dict.fromkeys(getattr(c, name) for c in configs))
            for name in ("weight_decay", "lr")
        },
        "rule": "per size n, the setting of the lowest development loss (mean over seeds; the "
        "first on ties); the points are its probes' test losses",
        "chosen_on": "dev",
        "tested_on": "test",
        "chosen": chosen_rows,
        "dev_loss": dev_rows,
    }
    return chosen, record


def _setting_row(config: TrainingConfig, **values: Any) -> dict[str, Any]:
    """``values`` with ``config``'s weight decay and learning rate."""
    return {**values, "weight_decay": config.weight_decay, "lr": config.lr}


def loss_data_curve(
    data: ProbeData,
    probe: MLP = _PROBE,
    sizes: Sequence[int] | np.ndarray | None = None,
    seeds: int | Sequence[int] = CURVE_SEEDS,
    *,
    config: TrainingConfig | None = None,
    random_state: int = 0,
    execution: Execution | None = None,
    keep_probes: bool = False,
    dev_fraction: float = CURVE_DEV_FRACTION,
    pvi: bool = False,
    settings: Mapping[str, Sequence[float]] | None = None,
    positive: int | None = None,
    **old: Any,
) -> LossDataCurve:
    """Estimate the loss-data curve of ``data`` by training one probe per (size, seed).

    Probe (n, s) trains on the first n points of seed s's permutation of the pool (subsets are
    nested per seed), from initial weights drawn from the stream keyed by
    (random_state, s, n), for exactly ``config.steps`` Adam updates; all probes are trained at
    once by the engine and evaluated on the test set. Which test examples the probes of the largest
    size got right is kept (:attr:`LossDataCurve.final_correct`) for paired tests.

    Label sets (``data.multilabel``: multi-label targets, e.g. edge probing after Tenney et
    al. 2019) are measured by probes with K sigmoid outputs and binary cross-entropy per label:
    the loss is the sum of the K Bernoulli codes in nats per example, the code SDL and εSC
    integrate unchanged; an example counts as correct (``accuracy``, ``final_correct``) when
    its whole label set is predicted exactly; the points add micro- and macro-F1.

    Args:
        data: the representation's features and labels.
        probe: probe architecture; default ``MLP((512, 512))`` (Whitney et al., App. C.1; the
            ``curve`` method's, :data:`~probemeter.curves.defaults.CURVE_PROBE`).
        sizes: training-set sizes n; default :func:`default_sizes` of the pool.
        seeds: a count (seeds 0..seeds-1) or explicit seed ids; default 4, the ``curve``
            method's (:data:`~probemeter.curves.defaults.CURVE_SEEDS`).
        config: how every probe trains (:class:`~probemeter.training.config.TrainingConfig`);
            default :data:`~probemeter.curves.defaults.CURVE_TRAINING`, Whitney et al.'s
            protocol and the ``curve`` method's (1000 Adam updates at lr 1e-4 on minibatches
            of 256, f32). ``precision="auto"`` is resolved here, on ``execution``'s device,
            before anything trains (:func:`~probemeter.training.precision.resolve_precision`).
        random_state: global seed; results are a deterministic function of it.
        execution: where and how the probes train (:class:`~probemeter.Execution`: device,
            worker processes, memory budget, progress bar; None: ``Execution()``).
        keep_probes: keep every trained probe in the curve's ``probes``
            (:class:`~probemeter.probes.ProbeSet`): probe (n, seed) with ``info`` ``{"n",
            "seed"}``, its layers, and its test loss, accuracy and predictions, evaluated once
            more after training as the engine evaluated it (:meth:`ProbeSet.from_stacked`: its
            loss is the point's, bit for bit). Training and the curve's points are the same
            either way.
        dev_fraction: hold this share of the pool out of training as a development split
            (default 0.1, the ``curve`` method's,
            :data:`~probemeter.curves.defaults.CURVE_DEV_FRACTION`; 0: none, the papers'
            protocol) on which every probe is also evaluated: the
            points gain ``dev_loss``, ``dev_loss_truncated`` and ``dev_accuracy``, and
            :meth:`LossDataCurve.development_curve` is the curve measured there, from which a
            comparison chooses a representation before testing it on the test set. Subsets
            and sizes come from the rest of the pool (:attr:`LossDataCurve.pool_size`); the
            split is seeded by ``random_state`` alone, whole sentences where the data record
            them (``data.clusters_train``), and recorded in ``metadata["development"]``.
        pvi: also give every test example's pointwise V-information under the probes of the
            largest size (Ethayarajh et al. 2022; :func:`~probemeter.pvi.pointwise_v_information`:
            their per-example test cross-entropy against the class frequencies of the labels
            each trained on), with the test examples' sentences where the data record them, in
            :attr:`LossDataCurve.pvi`. Single labels only. Training and the points are the same
            either way.
        settings: a grid of probe settings to choose from without the test set:
            ``{"weight_decay": [...], "lr": [...]}`` (either may be left out: ``config``'s
            value; :func:`~probemeter.training.config.grid_settings`). Every setting trains
            its own probe at every (size, seed) — the same subset, initial weights and
            minibatch order — all in the one engine call (one chunk plan: the settings' probes
            are stacked side by side). At each size n the setting of the lowest development
            loss (mean over seeds; the first on ties) is chosen, and the curve's points (and
            kept probes, PVI, final correctness) are its probes'; the test set is never looked
            at for the choice. ``metadata["settings"]`` records the grid, the setting chosen per
            size, ``chosen_on = "dev"``, ``tested_on = "test"`` and every setting's
            development loss per size (:meth:`LossDataCurve.settings_frame`). Needs a
            development split (``dev_fraction > 0``).
        positive: for two classes, the index of the positive class of the monitor metrics
            (None: 1, the second class, as the curve method's ``positive``;
            :attr:`LossDataCurve.monitor`): AUROC, recall at 1 %
            and 5 % FPR with each threshold fixed on the development split's negatives, Brier
            score and ECE of the largest size's probes, from their per-example test and
            development cross-entropies (p(y_i) = exp(−nll_i)), with cluster-bootstrap
            intervals over the test set (:mod:`probemeter.monitor`). Without a development
            split no threshold is set, so no recall is given. Not computed for more classes.

    Examples:
        Linear probes on three separable classes, two seeds per size, with a short training
        (the default is Whitney et al.'s 1000 updates at lr 1e-4); by default 10 % of the pool
        is held out as the development split, on which the curve is measured too:

        >>> import numpy as np
        >>> from probemeter import Linear, ProbeData
        >>> rng = np.random.default_rng(0)
        >>> labels = np.arange(300) % 3
        >>> data = ProbeData.from_arrays(rng.normal(size=(300, 4)) + 2 * labels[:, None], labels)
        >>> from probemeter import Execution, TrainingConfig, loss_data_curve
        >>> curve = loss_data_curve(
        ...     data, Linear(), [10, 40, 160], seeds=2, config=TrainingConfig(steps=100, lr=1e-2),
        ...     execution=Execution(device="cpu"),
        ... )
        >>> curve.sizes.tolist(), curve.mean("loss").round(2).tolist()
        ([10, 40, 160], [0.66, 0.4, 0.38])
        >>> data.pool_size, curve.pool_size, curve.metadata["development"]["n_dev"]
        (240, 216, 24)
        >>> curve.development_curve().mean("loss").round(2).tolist()
        [0.54, 0.29, 0.27]

        A direction baseline in place of the trained probe, fitted in closed form
        (:class:`~probemeter.probes.Direction`: Fisher's discriminant, one temperature each):

        >>> from probemeter import Direction
        >>> lda = loss_data_curve(
        ...     data, Direction("lda"), [10, 40, 160], seeds=2, execution=Execution(device="cpu")
        ... )
        >>> lda.mean("loss").round(2).tolist()
        [1.29, 0.23, 0.18]
    """
    execution = execution_of(execution, old, "loss_data_curve")
    _check_request(data, random_state, keep_probes, pvi)
    positive = 1 if positive is None else positive
    if isinstance(positive, bool) or positive not in (0, 1):
        raise ValueError(f"positive: the positive class's index must be 0 or 1; got {positive!r}")
    config = config_or_default(config, CURVE_TRAINING)
    # "auto" decided before training, so the metadata's training holds the precision used
    config, precision_choice = resolve_precision(config, execution.device)
    check_scalar(
        dev_fraction, "dev_fraction", float, min_val=0, max_val=1, include_boundaries="left"
    )
    if settings is not None and isinstance(probe, Direction):
        raise ValueError(
            f"settings: a {probe.family} direction is fitted in closed form, which no "
            "learning rate or weight decay changes; give no grid"
        )
    configs = _settings_grid(config, settings, dev_fraction)
    train_rows, dev_rows = _development_split(data, dev_fraction, random_state)
    pool_size = train_rows.size
    size_values = (
        default_sizes(pool_size) if sizes is None else _check_sizes(sizes, pool_size, data)
    )
    _, grid, keys = seed_grid(seeds, size_values, random_state)
    subsets = [train_rows[nested_subset(pool_size, n, random_state, seed)] for seed, n in grid]
    n_probes = len(subsets) * len(configs)
    with Stopwatch() as watch:
        evaluation = fit_evaluate(
            data.X_train,
            data.y_train,
            data.X_test,
            data.y_test,
            data.n_classes,
            subsets * len(configs),
            keys * len(configs),
            probe,
            configs[0],
            execution=execution,
            per_example=True,
            # shifted test sets are scored by the trained probes themselves, after training
            return_parameters=keep_probes or bool(data.shifted),
            pool_rows=None if dev_rows is None else [dev_rows] * n_probes,
            **_settings_per_probe(configs, len(subsets), settings),
        )
    development = None if dev_rows is None else _development_points(evaluation, data, dev_rows)
    chosen_settings = None
    if settings is not None:
        evaluation, development, chosen_settings = _chosen_setting(
            evaluation, development, configs, grid
        )
    final = [i for i, (_, n) in enumerate(grid) if n == size_values[-1]]
    metadata = _curve_metadata(
        data,
        probe,
        configs[0],
        random_state=random_state,
        device=execution.device,
        seconds=watch.seconds,
        dev_fraction=dev_fraction,
        dev_rows=dev_rows,
        chosen_settings=chosen_settings,
        mix=learned_mix(data, evaluation, final, [grid[i][0] for i in final]),
    )
    if precision_choice is not None:  # what "auto" chose, why, and the rates it measured
        metadata["precision"] = precision_choice.to_dict()
    return LossDataCurve(
        data.name,
        _points(data, grid, evaluation, development),
        data.n_classes,
        pool_size,
        len(data.y_test),
        metadata,
        final_correct=SeedCorrectness.from_predictions(  # label sets: exact set match
            [grid[i][0] for i in final],
            evaluation.predictions[final],
            data.y_test,
            size_values[-1],
            data.clusters_test,
        ),
        classes=data.classes,
        probes=_kept_probes(data, probe, evaluation, grid, execution.device)
        if keep_probes
        else None,
        multilabel=data.multilabel,
        pvi=_final_pvi(data, evaluation, final, subsets, grid) if pvi else None,
        shifted=shifted_evaluations(
            data,
            evaluation,
            final,
            [grid[i][0] for i in final],
            size_values[-1],
            execution.device,
            dev_rows=dev_rows,
            positive=positive,
            random_state=random_state,
        ),
        monitor=_final_monitor(data, evaluation, final, grid, dev_rows, positive, random_state),
    )


def _check_request(data: ProbeData, random_state: int, keep_probes: bool, pvi: bool) -> None:
    """What :func:`loss_data_curve` refuses before anything is trained: data it cannot read, PVI
    of label sets, kept probes of sparse features, a negative or non-integer random state."""
    check_probe_data(data, sparse=True)
    if pvi and data.multilabel:
        raise ValueError("pvi: pointwise V-information takes single labels; data has label sets")
    if keep_probes and data.is_sparse:
        raise ValueError(
            "keep_probes: kept probes are evaluated on dense features; data has sparse ones"
        )
    check_scalar(random_state, "random_state", int, min_val=0)


def _settings_grid(
    config: TrainingConfig,
    settings: Mapping[str, Sequence[float]] | None,
    dev_fraction: float,
) -> list[TrainingConfig]:
    """The settings every (size, seed) trains a probe with: ``config`` alone without a grid, else
    one config per setting of ``settings`` (:func:`~probemeter.training.config.grid_settings`),
    which needs a development split to choose among them."""
    configs = grid_settings(config, settings)
    if settings is not None and dev_fraction == 0:
        raise ValueError(
            "settings: a grid is chosen on the development split, and dev_fraction = 0 holds "
            "none out (the test set is never used to choose)"
        )
    return configs


def _settings_per_probe(
    configs: Sequence[TrainingConfig],
    n_subsets: int,
    settings: Mapping[str, Sequence[float]] | None,
) -> dict[str, np.ndarray]:
    """The engine's per-probe learning rates and weight decays of a grid, whose settings train
    as probes of their own, setting after setting, in one call; none without a grid."""
    if settings is None:
        return {}
    return {
        name: np.repeat([getattr(c, name) for c in configs], n_subsets)
        for name in ("lr", "weight_decay")
    }


def _chosen_setting(
    evaluation: Any,
    development: dict[str, np.ndarray],
    configs: Sequence[TrainingConfig],
    grid: Sequence[tuple[int, int]],
) -> tuple[Any, dict[str, np.ndarray], dict[str, Any]]:
    """The probes of the setting chosen per size on the development split
    (:func:`_choose_settings`): their evaluation and development points, and the record of the
    choice."""
    chosen, record = _choose_settings(configs, development["dev_loss"], grid)
    chosen_development = {name: values[chosen] for name, values in development.items()}
    return evaluation.select(chosen), chosen_development, record


def _development_split(
    data: ProbeData, dev_fraction: float, random_state: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """The pool rows the probes train on and those held out as the development split (None with
    ``dev_fraction = 0``), seeded by ``random_state`` alone, whole sentences where the data
    record them."""
    if dev_fraction == 0:
        return np.arange(data.pool_size), None
    return held_out_split(data.pool_size, dev_fraction, random_state, data.clusters_train)


def _kept_probes(
    data: ProbeData,
    probe: MLP,
    evaluation: Any,
    grid: Sequence[tuple[int, int]],
    device: str,
) -> ProbeSet:
    """Every trained probe, in the order of the curve's points, evaluated once more as the engine
    evaluated it (:meth:`ProbeSet.from_stacked`)."""
    trained = ProbeSet.from_stacked(
        data.name,
        probe,
        evaluation.parameters,
        [{"n": int(n), "seed": int(seed)} for seed, n in grid],
        data.X_test,
        data.y_test,
        stack_rows=evaluation.stack_rows,
        mixes=None if probe.mix == 0 else (evaluation.mix_logits, evaluation.mix_scale),
        spans=kept_spans(evaluation),
        device=device,
        evaluated=(evaluation.loss, evaluation.accuracy, evaluation.predictions),
    )
    by_point = sorted(trained, key=lambda kept: (kept.info["n"], kept.info["seed"]))
    moments = None if data.pool_mean is None else (data.pool_mean, data.pool_std)
    return ProbeSet(data.name, tuple(by_point), moments)


def _final_pvi(
    data: ProbeData,
    evaluation: Any,
    final: Sequence[int],
    subsets: Sequence[np.ndarray],
    grid: Sequence[tuple[int, int]],
) -> PVIResult:
    """Every test example's pointwise V-information under the probes of the largest size
    (positions ``final``), against the labels each trained on."""
    return pointwise_v_information(
        evaluation.nll[final],
        data.y_test,
        [np.asarray(data.y_train)[subsets[i]] for i in final],
        data.n_classes,
        seeds=[grid[i][0] for i in final],
        name=data.name,
        classes=data.classes,
        sentences=data.clusters_test,
    )


def _final_monitor(
    data: ProbeData,
    evaluation: Any,
    final: Sequence[int],
    grid: Sequence[tuple[int, int]],
    dev_rows: np.ndarray | None,
    positive: int,
    random_state: int,
) -> dict[str, Any] | None:
    """The monitor metrics of the probes of the largest size (positions ``final``), for two
    classes of single labels (None otherwise): their test scores against the test set's
    clusters, their thresholds from the development rows alone."""
    from probemeter.monitor import monitor_metrics, positive_scores

    if data.multilabel or data.n_classes != 2:
        return None
    test = [positive_scores(evaluation.nll[i], data.y_test, positive) for i in final]
    dev = None
    if dev_rows is not None:
        labels = np.asarray(data.y_train)[dev_rows]
        dev = [positive_scores(evaluation.pool_nll[i], labels, positive) for i in final]
    found = monitor_metrics(
        test,
        dev,
        seeds=[grid[i][0] for i in final],
        clusters=data.clusters_test,
        random_state=random_state,
    )
    label = None if data.classes is None else data.classes[positive]
    return {"positive": {"index": positive, "label": _plain(label)}, **found}


def _plain(value: Any) -> Any:
    """A class label as JSON holds it (numpy scalars as Python ones)."""
    return value.item() if isinstance(value, np.generic) else value


def _points(
    data: ProbeData,
    grid: Sequence[tuple[int, int]],
    evaluation: Any,
    development: dict[str, np.ndarray] | None,
) -> pd.DataFrame:
    """The curve's points: one row per (seed, n) of ``grid``, its test metrics (F1 for label
    sets) and its development ones."""
    return pd.DataFrame(
        {
            "n": [n for _, n in grid],
            "seed": [seed for seed, _ in grid],
            "loss": evaluation.loss,
            "loss_truncated": evaluation.loss_truncated,
            "accuracy": evaluation.accuracy,
            **(
                {"micro_f1": evaluation.micro_f1, "macro_f1": evaluation.macro_f1}
                if data.multilabel
                else {}
            ),
            # solver = "newton": each probe's iterations (it reached its tolerance: the engine
            # warns of one that did not)
            **({} if evaluation.iterations is None else {"iterations": evaluation.iterations}),
            **(development or {}),
        }
    )


def _curve_metadata(
    data: ProbeData,
    probe: MLP,
    config: TrainingConfig,
    *,
    random_state: int,
    device: str,
    seconds: float,
    dev_fraction: float,
    dev_rows: np.ndarray | None,
    chosen_settings: dict[str, Any] | None,
    mix: dict[str, Any] | None,
) -> dict[str, Any]:
    """The curve's metadata (:func:`~probemeter.training.probe_runs.run_metadata`), with the
    development split, the choice of a settings grid and the layer weights the probes of the
    largest size learned, where there are."""
    metadata = run_metadata(
        probe,
        config.to_dict(),
        random_state=random_state,
        device=device,
        seconds=seconds,
        data=data,
        data_fields={"n_features": data.n_features},
    )
    if dev_rows is not None:
        metadata["development"] = {
            "fraction": float(dev_fraction),
            "n_dev": int(dev_rows.size),
            "groups": "sentences" if data.clusters_train is not None else "examples",
            "random_state": int(random_state),
        }
    if chosen_settings is not None:
        metadata["settings"] = chosen_settings
    if mix is not None:
        metadata["scalar_mix"] = mix
    return metadata
