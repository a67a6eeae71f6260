"""The switching code's forward algorithm, hindsight optima and overhead bounds
(probemeter.mdl.switching), against hand computations, closed forms and brute force."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from probemeter.mdl.switching import (
    best_sequences,
    overhead_bound,
    switch_forward,
    switching_rates,
)


def _sequence_prior(sequence, rates, n_families):
    """P(s) of the fixed-share chain, factor by factor."""
    prior = 1.0 / n_families
    for t in range(1, len(sequence)):
        stay = 1.0 if sequence[t] == sequence[t - 1] else 0.0
        prior *= (1 - rates[t]) * stay + rates[t] / n_families
    return prior


def _brute_force(losses, rate):
    """−log2 Σ_s P(s) 2^{−L_s} over all K^T sequences, and the posterior after the last round."""
    n_rounds, n_families = losses.shape
    rates = switching_rates(n_rounds, rate)
    total, last = 0.0, np.zeros(n_families)
    for sequence in itertools.product(range(n_families), repeat=n_rounds):
        mass = (
            _sequence_prior(sequence, rates, n_families)
            * 2.0 ** -losses[np.arange(n_rounds), sequence].sum()
        )
        total += mass
        last[sequence[-1]] += mass
    return -math.log2(total), last / total


def test_hand_computed_two_families_three_examples():
    # family A gives the labels probabilities 1/2, 1/4, 1/2; family B 1/4, 1/2, 1/8.
    # harmonic rate: alpha_2 = 1/2, alpha_3 = 1/3; uniform prior (1/2, 1/2).
    # t=1: P1 = 1/2*1/2 + 1/2*1/4 = 3/8, v1 = (2/3, 1/3)
    # t=2: w2 = 1/2*v1 + 1/2*1/2 = (7/12, 5/12); P2 = 7/48 + 10/48 = 17/48; v2 = (7/17, 10/17)
    # t=3: w3 = 2/3*v2 + 1/3*1/2 = (15/34, 19/34); P3 = 15/68 + 19/272 = 79/272;
    #      v3 = (60/79, 19/79)
    probabilities = np.array([[1 / 2, 1 / 4], [1 / 4, 1 / 2], [1 / 2, 1 / 8]])
    result = switch_forward(-np.log2(probabilities))
    rounds = [Fraction(3, 8), Fraction(17, 48), Fraction(79, 272)]
    np.testing.assert_allclose(result.round_bits, [-math.log2(p) for p in rounds], rtol=1e-12)
    assert result.total_bits == pytest.approx(-math.log2(3 * 17 * 79 / (8 * 48 * 272)), rel=1e-12)
    np.testing.assert_allclose(result.posterior[0], [2 / 3, 1 / 3], rtol=1e-12)
    np.testing.assert_allclose(result.posterior[1], [7 / 17, 10 / 17], rtol=1e-12)
    np.testing.assert_allclose(result.posterior[2], [60 / 79, 19 / 79], rtol=1e-12)
    np.testing.assert_allclose(result.rates, [0, 1 / 2, 1 / 3])


@pytest.mark.parametrize("rate", ["harmonic", 0.0, 0.1, 0.5])
def test_forward_equals_the_sum_over_all_sequences(rate):
    losses = np.random.default_rng(3).exponential(2.0, size=(6, 3))
    result = switch_forward(losses, rate)
    total, last = _brute_force(losses, rate)
    assert result.total_bits == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(result.posterior[-1], last, rtol=1e-10)


def test_no_switching_is_the_bayesian_mixture_in_closed_form():
    losses = np.random.default_rng(0).exponential(1.0, size=(500, 4))
    totals = losses.sum(axis=0)
    result = switch_forward(losses, rate=0)
    # L = -log2 sum_k 2^{-L_k} / K; posterior_k = 2^{-L_k} / sum_j 2^{-L_j}
    shift = totals.min()
    mixture = shift - math.log2(np.mean(2.0 ** -(totals - shift)))
    assert result.total_bits == pytest.approx(mixture, rel=1e-12)
    np.testing.assert_allclose(result.posterior[-1], 2.0 ** -(totals - shift) / np.sum(
        2.0 ** -(totals - shift)
    ), rtol=1e-9)  # fmt: skip
    # the mixture's overhead over the best family is at most log2 K, and here close to it
    assert 0 <= result.total_bits - totals.min() <= overhead_bound(500, 4, 0, rate=0) == 2.0


def test_switching_beats_both_families_when_the_best_changes():
    # family A codes the first half well (0.2 bits/example) and the second badly (2 bits),
    # family B the other way round: either alone costs 440 bits, the best sequence 80
    n = 400
    early, late = np.full(n // 2, 0.2), np.full(n // 2, 2.0)
    losses = np.column_stack([np.concatenate([early, late]), np.concatenate([late, early])])
    switching = switch_forward(losses).total_bits
    single = losses.sum(axis=0)
    best = best_sequences(losses, 2)
    assert single.tolist() == pytest.approx([440.0, 440.0])
    assert best.tolist() == pytest.approx([440.0, 80.0, 80.0])
    assert switching < best[1] + overhead_bound(n, 2, 1) < 0.3 * single.min()
    # the mixture without switching cannot follow: it pays ~ the single family's 440 bits
    assert switch_forward(losses, rate=0).total_bits > single.min() - 1
    # the posterior moves from A to B after the change
    posterior = switch_forward(losses).posterior
    assert posterior[n // 2 - 1, 0] > 0.99 and posterior[-1, 1] > 0.99


@given(
    arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 4)), elements=st.floats(0, 8)),
    st.sampled_from(["harmonic", 0.0, 0.01, 0.3]),
)
def test_overhead_bound_holds(losses, rate):
    result = switch_forward(losses, rate)
    n_rounds, n_families = losses.shape
    best = best_sequences(losses, 3)
    for switches in range(4):
        bound = overhead_bound(n_rounds, n_families, switches, rate)
        assert result.total_bits <= best[switches] + bound + 1e-9
    # a mixture never beats the best sequence of all (T - 1 switches suffice for any)
    assert result.total_bits >= best_sequences(losses, n_rounds - 1)[-1] - 1e-9


def test_best_sequences_against_enumeration():
    losses = np.random.default_rng(7).exponential(1.0, size=(7, 3))
    brute = np.full(7, np.inf)
    for sequence in itertools.product(range(3), repeat=7):
        switches = int(np.sum(np.diff(sequence) != 0))
        cost = losses[np.arange(7), sequence].sum()
        brute[switches:] = np.minimum(brute[switches:], cost)
    np.testing.assert_allclose(best_sequences(losses, 6), brute, rtol=1e-12)


def test_bound_is_tight_for_many_families():
    # B_k's only slack is 1 - 1/t + 1/(tK) >= (t - 1)/t, which vanishes as K grows: with a
    # million families the priors of the constant sequence and of one switch at the last
    # round (the latest switch, the worst case) meet the bounds B_0 and B_1
    n_rounds, n_families = 9, 10**6
    rates = switching_rates(n_rounds)
    constant = -math.log2(_sequence_prior((0,) * n_rounds, rates, n_families))
    late_switch = (0,) * (n_rounds - 1) + (1,)
    switch = -math.log2(_sequence_prior(late_switch, rates, n_families))
    assert constant == pytest.approx(overhead_bound(n_rounds, n_families, 0), abs=1e-4)
    assert switch == pytest.approx(overhead_bound(n_rounds, n_families, 1), abs=1e-4)
    assert constant <= overhead_bound(n_rounds, n_families, 0)
    assert switch <= overhead_bound(n_rounds, n_families, 1)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="losses_bits must be a 2-D"):
        switch_forward(np.ones(3))
    with pytest.raises(ValueError, match="finite and non-negative"):
        switch_forward(np.array([[1.0, -1.0]]))
    with pytest.raises(ValueError, match="rate must be 'harmonic'"):
        switch_forward(np.ones((2, 2)), rate="fast")
    with pytest.raises(ValueError, match="rate"):
        switch_forward(np.ones((2, 2)), rate=1.0)
    with pytest.raises(ValueError, match="max_switches"):
        best_sequences(np.ones((2, 2)), -1)
    assert overhead_bound(5, 2, 1, rate=0) == math.inf
    assert overhead_bound(2, 2, 2) == math.inf
