"""Detecting collapsed comparison problems (Zhu et al., §3.6).

A comparison *collapses* when its two configurations are, for the task, the same: more data
will not separate them, and recommending a data size for it is meaningless (§3.1 remark, §4.6).
The paper suggests two heuristics, both implemented by :func:`detect_collapse`:

* ``"pilots"`` — repeat the pilot study: draw several independent stratified subsamples
  (train/dev/test 4:1:1), train both configurations on each, and test;
* ``"rotation"`` — cut the data into K = 6 folds; run i validates on fold i, tests on fold
  (i + 1) mod K and trains on the rest, so every example is tested once.

**Verdict.** Each split j (a pilot or a fold) gives d_j, the accuracy difference B − A averaged
over seeds; the splits are the (approximately) independent replications. With the Student-t
interval I = d̄ ± t_{1−α/2, J−1} · s_d / √J over the J splits:

* ``"not collapsed"`` — I excludes 0: the difference has a consistent sign beyond chance;
* ``"collapsed"`` — I lies inside [−tolerance, +tolerance]: any difference is too small to
  matter (an equivalence test, in the spirit of TOST);
* ``"undecided"`` — neither: the pilots are too small or too noisy to tell.

The evidence also holds every run's McNemar test and the fraction that rejected at α (the
pilots' own power).

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from probemeter._validation import check_scalar, one_of
from probemeter.power.defaults import POWER_ALPHA
from probemeter.power.paired import PairedComparison, run_configurations
from probemeter.power.sampling import pilot_splits, rotation_splits
from probemeter.probes import MLP

__all__ = ["VERDICTS", "CollapseVerdict", "collapse_verdict", "detect_collapse"]

VERDICTS = ("collapsed", "not collapsed", "undecided")


@dataclass(frozen=True)
class CollapseVerdict:
    """Whether a comparison problem collapsed, with its evidence.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        mean_difference: d̄, mean over splits of the seed-averaged accuracy difference B − A.
        interval: the (1 − α) Student-t interval of d̄ over splits.
        tolerance: differences within ±tolerance count as "no difference".
        alpha: level of the interval and of each run's McNemar test.
        rejection_rate: fraction of runs whose McNemar test rejected at α.
        splits: J, the number of pilots or folds.
        reason: one sentence explaining the verdict.
        evidence: the per-run table of the comparison (accuracies, counts, p-values).
    """

    verdict: str
    mean_difference: float
    interval: tuple[float, float]
    tolerance: float
    alpha: float
    rejection_rate: float
    splits: int
    reason: str
    evidence: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "mean_difference": self.mean_difference,
            "interval": list(self.interval),
            "tolerance": self.tolerance,
            "alpha": self.alpha,
            "rejection_rate": self.rejection_rate,
            "splits": self.splits,
            "reason": self.reason,
            "evidence": self.evidence.to_dict(orient="list"),
        }

    def __str__(self) -> str:
        low, high = self.interval
        return (
            f"{self.verdict}: mean accuracy difference {self.mean_difference:+.4f}, "
            f"{100 * (1 - self.alpha):g}% interval [{low:+.4f}, {high:+.4f}] over "
            f"{self.splits} splits; McNemar rejected in {self.rejection_rate:.0%} of runs. "
            f"{self.reason}"
        )


def collapse_verdict(
    comparison: PairedComparison, *, alpha: float = POWER_ALPHA, tolerance: float = 0.01
) -> CollapseVerdict:
    """The verdict of the module docstring from a comparison run on pilots or folds.

    Raises:
        ValueError: fewer than two splits, alpha outside (0, 1), negative tolerance.
    """
    check_scalar(alpha, "alpha", float, min_val=0, max_val=1, include_boundaries="neither")
    check_scalar(tolerance, "tolerance", float, min_val=0)
    runs = comparison.runs
    per_split = (
        (runs["accuracy_b"] - runs["accuracy_a"]).groupby(runs["split_index"]).mean().to_numpy()
    )
    n_splits = per_split.size
    if n_splits < 2:
        raise ValueError(
            f"collapse detection needs at least 2 splits (pilots or folds); got {n_splits}"
        )
    mean = float(per_split.mean())
    half = float(
        stats.t.ppf(1 - alpha / 2, n_splits - 1) * per_split.std(ddof=1) / math.sqrt(n_splits)
    )
    low, high = mean - half, mean + half
    if low > 0 or high < 0:
        verdict = "not collapsed"
        reason = "The interval excludes 0: the two configurations differ consistently."
    elif -tolerance <= low and high <= tolerance:
        verdict = "collapsed"
        reason = (
            f"The interval lies within ±{tolerance:g}: any difference is too small to matter; "
            "recommending a data size for this comparison is not meaningful."
        )
    else:
        verdict = "undecided"
        reason = (
            f"The interval contains 0 but reaches beyond ±{tolerance:g}: more or larger "
            "pilots are needed to tell."
        )
    return CollapseVerdict(
        verdict=verdict,
        mean_difference=mean,
        interval=(low, high),
        tolerance=float(tolerance),
        alpha=float(alpha),
        rejection_rate=float((runs["p_value"] < alpha).mean()),
        splits=int(n_splits),
        reason=reason,
        evidence=comparison.to_frame(),
    )


def detect_collapse(
    X_a: np.ndarray,
    X_b: np.ndarray,
    y: np.ndarray,
    *,
    probe_a: MLP | None = None,
    probe_b: MLP | None = None,
    method: str = "rotation",
    n_folds: int = 6,
    n_pilots: int = 8,
    per_class: int = 64,
    seeds: int | Sequence[int] = 3,
    alpha: float = POWER_ALPHA,
    tolerance: float = 0.01,
    random_state: int = 0,
    **training: Any,
) -> CollapseVerdict:
    """Train configurations A and B on repeated pilots or on the K-fold rotation and return
    the collapse verdict (module docstring).

    Args:
        X_a, X_b: features of the same examples (rows paired) under the two configurations;
            pass the same array twice to compare two probe families.
        y: labels.
        probe_a, probe_b: probes (default linear for both).
        method: ``"rotation"`` (``n_folds`` folds) or ``"pilots"`` (``n_pilots`` stratified
            subsamples of ``per_class`` training examples per class, 4:1:1).
        seeds: seeds per split.
        training: passed to :func:`probemeter.power.paired.run_configurations` (``config``,
            ``n_jobs``...).
    """
    one_of("rotation", "pilots")(method, "method")
    if method == "rotation":
        splits = rotation_splits(y, n_folds, random_state=random_state)
    else:
        splits = pilot_splits(y, per_class, n_pilots, random_state=random_state)
    linear = MLP(())
    runs = run_configurations(
        {"A": X_a, "B": X_b},
        y,
        splits,
        seeds,
        probes={"A": probe_a or linear, "B": probe_b or linear},
        random_state=random_state,
        **training,
    )
    return collapse_verdict(runs.pair("A", "B"), alpha=alpha, tolerance=tolerance)
