"""Comparison problems: two probing configurations run on the same splits and seeds.

Zhu et al. (2022), "On the data requirements of probing", §3.1 Def. 2: a comparison problem
pits two probing configurations — same task, different representation or different probe
family — against each other. Here both are trained on the *same* splits with the *same* seeds
(a probe's random stream is keyed by (random_state, seed, split), never by its configuration),
so their test predictions are paired example by example (:func:`run_configurations`,
:class:`PairedComparison`), ready for McNemar's test (§3.5, :mod:`probemeter.power.mcnemar`), power
by simulation (:mod:`probemeter.power.simulation`), the Table-2 report
(:mod:`probemeter.power.table`), the bound-vs-empirical margins of Fig. 2
(:meth:`PairedComparison.plot_bounds`) and collapse detection (:mod:`probemeter.power.collapse`).

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from probemeter._execution import Execution, execution_of
from probemeter._io import JsonResult, classes_from_json, classes_to_json, pack_bits, unpack_bits
from probemeter._validation import check_scalar
from probemeter.data import ProbeData, check_probe_data, check_single_label, seed_ids
from probemeter.power.bounds import (
    generalization_bound,
    log_function_class_size,
    probe_parameter_count,
)
from probemeter.power.defaults import POWER_ALPHA, POWER_PROBE, POWER_SEEDS, POWER_TRAINING
from probemeter.power.mcnemar import contingency_table, mcnemar_p_values
from probemeter.power.sampling import Split
from probemeter.power.simulation import PowerCurve, check_alpha, simulate_power
from probemeter.probes import MLP
from probemeter.training.config import TrainingConfig, config_or_default
from probemeter.training.engine import fit_evaluate
from probemeter.training.probe_runs import Stopwatch, run_metadata

__all__ = ["ConfigurationRuns", "PairedComparison", "paired_data", "run_configurations"]

#: :func:`run_configurations`' default probe, the ``power`` method's, built once (an MLP is a
#: frozen value)
_PROBE = MLP(POWER_PROBE)


def paired_data(a: ProbeData, b: ProbeData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X_a, X_b, y)`` of two representations of the same examples: each one's pool and test
    set stacked (pool first), so comparison splits can be drawn from all of it.

    Raises:
        ValueError: the two do not describe the same examples (different lengths or labels of
            pool or test set, or different original labels :attr:`ProbeData.classes`): their
            predictions could not be paired.
    """
    for argument, data in (("a", a), ("b", b)):
        what = "a power comparison (stratified splits of so many examples per class)"
        check_single_label(check_probe_data(data, argument), what, argument)
    if None not in (a.classes, b.classes) and a.classes != b.classes:
        raise ValueError(
            f"{a.name!r} and {b.name!r} encode different labels as the same class indices "
            f"({a.classes} vs {b.classes}): a comparison needs one label mapping"
        )
    for part in ("train", "test"):
        labels_a, labels_b = getattr(a, f"y_{part}"), getattr(b, f"y_{part}")
        if labels_a.shape != labels_b.shape or not np.array_equal(labels_a, labels_b):
            raise ValueError(
                f"{a.name!r} and {b.name!r} have different {part} labels "
                f"({labels_a.size} vs {labels_b.size} examples): a comparison needs both "
                "configurations on the same examples so predictions are paired"
            )
    return (
        np.concatenate([a.X_train, a.X_test]),
        np.concatenate([b.X_train, b.X_test]),
        np.concatenate([a.y_train, a.y_test]),
    )


def _check_configurations(
    features: Mapping[str, np.ndarray], y: object, probes: MLP | Mapping[str, MLP]
) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, MLP]]:
    if len(features) < 1:
        raise ValueError("features is empty: give at least one configuration")
    labels = np.asarray(y)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0:
        raise ValueError("y must be a 1-D array of non-negative integer class labels")
    arrays = {}
    for name, X in features.items():
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError(
                f"features[{name!r}] must be 2-D (examples, features); got shape {X.shape}"
            )
        if X.shape[0] != labels.size:
            raise ValueError(
                f"features[{name!r}] has shape {X.shape} but y has {labels.size} labels: every "
                "configuration must describe the same examples, one row each (paired)"
            )
        if not np.isfinite(X).all():
            raise ValueError(f"features[{name!r}] contains NaN or inf")
        arrays[name] = np.ascontiguousarray(X)
    if isinstance(probes, MLP):
        probes = dict.fromkeys(arrays, probes)
    missing = set(arrays) - set(probes)
    if missing:
        raise ValueError(f"probes lacks an entry for configuration(s) {sorted(missing)}")
    return arrays, labels.astype(np.int64), {name: probes[name] for name in arrays}


def _check_splits(splits: Sequence[Split], n_examples: int) -> None:
    if not splits:
        raise ValueError("splits is empty")
    for split in splits:
        for role in ("train", "test"):
            indices = getattr(split, role)
            if len(indices) == 0:
                raise ValueError(f"split {split.name!r} has an empty {role} set")
            if np.min(indices) < 0 or np.max(indices) >= n_examples:
                raise ValueError(
                    f"split {split.name!r} indexes {role} examples outside the {n_examples} rows"
                )
        if np.intersect1d(split.train, split.test).size:
            raise ValueError(f"split {split.name!r} tests on some of its training examples")


@dataclass(frozen=True, eq=False)
class ConfigurationRuns:
    """Per-example correctness of several configurations on the same runs (split × seed).

    Attributes:
        names: configuration names.
        splits: the splits; run r is (split ``runs.split[r]``, seed ``runs.seed[r]``).
        runs: one row per run: ``split`` (position in ``splits``), ``seed``.
        correct: name -> tuple over runs of boolean arrays aligned with that run's
            ``splits[split].test``.
        n_parameters: name -> parameters of the configuration's probe as the bound counts them
            (:func:`~probemeter.power.bounds.probe_parameter_count`, Zhu et al. §3.4 fn. 6:
            one logit for a binary task, so D + 1 for logistic regression).
        metadata: probes, training config, random state, device, timings, versions.
        classes: the original label of each class index of ``y``, or None.
        dev_accuracy: name -> per run, the probe's accuracy on its split's dev set (nan where
            the split has none): held out of training and of the test set, it is what a
            comparison of many representations chooses on; None when not measured.
    """

    names: tuple[str, ...]
    splits: tuple[Split, ...]
    runs: pd.DataFrame
    correct: Mapping[str, tuple[np.ndarray, ...]] = field(repr=False)
    n_parameters: Mapping[str, int]
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    classes: tuple[Any, ...] | None = field(default=None, repr=False)
    dev_accuracy: Mapping[str, tuple[float, ...]] | None = field(default=None, repr=False)

    def pair(self, a: str, b: str) -> PairedComparison:
        """The comparison problem (``a``, ``b``) on these runs."""
        for name in (a, b):
            if name not in self.names:
                raise ValueError(f"no configuration {name!r}; have {list(self.names)}")
        n_parameters = (self.n_parameters[a], self.n_parameters[b])
        correct_a, correct_b = self.correct[a], self.correct[b]
        return PairedComparison.build(
            a,
            b,
            self.splits,
            self.runs,
            correct_a,
            correct_b,
            n_parameters,
            self.metadata,
            classes=self.classes,
            dev_accuracy=None
            if self.dev_accuracy is None
            else (self.dev_accuracy[a], self.dev_accuracy[b]),
        )


def run_configurations(
    features: Mapping[str, np.ndarray],
    y: object,
    splits: Sequence[Split],
    seeds: int | Sequence[int] = POWER_SEEDS,
    *,
    probes: MLP | Mapping[str, MLP] = _PROBE,
    config: TrainingConfig | None = None,
    standardize: bool = True,
    random_state: int = 0,
    classes: Sequence[Any] | None = None,
    execution: Execution | None = None,
    **old: Any,
) -> ConfigurationRuns:
    """Train every configuration on every (split, seed) and keep paired test correctness.

    Each configuration is one call of the engine (all its runs at once). Probe (split j,
    seed s) trains on ``splits[j].train`` from the random stream keyed by
    (random_state, s, j) — the same for every configuration — for ``config.steps`` Adam
    updates, and is scored on ``splits[j].test``. The dev sets are held out of training (the
    stopping rule is a fixed number of steps, recorded in the metadata); each probe's accuracy
    there is recorded (:attr:`ConfigurationRuns.dev_accuracy`), for choosing among many
    configurations without the test set.

    Args:
        features: name -> (n_examples, d) features; all rows describe the same examples.
        y: (n_examples,) integer labels shared by all configurations.
        splits: train/dev/test index sets (:mod:`probemeter.power.sampling`).
        seeds: a count (0..seeds-1) or explicit seed ids; default 5, the ``power``
            method's (:data:`~probemeter.power.defaults.POWER_SEEDS`).
        probes: one probe for all configurations or name -> probe; default linear (logistic
            regression, the paper's main probe, and the ``power`` method's:
            :data:`~probemeter.power.defaults.POWER_PROBE`).
        standardize: z-score each configuration's features with statistics of all its rows
            (an unsupervised transform; labels are never used); not the rows of span probes
            (``MLP(span=...)``), whose token counts and zero padding must stay as they are
            (:func:`~probemeter.datasets.edge_probing.edge_probe_data` standardises their
            token vectors).
        config: how every probe trains; default
            :data:`~probemeter.power.defaults.POWER_TRAINING`, the ``power`` method's (1000 Adam
            updates at lr 1e-3 on minibatches of 64).
        execution: where and how the probes train (:class:`~probemeter.Execution`; None:
            ``Execution()``).
        classes: the original label of each class index of ``y`` (``ProbeData.classes``),
            kept in the results; None: not known.

    Raises:
        ValueError: features with different numbers of rows than y (unpaired), bad splits
            (empty, out of range, tests on training examples), bad seeds, fewer ``classes``
            than class indices in ``y``.
    """
    execution = execution_of(execution, old, "run_configurations")
    arrays, labels, probe_map = _check_configurations(features, y, probes)
    if classes is not None and len(classes) <= labels.max():
        raise ValueError(
            f"classes holds {len(classes)} labels but y has class index {labels.max()}"
        )
    _check_splits(splits, labels.size)
    seeds_used = seed_ids(seeds)
    check_scalar(random_state, "random_state", int, min_val=0)
    config = config_or_default(config, POWER_TRAINING)
    n_classes = int(labels.max()) + 1
    grid = [(j, s) for j in range(len(splits)) for s in seeds_used]
    eval_index = np.unique(np.concatenate([np.concatenate([s.test, s.dev]) for s in splits]))
    positions = [np.searchsorted(eval_index, split.test) for split in splits]
    dev_positions = [np.searchsorted(eval_index, split.dev) for split in splits]
    correct: dict[str, tuple[np.ndarray, ...]] = {}
    dev_accuracy: dict[str, tuple[float, ...]] = {}
    seconds = {}
    for name, X in arrays.items():
        if standardize and not probe_map[name].span:
            std = X.std(axis=0, dtype=np.float64)
            std[std == 0] = 1.0
            X = ((X - X.mean(axis=0, dtype=np.float64)) / std).astype(np.float32)
        with Stopwatch() as watch:
            evaluation = fit_evaluate(
                X,
                labels,
                X[eval_index],
                labels[eval_index],
                n_classes,
                [splits[j].train for j, _ in grid],
                [(int(random_state), s, j) for j, s in grid],
                probe_map[name],
                config,
                execution=execution,
                per_example=True,
            )
        seconds[name] = watch.seconds
        hits = evaluation.predictions == labels[eval_index][None, :]
        correct[name] = tuple(hits[r, positions[j]] for r, (j, _) in enumerate(grid))
        dev_accuracy[name] = tuple(
            float(hits[r, dev_positions[j]].mean()) if dev_positions[j].size else float("nan")
            for r, (j, _) in enumerate(grid)
        )
    metadata = run_metadata(
        probe_map,
        config.to_dict(),
        random_state=random_state,
        device=execution.device,
        seconds=seconds,
        settings={
            "dev_sets": "held out of training (fixed number of steps); accuracy recorded",
            "standardize": bool(standardize),
        },
    )
    return ConfigurationRuns(
        names=tuple(arrays),
        splits=tuple(splits),
        runs=pd.DataFrame({"split": [j for j, _ in grid], "seed": [s for _, s in grid]}),
        correct=correct,
        n_parameters={
            name: probe_parameter_count(X.shape[1], max(n_classes, 2), probe_map[name].hidden)
            for name, X in arrays.items()
        },
        metadata=metadata,
        classes=None if classes is None else tuple(classes),
        dev_accuracy=dev_accuracy,
    )


@dataclass(frozen=True, eq=False)
class PairedComparison(JsonResult):
    """A comparison problem (Zhu et al., Def. 2): two configurations, paired run by run.

    Attributes:
        name_a, name_b: the configurations.
        runs: one row per (split, seed): ``split`` (name), ``split_index``, ``seed``,
            ``n_train, n_dev, n_test``, ``accuracy_a, accuracy_b``, the contingency counts
            ``n00, n01, n10, n11`` (Table 1) and McNemar's ``p_value``; with the dev sets'
            accuracies measured, ``dev_accuracy_a, dev_accuracy_b``.
        correct_a, correct_b: per run, per-example correctness on the run's test set.
        n_parameters: parameters of the two probes as the bound counts them (for recommended N;
            :func:`~probemeter.power.bounds.probe_parameter_count`).
        metadata: how the runs were trained.
        classes: the original label of each class index; None when not known (and in
            results written before labels were recorded).
    """

    name_a: str
    name_b: str
    runs: pd.DataFrame = field(repr=False)
    correct_a: tuple[np.ndarray, ...] = field(repr=False)
    correct_b: tuple[np.ndarray, ...] = field(repr=False)
    n_parameters: tuple[int, int]
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    classes: tuple[Any, ...] | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        name_a: str,
        name_b: str,
        splits: Sequence[Split],
        runs: pd.DataFrame,
        correct_a: Sequence[np.ndarray],
        correct_b: Sequence[np.ndarray],
        n_parameters: tuple[int, int],
        metadata: Mapping[str, Any] | None = None,
        *,
        method: str = "auto",
        correction: bool = False,
        classes: Sequence[Any] | None = None,
        dev_accuracy: tuple[Sequence[float], Sequence[float]] | None = None,
    ) -> PairedComparison:
        """Tabulate paired runs: contingency tables and McNemar p-values per run (``classes``:
        the original labels of the class indices, kept as :attr:`classes`; ``dev_accuracy``:
        per run the two configurations' dev-set accuracies, kept as columns)."""
        if not len(correct_a) == len(correct_b) == len(runs):
            raise ValueError(
                f"got {len(runs)} runs but {len(correct_a)} and {len(correct_b)} correctness "
                "arrays: each run needs the predictions of both configurations"
            )
        rows = []
        for r, (j, seed) in enumerate(zip(runs["split"], runs["seed"])):
            try:
                table = contingency_table(correct_a[r], correct_b[r])
            except ValueError as error:
                raise ValueError(f"run {r}: {error}") from None
            n_train, n_dev, n_test = splits[j].sizes
            if table.sum() != n_test:
                raise ValueError(
                    f"run {r}: {table.sum()} predictions but split {splits[j].name!r} tests "
                    f"{n_test} examples: predictions must be paired with the split's test set"
                )
            rows.append(
                {
                    "split": splits[j].name,
                    "split_index": int(j),
                    "seed": int(seed),
                    "n_train": n_train,
                    "n_dev": n_dev,
                    "n_test": n_test,
                    "accuracy_a": table[1].sum() / n_test,
                    "accuracy_b": table[:, 1].sum() / n_test,
                    "n00": int(table[0, 0]),
                    "n01": int(table[0, 1]),
                    "n10": int(table[1, 0]),
                    "n11": int(table[1, 1]),
                }
            )
        frame = pd.DataFrame(rows)
        if dev_accuracy is not None:
            frame["dev_accuracy_a"], frame["dev_accuracy_b"] = (
                np.asarray(values, dtype=np.float64) for values in dev_accuracy
            )
        frame["p_value"] = mcnemar_p_values(
            frame["n01"], frame["n10"], method=method, correction=correction
        )
        return cls(
            name_a,
            name_b,
            frame,
            tuple(np.asarray(c, dtype=bool) for c in correct_a),
            tuple(np.asarray(c, dtype=bool) for c in correct_b),
            (int(n_parameters[0]), int(n_parameters[1])),
            {**dict(metadata or {}), "mcnemar": {"method": method, "correction": correction}},
            None if classes is None else tuple(classes),
        )

    @property
    def split_names(self) -> list[str]:
        """Split names in order of first appearance."""
        return list(dict.fromkeys(self.runs["split"]))

    def seed_correctness(
        self, splits: Sequence[str] | None = None
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per seed, the correctness of A and B over the test sets of ``splits`` (default:
        all) concatenated — e.g. the whole data set for a fold rotation."""
        chosen = self.split_names if splits is None else list(splits)
        unknown = set(chosen) - set(self.split_names)
        if unknown:
            raise ValueError(f"unknown split(s) {sorted(unknown)}; have {self.split_names}")
        a, b = [], []
        for seed in sorted(self.runs["seed"].unique()):
            rows = np.flatnonzero(
                (self.runs["seed"] == seed).to_numpy() & self.runs["split"].isin(chosen).to_numpy()
            )
            a.append(np.concatenate([self.correct_a[r] for r in rows]))
            b.append(np.concatenate([self.correct_b[r] for r in rows]))
        return a, b

    def power_curve(
        self,
        splits: Sequence[str] | None = None,
        test_sizes: Sequence[int] | None = None,
        **options: Any,
    ) -> PowerCurve:
        """:func:`simulate_power` on the pooled test sets of ``splits`` (default: all)."""
        return simulate_power(*self.seed_correctness(splits), test_sizes, **options)

    def summary(self, alpha: float = POWER_ALPHA) -> pd.DataFrame:
        """Per split: sizes, mean accuracies over seeds, mean |R₁ − R₂| over seeds (the
        "Mean |R₁ − R₂|" of Table 2), mean signed difference (B − A), and the fraction of seeds
        whose McNemar test rejected at ``alpha``."""
        alpha = check_alpha(alpha)
        grouped = self.runs.assign(
            gap=(self.runs["accuracy_a"] - self.runs["accuracy_b"]).abs(),
            difference=self.runs["accuracy_b"] - self.runs["accuracy_a"],
            significant=self.runs["p_value"] < alpha,
        ).groupby("split", sort=False)
        return grouped.agg(
            n_train=("n_train", "first"),
            n_dev=("n_dev", "first"),
            n_test=("n_test", "first"),
            accuracy_a=("accuracy_a", "mean"),
            accuracy_b=("accuracy_b", "mean"),
            mean_gap=("gap", "mean"),
            mean_difference=("difference", "mean"),
            significant_fraction=("significant", "mean"),
            seeds=("seed", "nunique"),
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-run table, with the configuration names as columns."""
        return self.runs.assign(a=self.name_a, b=self.name_b)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with per-example correctness bit-packed (base64) so
        :meth:`from_dict` restores the comparison exactly."""
        return {
            "name_a": self.name_a,
            "name_b": self.name_b,
            "runs": self.runs.to_dict(orient="list"),
            "correct_a": [pack_bits(c) for c in self.correct_a],
            "correct_b": [pack_bits(c) for c in self.correct_b],
            "n_parameters": list(self.n_parameters),
            "metadata": self.metadata,
            "classes": classes_to_json(self.classes),
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> PairedComparison:
        runs = pd.DataFrame(payload["runs"])
        lengths = runs["n_test"].to_numpy()
        return cls(
            payload["name_a"],
            payload["name_b"],
            runs,
            tuple(unpack_bits(t, n) for t, n in zip(payload["correct_a"], lengths)),
            tuple(unpack_bits(t, n) for t, n in zip(payload["correct_b"], lengths)),
            tuple(payload["n_parameters"]),
            payload.get("metadata", {}),
            classes_from_json(payload.get("classes")),
        )

    def plot_bounds(
        self,
        ax: Any = None,
        *,
        delta: float = 1e-8,
        counting: str = "paper",
        bits_per_parameter: int = 32,
    ) -> Any:
        """Zhu et al., Fig. 2: per configuration, the empirical accuracy band (mean ± std over
        seeds) and the theoretical margins, mean ± B(n_train, δ), against n_train."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        stats = self.runs.groupby("n_train")[["accuracy_a", "accuracy_b"]].agg(["mean", "std"])
        sizes = stats.index.to_numpy()
        for column, name, params in (
            ("accuracy_a", self.name_a, self.n_parameters[0]),
            ("accuracy_b", self.name_b, self.n_parameters[1]),
        ):
            mean = stats[(column, "mean")].to_numpy()
            std = np.nan_to_num(stats[(column, "std")].to_numpy())
            log_size = log_function_class_size(params, bits_per_parameter, counting)
            margin = np.array([generalization_bound(n, log_size, delta=delta) for n in sizes])
            line = ax.plot(sizes, mean, marker="o", ms=3, label=f"{name} (mean ± std)")
            colour = line[0].get_color()
            ax.fill_between(sizes, mean - std, mean + std, alpha=0.3, color=colour, lw=0)
            ax.plot(sizes, mean - margin, ls="--", lw=1, color=colour)
            ax.plot(sizes, mean + margin, ls="--", lw=1, color=colour, label=f"{name} ± bound")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("training examples n")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
        return ax
