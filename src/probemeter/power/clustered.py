"""McNemar's test for clustered data (Obuchowski 1998), its power by a cluster bootstrap, and
Holm's adjustment of many p-values.

Zhu et al.'s McNemar test (§3.5) treats each test example as an independent draw. The words of
a word-level task (UPOS, dependency labels, arcs, the edges of a structural probe's tree) are
not: a test set is a sample of *sentences*, and the words of one sentence share their
difficulty, so the plain test's p-values are too small. Obuchowski's statistic compares the two
proportions correct with a variance estimated from whole clusters. For clusters k = 1..K of
n_k examples, with X_k and Y_k the examples of cluster k that probes A and B classified
correctly, N = Σ n_k, p̂_A = ΣX_k / N, p̂_B = ΣY_k / N and D_k = X_k − Y_k::

    χ² = (p̂_A − p̂_B)² / V,   V = K / ((K − 1) N²) · Σ_k (D_k − n_k (p̂_A − p̂_B))²

with one degree of freedom (Obuchowski 1998, eqs. 3–5: V is var(p̂_A) + var(p̂_B) −
2 cov(p̂_A, p̂_B) of the ratio estimators). With every cluster of one example it is McNemar's
χ² up to the finite-sample factor (K − 1)/K and the centring of the discordances.

Its power is simulated as Zhu et al. simulate McNemar's (§3.5, after Card et al. 2020), but
resampling whole clusters with replacement (the cluster bootstrap), pooled over seeds.

When a sweep makes several comparisons, :func:`holm` adjusts their p-values (Holm 1979): the
family-wise error rate stays at most α whatever the dependence between the tests.

References:
    Obuchowski, N. A. (1998). On the comparison of correlated proportions for clustered data.
    *Statistics in Medicine* 17(13), 1495–1507.
    doi:10.1002/(SICI)1097-0258(19980715)17:13<1495::AID-SIM863>3.0.CO;2-I

    Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scandinavian
    Journal of Statistics* 6(2), 65–70. https://www.jstor.org/stable/4615733

    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801

    Card, D., Henderson, P., Khandelwal, U., Jia, R., Mahowald, K. & Jurafsky, D. (2020).
    With little power comes great responsibility. *EMNLP 2020*. arXiv:2010.06595
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from probemeter._validation import check_scalar
from probemeter.power.mcnemar import contingency_table
from probemeter.power.method import POWER_ALPHA

__all__ = [
    "ClusteredMcNemarResult",
    "cluster_sums",
    "clustered_mcnemar",
    "clustered_power",
    "format_p",
    "holm",
]

#: the smallest p-value written as a number: below it, a double's p-values have underflowed
SMALLEST_P = 1e-300


@dataclass(frozen=True)
class ClusteredMcNemarResult:
    """One clustered McNemar test (Obuchowski 1998; see the module docstring).

    Attributes:
        accuracy_a, accuracy_b: p̂_A and p̂_B, the proportions of examples correct.
        statistic: χ² with one degree of freedom (inf when every cluster differs by exactly
            the same proportion, a difference with no variance).
        p_value: two-sided p-value.
        n_clusters: K, the clusters (sentences).
        n_examples: N, the examples (words).
        design_effect: V divided by the variance the plain (unclustered) test assumes for the
            same difference, Σ_i (d_i − d̄)² / N² over examples; how much the clustering
            inflates the variance (1: as if independent; nan without discordance).
    """

    accuracy_a: float
    accuracy_b: float
    statistic: float
    p_value: float
    n_clusters: int
    n_examples: int
    design_effect: float

    def significant(self, alpha: float = POWER_ALPHA) -> bool:
        """Whether equal accuracy is rejected at level ``alpha``."""
        return self.p_value < alpha

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cluster_sums(
    correct_a: object, correct_b: object, clusters: object
) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster, its size n_k and the difference D_k = X_k − Y_k of examples correct.

    Raises:
        ValueError: unpaired or non-boolean correctness, or ``clusters`` not one integer id
            per example.
    """
    table = contingency_table(correct_a, correct_b)  # validates the pairing and the values
    a = np.asarray(correct_a).astype(np.int64)
    b = np.asarray(correct_b).astype(np.int64)
    ids = np.asarray(clusters)
    if ids.shape != a.shape or ids.dtype.kind not in "iu":
        raise ValueError(
            f"clusters must give one integer id per example ({int(table.sum())}); got shape "
            f"{ids.shape}, dtype {ids.dtype}"
        )
    _, index = np.unique(ids, return_inverse=True)
    sizes = np.bincount(index)
    differences = np.bincount(index, weights=a - b).astype(np.int64)
    return sizes, differences


def _statistic(sizes: np.ndarray, differences: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """χ² of Obuchowski's test over clusters of sizes n_k and differences D_k, each counted
    w_k times (w: (K,) ones for the test set itself, (draws, K) for bootstrap resamples):
    K = Σ w_k, N = Σ w_k n_k, d̂ = Σ w_k D_k / N, χ² = (Σ w_k D_k)² (K − 1) / (K Σ w_k (D_k −
    n_k d̂)²); inf when the difference has no variance, 0 when there is none."""
    weights = np.asarray(weights, dtype=np.float64)
    clusters = weights.sum(axis=-1)
    shift = (weights * differences).sum(axis=-1)
    gap = shift / (weights * sizes).sum(axis=-1)
    spread = (weights * (differences - sizes * gap[..., None]) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = shift**2 * (clusters - 1) / (clusters * spread)
    statistic = np.where(shift == 0, 0.0, statistic)
    return np.where((shift != 0) & (spread == 0), np.inf, statistic)


def clustered_mcnemar(
    correct_a: object, correct_b: object, clusters: object
) -> ClusteredMcNemarResult:
    """Obuchowski's (1998) test of two probes' accuracies on the same test examples, which
    were sampled in ``clusters`` (e.g. each word's sentence id); see the module docstring.

    Examples:
        >>> from probemeter.power.clustered import clustered_mcnemar
        >>> result = clustered_mcnemar(
        ...     [1, 1, 1, 0, 1, 1], [0, 1, 1, 0, 0, 0], clusters=[0, 0, 1, 1, 2, 2]
        ... )
        >>> round(result.statistic, 4), round(result.p_value, 4)
        (3.0, 0.0833)

    Raises:
        ValueError: unpaired or non-boolean correctness, clusters not one integer per
            example, or fewer than two clusters (no variance between clusters).
    """
    sizes, differences = cluster_sums(correct_a, correct_b, clusters)
    if sizes.size < 2:
        raise ValueError(
            "clusters: the clustered test estimates its variance between clusters and needs at "
            f"least 2; got {sizes.size}"
        )
    a = np.asarray(correct_a, dtype=np.float64)
    b = np.asarray(correct_b, dtype=np.float64)
    statistic = float(_statistic(sizes, differences, np.ones(sizes.size)))
    p_value = float(stats.chi2.sf(statistic, df=1)) if np.isfinite(statistic) else 0.0
    n = a.size
    gap = a.mean() - b.mean()
    k = sizes.size
    clustered = k / ((k - 1) * n**2) * float(((differences - sizes * gap) ** 2).sum())
    independent = float((((a - b) - gap) ** 2).sum()) / n**2
    design = clustered / independent if independent > 0 else float("nan")
    return ClusteredMcNemarResult(
        float(a.mean()), float(b.mean()), statistic, p_value, int(k), int(n), design
    )


def clustered_power(
    correct_a: Sequence[np.ndarray],
    correct_b: Sequence[np.ndarray],
    clusters: object,
    *,
    alpha: float = POWER_ALPHA,
    n_simulations: int = 1000,
    random_state: int = 0,
) -> float:
    """Power of :func:`clustered_mcnemar` at α on a test set of this many clusters, by the
    cluster bootstrap: per seed, ``n_simulations`` resamples of K clusters drawn with
    replacement, the test on each; significant resamples over seeds × simulations (pooled
    over seeds, as Zhu et al. §3.5 pool McNemar's).

    Raises:
        ValueError: no seed, seeds of unequal count, or what :func:`cluster_sums` refuses.
    """
    check_scalar(n_simulations, "n_simulations", int, min_val=1)
    if len(correct_a) != len(correct_b) or not len(correct_a):
        raise ValueError(
            f"correct_a and correct_b must hold the same non-zero number of seeds; got "
            f"{len(correct_a)} and {len(correct_b)}"
        )
    significant = 0
    for seed, (a, b) in enumerate(zip(correct_a, correct_b)):
        sizes, differences = cluster_sums(a, b, clusters)
        rng = np.random.default_rng([int(random_state), seed, 0xC1A5])
        weights = rng.multinomial(sizes.size, np.full(sizes.size, 1 / sizes.size), n_simulations)
        statistic = _statistic(sizes, differences, weights)  # cluster k drawn w_k times
        p = np.where(np.isfinite(statistic), stats.chi2.sf(statistic, df=1), 0.0)
        significant += int(np.count_nonzero(p < alpha))
    return significant / (len(correct_a) * n_simulations)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values, in the order given: sorted ascending, the
    i-th smallest (i = 1..m) becomes max_{j ≤ i} min(1, (m − j + 1) · p_(j)).

    Examples:
        >>> from probemeter.power.clustered import holm
        >>> holm([0.01, 0.04, 0.03]).round(4).tolist()
        [0.03, 0.06, 0.06]

    Raises:
        ValueError: a p-value outside [0, 1] or not a number.
    """
    values = np.asarray(p_values, dtype=np.float64)
    if values.ndim != 1 or np.isnan(values).any() or (values < 0).any() or (values > 1).any():
        raise ValueError(f"p_values must be numbers in [0, 1]; got {list(p_values)!r}")
    order = np.argsort(values, kind="stable")
    m = values.size
    scaled = np.minimum(1.0, (m - np.arange(m)) * values[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def format_p(value: float, name: str = "") -> str:
    """A p-value for reading: two significant digits, ``"< 1e-300"`` where it underflowed
    (a χ² tail below the smallest double prints as 0, which no test can give); with a
    ``name``, as an equation: ``"p = 0.012"``, ``"p < 1e-300"``.

    Examples:
        >>> from probemeter.power.clustered import format_p
        >>> format_p(0.0), format_p(0.01234), format_p(0.0, "p"), format_p(0.5, "p")
        ('< 1e-300', '0.012', 'p < 1e-300', 'p = 0.5')
    """
    text = f"< {SMALLEST_P:g}" if value < SMALLEST_P else f"{value:.2g}"
    if not name:
        return text
    return f"{name} {text}" if text.startswith("<") else f"{name} = {text}"
