"""Paired tests of two probes on words clustered in sentences: the sign-flip randomisation test
of the sentences' discordance differences (the test the verdicts use), Obuchowski's (1998)
clustered McNemar χ² (for reference), the power of the decision a verdict takes by a cluster
bootstrap, the test sentences a comparison needs, and Holm's adjustment of many p-values.

Zhu et al.'s McNemar test (§3.5) treats each test example as an independent draw. The words of
a word-level task (UPOS, dependency labels, arcs, the edges of a structural probe's tree) are
not: a test set is a sample of *sentences*, and the words of one sentence share their
difficulty, so the plain test's p-values are too small.

**The sign-flip test** (Fisher 1935, §21; Good 2005, §3.1: the one-sample permutation test of
a symmetric distribution). For sentences j = 1..K with X_j and Y_j the words that probes A and
B classify correctly, d_j = X_j − Y_j is the number of words only A gets right minus the
number only B gets right (McNemar's c − b within the sentence). The statistic is their
unweighted sum, the accuracy difference in words::

    T = Σ_j d_j = N (p̂_A − p̂_B),

McNemar's b − c summed over sentences. Under H0 each sentence's d_j is symmetric about 0
(the two probes are exchangeable within a sentence: which of them does better on a sentence
is a fair coin, whatever the sentence's size and difficulty), so given |d_1|, …, |d_K| every
pattern of signs s ∈ {−1, +1}^K is equally likely and the two-sided p-value is

    p = #{s : |Σ_j s_j |d_j|| ≥ |T|} / 2^K,

the share of sign patterns at least as extreme as the observed one (the observed pattern
included, so p ≥ 2^(1−m)). A sentence with d_j = 0 is neutral to every flip, so only the m
sentences with a difference count. The test is exact at any number of sentences: its level
is at most α however few there are (with m ≤ 5 sentences with a difference, p ≥ 1/16 and it
never rejects at 0.05), and a difference with no variance between sentences (every d_j
equal) gets the exact p = 2^(1−m), never the 0 of a zero variance. With one word per
sentence it is the exact McNemar test (binomial, §3.5's Table 1 with b + c = m).

The p-value is computed **exactly** by convolving each sentence's ±|d_j| into the
distribution of Σ_j s_j |d_j| over the integers −S..S, S = Σ|d_j| (the distribution of all
2^m sign patterns in m·(2S + 1) operations instead of 2^m; Pagano & Tritchler 1983), while
that work is at most :data:`EXACT_WORK`; beyond it (hundreds of thousands of discordant
words) by **Monte Carlo** over R = :data:`MONTE_CARLO_PATTERNS` random sign patterns,
p = (1 + #{|T*| ≥ |T|}) / (1 + R), resolution 1/(1 + R), seeded by ``random_state``. The
result says which (:attr:`SignFlipResult.method`).

**Obuchowski's clustered McNemar χ²** (kept for reference, :func:`clustered_mcnemar`):
for clusters k = 1..K of n_k examples, N = Σ n_k, p̂_A = ΣX_k / N, p̂_B = ΣY_k / N and
D_k = X_k − Y_k::

    χ² = (p̂_A − p̂_B)² / V,   V = K / ((K − 1) N²) · Σ_k (D_k − n_k (p̂_A − p̂_B))²

with one degree of freedom (Obuchowski 1998, eqs. 3–5). It is asymptotic in K: under a null
of equal accuracies with a sentence-specific difference its rejection rate at α = 0.05 was
0.148 with 5 sentences, 0.096 with 10 and 0.060 with 50 (``benchmarks/clustered_null.py``),
and where every cluster differs by the same proportion V = 0 and χ² is undefined (nan here).

**Power of the decision** (:func:`decision_power`). A verdict calls a difference established
when the largest p over the seeds, Holm-adjusted over m comparisons, is below α. Its power is
simulated as Zhu et al. simulate McNemar's (§3.5, after Card et al. 2020), with two changes:
a resample is a new *test set* — K sentences drawn with replacement (the cluster bootstrap),
the same sentences for every seed, since the seeds' probes share the test set — and it counts
as a rejection only when *every* seed's test rejects at α/m, the level of Holm's first step (a
p below α/m is rejected by Holm whatever the other comparisons give, so this is a lower bound
on the power of Holm's decision; with m = 1 it is the power of the rule itself). On a
resample the sign-flip p-value is computed exactly from the characteristic function of
Σ s_j |d_j| (a product of cosines, one per distinct |d|, inverted by an FFT; exact to
rounding, about 1e-12). :func:`sentences_needed` searches the smallest number of
sentences whose decision power reaches 0.8.

When a sweep makes several comparisons, :func:`holm` adjusts their p-values (Holm 1979): the
family-wise error rate stays at most α whatever the dependence between the tests.

References:
    Fisher, R. A. (1935). *The Design of Experiments*. Oliver & Boyd. §21 (the randomisation
    test of paired differences; no identifier).

    Good, P. I. (2005). *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.
    Springer. doi:10.1007/b138696

    Pagano, M. & Tritchler, D. (1983). On obtaining permutation distributions in polynomial
    time. *Journal of the American Statistical Association* 78(382), 435–440.
    doi:10.1080/01621459.1983.10477990

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
from probemeter.power.defaults import POWER_ALPHA
from probemeter.power.mcnemar import contingency_table, mcnemar_p_values
from probemeter.power.simulation import SUFFICIENT_POWER, check_alpha

__all__ = [
    "EXACT_WORK",
    "MONTE_CARLO_PATTERNS",
    "ClusteredMcNemarResult",
    "DecisionPower",
    "SentencesNeeded",
    "SignFlipResult",
    "cluster_sums",
    "clustered_mcnemar",
    "decision_power",
    "format_p",
    "holm",
    "sentences_needed",
    "sign_flip_test",
]

#: the smallest p-value written as a number: below it, a double's p-values have underflowed
SMALLEST_P = 1e-300
#: the exact sign-flip p-value's work, m sentences with a difference × (2S + 1) sums (S the
#: discordant words' |d| total), up to which it is computed exactly (about a second)
EXACT_WORK = 200_000_000
#: random sign patterns R of the Monte Carlo sign-flip test beyond :data:`EXACT_WORK`:
#: resolution 1/(1 + R) ≈ 5e-5, standard error 0.0015 at p = 0.05
MONTE_CARLO_PATTERNS = 20_000


@dataclass(frozen=True)
class ClusteredMcNemarResult:
    """One clustered McNemar test (Obuchowski 1998; see the module docstring).

    Attributes:
        accuracy_a, accuracy_b: p̂_A and p̂_B, the proportions of examples correct.
        statistic: χ² with one degree of freedom (nan when every cluster differs by exactly
            the same proportion: a difference with no variance estimate, which the asymptotic
            test cannot judge; :func:`sign_flip_test` can).
        p_value: two-sided asymptotic p-value (nan where the statistic is).
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
    n_k d̂)²); nan when the difference has no variance estimate, 0 when there is none."""
    weights = np.asarray(weights, dtype=np.float64)
    clusters = weights.sum(axis=-1)
    shift = (weights * differences).sum(axis=-1)
    gap = shift / (weights * sizes).sum(axis=-1)
    spread = (weights * (differences - sizes * gap[..., None]) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = shift**2 * (clusters - 1) / (clusters * spread)
    statistic = np.where(shift == 0, 0.0, statistic)
    return np.where((shift != 0) & (spread == 0), np.nan, statistic)


def clustered_mcnemar(
    correct_a: object, correct_b: object, clusters: object
) -> ClusteredMcNemarResult:
    """Obuchowski's (1998) asymptotic test of two probes' accuracies on the same test
    examples, which were sampled in ``clusters`` (e.g. each word's sentence id); see the
    module docstring. For reference: the verdicts use :func:`sign_flip_test`, which holds its
    level at any number of sentences.

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
    p_value = float(stats.chi2.sf(statistic, df=1))  # nan stays nan: no variance, no p
    n = a.size
    gap = a.mean() - b.mean()
    k = sizes.size
    clustered = k / ((k - 1) * n**2) * float(((differences - sizes * gap) ** 2).sum())
    independent = float((((a - b) - gap) ** 2).sum()) / n**2
    design = clustered / independent if independent > 0 else float("nan")
    return ClusteredMcNemarResult(
        float(a.mean()), float(b.mean()), statistic, p_value, int(k), int(n), design
    )


@dataclass(frozen=True)
class SignFlipResult:
    """One sign-flip randomisation test of the sentences' discordance differences (module
    docstring).

    Attributes:
        accuracy_a, accuracy_b: p̂_A and p̂_B, the proportions of examples correct.
        statistic: T = Σ_j d_j, the words only A gets right minus those only B gets right.
        p_value: two-sided p-value, P(|Σ_j s_j |d_j|| ≥ |T|) over the sign patterns (0.0 only
            where the exact value is below the smallest double: more than a thousand
            sentences with a difference, nearly all one way).
        n_clusters: K, the clusters (sentences).
        n_examples: N, the examples (words).
        n_discordant: m, the clusters with d_j ≠ 0 (the others are neutral to every flip).
        method: ``"exact"`` (all 2^m sign patterns, by convolution) or ``"Monte Carlo"``.
        n_patterns: R, the random sign patterns of a Monte Carlo p-value (resolution
            1/(1 + R)); 0 for an exact one.
        random_state: the Monte Carlo patterns' seed.
        asymptotic: Obuchowski's χ² p-value on the same data, for reference (nan where its
            variance estimate is 0 or fewer than two clusters).
    """

    accuracy_a: float
    accuracy_b: float
    statistic: int
    p_value: float
    n_clusters: int
    n_examples: int
    n_discordant: int
    method: str
    n_patterns: int
    random_state: int
    asymptotic: float

    @property
    def name(self) -> str:
        """The test in words: which p-value, over how many sign patterns."""
        if self.method == "exact":
            return (
                f"sign-flip test, exact over all 2^{self.n_discordant} sign patterns of the "
                f"{self.n_discordant} sentences with a difference"
            )
        return (
            f"sign-flip test, Monte Carlo over {self.n_patterns:,} random sign patterns of the "
            f"{self.n_discordant:,} sentences with a difference (resolution "
            f"1/{self.n_patterns + 1:,})"
        )

    def significant(self, alpha: float = POWER_ALPHA) -> bool:
        """Whether equal accuracy is rejected at level ``alpha``."""
        return self.p_value < alpha

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "name": self.name}


def _exact_tail(values: np.ndarray, observed: int) -> float:
    """P(|Σ_j s_j v_j| ≥ |observed|) over all 2^m sign patterns s of the positive integers
    ``values``: the distribution of the sum convolved sentence by sentence (Pagano &
    Tritchler 1983); index i of ``pmf`` is the sum i − reach."""
    if abs(observed) == 0:
        return 1.0
    pmf = np.ones(1)
    for value in np.sort(values)[::-1]:
        spread = np.zeros(pmf.size + 2 * int(value))
        spread[: pmf.size] += pmf
        spread[2 * int(value) :] += pmf
        pmf = 0.5 * spread
    reach = (pmf.size - 1) // 2
    sums = np.abs(np.arange(-reach, reach + 1))
    return float(min(1.0, pmf[sums >= abs(observed)].sum()))


def _monte_carlo_tail(values: np.ndarray, observed: int, patterns: int, random_state: int) -> float:
    """(1 + #{|Σ_j s_j v_j| ≥ |observed|}) / (1 + R) over R random sign patterns."""
    rng = np.random.default_rng([int(random_state), 0x5161F])
    rows = max(1, (1 << 24) // values.size)
    exceed, done = 0, 0
    while done < patterns:
        draws = min(rows, patterns - done)
        signs = rng.integers(0, 2, size=(draws, values.size), dtype=np.int8) * 2 - 1
        exceed += int(np.count_nonzero(np.abs(signs @ values) >= abs(observed)))
        done += draws
    return (1 + exceed) / (1 + patterns)


def sign_flip_test(
    correct_a: object,
    correct_b: object,
    clusters: object,
    *,
    exact_work: int = EXACT_WORK,
    n_patterns: int = MONTE_CARLO_PATTERNS,
    random_state: int = 0,
) -> SignFlipResult:
    """The sign-flip randomisation test of two probes' accuracies on the same test examples,
    sampled in ``clusters`` (each word's sentence id): T = Σ_j d_j against the 2^m sign
    patterns of the sentences' differences d_j = X_j − Y_j (module docstring; Fisher 1935,
    §21; Good 2005, §3.1), exact while m·(2S + 1) ≤ ``exact_work``, else Monte Carlo over
    ``n_patterns`` random patterns seeded by ``random_state``.

    Examples:
        Two one-word sentences, A right on both and B wrong on both (d = 1, 1): the four sign
        patterns give sums 2, 0, 0, −2, two as extreme as 2, so p = 2/4 — the exact McNemar
        test's 0.5. Three four-word sentences where B is wrong on one word of each (d = 1, 1,
        1): p = 2/8.

        >>> from probemeter.power.clustered import sign_flip_test
        >>> sign_flip_test([1, 1], [0, 0], clusters=[0, 1]).p_value
        0.5
        >>> sentences = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
        >>> result = sign_flip_test([1] * 12, [0, 1, 1, 1] * 3, clusters=sentences)
        >>> result.p_value, result.statistic, result.method
        (0.25, 3, 'exact')

    Raises:
        ValueError: unpaired or non-boolean correctness, clusters not one integer per
            example, or settings that are not positive integers.
    """
    check_scalar(exact_work, "exact_work", int, min_val=0)
    check_scalar(n_patterns, "n_patterns", int, min_val=1)
    sizes, differences = cluster_sums(correct_a, correct_b, clusters)
    values = np.abs(differences[differences != 0]).astype(np.int64)
    statistic = int(differences.sum())
    a = np.asarray(correct_a, dtype=np.float64)
    b = np.asarray(correct_b, dtype=np.float64)
    work = values.size * (2 * int(values.sum()) + 1)
    if work <= exact_work:
        method, patterns, p_value = "exact", 0, _exact_tail(values, statistic)
    else:
        method, patterns = "Monte Carlo", int(n_patterns)
        p_value = _monte_carlo_tail(values, statistic, patterns, random_state)
    asymptotic = (
        clustered_mcnemar(correct_a, correct_b, clusters).p_value
        if sizes.size >= 2
        else float("nan")
    )
    return SignFlipResult(
        float(a.mean()),
        float(b.mean()),
        statistic,
        p_value,
        int(sizes.size),
        int(a.size),
        int(values.size),
        method,
        patterns,
        int(random_state),
        float(asymptotic),
    )


def _sign_flip_tails(counts: np.ndarray, values: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """The exact sign-flip p-values of many test sets at once (module docstring): test set i
    holds ``counts[i, v]`` sentences whose |d| is ``values[v]`` (positive integers) and the
    statistic ``observed[i]``. The distribution of Σ s_j |d_j| has the characteristic function
    Π_v cos(t·values[v])^counts[i, v]; at t = 2πk/L, L a power of two above twice the largest
    sum, its inverse FFT is the distribution itself, and p = P(|Σ| ≥ |T|) = 2 P(Σ ≥ |T|)
    (symmetry), 1 at T = 0."""
    p = np.ones(len(observed))
    if not values.size:
        return p
    totals = counts @ values
    length = 1 << int(2 * int(totals.max()) + 1).bit_length()
    frequencies = np.arange(length // 2 + 1)
    cosines = np.cos(2 * np.pi * np.outer(values, frequencies) / length)
    log_size = np.log(np.maximum(np.abs(cosines), 1e-300))  # cos = 0: a factor of 0
    negative = (cosines < 0).astype(np.float64)
    rows = max(1, (1 << 22) // length)
    for start in range(0, len(observed), rows):
        part = slice(start, start + rows)
        weights = counts[part].astype(np.float64)
        sign = 1.0 - 2.0 * np.mod(weights @ negative, 2.0)
        pmf = np.fft.irfft(sign * np.exp(weights @ log_size), n=length)[:, : length // 2 + 1]
        upper = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]  # P(Σ ≥ s), s = 0..L/2
        target = np.abs(observed[part])
        tails = 2.0 * upper[np.arange(len(target)), np.minimum(target, length // 2)]
        p[part] = np.where(target == 0, 1.0, np.clip(tails, 0.0, 1.0))
    return p


@dataclass(frozen=True)
class DecisionPower:
    """The power of a verdict's decision (:func:`decision_power`; module docstring).

    Attributes:
        power: the share of bootstrap test sets on which every seed's test rejects at
            ``level``.
        alpha: the family's level α.
        comparisons: m, the comparisons Holm adjusts over.
        level: α/m, the level each seed's test must reach (Holm's first step).
        seeds: the paired seeds, all of which must reject.
        test: ``"sign-flip"`` (sentences, exact p on every resample) or ``"McNemar"``
            (examples; exact binomial below 25 discordant pairs, else χ²).
        n_units: the sentences (or examples) of each bootstrap test set.
        n_simulations: the bootstrap test sets.
        random_state: their seed.
    """

    power: float
    alpha: float
    comparisons: int
    level: float
    seeds: int
    test: str
    n_units: int
    n_simulations: int
    random_state: int

    def describe(self) -> str:
        """What this power is the power of, in words."""
        rejects = (
            f"all {self.seeds} seeds' {self.test} tests reject"
            if self.seeds > 1
            else f"the {self.test} test rejects"
        )
        level = (
            f"α = {self.alpha:g}"
            if self.comparisons == 1
            else f"α/m = {self.alpha:g}/{self.comparisons} = {self.level:.2g} (Holm's first "
            f"step over m = {self.comparisons} comparisons)"
        )
        units = "sentences" if self.test == "sign-flip" else "examples"
        return (
            f"power of the decision: the chance that {rejects} at {level}, by "
            f"{self.n_simulations:,} bootstrap test sets of {self.n_units:,} {units}"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _paired_stack(
    correct_a: Sequence[object], correct_b: Sequence[object]
) -> tuple[np.ndarray, np.ndarray]:
    """The seeds' correctness as (seeds, N) boolean arrays, validated pair by pair."""
    if len(correct_a) != len(correct_b) or not len(correct_a):
        raise ValueError(
            f"correct_a and correct_b must hold the same non-zero number of seeds; got "
            f"{len(correct_a)} and {len(correct_b)}"
        )
    for a, b in zip(correct_a, correct_b):
        contingency_table(a, b)  # validates the pairing and the values
    a = np.asarray([np.asarray(x).astype(bool) for x in correct_a])
    b = np.asarray([np.asarray(x).astype(bool) for x in correct_b])
    return a, b


def decision_power(
    correct_a: Sequence[object],
    correct_b: Sequence[object],
    clusters: object | None = None,
    *,
    alpha: float = POWER_ALPHA,
    comparisons: int = 1,
    n_units: int | None = None,
    n_simulations: int = 1000,
    random_state: int = 0,
) -> DecisionPower:
    """The power of the decision a verdict takes: the chance that the test rejects at
    α/``comparisons`` for *every* seed on a new test set (module docstring).

    Each of ``n_simulations`` bootstrap test sets draws ``n_units`` sentences (default: the
    test set's K) with replacement — the same sentences for every seed, the seeds' probes
    being evaluated on one test set — and runs on each seed the test the verdict uses: the
    exact sign-flip test when ``clusters`` are given, McNemar's test (examples drawn, exact
    binomial below 25 discordant pairs, else χ²; :func:`probemeter.power.mcnemar.mcnemar`)
    when not. With one seed and ``comparisons = 1`` it is Zhu et al.'s bootstrap power
    (§3.5); with several it is not their pooled share but the power of "every seed rejects".

    Examples:
        Two sentences of one word each, A right on both and B wrong on both: no resample of
        two sentences gives a sign-flip p below 0.5, so the decision never rejects.

        >>> from probemeter.power.clustered import decision_power
        >>> decision_power([[1, 1]], [[0, 0]], clusters=[0, 1]).power
        0.0

    Raises:
        ValueError: no seed, seeds of unequal count, unpaired or non-boolean correctness,
            clusters not one integer id per example, α outside (0, 1), or counts below 1.
    """
    alpha = check_alpha(alpha)
    check_scalar(comparisons, "comparisons", int, min_val=1)
    check_scalar(n_simulations, "n_simulations", int, min_val=1)
    a, b = _paired_stack(correct_a, correct_b)
    level = alpha / comparisons
    if clusters is not None:
        rows = np.stack([cluster_sums(x, y, clusters)[1] for x, y in zip(a, b)], axis=1)
        test = "sign-flip"
    else:  # each example its own unit; its pattern of (a, b) over the seeds
        rows = (a.astype(np.int64) - b.astype(np.int64)).T
        test = "McNemar"
    units = int(rows.shape[0]) if n_units is None else int(n_units)
    check_scalar(units, "n_units", int, min_val=1)
    patterns, frequency = np.unique(rows, axis=0, return_counts=True)
    rng = np.random.default_rng([int(random_state), units, 0xDEC1])
    draws = rng.multinomial(units, frequency / frequency.sum(), size=n_simulations)
    rejected = np.ones(n_simulations, dtype=bool)
    for seed in range(patterns.shape[1]):
        column = patterns[:, seed]
        if test == "McNemar":  # d = a − b: +1 only A right (c), −1 only B right (b)
            c = draws @ (column > 0).astype(np.int64)
            b_only = draws @ (column < 0).astype(np.int64)
            p = mcnemar_p_values(b_only, c)
        else:
            values = np.unique(np.abs(column[column != 0]))
            by_value = (np.abs(column)[:, None] == values[None, :]).astype(np.int64)
            p = _sign_flip_tails(draws @ by_value, values, draws @ column)
        rejected &= p < level
    return DecisionPower(
        float(rejected.mean()),
        alpha,
        int(comparisons),
        level,
        int(a.shape[0]),
        test,
        units,
        int(n_simulations),
        int(random_state),
    )


@dataclass(frozen=True)
class SentencesNeeded:
    """The test sentences a clustered comparison needs (:func:`sentences_needed`).

    Attributes:
        n_sentences: the smallest number of test sentences found whose decision power reaches
            ``target``; None when even ``most`` does not.
        power: the decision power there (at ``most`` when not reached).
        most: the largest number searched.
        target: the power sought (0.8, Zhu et al. §3.5).
        decision: the :class:`DecisionPower` settings at ``n_sentences`` (or ``most``).
    """

    n_sentences: int | None
    power: float
    most: int
    target: float
    decision: DecisionPower

    def describe(self) -> str:
        """The figure in words, labelled."""
        if self.n_sentences is None:
            return (
                f"more than {self.most:,} test sentences for power {self.target:g} of this "
                f"decision (power {self.power:.2f} at {self.most:,})"
            )
        return (
            f"about {self.n_sentences:,} test sentences for power {self.target:g} of this "
            f"decision (cluster bootstrap at the observed per-sentence differences)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "decision": self.decision.to_dict()}


def sentences_needed(
    correct_a: Sequence[object],
    correct_b: Sequence[object],
    clusters: object,
    *,
    alpha: float = POWER_ALPHA,
    comparisons: int = 1,
    target: float = SUFFICIENT_POWER,
    most: int = 1 << 17,
    n_simulations: int = 400,
    random_state: int = 0,
) -> SentencesNeeded:
    """The smallest number of test sentences at which the decision's power
    (:func:`decision_power`: every seed's sign-flip test rejecting at α/``comparisons``)
    reaches ``target``, the observed sentences' differences resampled as they are (the
    effect held at its observed size): powers of two from 2 until one reaches it, then
    bisection between the last two down to 2 % of the size (each size its own
    ``random_state``-seeded bootstrap, so the figure is good to the bootstrap's noise, about
    ±0.02 in power at 400 test sets).

    It answers the test-set question on its own terms, apart from the bound's training size
    (:func:`probemeter.power.bounds.recommend_train_size`, which counts i.i.d. training
    examples and is not adjusted for sentences).

    Raises:
        ValueError: what :func:`decision_power` refuses, a target outside (0, 1], or ``most``
            below 2.
    """
    check_scalar(target, "target", float, min_val=0, max_val=1, include_boundaries="right")
    check_scalar(most, "most", int, min_val=2)
    options = {
        "alpha": alpha,
        "comparisons": comparisons,
        "n_simulations": n_simulations,
        "random_state": random_state,
    }

    def at(units: int) -> DecisionPower:
        return decision_power(correct_a, correct_b, clusters, n_units=units, **options)

    low, size = 1, 2
    found = at(size)
    while found.power < target and size < most:
        low, size = size, min(2 * size, most)
        found = at(size)
    if found.power < target:
        return SentencesNeeded(None, found.power, most, float(target), found)
    high = size
    while high - low > max(1, high // 50):  # to within 2 %: the bootstrap's noise is as large
        middle = (low + high) // 2
        trial = at(middle)
        if trial.power >= target:
            high, found = middle, trial
        else:
            low = middle
    return SentencesNeeded(high, found.power, most, float(target), found)


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
