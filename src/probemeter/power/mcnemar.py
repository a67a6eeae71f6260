"""McNemar's test on paired predictions (Zhu et al., §3.5, Table 1; McNemar, 1947).

Two probes f_A, f_B predict the same test examples. The 2×2 contingency table (Table 1)::

                    f_B incorrect   f_B correct
    f_A incorrect   n00             n01
    f_A correct     n10             n11

Only the discordant counts b = n01 and c = n10 carry evidence. Under H0 (the two
configurations are equally accurate) b ~ Binomial(b + c, 1/2). Two versions:

* **exact**: two-sided binomial p = min(1, 2·P[Bin(b + c, ½) ≤ min(b, c)]);
* **χ²**: χ² = (|b − c| − k)² / (b + c) with one degree of freedom, k = 0 as in the paper's
  §3.5 formula χ² = (p01 − p10)² / (p01 + p10), or k = 1 (Edwards' continuity correction,
  ``correction=True``; we clip |b − c| − 1 at 0, so b = c gives χ² = 0 and p = 1).

``method="auto"`` uses the exact test when b + c < 25 (the usual rule: the χ² approximation
needs enough discordant pairs) and χ² otherwise. With no discordant pair at all (b + c = 0 —
e.g. both probes 100 % or 0 % correct, a pitfall of earlier implementations) there is no evidence
of a difference: p = 1, statistic 0. The table is always built as 2×2 from counts, so it never
degenerates when a row or column is empty.

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801

    McNemar, Q. (1947). Note on the sampling error of the difference between correlated proportions
    or percentages. *Psychometrika* 12(2), 153–157. doi:10.1007/BF02295996

    Edwards, A. L. (1948). Note on the "correction for continuity" in testing the significance of
    the difference between correlated proportions. *Psychometrika* 13(3), 185–187.
    doi:10.1007/BF02289261
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from probemeter._validation import one_of
from probemeter.power.defaults import POWER_ALPHA

__all__ = ["METHODS", "McNemarResult", "contingency_table", "mcnemar", "mcnemar_p_values"]

METHODS = ("auto", "exact", "chi2")
#: below this many discordant pairs, ``method="auto"`` uses the exact binomial test
EXACT_BELOW = 25


@dataclass(frozen=True)
class McNemarResult:
    """One McNemar test.

    Attributes:
        table: the 2×2 contingency table ((n00, n01), (n10, n11)) as nested tuples of ints.
        statistic: min(b, c) for the exact test, χ² for the χ² test.
        p_value: two-sided p-value.
        method: ``"exact"`` or ``"chi2"`` (what ``"auto"`` chose).
        correction: whether the χ² continuity correction was applied.
    """

    table: tuple[tuple[int, int], tuple[int, int]]
    statistic: float
    p_value: float
    method: str
    correction: bool

    @property
    def discordant(self) -> tuple[int, int]:
        """(b, c) = (n01: only B correct, n10: only A correct)."""
        return self.table[0][1], self.table[1][0]

    def significant(self, alpha: float = POWER_ALPHA) -> bool:
        """Whether H0 (equal accuracy) is rejected at level ``alpha``."""
        return self.p_value < alpha

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "table": [list(row) for row in self.table]}


def _as_correct(name: str, values: object) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of per-example correctness; got {array.shape}"
        )
    if array.dtype != bool:
        if not np.isin(array, (0, 1)).all():
            raise ValueError(f"{name} must hold booleans or 0/1 (correct or not per example)")
        array = array.astype(bool)
    return array


def contingency_table(correct_a: object, correct_b: object) -> np.ndarray:
    """The 2×2 table of Zhu et al., Table 1: rows f_A incorrect/correct, columns f_B
    incorrect/correct, from per-example correctness of two probes on the *same* examples.

    Raises:
        ValueError: arrays of different lengths (unpaired predictions) or not boolean/0-1.
    """
    a, b = _as_correct("correct_a", correct_a), _as_correct("correct_b", correct_b)
    if a.shape != b.shape:
        raise ValueError(
            f"correct_a has {a.size} examples but correct_b has {b.size}: McNemar's test needs "
            "paired predictions on the same test examples"
        )
    table = np.zeros((2, 2), dtype=np.int64)
    np.add.at(table, (a.astype(np.int64), b.astype(np.int64)), 1)
    return table


def mcnemar_p_values(
    b: object, c: object, *, method: str = "auto", correction: bool = False
) -> np.ndarray:
    """Vectorised two-sided McNemar p-values for arrays of discordant counts ``b``, ``c``.

    The formulas are in the module docstring; this is what power simulations call on
    thousands of tables at once.
    """
    one_of(*METHODS)(method, "method")
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if np.any(b < 0) or np.any(c < 0):
        raise ValueError("discordant counts b and c must be non-negative")
    b, c = np.broadcast_arrays(b, c)
    total = b + c
    exact = np.full(total.shape, method == "exact") if method != "auto" else total < EXACT_BELOW
    p = np.ones(total.shape, dtype=np.float64)
    if np.any(exact):
        low = np.minimum(b, c)[exact]
        p[exact] = np.minimum(1.0, 2.0 * stats.binom.cdf(low, total[exact], 0.5))
    chi = ~exact & (total > 0)
    if np.any(chi):
        p[chi] = stats.chi2.sf(_chi2_statistic(b[chi], c[chi], correction), df=1)
    return p


def _chi2_statistic(b: np.ndarray, c: np.ndarray, correction: bool) -> np.ndarray:
    difference = np.abs(b - c).astype(np.float64)
    if correction:
        difference = np.maximum(difference - 1.0, 0.0)
    return difference**2 / (b + c)


def mcnemar(
    correct_a: object | None = None,
    correct_b: object | None = None,
    *,
    table: object | None = None,
    method: str = "auto",
    correction: bool = False,
) -> McNemarResult:
    """McNemar's test of two probes' accuracies on the same test examples.

    Give per-example correctness ``correct_a`` and ``correct_b`` (booleans, paired by
    position), or a 2×2 ``table`` laid out as Zhu et al., Table 1.

    Args:
        method: ``"auto"`` (exact when b + c < 25), ``"exact"`` or ``"chi2"``.
        correction: subtract 1 from |b − c| in χ² (Edwards); the paper's formula has none.

    Examples:
        From a table: 5 examples only B got right, 20 only A; with 25 discordant pairs the
        χ² test applies, χ² = (5 − 20)² / 25 = 9.

        >>> from probemeter.power import mcnemar
        >>> result = mcnemar(table=[[40, 5], [20, 935]])
        >>> result.method, result.statistic, round(result.p_value, 4)
        ('chi2', 9.0, 0.0027)

        From per-example correctness (two discordant pairs: the exact binomial test):

        >>> result = mcnemar([True, True, False, True], [False, True, False, False])
        >>> result.discordant, result.method, result.p_value
        ((0, 2), 'exact', 0.5)

    Raises:
        ValueError: both or neither of (arrays, table); unpaired or empty arrays; a table
            that is not 2×2 non-negative integers, or counts no example; an unknown method.
    """
    if table is None:
        if correct_a is None or correct_b is None:
            raise ValueError("give correct_a and correct_b, or table")
        counts = contingency_table(correct_a, correct_b)
    else:
        if correct_a is not None or correct_b is not None:
            raise ValueError("give correct_a and correct_b, or table — not both")
        counts = np.asarray(table)
        if (
            counts.shape != (2, 2)
            or not np.all(np.isfinite(counts))
            or np.any(counts < 0)
            or not np.all(counts == np.round(counts))
        ):
            raise ValueError(f"table must be a 2x2 array of non-negative counts; got {table!r}")
        counts = counts.astype(np.int64)
    if counts.sum() == 0:
        raise ValueError(
            "no test examples: McNemar's test needs the two probes' results on at least one "
            "shared test example"
        )
    b, c = int(counts[0, 1]), int(counts[1, 0])
    p_value = float(mcnemar_p_values(b, c, method=method, correction=correction))
    chosen = "exact" if method == "exact" or (method == "auto" and b + c < EXACT_BELOW) else "chi2"
    if chosen == "exact":
        statistic = float(min(b, c))
    else:
        statistic = float(_chi2_statistic(np.array(b), np.array(c), correction)) if b + c else 0.0
    return McNemarResult(
        table=((int(counts[0, 0]), b), (c, int(counts[1, 1]))),
        statistic=statistic,
        p_value=p_value,
        method=chosen,
        correction=bool(correction and chosen == "chi2"),
    )
