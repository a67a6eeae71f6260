"""Measures on a hand-made loss-data curve, against numbers computed by hand.

The curve: K = 10 classes, pool of 100, sizes 10, 20, 40, 100, two seeds each, with mean
    loss            2.0, 1.0, 0.5, 0.05   (nats)
    loss_truncated  1.0, 0.9, 0.5, 0.05
    accuracy        0.4, 0.65, 0.85, 0.97  (error 0.6, 0.35, 0.15, 0.03)
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest

from probemeter.curves.curve import LossDataCurve
from probemeter.curves.measures import (
    description_length,
    hoeffding_draws,
    hoeffding_half_width,
    mutual_information,
    sample_complexity,
    sample_complexity_for_accuracy,
    sdl,
    uniform_code_loss,
    validation_performance,
)

LN10 = math.log(10)
LN2 = math.log(2)


@pytest.fixture
def curve() -> LossDataCurve:
    points = pd.DataFrame(
        {
            "n": [10, 10, 20, 20, 40, 40, 100, 100],
            "seed": [0, 1] * 4,
            "loss": [2.1, 1.9, 1.2, 0.8, 0.6, 0.4, 0.04, 0.06],
            "loss_truncated": [1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.04, 0.06],
            "accuracy": [0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.96, 0.98],
        }
    )
    return LossDataCurve("rep", points, n_classes=10, pool_size=100, n_test=500)


def right_edge_mdl(curve: LossDataCurve) -> float:
    """The wrong Riemann sum (an earlier implementation): block (n_{i-1}, n_i] charged with
    L(n_i)."""
    losses = curve.mean("loss")
    sizes = [0, *losses.index]
    return sum((sizes[i + 1] - sizes[i]) * loss for i, loss in enumerate(losses))


# VA and MI


def test_validation_performance_reads_largest_measured_size(curve):
    full = validation_performance(curve)
    assert (full.value, full.n, full.n_measured) == (pytest.approx(0.05), 100, 100)
    assert full.accuracy == pytest.approx(0.97)
    between = validation_performance(curve, 50)
    assert (between.value, between.n, between.n_measured) == (pytest.approx(0.5), 50, 40)
    assert between.accuracy == pytest.approx(0.85)
    assert not between.lower_bound


def test_validation_performance_error_metric_and_bits(curve):
    assert validation_performance(curve, 20, metric="error").value == pytest.approx(0.35)
    assert validation_performance(curve, 20, metric="error").unit == "errors"
    bits = validation_performance(curve, 20, unit="bits")
    assert bits.value == pytest.approx(1.0 / LN2, rel=1e-12)
    assert bits.unit == "bits"


@pytest.mark.parametrize(("n", "message"), [(9, "below the smallest"), (101, "exceeds the pool")])
def test_validation_performance_rejects_n_outside_the_data(curve, n, message):
    with pytest.raises(ValueError, match=message):
        validation_performance(curve, n)


@pytest.mark.parametrize("n", [20.0, "20", True])
def test_n_must_be_an_integer(curve, n):
    with pytest.raises(ValueError, match="n must be an integer"):
        description_length(curve, n)


def test_mutual_information_with_label_entropy(curve):
    result = mutual_information(curve, label_entropy=LN10)
    assert result.value == pytest.approx(0.05)
    assert result.n == 100
    assert result.information_lower_bound == pytest.approx(LN10 - 0.05)
    bits = mutual_information(curve, unit="bits", label_entropy=LN10)
    assert bits.label_entropy == pytest.approx(LN10 / LN2)
    assert bits.information_lower_bound == pytest.approx((LN10 - 0.05) / LN2)
    assert mutual_information(curve).information_lower_bound is None


def test_mutual_information_label_entropy_needs_cross_entropy(curve):
    with pytest.raises(ValueError, match="metric='loss'"):
        mutual_information(curve, metric="loss_truncated", label_entropy=1.0)
    with pytest.raises(ValueError, match="label_entropy"):
        mutual_information(curve, label_entropy=-1.0)


# MDL


def test_mdl_left_edge_riemann_sum_with_uniform_first_block(curve):
    result = description_length(curve)
    # 10·ln 10 + 10·L(10) + 20·L(20) + 60·L(40); L(100) charges no block
    assert result.value == pytest.approx(10 * LN10 + 10 * 2.0 + 20 * 1.0 + 60 * 0.5)
    assert result.first_block == pytest.approx(LN10)
    assert (result.unit, result.n, result.lower_bound) == ("nats", 100, False)


def test_mdl_differs_from_the_right_edge_sum(curve):
    right = right_edge_mdl(curve)
    assert right == pytest.approx(10 * 2.0 + 10 * 1.0 + 20 * 0.5 + 60 * 0.05)
    assert description_length(curve).value > right + 40


def test_mdl_truncated_at_n(curve):
    # the last block (40, 50] is coded with the probe trained on 40 points
    assert description_length(curve, 50).value == pytest.approx(
        10 * LN10 + 10 * 2.0 + 20 * 1.0 + 10 * 0.5
    )
    assert description_length(curve, 40).value == pytest.approx(10 * LN10 + 10 * 2.0 + 20 * 1.0)
    assert description_length(curve, 10).value == pytest.approx(10 * LN10)
    assert description_length(curve, 50).n == 50


def test_mdl_in_bits_is_nats_over_ln2(curve):
    nats = description_length(curve, 50)
    bits = description_length(curve, 50, unit="bits")
    assert bits.value == pytest.approx(nats.value / LN2, rel=1e-12)
    assert bits.first_block == pytest.approx(math.log2(10), rel=1e-12)
    assert bits.unit == "bits"


def test_mdl_first_block_as_a_number(curve):
    result = description_length(curve, first_block=1.5)
    assert result.value == pytest.approx(10 * 1.5 + 10 * 2.0 + 20 * 1.0 + 60 * 0.5)
    bits = description_length(curve, first_block=1.5, unit="bits")
    assert bits.first_block == pytest.approx(1.5 / LN2)


def test_mdl_of_bounded_metrics_uses_their_uniform_loss(curve):
    # truncated: uniform code min(ln 10, 1) = 1; error: uniform guessing errs 1 − 1/10
    truncated = description_length(curve, metric="loss_truncated")
    assert truncated.value == pytest.approx(10 * 1.0 + 10 * 1.0 + 20 * 0.9 + 60 * 0.5)
    errors = description_length(curve, metric="error")
    assert errors.value == pytest.approx(10 * 0.9 + 10 * 0.6 + 20 * 0.35 + 60 * 0.15)
    assert errors.unit == "errors"


@pytest.mark.parametrize(
    ("first_block", "metric"),
    [("zero", "loss"), (-0.1, "loss"), (math.inf, "loss"), (1.5, "loss_truncated")],
)
def test_mdl_rejects_bad_first_block(curve, first_block, metric):
    with pytest.raises(ValueError, match="first_block"):
        description_length(curve, first_block=first_block, metric=metric)


# SDL


def test_sdl_charges_every_block_above_epsilon(curve):
    result = sdl(curve, 0.1)
    # every block is above ε, so SDL = MDL − ε·N (as in Whitney et al., Table 1 at n = 60)
    expected = 10 * (LN10 - 0.1) + 10 * 1.9 + 20 * 0.9 + 60 * 0.4
    assert result.value == pytest.approx(expected)
    assert result.value == pytest.approx(description_length(curve).value - 0.1 * 100)
    assert not result.lower_bound
    assert result.final_loss == pytest.approx(0.05)


def test_sdl_clips_blocks_below_epsilon(curve):
    result = sdl(curve, 0.6)
    assert result.value == pytest.approx(10 * (LN10 - 0.6) + 10 * 1.4 + 20 * 0.4 + 60 * 0.0)
    assert not result.lower_bound


def test_sdl_lower_bound_when_data_run_out(curve):
    result = sdl(curve, 0.1, 30)
    assert result.value == pytest.approx(10 * (LN10 - 0.1) + 10 * 1.9 + 10 * 0.9)
    assert result.lower_bound
    assert result.format() == f"> {result.value:.2f}"
    assert "lower bound" in str(result)


def test_sdl_rules_last_and_half(curve):
    # last loss 0.05: ≤ ε = 0.08 ("last") but > ε/2 = 0.04 ("half")
    last = sdl(curve, 0.08, rule="last")
    half = sdl(curve, 0.08, rule="half")
    assert last.value == pytest.approx(half.value)
    assert last.value == pytest.approx(10 * (LN10 - 0.08) + 10 * 1.92 + 20 * 0.92 + 60 * 0.42)
    assert not last.lower_bound
    assert half.lower_bound
    assert not sdl(curve, 0.1, rule="half").lower_bound  # 0.05 ≤ 0.1 / 2


def test_sdl_in_bits_takes_epsilon_in_bits(curve):
    epsilon_bits = 0.5
    bits = sdl(curve, epsilon_bits, 50, unit="bits")
    nats = sdl(curve, epsilon_bits * LN2, 50)
    assert bits.value == pytest.approx(nats.value / LN2, rel=1e-12)
    assert bits.final_loss == pytest.approx(0.5 / LN2, rel=1e-12)
    assert (bits.lower_bound, bits.unit, bits.epsilon) == (nats.lower_bound, "bits", 0.5)


def test_sdl_hoeffding_half_width(curve):
    result = sdl(curve, 0.1, metric="loss_truncated", delta=0.05)
    assert result.value == pytest.approx(10 * 0.9 + 10 * 0.9 + 20 * 0.8 + 60 * 0.4)
    # N = 100 points, G = 4 estimated losses, K = 2 seeds
    expected = 100 * math.sqrt(math.log(2 * 4 / 0.05) / (2 * 2))
    assert result.half_width == pytest.approx(expected, rel=1e-12)
    assert (result.delta, result.n_samples) == (0.05, 2)
    assert result.interval == (0.0, pytest.approx(result.value + expected))
    many = sdl(curve, 0.1, metric="loss_truncated", delta=0.05, n_samples=1000)
    assert many.half_width == pytest.approx(100 * math.sqrt(math.log(160) / 2000), rel=1e-12)
    low, high = many.interval
    assert (low, high) == (pytest.approx(58 - many.half_width), pytest.approx(58 + many.half_width))
    bits = sdl(curve, 0.1, metric="loss_truncated", unit="bits", delta=0.05)
    assert bits.half_width == pytest.approx(expected / LN2, rel=1e-12)


def test_sdl_hoeffding_counts_only_the_sizes_up_to_n(curve):
    result = sdl(curve, 0.1, 50, metric="error", delta=0.1, n_samples=50)
    assert result.half_width == pytest.approx(50 * math.sqrt(math.log(2 * 3 / 0.1) / 100))
    assert sdl(curve, 0.1, metric="error").interval is None


def test_sdl_hoeffding_needs_a_bounded_loss(curve):
    with pytest.raises(ValueError, match="bounded in"):
        sdl(curve, 0.1, delta=0.05)
    with pytest.raises(ValueError, match="also pass delta"):
        sdl(curve, 0.1, metric="error", n_samples=10)


@pytest.mark.parametrize("delta", [0, 1, 1.5, -0.1, math.nan, "0.1"])
def test_sdl_rejects_bad_delta(curve, delta):
    with pytest.raises(ValueError, match="delta"):
        sdl(curve, 0.1, metric="error", delta=delta)


@pytest.mark.parametrize("n_samples", [0, 2.5, True])
def test_sdl_rejects_bad_n_samples(curve, n_samples):
    with pytest.raises(ValueError, match="n_samples"):
        sdl(curve, 0.1, metric="error", delta=0.1, n_samples=n_samples)


# εSC


@pytest.mark.parametrize(
    ("epsilon", "rule", "value", "lower_bound"),
    [
        (0.6, "last", 40, False),
        (0.6, "half", 100, False),
        (1.0, "last", 20, False),
        (2.0, "last", 10, False),
        (0.1, "last", 100, False),
        (0.1, "half", 100, False),
        (0.08, "half", 100, True),
        (0.01, "last", 100, True),
    ],
)
def test_sample_complexity(curve, epsilon, rule, value, lower_bound):
    result = sample_complexity(curve, epsilon, rule=rule)
    assert (result.value, result.lower_bound) == (value, lower_bound)
    assert isinstance(result.value, int)
    assert result.unit == "examples"
    assert result.loss_unit == "nats"


def test_sample_complexity_truncated_at_n(curve):
    result = sample_complexity(curve, 0.6, 30)
    assert (result.value, result.lower_bound, result.n) == (20, True, 30)
    assert result.format() == "> 20"
    assert sample_complexity(curve, 0.6, 40).format() == "40"


def test_sample_complexity_in_bits(curve):
    # L(20) = 1 nat = 1.44 bits; ε = 1.4 bits is not reached there, 1.45 bits is
    assert sample_complexity(curve, 1.4, unit="bits").value == 40
    assert sample_complexity(curve, 1.45, unit="bits").value == 20


def test_sample_complexity_for_accuracy(curve):
    result = sample_complexity_for_accuracy(curve, 0.8)
    assert (result.value, result.metric, result.lower_bound) == (40, "error", False)
    assert result.epsilon == pytest.approx(0.2)
    assert sample_complexity_for_accuracy(curve, 0.95).value == 100
    assert sample_complexity_for_accuracy(curve, 0.99).lower_bound
    assert sample_complexity_for_accuracy(curve, 0.95, rule="half").lower_bound
    with pytest.raises(ValueError, match="accuracy"):
        sample_complexity_for_accuracy(curve, 1.0)


# validation of arguments


@pytest.mark.parametrize("epsilon", [0, -0.1, math.nan, math.inf, "0.1", None, True])
@pytest.mark.parametrize("measure", [sdl, sample_complexity])
def test_epsilon_must_be_finite_and_positive(curve, measure, epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        measure(curve, epsilon)


@pytest.mark.parametrize("measure", [sdl, sample_complexity])
def test_epsilon_below_one_for_error(curve, measure):
    with pytest.raises(ValueError, match=r"epsilon must be a number in \(0, 1\)"):
        measure(curve, 1.0, metric="error")


@pytest.mark.parametrize("measure", [sdl, sample_complexity])
def test_epsilon_at_or_above_the_uniform_code_is_refused(curve, measure):
    """K = 10: the uniform code costs ln 10 = 2.3026 nats = log2 10 = 3.3219 bits a label
    (its truncated loss min(ln 10, 1) = 1 nat); every probe meets a larger ε without data.
    Before, sdl(curve, 1e9) was 0 and sample_complexity 10, both marked tight."""
    message = (
        "epsilon = 1e+09 nats is at or above ln K = 2.303 nats, the loss of the uniform code "
        "over K = 10 classes"
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        measure(curve, 1e9)
    with pytest.raises(ValueError, match=r"give epsilon below 2\.303 nats"):
        measure(curve, LN10)  # at the uniform code's loss: refused too
    assert not measure(curve, math.nextafter(LN10, 0.0)).lower_bound
    with pytest.raises(ValueError, match=r"at or above log2 K = 3.322 bits"):
        measure(curve, 3.33, unit="bits")
    assert measure(curve, 3.32, unit="bits").unit in ("bits", "examples")
    with pytest.raises(ValueError, match=r"at or above min\(ln K, 1\) = 1 nats"):
        measure(curve, 1.0, metric="loss_truncated")
    with pytest.raises(ValueError, match=r"at or above min\(log2 K, 1/ln 2\) = 1.443 bits"):
        measure(curve, 1.45, metric="loss_truncated", unit="bits")
    measure(curve, 0.99, metric="loss_truncated")
    measure(curve, 0.95, metric="error")  # the 0–1 loss keeps its bound: ε < 1
    # a curve whose examples are not single labels gives its own uniform code
    assert measure(curve, 5.0, uniform_loss=10.0).epsilon == 5.0
    with pytest.raises(ValueError, match=r"at or above uniform_loss = 1\.5 nats"):
        measure(curve, 2.0, uniform_loss=1.5)
    with pytest.raises(ValueError, match="uniform_loss"):
        measure(curve, 0.1, uniform_loss=-1.0)


def test_label_sets_are_refused_only_above_k_ln_2(curve):
    """K = 20 label sets: the uniform code is 20 fair coins, 20 ln 2 = 13.863 nats = 20 bits
    an example, not ln 20 = 2.996 nats."""
    points = curve.points.assign(micro_f1=0.5, macro_f1=0.5)
    sets = LossDataCurve("sets", points, n_classes=20, pool_size=100, n_test=500, multilabel=True)
    assert uniform_code_loss(20, multilabel=True) == pytest.approx(20 * LN2, rel=1e-15)
    assert uniform_code_loss(20, multilabel=True, unit="bits") == pytest.approx(20.0)
    assert sdl(sets, 5.0).value == pytest.approx(10 * (20 * LN2 - 5.0))  # above ln 20: accepted
    assert sample_complexity(sets, 5.0).value == 10
    with pytest.raises(ValueError, match=r"K·ln 2 = 13.86 nats, the loss of the uniform code"):
        sdl(sets, 14.0)
    with pytest.raises(ValueError, match=r"at or above K = 20 bits"):
        sample_complexity(sets, 20.0, unit="bits")


def test_uniform_code_loss_per_metric_and_unit():
    assert uniform_code_loss(10) == pytest.approx(LN10, rel=1e-15)
    assert uniform_code_loss(10, unit="bits") == pytest.approx(math.log2(10), rel=1e-15)
    assert uniform_code_loss(10, metric="loss_truncated") == 1.0
    assert uniform_code_loss(2, metric="loss_truncated") == pytest.approx(LN2, rel=1e-15)
    assert uniform_code_loss(10, metric="error") == pytest.approx(0.9)
    assert uniform_code_loss(3, metric="error", multilabel=True) == pytest.approx(7 / 8)
    with pytest.raises(ValueError, match="n_classes"):
        uniform_code_loss(1)


def test_metric_and_unit_are_checked(curve):
    with pytest.raises(ValueError, match="metric must be one of"):
        description_length(curve, metric="accuracy")
    with pytest.raises(ValueError, match="unit for metric 'error'"):
        sdl(curve, 0.1, metric="error", unit="bits")
    with pytest.raises(ValueError, match="unit for metric 'loss'"):
        validation_performance(curve, unit="errors")
    with pytest.raises(ValueError, match="rule must be one of"):
        sample_complexity(curve, 0.1, rule="first")


def test_curve_measured_beyond_its_pool_is_rejected(curve):
    with pytest.raises(ValueError, match=r"points.n must be in \[1, 80\]; got 100"):
        LossDataCurve("rep", curve.points, n_classes=10, pool_size=80, n_test=500)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("loss", -5.0, r"points.loss must be >= 0 \(nats\); got -5.0"),
        ("accuracy", 1.5, r"points.accuracy must be in \[0, 1\]; got 1.5"),
        ("loss_truncated", -0.1, r"points.loss_truncated must be in \[0, 1\]; got -0.1"),
    ],
)
def test_an_edited_results_file_with_impossible_values_is_refused(curve, column, value, message):
    payload = curve.to_dict()
    payload["points"][column][0] = value
    with pytest.raises(ValueError, match=message):
        LossDataCurve.from_dict(payload)


# helpers


def test_hoeffding_half_width_closed_form():
    assert hoeffding_half_width(1000, 1000, 8, 0.1) == pytest.approx(
        1000 * math.sqrt(math.log(2 * 1000 / 0.1) / 16), rel=1e-12
    )
    with pytest.raises(ValueError, match="n_estimates"):
        hoeffding_half_width(10, 0, 8, 0.1)


def test_hoeffding_draws_theorem_5():
    # S = ⌈2·ln(20·1/0.05) / 0.1²⌉ = ⌈1198.29⌉
    assert hoeffding_draws(0.1, 0.05, 1) == 1199
    assert hoeffding_draws(0.2, 0.1, 3) == math.ceil(2 * math.log(600) / 0.04)
    with pytest.raises(ValueError, match="rounds"):
        hoeffding_draws(0.1, 0.05, 0)
    with pytest.raises(ValueError, match="delta"):
        hoeffding_draws(0.1, 1.0, 1)


def test_results_serialise_to_json(curve):
    result = sdl(curve, 0.1, 30, metric="error", delta=0.1)
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["measure"] == "SDL"
    assert payload["lower_bound"] is True
    assert payload["value"] == pytest.approx(result.value)
    assert payload["unit"] == "errors"
    sc = sample_complexity(curve, 0.6).to_dict()
    assert (sc["measure"], sc["value"], sc["loss_unit"]) == ("SC", 40, "nats")


def test_results_are_frozen(curve):
    result = description_length(curve)
    with pytest.raises(AttributeError):
        result.value = 0.0
