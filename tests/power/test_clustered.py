"""Obuchowski's clustered McNemar test, its cluster-bootstrap power, and Holm's adjustment."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from probemeter.power.clustered import clustered_mcnemar, clustered_power, holm
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
    always = clustered_mcnemar([1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 1])
    assert always.statistic == np.inf and always.p_value == 0.0


def test_cluster_bootstrap_power_grows_with_the_gap() -> None:
    rng = np.random.default_rng(1)
    ids = np.arange(80).repeat(10)
    a = rng.random(800) < 0.8
    close = a.copy()  # as many examples lost as gained: no difference
    close[np.flatnonzero(a)[::40]] = False
    close[np.flatnonzero(~a)[: np.flatnonzero(a)[::40].size]] = True
    far = np.where(rng.random(800) < 0.25, False, a)
    low = clustered_power([a], [close], ids, n_simulations=400)
    high = clustered_power([a, a], [far, far], ids, n_simulations=400)
    assert low < 0.5 < 0.95 < high
    assert clustered_power([a], [close], ids, n_simulations=400) == low  # seeded


def test_holm_against_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.array([0.001, 0.2, 0.012, 0.04, 0.04, 0.9, 0.003])
    expected = multitest.multipletests(p, method="holm")[1]
    np.testing.assert_allclose(holm(p), expected)
    assert holm([0.02]).tolist() == [0.02]
    with pytest.raises(ValueError, match="p_values"):
        holm([0.1, 1.5])
