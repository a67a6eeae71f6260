"""Shifted test sets: how each representation's probes hold up on text unlike the pool's.

A texts task's ``shifted`` files and ``shifted_splits`` give the data further test sets
(:attr:`~probemeter.data.ProbeData.shifted`); the curve method's probes of the largest size,
trained once, are scored on the in-distribution test set and on each shifted set
(:mod:`probemeter.curves.shifted`). This module reports, per representation and shifted set:

* the accuracy and the mean cross-entropy (nats) on the test set and on the shifted set, each
  the mean over seeds of the probes of the largest size (the test set's are the curve's
  points, the engine's numbers);
* the gap, shifted − in-distribution, with a 95 % percentile bootstrap interval over texts:
  the test set's and the shifted set's examples are resampled independently (two samples of
  texts), B = :data:`BOOTSTRAP` times, each example's correctness (cross-entropy) averaged over
  the seeds first (Efron & Tibshirani 1993, §13);
* a paired test on the shifted set: the representation chosen on the in-distribution
  development split (lowest mean development loss at the largest size; on the test set's loss
  where the curves hold no development split, said so) against every other one, McNemar's
  test per seed on the shifted set's examples (the largest p over the seeds, as the layer
  verdict takes it), Holm-adjusted over that set's comparisons.

* on two-class tasks, the monitor metrics (:mod:`probemeter.monitor`) on the test set and on
  the shifted set: AUROC, Brier score, ECE and recall at 1 % and 5 % FPR, each probe's
  threshold set on the in-distribution development split (never on a shifted set), as a
  monitor deployed on shifted text would have it.

A probe whose accuracy holds on the test set and collapses on the shifted set read a surface
of the pool's texts, not what they mean (Goldowsky-Dill et al. 2025).

References:
    Goldowsky-Dill, N., Chughtai, B., Heimersheim, S. & Hobbhahn, M. (2025). Detecting
    Strategic Deception Using Linear Probes. arXiv:2502.03407

    Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.

    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. Psychometrika 12(2), 153-157. doi:10.1007/BF02295996
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from probemeter._io import write_text_atomic
from probemeter._tables import render_table
from probemeter.power.clustered import format_p, holm
from probemeter.power.mcnemar import mcnemar

__all__ = [
    "BOOTSTRAP",
    "ShiftAnalysis",
    "ShiftRow",
    "ShiftTest",
    "analyse_shift",
    "write_shift_files",
]

#: bootstrap resamples of the gap's interval
BOOTSTRAP = 2000
#: the interval's coverage
LEVEL = 0.95
#: ``shift.json``'s schema
SCHEMA = "probemeter.shift/1"
#: the monitor metrics the table shows, in order (:mod:`probemeter.monitor`'s names)
MONITOR_COLUMNS = ("auroc", "recall@1%fpr", "recall@5%fpr", "brier", "ece")


@dataclass(frozen=True)
class ShiftRow:
    """One representation on one shifted set: accuracy and loss (nats) on the test set and on
    the shifted set (means over seeds), the gaps (shifted − test) and their bootstrap
    intervals."""

    representation: str
    shifted: str
    n_test: int
    n_shifted: int
    test_accuracy: float
    shifted_accuracy: float
    accuracy_gap: float
    accuracy_gap_low: float
    accuracy_gap_high: float
    test_loss: float
    shifted_loss: float
    loss_gap: float
    loss_gap_low: float
    loss_gap_high: float
    #: two classes: per monitor metric, its mean over seeds on the test set and on the
    #: shifted set (``{"auroc": {"test": ..., "shifted": ...}, ...}``); else None
    monitor: dict[str, dict[str, float]] | None = None


@dataclass(frozen=True)
class ShiftTest:
    """McNemar's test on a shifted set between the representation chosen on the
    in-distribution development split and another: the accuracies there (means over the shared
    seeds), each seed's p-value, their largest and its Holm adjustment over the set's
    comparisons."""

    shifted: str
    first: str
    second: str
    accuracy_first: float
    accuracy_second: float
    p_values: tuple[float, ...]
    p_value: float
    p_adjusted: float


@dataclass(frozen=True)
class ShiftAnalysis:
    """Every representation on every shifted set (:class:`ShiftRow`) and the paired tests on
    each shifted set (:class:`ShiftTest`); ``chosen_on`` says where the tests' first
    representation was chosen (``"dev"``, or ``"test"`` for curves without a development
    split)."""

    rows: tuple[ShiftRow, ...]
    tests: tuple[ShiftTest, ...]
    chosen: str
    chosen_on: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "chosen": self.chosen,
            "chosen_on": self.chosen_on,
            "rows": [asdict(row) for row in self.rows],
            "tests": [{**asdict(test), "p_values": list(test.p_values)} for test in self.tests],
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ShiftAnalysis:
        return cls(
            tuple(ShiftRow(**row) for row in payload["rows"]),
            tuple(
                ShiftTest(**{**test, "p_values": tuple(test["p_values"])})
                for test in payload["tests"]
            ),
            payload["chosen"],
            payload["chosen_on"],
        )

    def table(self, fmt: str = "markdown") -> str:
        """Per representation and shifted set: test and shifted accuracy, the gap with its
        interval, test and shifted loss, the gap with its interval."""
        header = [
            "representation",
            "shifted set",
            "test acc.",
            "shifted acc.",
            f"acc. gap [{LEVEL:.0%} CI]",
            "test loss",
            "shifted loss",
            f"loss gap [{LEVEL:.0%} CI]",
        ]
        body = [
            [
                row.representation,
                row.shifted,
                f"{row.test_accuracy:.3f}",
                f"{row.shifted_accuracy:.3f}",
                f"{row.accuracy_gap:+.3f} [{row.accuracy_gap_low:+.3f}, "
                f"{row.accuracy_gap_high:+.3f}]",
                f"{row.test_loss:.3f}",
                f"{row.shifted_loss:.3f}",
                f"{row.loss_gap:+.3f} [{row.loss_gap_low:+.3f}, {row.loss_gap_high:+.3f}]",
            ]
            for row in self.rows
        ]
        return render_table(header, body, fmt)

    def monitor_table(self, fmt: str = "markdown") -> str:
        """Per representation and shifted set, the monitor metrics on the test set → on the
        shifted set (two-class tasks; empty otherwise)."""
        rows = [row for row in self.rows if row.monitor]
        if not rows:
            return ""
        names = [name for name in MONITOR_COLUMNS if name in rows[0].monitor]
        header = ["representation", "shifted set", *(f"{name} (test → shifted)" for name in names)]
        body = [
            [
                row.representation,
                row.shifted,
                *(
                    _monitor_cell(row.monitor[name]) if name in row.monitor else "–"
                    for name in names
                ),
            ]
            for row in rows
        ]
        return render_table(header, body, fmt)

    def tests_table(self, fmt: str = "markdown") -> str:
        header = ["shifted set", "chosen", "against", "acc. chosen", "acc. other", "p", "p (Holm)"]
        body = [
            [
                test.shifted,
                test.first,
                test.second,
                f"{test.accuracy_first:.3f}",
                f"{test.accuracy_second:.3f}",
                format_p(test.p_value),
                format_p(test.p_adjusted),
            ]
            for test in self.tests
        ]
        return render_table(header, body, fmt)

    def notes(self) -> list[str]:
        where = (
            "the in-distribution development split"
            if self.chosen_on == "dev"
            else "the in-distribution test set (the curves hold no development split)"
        )
        return [
            "Gaps are shifted − in-distribution, with a "
            f"{LEVEL:.0%} percentile bootstrap interval over texts ({BOOTSTRAP} resamples of "
            "each set's texts).",
            f"Paired tests on each shifted set: {self.chosen!r}, chosen on {where}, against "
            "every other representation (McNemar's test per seed, the largest p over seeds; "
            "Holm-adjusted over the set's comparisons).",
            *(
                [
                    "Monitor metrics: recall at a false-positive rate with each probe's threshold "
                    "set on the in-distribution development split, applied unchanged to both sets."
                ]
                if any(row.monitor for row in self.rows)
                else []
            ),
        ]

    def __str__(self) -> str:
        parts = [self.table()]
        if self.monitor_table():
            parts.append(self.monitor_table())
        if self.tests:
            parts.append(self.tests_table())
        return "\n\n".join([*parts, *self.notes()])


def _monitor_cell(values: Mapping[str, float]) -> str:
    """``test → shifted``, with the false-positive rates a recall's threshold reached."""
    cell = f"{values['test']:.3f} → {values['shifted']:.3f}"
    if "test_fpr" in values:
        cell += f" (FPR {values['test_fpr']:.2f} → {values['shifted_fpr']:.2f})"
    return cell


def analyse_shift(
    curves: Sequence[Any], *, random_state: int = 0, n_bootstrap: int = BOOTSTRAP
) -> ShiftAnalysis | None:
    """The shift analysis (module docstring) of loss-data curves
    (:class:`~probemeter.curves.curve.LossDataCurve`) whose probes were scored on shifted
    sets; None when none was."""
    scored = [curve for curve in curves if curve.shifted is not None]
    if not scored:
        return None
    rng = np.random.default_rng(random_state)
    rows = []
    for curve in scored:
        for name, found in curve.shifted["sets"].items():
            rows.append(_row(curve, name, found, rng, n_bootstrap))
    chosen, chosen_on = _chosen(scored)
    tests = []
    names = sorted({name for curve in scored for name in curve.shifted["sets"]})
    first = next(curve for curve in scored if curve.name == chosen)
    for name in names:
        found = [
            _paired(name, first, curve)
            for curve in scored
            if curve is not first
            and name in curve.shifted["sets"]
            and name in first.shifted["sets"]
        ]
        adjusted = holm([p for _, p in found]) if found else []
        tests += [
            ShiftTest(
                name,
                first.name,
                other,
                accuracy_first,
                accuracy_second,
                p_values,
                p,
                float(q),
            )
            for ((other, accuracy_first, accuracy_second, p_values), p), q in zip(found, adjusted)
        ]
    return ShiftAnalysis(tuple(rows), tuple(tests), chosen, chosen_on)


def _final(curve: Any) -> Any:
    return curve.points[curve.points["n"] == curve.sizes[-1]]


def _row(curve: Any, name: str, found: Mapping[str, Any], rng: Any, n_bootstrap: int) -> ShiftRow:
    """One representation on one shifted set: the test set's accuracy and loss are the
    curve's points at its largest size (the engine's), the shifted set's the same probes'."""
    final = _final(curve)
    seeds = curve.shifted["seeds"]
    by_seed = final.set_index("seed").loc[seeds]
    test_accuracy = float(by_seed["accuracy"].mean())
    test_loss = float(by_seed["loss"].mean())
    shifted_accuracy = float(np.mean(found["accuracy"]))
    shifted_loss = float(np.mean(found["loss"]))
    labels = np.asarray(found["labels"])
    shifted_correct = (np.asarray(found["predictions"]) == labels[None, :]).mean(axis=0)
    shifted_nll = np.asarray(found["nll"], dtype=np.float64).mean(axis=0)
    test_correct = np.mean(
        [curve.final_correct.correct[curve.final_correct.seeds.index(s)] for s in seeds], axis=0
    )
    test_nll = np.asarray(curve.shifted["test_nll"], dtype=np.float64).mean(axis=0)
    accuracy_low, accuracy_high = _gap_interval(test_correct, shifted_correct, rng, n_bootstrap)
    loss_low, loss_high = _gap_interval(test_nll, shifted_nll, rng, n_bootstrap)
    return ShiftRow(
        curve.name,
        name,
        len(test_nll),
        len(labels),
        test_accuracy,
        shifted_accuracy,
        shifted_accuracy - test_accuracy,
        accuracy_low,
        accuracy_high,
        test_loss,
        shifted_loss,
        shifted_loss - test_loss,
        loss_low,
        loss_high,
        _monitor(curve, found),
    )


def _monitor(curve: Any, found: Mapping[str, Any]) -> dict[str, dict[str, float]] | None:
    """Each monitor metric both sets have: its mean over seeds on the test set and on the
    shifted set."""
    if curve.monitor is None or "monitor" not in found:
        return None
    found_monitor = found["monitor"]
    measured = {}
    for name in MONITOR_COLUMNS:
        values = [
            part["metrics"].get(name, {}).get("value") for part in (curve.monitor, found_monitor)
        ]
        if None in values:  # not measured (no threshold), or undefined on one set
            continue
        measured[name] = {"test": float(values[0]), "shifted": float(values[1])}
        if name in found_monitor.get("test_fpr", {}):  # the false-positive rate it reached
            reached = [part["test_fpr"][name]["value"] for part in (curve.monitor, found_monitor)]
            if None not in reached:
                measured[name] |= {"test_fpr": float(reached[0]), "shifted_fpr": float(reached[1])}
    return measured


def _gap_interval(
    test: np.ndarray, shifted: np.ndarray, rng: Any, n_bootstrap: int
) -> tuple[float, float]:
    """The percentile interval of mean(shifted*) − mean(test*), each set's examples resampled
    with replacement on its own."""
    test_means = test[rng.integers(0, len(test), size=(n_bootstrap, len(test)))].mean(axis=1)
    picks = rng.integers(0, len(shifted), size=(n_bootstrap, len(shifted)))
    gaps = shifted[picks].mean(axis=1) - test_means
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(gaps, [tail, 1 - tail])
    return float(low), float(high)


def _chosen(curves: Sequence[Any]) -> tuple[str, str]:
    """The representation of the lowest mean development loss at its largest size (the
    first on ties); the test loss where any curve has no development split."""
    column = "dev_loss" if all(curve.has_development for curve in curves) else "loss"
    losses = [float(_final(curve)[column].mean()) for curve in curves]
    return curves[int(np.argmin(losses))].name, "dev" if column == "dev_loss" else "test"


def _paired(
    name: str, first: Any, second: Any
) -> tuple[tuple[str, float, float, tuple[float, ...]], float]:
    """McNemar's test per shared seed on shifted set ``name``; the largest p over seeds."""
    a, b = first.shifted, second.shifted
    seeds = [seed for seed in a["seeds"] if seed in b["seeds"]]
    labels = np.asarray(a["sets"][name]["labels"])

    def correct(shifted: Mapping[str, Any], seed: int) -> np.ndarray:
        predictions = shifted["sets"][name]["predictions"][shifted["seeds"].index(seed)]
        return np.asarray(predictions) == labels

    pairs = [(correct(a, seed), correct(b, seed)) for seed in seeds]
    p_values = tuple(float(mcnemar(x, y).p_value) for x, y in pairs)
    accuracy_first = float(np.mean([x.mean() for x, _ in pairs]))
    accuracy_second = float(np.mean([y.mean() for _, y in pairs]))
    return (second.name, accuracy_first, accuracy_second, p_values), max(p_values)


def write_shift_files(analysis: ShiftAnalysis, run_dir: str | Path) -> tuple[Path, ...]:
    """Write ``shift.json`` (:meth:`ShiftAnalysis.to_dict`) and ``shift.md`` (the tables and
    notes) into ``run_dir``, atomically; returns their paths."""
    import json

    run_dir = Path(run_dir)
    files = (run_dir / "shift.json", run_dir / "shift.md")
    write_text_atomic(files[0], json.dumps(analysis.to_dict(), indent=2) + "\n")
    write_text_atomic(files[1], str(analysis) + "\n")
    return files
