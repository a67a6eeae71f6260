"""The sign-flip test of sentences (p-values enumerated by hand and by brute force), its
decision power (against an exact multinomial computation), the sentences a comparison needs,
Obuchowski's clustered McNemar test (for reference), and Holm's adjustment."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from probemeter.power.clustered import (
    clustered_mcnemar,
    decision_power,
    holm,
    sentences_needed,
    sign_flip_test,
)
from probemeter.power.mcnemar import mcnemar


def test_statistic_by_hand() -> None:
    # clusters of 2: D = (1, 0, 2), N = 6, d = 0.5, D - n d = (0, -1, 1), spread 2, K = 3:
    # chi2 = 3^2 * 2 / (3 * 2) = 3
    result = clustered_mcnemar(
        [1, 1, 1, 0, 1, 1], [0, 1, 1, 0, 0, 0], clusters=np.array([0, 0, 1, 1, 2, 2])
    )
    assert result.statistic == pytest.approx(3.0)
    assert result.p_value == pytest.approx(stats.chi2.sf(3.0, df=1))
    assert (result.n_clusters, result.n_examples) == (3, 6)
    assert (result.accuracy_a, result.accuracy_b) == (pytest.approx(5 / 6), pytest.approx(2 / 6))


def test_clusters_of_one_example_are_mcnemar_with_a_centred_variance() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random(400) < 0.7, rng.random(400) < 0.6
    result = clustered_mcnemar(a, b, np.arange(400))
    plain = mcnemar(a, b, method="chi2")
    (_, n01), (n10, _) = plain.table
    n, k = 400, 400
    expected = (n10 - n01) ** 2 * (k - 1) / k / (n10 + n01 - (n10 - n01) ** 2 / n)
    assert result.statistic == pytest.approx(expected)
    assert result.design_effect == pytest.approx((k) / (k - 1))


def test_cluster_ids_need_not_be_sorted_or_contiguous() -> None:
    a = np.array([1, 0, 1, 1, 0, 1], bool)
    b = np.array([0, 0, 1, 0, 0, 1], bool)
    first = clustered_mcnemar(a, b, np.array([5, 5, 9, 9, 2, 2]))
    order = np.array([4, 0, 2, 5, 1, 3])
    second = clustered_mcnemar(a[order], b[order], np.array([5, 5, 9, 9, 2, 2])[order])
    assert first.statistic == pytest.approx(second.statistic)


def _clustered_null(rng: np.random.Generator, clusters: int, size: int) -> tuple:
    """Two equally accurate probes whose errors are shared within a sentence: each sentence
    is easy or hard for both."""
    difficulty = rng.beta(0.5, 0.5, clusters).repeat(size)
    a = rng.random(clusters * size) < difficulty
    b = np.where(rng.random(clusters * size) < 0.8, a, rng.random(clusters * size) < difficulty)
    return a, b, np.arange(clusters).repeat(size)


def test_the_clustered_test_holds_its_level_where_plain_mcnemar_does_not() -> None:
    rng = np.random.default_rng(0)
    clustered, plain = [], []
    for _ in range(400):
        a, b, ids = _clustered_null(rng, 60, 12)
        # a sentence-level shift shared by its words: B is better on some sentences, worse on
        # others, equal on average
        flip = np.repeat(rng.random(60) < 0.5, 12) & (rng.random(720) < 0.3)
        b = np.where(flip, ~b, b)
        clustered.append(clustered_mcnemar(a, b, ids).p_value < 0.05)
        plain.append(mcnemar(a, b, method="chi2").p_value < 0.05)
    assert np.mean(clustered) < 0.09
    assert np.mean(plain) > 2 * np.mean(clustered)


def test_too_few_clusters_and_bad_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        clustered_mcnemar([1, 0], [0, 0], [4, 4])
    with pytest.raises(ValueError, match="one integer id per example"):
        clustered_mcnemar([1, 0], [0, 0], [0.5, 1.5])
    with pytest.raises(ValueError, match="one integer id per example"):
        clustered_mcnemar([1, 0, 1], [0, 0, 1], [0, 1])


def test_no_difference_and_a_difference_without_variance() -> None:
    same = clustered_mcnemar([1, 0, 1, 0], [1, 0, 1, 0], [0, 0, 1, 1])
    assert (same.statistic, same.p_value) == (0.0, 1.0)
    # every cluster differs alike: no variance estimate, so no asymptotic p (it was 0)
    always = clustered_mcnemar([1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 1])
    assert np.isnan(always.statistic) and np.isnan(always.p_value)
    assert not always.significant()


def _sentences(differences: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Correctness of A and B on sentences of 4 words whose differences X_j − Y_j are
    ``differences`` (|d| ≤ 4): d > 0 words only A gets right, −d only B, the rest both right
    or both wrong."""
    a, b = [], []
    for j, d in enumerate(differences):
        words_a = [1] * max(d, 0) + [0] * max(-d, 0)
        words_b = [0] * max(d, 0) + [1] * max(-d, 0)
        fill = 4 - abs(d)
        a += words_a + [j % 2] * fill
        b += words_b + [j % 2] * fill
    ids = np.arange(len(differences)).repeat(4)
    return np.array(a, bool), np.array(b, bool), ids


def test_sign_flip_p_values_enumerated_by_hand() -> None:
    # d = (1, 1): sums over the 4 sign patterns 2, 0, 0, −2; |sum| ≥ 2 in 2 → p = 1/2
    assert sign_flip_test([1, 1], [0, 0], clusters=[0, 1]).p_value == 0.5
    # d = (1, 1, 1): |sum| = 3 in 2 of 8 patterns → p = 1/4
    assert sign_flip_test(*_sentences([1, 1, 1])).p_value == 0.25
    # d = (2, −1, 1), T = 2: sums 4, 2, 2, 0, 0, −2, −2, −4 → |sum| ≥ 2 in 6 of 8
    result = sign_flip_test(*_sentences([2, -1, 1]))
    assert (result.statistic, result.p_value, result.n_discordant) == (2, 0.75, 3)
    # d = (3, 1, 1, 1), T = 6: |sum| ≥ 6 only for (±)(3, 1, 1, 1) → p = 2/16
    assert sign_flip_test(*_sentences([3, 1, 1, 1])).p_value == 0.125
    # no difference anywhere: one pattern, p = 1
    assert sign_flip_test(*_sentences([0, 0, 0])).p_value == 1.0


def test_sign_flip_p_values_against_brute_force_enumeration() -> None:
    rng = np.random.default_rng(5)
    for _ in range(60):
        d = rng.integers(-4, 5, size=rng.integers(1, 11)).tolist()
        values = np.abs(d)
        observed = abs(sum(d))
        brute = np.mean(
            [abs(np.dot(s, values)) >= observed for s in itertools.product([-1, 1], repeat=len(d))]
        )
        result = sign_flip_test(*_sentences(d))
        assert result.p_value == pytest.approx(brute, abs=1e-12)
        assert result.method == "exact" and result.n_patterns == 0


def test_the_bootstraps_p_values_are_the_tests_own() -> None:
    # the decision power's p-values (characteristic function, FFT) against the test itself
    # (convolution) on random test sets, large sums included
    from probemeter.power.clustered import _sign_flip_tails

    rng = np.random.default_rng(8)
    for _ in range(30):
        d = rng.integers(-6, 7, size=rng.integers(1, 300))
        values = np.unique(np.abs(d[d != 0]))
        counts = np.array([[np.count_nonzero(np.abs(d) == v) for v in values]])
        fft = _sign_flip_tails(counts, values, np.array([d.sum()]))[0]
        exact = sign_flip_test(*_sentences_of(d.tolist())).p_value
        assert fft == pytest.approx(exact, abs=1e-10)


def _sentences_of(differences: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like :func:`_sentences`, with sentences of 6 words (|d| ≤ 6)."""
    a, b = [], []
    for d in differences:
        a += [1] * max(d, 0) + [0] * max(-d, 0) + [1] * (6 - abs(d))
        b += [0] * max(d, 0) + [1] * max(-d, 0) + [1] * (6 - abs(d))
    return np.array(a, bool), np.array(b, bool), np.arange(len(differences)).repeat(6)


def test_sentences_without_a_difference_are_neutral() -> None:
    base = sign_flip_test(*_sentences([2, -1, 1, 3])).p_value
    assert sign_flip_test(*_sentences([2, 0, -1, 0, 1, 0, 3])).p_value == base


def test_one_word_per_sentence_is_the_exact_mcnemar_test() -> None:
    rng = np.random.default_rng(2)
    for _ in range(20):
        a, b = rng.random(30) < 0.7, rng.random(30) < 0.5
        exact = mcnemar(a, b, method="exact").p_value
        assert sign_flip_test(a, b, np.arange(30)).p_value == pytest.approx(exact, rel=1e-12)


def test_degenerate_cases_get_their_exact_p_not_zero() -> None:
    # two one-word sentences, A right on both, B wrong on both (exact McNemar 0.5): the
    # asymptotic variance is 0 and its χ² was infinite (p = 0)
    two = sign_flip_test([1, 1], [0, 0], clusters=[0, 1])
    assert two.p_value == 0.5 and np.isnan(two.asymptotic)
    # three 4-word sentences, B wrong on exactly one word of each (exact McNemar 0.25)
    three = sign_flip_test([1] * 12, [0, 1, 1, 1] * 3, np.arange(3).repeat(4))
    assert three.p_value == 0.25 and not three.significant()
    assert "exact over all 2^3 sign patterns" in three.name


def test_monte_carlo_beyond_the_exact_work_states_its_resolution() -> None:
    rng = np.random.default_rng(4)
    d = rng.integers(-3, 5, size=40).tolist()
    exact = sign_flip_test(*_sentences(d))
    assert exact.method == "exact"
    random = sign_flip_test(*_sentences(d), exact_work=0, n_patterns=4000, random_state=7)
    assert random.method == "Monte Carlo" and random.n_patterns == 4000
    assert "Monte Carlo over 4,000 random sign patterns" in random.name
    # p = (1 + #exceeding) / (1 + R): a multiple of 1/(1 + R), never 0, near the exact p
    assert round(random.p_value * 4001) == pytest.approx(random.p_value * 4001, abs=1e-9)
    assert random.p_value >= 1 / 4001
    error = np.sqrt(exact.p_value * (1 - exact.p_value) / 4000)
    assert abs(random.p_value - exact.p_value) < 4 * error + 1 / 4001
    again = sign_flip_test(*_sentences(d), exact_work=0, n_patterns=4000, random_state=7)
    assert again.p_value == random.p_value  # seeded
    all_one_way = sign_flip_test(*_sentences([1] * 30), exact_work=0, n_patterns=999)
    assert all_one_way.p_value == 1 / 1000  # the resolution, not 0


def _sentence_null(rng: np.random.Generator, clusters: int) -> tuple:
    """Equal accuracies with a sentence-specific difference: sentences of random size, each
    with its own, symmetrically distributed shift in which probe is better."""
    sizes = rng.integers(3, 30, clusters)
    ids = np.arange(clusters).repeat(sizes)
    difficulty = rng.beta(2, 2, clusters).repeat(sizes)
    shift = rng.normal(0, 0.15, clusters).repeat(sizes)
    a = rng.random(ids.size) < np.clip(difficulty + shift, 0, 1)
    b = rng.random(ids.size) < np.clip(difficulty - shift, 0, 1)
    return a, b, ids


def test_the_sign_flip_test_holds_its_level_with_few_sentences() -> None:
    rng = np.random.default_rng(0)
    sign_flip, asymptotic = [], []
    for _ in range(600):
        a, b, ids = _sentence_null(rng, 10)
        result = sign_flip_test(a, b, ids)
        sign_flip.append(result.p_value < 0.05)
        asymptotic.append(not result.asymptotic >= 0.05)  # nan (no variance) was p = 0
    assert np.mean(sign_flip) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 600)
    assert np.mean(asymptotic) > np.mean(sign_flip) + 0.02


def _exact_decision_power(
    patterns: dict[tuple[int, ...], int], units: int, reject: callable
) -> float:
    """P(reject(counts)) for counts ~ Multinomial(units, share of each pattern), summed over
    every composition."""
    keys = list(patterns)
    shares = np.array([patterns[key] for key in keys], float)
    shares /= shares.sum()
    total = 0.0
    for counts in itertools.product(range(units + 1), repeat=len(keys) - 1):
        if sum(counts) > units:
            continue
        full = [*counts, units - sum(counts)]
        if reject(dict(zip(keys, full))):
            total += stats.multinomial.pmf(full, units, shares)
    return total


def test_decision_power_is_every_seed_rejecting_at_the_holm_level() -> None:
    # 20 one-word sentences; seed 1: A alone right on sentences 0-9, seed 2 on 5-14; elsewhere
    # both right. On a bootstrap test set with X_s sentences where seed s differs (all in A's
    # favour) the sign-flip p is 2^(1 − X_s): below α = 0.05 iff X_s ≥ 6, below α/3 iff
    # X_s ≥ 7. Patterns (seed 1, seed 2): (1, 0), (1, 1), (0, 1), (0, 0), 5 sentences each.
    a = np.ones(20, bool)
    b1, b2 = a.copy(), a.copy()
    b1[:10] = False
    b2[5:15] = False
    ids = np.arange(20)
    patterns = {(1, 0): 5, (1, 1): 5, (0, 1): 5, (0, 0): 5}

    def both(least: int) -> callable:
        def reject(n: dict) -> bool:
            x1, x2 = n[(1, 0)] + n[(1, 1)], n[(1, 1)] + n[(0, 1)]
            return x1 >= least and x2 >= least

        return reject

    options = {"n_simulations": 4000, "random_state": 3}
    single = decision_power([a], [b1], ids, **options)
    # one seed at α: P(Bin(20, ½) ≥ 6) = 0.9793
    assert single.power == pytest.approx(stats.binom.sf(5, 20, 0.5), abs=0.01)
    rule = decision_power([a, a], [b1, b2], ids, comparisons=3, **options)
    expected = _exact_decision_power(patterns, 20, both(7))
    # a drawn sentence falls in seed 1's half and in seed 2's independently (four equal
    # patterns), so X₁ and X₂ are independent Bin(20, ½): P(X ≥ 7)² = 0.9423² = 0.8880
    assert expected == pytest.approx(stats.binom.sf(6, 20, 0.5) ** 2, abs=1e-12)
    assert expected == pytest.approx(0.8880, abs=1e-4)
    assert rule.power == pytest.approx(expected, abs=3 * np.sqrt(expected * (1 - expected) / 4000))
    assert (rule.level, rule.seeds, rule.comparisons) == (pytest.approx(0.05 / 3), 2, 3)
    assert "all 2 seeds' sign-flip tests reject at α/m = 0.05/3" in rule.describe()
    assert "the sign-flip test rejects at α = 0.05, by 4,000" in single.describe()
    # less than one seed alone at α (0.9793), the figure pooled per seed used to report
    assert rule.power < stats.binom.sf(5, 20, 0.5) - 0.05


def test_decision_power_of_mcnemar_draws_examples() -> None:
    # 40 examples, A alone right on 8, B alone right on none: one seed's exact McNemar p on
    # a bootstrap test set with X such examples is 2^(1 − X), below 0.05 iff X ≥ 6
    a = np.ones(40, bool)
    b = a.copy()
    b[:8] = False
    power = decision_power([a], [b], n_simulations=4000, random_state=1)
    assert power.test == "McNemar" and power.n_units == 40
    assert power.power == pytest.approx(stats.binom.sf(5, 40, 0.2), abs=0.02)


def test_degenerate_cases_have_no_power() -> None:
    assert decision_power([[1, 1]], [[0, 0]], clusters=[0, 1]).power == 0.0
    three = decision_power([np.ones(12, bool)], [np.tile([0, 1, 1, 1], 3).astype(bool)],
                           np.arange(3).repeat(4))  # fmt: skip
    assert three.power == 0.0


def test_sentences_needed_is_where_the_decision_power_reaches_the_target() -> None:
    # the 20 sentences above, one seed: A alone right on half the sentences. At K sentences,
    # X ~ Bin(K, ½) and the test rejects at α = 0.05 iff X ≥ 6: P ≥ 0.8 first at K = 15
    a = np.ones(20, bool)
    b = a.copy()
    b[:10] = False
    exact = {k: stats.binom.sf(5, k, 0.5) for k in range(12, 18)}
    assert exact[14] < 0.8 < exact[15]
    found = sentences_needed([a], [b], np.arange(20), n_simulations=4000)
    assert found.n_sentences in (14, 15, 16) and found.power >= 0.8
    assert "test sentences for power 0.8" in found.describe()
    none = sentences_needed([a], [a], np.arange(20), most=64, n_simulations=50)
    assert none.n_sentences is None and none.power == 0.0
    assert "more than 64 test sentences" in none.describe()


def test_holm_against_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.array([0.001, 0.2, 0.012, 0.04, 0.04, 0.9, 0.003])
    expected = multitest.multipletests(p, method="holm")[1]
    np.testing.assert_allclose(holm(p), expected)
    assert holm([0.02]).tolist() == [0.02]
    with pytest.raises(ValueError, match="p_values"):
        holm([0.1, 1.5])
