"""Comparison problems: paired probing runs, statistical power and data requirements.

Zhu et al. (2022), "On the data requirements of probing":

* a **comparison problem** (§3.1, Def. 2) pits two probing configurations — same task,
  different representation or different probe family — against each other. Here both are
  trained on the *same* splits with the *same* seeds (a probe's random stream is keyed by
  (random_state, seed, split), never by its configuration), so their test predictions are
  paired example by example (:func:`run_configurations`, :class:`PairedComparison`);
* **McNemar's test** (§3.5) on each run's paired predictions (:mod:`probemeter.mcnemar`);
* **power by simulation** (§3.5, after Card et al. 2020): subsample the test set at a size m,
  test each subsample, count the significant ones; "we run the simulations for each random
  seed, and then count the total number of significant simulations" — power is pooled over
  seeds explicitly (:func:`simulate_power`);
* the **Table-2 report** (§4.4): per subsampled size, N_test, mean |R₁ − R₂| over seeds and the
  recommended N_train of :mod:`probemeter.bounds`, next to the simulated power at that size
  (:class:`PowerReport`), and the bound-vs-empirical margins of Fig. 2.

Subsampling a test set of n examples whose paired table has b = n01 and c = n10 discordant
pairs: the table of a subsample of m examples drawn *without* replacement has (b', c', rest)
~ multivariate hypergeometric(b, c, n − b − c; m); *with* replacement (a bootstrap) it is
multinomial(m; b/n, c/n, 1 − (b + c)/n). We draw those counts directly — exactly the
distribution of building the table from subsampled examples, thousands of times faster.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probemeter.atomic_io import write_json_atomic
from probemeter.bounds import generalization_bound, log_function_class_size, recommend_train_size
from probemeter.curve import environment
from probemeter.data import ProbeData, is_integer
from probemeter.engine import TrainingConfig, fit_evaluate, resolve_device
from probemeter.mcnemar import contingency_table, mcnemar_p_values
from probemeter.probes import MLP
from probemeter.sampling import Split

__all__ = [
    "ConfigurationRuns",
    "PairedComparison",
    "PowerCurve",
    "PowerReport",
    "paired_data",
    "power_report",
    "run_configurations",
    "simulate_power",
]

#: the conventional sufficient power (Zhu et al., §3.5: "at least 0.8")
SUFFICIENT_POWER = 0.8


# --------------------------------------------------------------------------- power simulation


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)):
        raise ValueError(f"alpha must be a significance level in (0, 1); got {alpha!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a significance level in (0, 1); got {alpha!r}")
    return float(alpha)


def _paired_seeds(
    correct_a: Sequence[np.ndarray], correct_b: Sequence[np.ndarray]
) -> list[tuple[int, int, int]]:
    """Per seed (n, b, c) from paired correctness arrays, validating the pairing."""
    if len(correct_a) != len(correct_b) or len(correct_a) == 0:
        raise ValueError(
            f"correct_a and correct_b must hold the same non-zero number of seeds; got "
            f"{len(correct_a)} and {len(correct_b)}"
        )
    counts = []
    for seed, (a, b) in enumerate(zip(correct_a, correct_b)):
        try:
            table = contingency_table(a, b)
        except ValueError as error:
            raise ValueError(f"seed {seed}: {error}") from None
        counts.append((int(table.sum()), int(table[0, 1]), int(table[1, 0])))
    return counts


def _draw_discordant(
    rng: np.random.Generator, n: int, b: int, c: int, m: int, draws: int, replace: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Discordant counts (b', c') of ``draws`` subsamples of size m (module docstring)."""
    if replace:
        counts = rng.multinomial(m, [b / n, c / n, (n - b - c) / n], size=draws)
    else:
        counts = rng.multivariate_hypergeometric([b, c, n - b - c], m, size=draws)
    return counts[:, 0], counts[:, 1]


@dataclass(frozen=True)
class PowerCurve:
    """Simulated power of McNemar's test against test-set size (Zhu et al., §3.5, Figs. 3–5).

    Attributes:
        table: one row per test size: ``test_size, power`` (pooled over seeds: significant
            simulations / (seeds × simulations)), ``power_min, power_max`` (over seeds),
            ``seeds, simulations``.
        alpha: significance level of each test.
        replace: whether subsamples were drawn with replacement (bootstrap).
        metadata: method, correction, random_state, versions.
    """

    table: pd.DataFrame = field(repr=False)
    alpha: float
    replace: bool
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def smallest_sufficient(self, threshold: float = SUFFICIENT_POWER) -> int | None:
        """The smallest test size whose power is ≥ ``threshold``; None if none reaches it."""
        reached = self.table[self.table["power"] >= threshold]
        return None if reached.empty else int(reached["test_size"].min())

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "replace": self.replace,
            "table": self.table.to_dict(orient="list"),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> PowerCurve:
        return cls(
            pd.DataFrame(payload["table"]),
            float(payload["alpha"]),
            bool(payload["replace"]),
            payload.get("metadata", {}),
        )

    def save(self, path: str | Path) -> None:
        """Write as JSON, atomically."""
        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> PowerCurve:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def plot(self, ax: Any = None, *, label: str | None = None) -> Any:
        """Power against test size (log x) with the min–max band over seeds and the 0.8 line."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        sizes = self.table["test_size"]
        line = ax.plot(sizes, self.table["power"], marker="o", ms=3, label=label)
        ax.fill_between(
            sizes,
            self.table["power_min"],
            self.table["power_max"],
            alpha=0.15,
            color=line[0].get_color(),
            lw=0,
        )
        ax.axhline(SUFFICIENT_POWER, color="0.3", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("test examples")
        ax.set_ylabel(f"power (McNemar, α = {self.alpha:g})")
        return ax


def simulate_power(
    correct_a: Sequence[np.ndarray],
    correct_b: Sequence[np.ndarray],
    test_sizes: Sequence[int] | None = None,
    *,
    alpha: float = 0.05,
    n_simulations: int = 1000,
    replace: bool = False,
    method: str = "auto",
    correction: bool = False,
    random_state: int = 0,
) -> PowerCurve:
    """Power of McNemar's test by simulation (Zhu et al., §3.5; Card et al., 2020).

    For each seed s (``correct_a[s]``, ``correct_b[s]``: per-example correctness of the two
    configurations trained with seed s, on the same test examples) and each size m, draw
    ``n_simulations`` subsamples of m test examples, run McNemar's test on each, and count
    p < ``alpha``. Power at m = Σ_s significant_s / (seeds · n_simulations).

    Args:
        test_sizes: subsample sizes; default powers of two up to the smallest seed's test set
            (and that size itself).
        replace: draw with replacement (bootstrap); needed for m above the test-set size.
        method, correction: McNemar variant (:func:`probemeter.mcnemar.mcnemar`).
        random_state: seed of the subsampling streams (one per seed and size).

    Raises:
        ValueError: unpaired arrays (different lengths for one seed), alpha outside (0, 1),
            sizes < 1, or sizes larger than a seed's test set without ``replace``.
    """
    alpha = _check_alpha(alpha)
    if not is_integer(n_simulations) or n_simulations < 1:
        raise ValueError(f"n_simulations must be a positive integer; got {n_simulations!r}")
    seeds = _paired_seeds(correct_a, correct_b)
    smallest = min(n for n, _, _ in seeds)
    if test_sizes is None:
        sizes = [2**k for k in range(4, 64) if 2**k < smallest] + [smallest]
    else:
        if not len(test_sizes) or not all(is_integer(m) and m >= 1 for m in test_sizes):
            raise ValueError(f"test_sizes must be positive integers; got {list(test_sizes)!r}")
        sizes = sorted({int(m) for m in test_sizes})
        if not replace and sizes[-1] > smallest:
            raise ValueError(
                f"test_sizes asks for {sizes[-1]} test examples but a seed's test set holds "
                f"only {smallest}; sizes larger than the data need replace=True (bootstrap)"
            )
    rows = []
    for m in sizes:
        per_seed = []
        for seed, (n, b, c) in enumerate(seeds):
            rng = np.random.default_rng([int(random_state), seed, m, 0x9043])
            b_sub, c_sub = _draw_discordant(rng, n, b, c, m, n_simulations, replace)
            p = mcnemar_p_values(b_sub, c_sub, method=method, correction=correction)
            per_seed.append(np.count_nonzero(p < alpha))
        per_seed = np.asarray(per_seed)
        rows.append(
            {
                "test_size": m,
                "power": per_seed.sum() / (len(seeds) * n_simulations),
                "power_min": per_seed.min() / n_simulations,
                "power_max": per_seed.max() / n_simulations,
                "seeds": len(seeds),
                "simulations": int(n_simulations),
            }
        )
    metadata = {
        "method": method,
        "correction": bool(correction),
        "random_state": int(random_state),
        "versions": environment(),
    }
    return PowerCurve(pd.DataFrame(rows), alpha, bool(replace), metadata)


# --------------------------------------------------------------------------- paired runs


def paired_data(a: ProbeData, b: ProbeData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X_a, X_b, y)`` of two representations of the same examples: each one's pool and test
    set stacked (pool first), so comparison splits can be drawn from all of it.

    Raises:
        ValueError: the two do not describe the same examples (different lengths or labels of
            pool or test set): their predictions could not be paired.
    """
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
        if X.ndim != 2 or X.shape[0] != labels.size:
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


def _seed_list(seeds: int | Sequence[int]) -> list[int]:
    if is_integer(seeds):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1; got {seeds}")
        return list(range(int(seeds)))
    values = list(seeds)
    if (
        not values
        or not all(is_integer(s) and s >= 0 for s in values)
        or len(set(values)) < len(values)
    ):
        raise ValueError(f"seeds must be distinct non-negative integers; got {seeds!r}")
    return [int(s) for s in values]


@dataclass(frozen=True, eq=False)
class ConfigurationRuns:
    """Per-example correctness of several configurations on the same runs (split × seed).

    Attributes:
        names: configuration names.
        splits: the splits; run r is (split ``runs.split[r]``, seed ``runs.seed[r]``).
        runs: one row per run: ``split`` (position in ``splits``), ``seed``.
        correct: name -> tuple over runs of boolean arrays aligned with that run's
            ``splits[split].test``.
        n_parameters: name -> trainable parameters of the configuration's probe.
        metadata: probes, training config, random state, device, timings, versions.
    """

    names: tuple[str, ...]
    splits: tuple[Split, ...]
    runs: pd.DataFrame
    correct: Mapping[str, tuple[np.ndarray, ...]] = field(repr=False)
    n_parameters: Mapping[str, int]
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def pair(self, a: str, b: str) -> PairedComparison:
        """The comparison problem (``a``, ``b``) on these runs."""
        for name in (a, b):
            if name not in self.names:
                raise ValueError(f"no configuration {name!r}; have {list(self.names)}")
        n_parameters = (self.n_parameters[a], self.n_parameters[b])
        correct_a, correct_b = self.correct[a], self.correct[b]
        return PairedComparison.build(
            a, b, self.splits, self.runs, correct_a, correct_b, n_parameters, self.metadata
        )


def run_configurations(
    features: Mapping[str, np.ndarray],
    y: object,
    splits: Sequence[Split],
    seeds: int | Sequence[int] = 5,
    *,
    probes: MLP | Mapping[str, MLP] | None = None,
    steps: int = 1000,
    batch_size: int = 64,
    lr: float = 1e-3,
    standardize: bool = True,
    random_state: int = 0,
    device: str = "auto",
    n_jobs: int | None = -1,
    progress: bool = False,
) -> ConfigurationRuns:
    """Train every configuration on every (split, seed) and keep paired test correctness.

    Each configuration is one call of the engine (all its runs at once). Probe (split j,
    seed s) trains on ``splits[j].train`` from the random stream keyed by
    (random_state, s, j) — the same for every configuration — for ``steps`` Adam updates,
    and is scored on ``splits[j].test``. The dev sets are held out and unused: the stopping rule
    is a fixed number of steps (recorded in the metadata).

    Args:
        features: name -> (n_examples, d) features; all rows describe the same examples.
        y: (n_examples,) integer labels shared by all configurations.
        splits: train/dev/test index sets (:mod:`probemeter.sampling`).
        seeds: a count (0..seeds-1) or explicit seed ids.
        probes: one probe for all configurations or name -> probe; default linear (logistic
            regression, the paper's main probe).
        standardize: z-score each configuration's features with statistics of all its rows
            (an unsupervised transform; labels are never used).
        steps, batch_size, lr, device, n_jobs, progress: see :func:`probemeter.fit_evaluate`.

    Raises:
        ValueError: features with different numbers of rows than y (unpaired), bad splits
            (empty, out of range, tests on training examples), bad seeds.
    """
    arrays, labels, probe_map = _check_configurations(
        features, y, MLP(()) if probes is None else probes
    )
    _check_splits(splits, labels.size)
    seed_ids = _seed_list(seeds)
    if not is_integer(random_state):
        raise ValueError(f"random_state must be an integer; got {random_state!r}")
    config = TrainingConfig(steps=steps, batch_size=batch_size, lr=lr)
    n_classes = int(labels.max()) + 1
    grid = [(j, s) for j in range(len(splits)) for s in seed_ids]
    eval_index = np.unique(np.concatenate([split.test for split in splits]))
    positions = [np.searchsorted(eval_index, split.test) for split in splits]
    correct: dict[str, tuple[np.ndarray, ...]] = {}
    seconds = {}
    for name, X in arrays.items():
        if standardize:
            std = X.std(axis=0, dtype=np.float64)
            std[std == 0] = 1.0
            X = ((X - X.mean(axis=0, dtype=np.float64)) / std).astype(np.float32)
        started = time.perf_counter()
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
            device=device,
            n_jobs=n_jobs,
            progress=progress,
            per_example=True,
        )
        seconds[name] = round(time.perf_counter() - started, 3)
        hits = evaluation.predictions == labels[eval_index][None, :]
        correct[name] = tuple(hits[r, positions[j]] for r, (j, _) in enumerate(grid))
    metadata = {
        "probes": {name: probe.to_dict() for name, probe in probe_map.items()},
        "training": config.to_dict(),
        "dev_sets": "held out, unused (fixed number of steps)",
        "standardize": bool(standardize),
        "random_state": int(random_state),
        "device": str(resolve_device(device)),
        "train_seconds": seconds,
        "versions": environment(),
    }
    return ConfigurationRuns(
        names=tuple(arrays),
        splits=tuple(splits),
        runs=pd.DataFrame({"split": [j for j, _ in grid], "seed": [s for _, s in grid]}),
        correct=correct,
        n_parameters={
            name: probe_map[name].parameter_count(X.shape[1], n_classes)
            for name, X in arrays.items()
        },
        metadata=metadata,
    )


def _pack(values: np.ndarray) -> str:
    return base64.b64encode(np.packbits(values.astype(bool)).tobytes()).decode("ascii")


def _unpack(text: str, length: int) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(base64.b64decode(text), dtype=np.uint8))
    return bits[:length].astype(bool)


@dataclass(frozen=True, eq=False)
class PairedComparison:
    """A comparison problem (Zhu et al., Def. 2): two configurations, paired run by run.

    Attributes:
        name_a, name_b: the configurations.
        runs: one row per (split, seed): ``split`` (name), ``split_index``, ``seed``,
            ``n_train, n_dev, n_test``, ``accuracy_a, accuracy_b``, the contingency counts
            ``n00, n01, n10, n11`` (Table 1) and McNemar's ``p_value``.
        correct_a, correct_b: per run, per-example correctness on the run's test set.
        n_parameters: trainable parameters of the two probes (for recommended N).
        metadata: how the runs were trained.
    """

    name_a: str
    name_b: str
    runs: pd.DataFrame = field(repr=False)
    correct_a: tuple[np.ndarray, ...] = field(repr=False)
    correct_b: tuple[np.ndarray, ...] = field(repr=False)
    n_parameters: tuple[int, int]
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

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
    ) -> PairedComparison:
        """Tabulate paired runs: contingency tables and McNemar p-values per run."""
        rows = []
        for r, (j, seed) in enumerate(zip(runs["split"], runs["seed"])):
            table = contingency_table(correct_a[r], correct_b[r])
            n_train, n_dev, n_test = splits[j].sizes
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

    def summary(self, alpha: float = 0.05) -> pd.DataFrame:
        """Per split: sizes, mean accuracies over seeds, mean |R₁ − R₂| over seeds (the
        "Mean |R₁ − R₂|" of Table 2), mean signed difference (B − A), and the fraction of seeds
        whose McNemar test rejected at ``alpha``."""
        alpha = _check_alpha(alpha)
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
            "correct_a": [_pack(c) for c in self.correct_a],
            "correct_b": [_pack(c) for c in self.correct_b],
            "n_parameters": list(self.n_parameters),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> PairedComparison:
        runs = pd.DataFrame(payload["runs"])
        lengths = runs["n_test"].to_numpy()
        return cls(
            payload["name_a"],
            payload["name_b"],
            runs,
            tuple(_unpack(t, n) for t, n in zip(payload["correct_a"], lengths)),
            tuple(_unpack(t, n) for t, n in zip(payload["correct_b"], lengths)),
            tuple(payload["n_parameters"]),
            payload.get("metadata", {}),
        )

    def save(self, path: str | Path) -> None:
        """Write as JSON, atomically."""
        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> PairedComparison:
        return cls.from_dict(json.loads(Path(path).read_text()))

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


# --------------------------------------------------------------------------- Table 2 report


@dataclass(frozen=True)
class PowerReport:
    """Zhu et al., Table 2 with power: one row per (comparison, subsampled size).

    Attributes:
        table: columns ``comparison, split, n_train, n_test, accuracy_a, accuracy_b,
            mean_gap`` (mean |R₁ − R₂| over seeds), ``recommended_n_train`` (NaN where the gap
            is 0: the comparison may have collapsed), ``power`` (simulated at the row's own
            N_test, bootstrap, pooled over seeds), ``sufficient`` (power ≥ 0.8) and
            ``recommendation_power``: the power at the smallest measured N_train ≥ the
            recommendation (NaN when the recommendation lies beyond the measured sizes).
        settings: alpha, simulations, bound settings.
        metadata: training metadata and versions.
    """

    table: pd.DataFrame = field(repr=False)
    settings: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        table = self.table.astype(object).where(self.table.notna(), None)
        return {
            "table": table.to_dict(orient="list"),
            "settings": self.settings,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> PowerReport:
        table = pd.DataFrame(payload["table"]).fillna(value=np.nan)
        return cls(table.infer_objects(), payload["settings"], payload.get("metadata", {}))

    def save(self, path: str | Path) -> None:
        """Write as JSON, atomically."""
        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> PowerReport:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_markdown(self) -> str:
        """The table in Markdown, numbers rounded for reading."""
        columns = [
            "comparison", "n_train", "n_test", "accuracy_a", "accuracy_b", "mean_gap",
            "recommended_n_train", "power", "recommendation_power",
        ]  # fmt: skip
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for _, row in self.table.iterrows():
            cells = []
            for column in columns:
                value = row[column]
                if isinstance(value, str):
                    cells.append(value)
                elif pd.isna(value):
                    cells.append("—")
                elif column in ("n_train", "n_test", "recommended_n_train"):
                    cells.append(f"{int(value):,}")
                else:
                    cells.append(f"{value:.3f}" if column != "mean_gap" else f"{value:.4f}")
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_markdown()

    def plot(self, ax: Any = None) -> Any:
        """Power against N_test, one line per comparison, with the 0.8 line (Figs. 3–5)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        for name, rows in self.table.groupby("comparison", sort=False):
            ax.plot(rows["n_test"], rows["power"], marker="o", ms=3, label=str(name))
        ax.axhline(SUFFICIENT_POWER, color="0.3", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("test examples N_test")
        ax.set_ylabel(f"power (α = {self.settings['alpha']:g})")
        ax.legend(fontsize=7)
        return ax


def power_report(
    comparisons: Sequence[PairedComparison],
    *,
    alpha: float = 0.05,
    n_simulations: int = 1000,
    random_state: int = 0,
    **bound: Any,
) -> PowerReport:
    """Table 2 of Zhu et al. (§4.4) for each comparison, with the simulated power per size.

    For every split (a subsampled size): mean |R₁ − R₂| over seeds, the N_train recommended by
    the bound (:func:`probemeter.bounds.recommend_train_size` with the larger of the two
    probes' parameter counts, §4.6; ``bound`` passes its options: factor, delta, counting,
    bits_per_parameter, variant, C, first_block_fraction, eta), and the power of McNemar's
    test at the split's own N_test (bootstrap subsamples of its test set, pooled over seeds).
    The last column checks the recommendation against the measurements: the power observed at
    the smallest measured N_train at or above it.
    """
    alpha = _check_alpha(alpha)
    recommend_train_size(0.1, 1, **bound)  # invalid bound options fail before any simulation
    rows = []
    for comparison in comparisons:
        summary = comparison.summary()
        first = len(rows)
        for split, stats in summary.iterrows():
            curve = comparison.power_curve(
                [split],
                [int(stats["n_test"])],
                alpha=alpha,
                n_simulations=n_simulations,
                replace=True,
                random_state=random_state,
            )
            recommended = np.nan
            if stats["mean_gap"] > 0:
                recommended = recommend_train_size(
                    float(stats["mean_gap"]), max(comparison.n_parameters), **bound
                ).n_train
            power = float(curve.table["power"].iloc[0])
            rows.append(
                {
                    "comparison": f"{comparison.name_a} vs {comparison.name_b}",
                    "split": split,
                    "n_train": int(stats["n_train"]),
                    "n_test": int(stats["n_test"]),
                    "accuracy_a": float(stats["accuracy_a"]),
                    "accuracy_b": float(stats["accuracy_b"]),
                    "mean_gap": float(stats["mean_gap"]),
                    "recommended_n_train": recommended,
                    "power": power,
                    "sufficient": power >= SUFFICIENT_POWER,
                }
            )
        block = rows[first:]
        for row in block:
            covering = [r for r in block if r["n_train"] >= row["recommended_n_train"]]
            row["recommendation_power"] = (
                min(covering, key=lambda r: r["n_train"])["power"] if covering else np.nan
            )
    settings = {
        "alpha": alpha,
        "simulations": int(n_simulations),
        "subsampling": "bootstrap at each split's own N_test, pooled over seeds",
        "bound": {
            key: value
            for key, value in recommend_train_size(0.1, 1, **bound).to_dict().items()
            if key not in ("gap", "target", "n_train", "n_total", "n_parameters", "log_class_size")
        },
        "random_state": int(random_state),
    }
    metadata = {"training": comparisons[0].metadata if comparisons else {}}
    return PowerReport(pd.DataFrame(rows), settings, metadata)
