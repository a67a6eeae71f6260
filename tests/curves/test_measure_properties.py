"""Property-based tests of the measures of Whitney et al. on random loss-data curves.

The curves are built directly (:class:`LossDataCurve` from a table of per-probe rows, as
``loss_data_curve`` does after training), with random sizes, seeds (possibly a different number
per size), classes, losses, truncated losses and accuracies. Each property below is a statement
of the paper or of the module docstrings of :mod:`probemeter.curves.measures`, checked on every
metric (``loss``, ``loss_truncated``, ``error``) and unit (nats, bits, errors):

* MDL ≥ SDL(ε) ≥ MDL − N·ε and SDL ≥ 0, since 0 ≤ [L − ε]_+ and L − ε ≤ [L − ε]_+ blockwise
  (eq. 7 and eq. 11); SDL = MDL − N·ε when ε is below every block height (the limit ε → 0 of
  Def. 2 is MDL) and SDL = 0 when ε is above all of them.
* SDL is non-increasing in ε and drops by at most N per unit of ε (each of the N points
  contributes [L − ε]_+, which is 1-Lipschitz in ε).
* SDL is tight iff the last measured loss reaches ε (``rule="last"``) or ε/2 (``"half"``,
  Algorithm 1); the rule changes only the flag, never the value.
* SDL and εSC refuse a cross-entropy ε at or above the uniform code's loss (ln K; 1 nat at
  most for the truncated loss), which a code meets without data.
* εSC (eq. 12) is the first measured n with L̂(n) ≤ ε (or ε/2) and is then exact; when no
  measured size gets there it is the largest size flagged as a lower bound. It is
  non-increasing in ε, never smaller under ``"half"`` than under ``"last"``, and
  εSC for accuracy a is εSC of the 0–1 loss at ε = 1 − a.
* VA (§2) is the mean loss and accuracy at the largest measured n ≤ N; for the 0–1 loss it is
  1 − accuracy. MI (eq. 5) is the loss at the largest measured size, and with H(Y) its
  information bound is H(Y) − MI (eq. 4).
* MDL and SDL never decrease when n grows: the first n_1 points cost the first block's code,
  and every later point the loss of the probe trained on the largest measured size below it
  (left-edge Riemann sum, App. C); a flat curve with the same first-block cost has MDL = N·L.
* bits = nats / ln 2 for every loss-valued output (VA, MI, MDL, SDL, ε, the first block, the
  final loss, the Hoeffding half-width), and εSC does not depend on the unit of ε.
* Measures do not depend on the order of the rows or the labels of the seeds, and survive a
  save/load round trip of the results file unchanged; a saved curve with an impossible value
  is refused with a ValueError.

Each property would fail on a wrong implementation: a right-edge sum, a clipped or unclipped
first block, a ``<`` instead of ``≤``, a flag read from the wrong size, a bits/nats slip, a
result that depends on the order of the rows, or a results file that loses precision.

``sample_complexity_for_accuracy`` failed the εSC property for accuracies below 2⁻⁵³ (1 − a
rounds to 1, an ε the 0–1 loss refuses); the fix has its own regression test below.
"""

from __future__ import annotations

import itertools
import math
import tempfile
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from probemeter.curves.curve import LossDataCurve
from probemeter.curves.measures import (
    description_length,
    mutual_information,
    sample_complexity,
    sample_complexity_for_accuracy,
    sdl,
    validation_performance,
)
from probemeter.curves.results import load_curves, save_results

LN2 = math.log(2.0)
#: (metric, unit) pairs the measures accept
METRIC_UNITS = [
    ("loss", "nats"),
    ("loss", "bits"),
    ("loss_truncated", "nats"),
    ("loss_truncated", "bits"),
    ("error", "errors"),
]
BOUNDED = ("loss_truncated", "error")
SCALES = {"nats": 1.0, "bits": LN2, "errors": 1.0}

metric_units = st.sampled_from(METRIC_UNITS)


def _floats(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def curves(draw: st.DrawFn, max_sizes: int = 6) -> LossDataCurve:
    """A valid curve: distinct sizes in [1, pool], 1–4 seeds per size (possibly fewer at some
    sizes), loss ≥ 0, truncated loss ≤ min(loss, 1), accuracy in [0, 1], in random row order."""
    n_classes = draw(st.integers(2, 50))
    pool_size = draw(st.integers(1, 5000))
    sizes = sorted(
        draw(st.lists(st.integers(1, pool_size), min_size=1, max_size=max_sizes, unique=True))
    )
    seed_ids = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=4, unique=True))
    rows = []
    for n in sizes:
        count = draw(st.integers(1, len(seed_ids))) if draw(st.booleans()) else len(seed_ids)
        for seed in seed_ids[:count]:
            loss = draw(_floats(0.0, 12.0))
            truncated = draw(_floats(0.0, 1.0)) * min(loss, 1.0)
            rows.append((n, seed, loss, truncated, draw(_floats(0.0, 1.0))))
    order = draw(st.permutations(range(len(rows))))
    points = pd.DataFrame(
        [rows[i] for i in order], columns=["n", "seed", "loss", "loss_truncated", "accuracy"]
    )
    return LossDataCurve("rep", points, n_classes, pool_size, n_test=100)


def numpy_means(curve: LossDataCurve, metric: str, unit: str) -> dict[int, float]:
    """L̂(n) in ``unit``, computed here from the rows with numpy (not through the library's
    pandas summary), to check the library's means to within rounding."""
    column = "accuracy" if metric == "error" else metric
    result = {}
    for n in np.unique(curve.points["n"].to_numpy()):
        values = curve.points.loc[curve.points["n"] == n, column].to_numpy(dtype=float)
        mean = float(np.mean(values))
        result[int(n)] = 1.0 - mean if metric == "error" else mean / SCALES[unit]
    return result


def curve_losses(curve: LossDataCurve, metric: str, unit: str) -> dict[int, float]:
    """L̂(n) in ``unit`` as the measures see them (the curve's means, converted as the measures
    document): to put ε exactly at a loss, where numpy's mean may differ in the last bit."""
    if metric == "error":
        return {int(n): 1.0 - acc for n, acc in curve.mean("accuracy").items()}
    return {int(n): loss / SCALES[unit] for n, loss in curve.mean(metric).items()}


def uniform_cost(curve: LossDataCurve, metric: str, unit: str) -> float:
    """The uniform code's per-label cost under ``metric`` (the default first block)."""
    log_k = math.log(curve.n_classes)
    cost = {"loss": log_k, "loss_truncated": min(log_k, 1.0), "error": 1 - 1 / curve.n_classes}
    return cost[metric] / SCALES[unit]


def epsilon_for(
    data: st.DataObject,
    curve: LossDataCurve,
    metric: str,
    unit: str,
    heights: list[float],
    label: str = "epsilon",
) -> float:
    """ε > 0, below 1 for the 0–1 loss and below the uniform code's loss for the cross-entropy
    (the measures refuse a larger one): random, or exactly one of the block heights (to test ≤
    against <), or just below the lowest or above the highest height."""
    upper = 1.0 if metric == "error" else uniform_cost(curve, metric, unit)
    candidates = [h for h in heights if 0 < h < upper]
    regimes = ["random", "below", "above"] + (["height"] if candidates else [])
    regime = data.draw(st.sampled_from(regimes), label=f"{label} regime")
    if regime == "height":
        return data.draw(st.sampled_from(candidates), label=label)
    if regime == "below" and 0 < min(heights):
        below = min(heights) * data.draw(_floats(1e-3, 1.0), label=label)
        if below < upper:
            return below
    if regime == "above" and max(heights) < upper:
        high = max(heights)
        above = high + (upper - high) * data.draw(_floats(0.0, 0.999), label=label)
        if 0 < above < upper:  # not rounded up to the 0–1 loss's bound
            return above
    return data.draw(
        st.floats(0, upper, exclude_min=True, exclude_max=True, allow_subnormal=False),
        label=label,
    )


def first_blocks(metric: str) -> st.SearchStrategy[str | float]:
    """The first block's cost: the uniform code, or a number (nats, or an error rate)."""
    upper = 1.0 if metric in BOUNDED else 12.0
    return st.one_of(st.just("uniform"), _floats(0.0, upper))


def tolerance(curve: LossDataCurve, *values: float) -> float:
    """Absolute slack for sums of N terms of the given magnitudes (float rounding only)."""
    return 1e-9 * curve.pool_size * max(1.0, *(abs(v) for v in values))


# MDL ≥ SDL ≥ 0


@given(curve=curves(), metric_unit=metric_units, data=st.data())
@pytest.mark.slow
def test_sdl_is_between_zero_and_mdl_and_meets_them_at_the_extremes(
    curve: LossDataCurve, metric_unit: tuple[str, str], data: st.DataObject
) -> None:
    metric, unit = metric_unit
    first_block = data.draw(first_blocks(metric), label="first_block")
    mdl = description_length(curve, first_block=first_block, metric=metric, unit=unit)
    cost = mdl.first_block
    expected_cost = (
        uniform_cost(curve, metric, unit)
        if first_block == "uniform"
        else first_block / SCALES[unit]
    )
    assert cost == pytest.approx(expected_cost, rel=1e-12)
    heights = [cost, *curve_losses(curve, metric, unit).values()]
    epsilon = epsilon_for(data, curve, metric, unit, heights)
    surplus = sdl(curve, epsilon, first_block=first_block, metric=metric, unit=unit)

    assert surplus.first_block == cost and surplus.epsilon == epsilon
    assert 0.0 <= surplus.value <= mdl.value
    n_total, slack = curve.pool_size, tolerance(curve, *heights, epsilon)
    assert surplus.value >= mdl.value - n_total * epsilon - slack
    if epsilon <= min(heights):  # every block above ε: SDL = Σ (L − ε) = MDL − N·ε
        assert surplus.value == pytest.approx(mdl.value - n_total * epsilon, abs=slack)
    if epsilon >= max(heights):  # every block below ε: nothing surplus, and the loss reached ε
        assert surplus.value == 0.0
        assert not surplus.lower_bound


@given(curve=curves(), metric_unit=metric_units, data=st.data())
@pytest.mark.slow
def test_sdl_is_non_increasing_and_n_lipschitz_in_epsilon(
    curve: LossDataCurve, metric_unit: tuple[str, str], data: st.DataObject
) -> None:
    metric, unit = metric_unit
    heights = [uniform_cost(curve, metric, unit), *curve_losses(curve, metric, unit).values()]
    low, high = sorted(
        epsilon_for(data, curve, metric, unit, heights, label=label)
        for label in ("epsilon 1", "epsilon 2")
    )
    at_low = sdl(curve, low, metric=metric, unit=unit).value
    at_high = sdl(curve, high, metric=metric, unit=unit).value
    assert at_low >= at_high
    assert at_low - at_high <= curve.pool_size * (high - low) + tolerance(curve, *heights)


@given(
    curve=curves(), metric_unit=metric_units, data=st.data(), rule=st.sampled_from(["last", "half"])
)
@pytest.mark.slow
def test_sdl_is_tight_iff_the_last_measured_loss_reaches_the_threshold(
    curve: LossDataCurve, metric_unit: tuple[str, str], data: st.DataObject, rule: str
) -> None:
    metric, unit = metric_unit
    losses = curve_losses(curve, metric, unit)
    final = losses[max(losses)]
    independent = numpy_means(curve, metric, unit)
    assert final == pytest.approx(independent[max(independent)], rel=1e-12, abs=1e-15)
    # ε at the final loss (or twice it, the "half" threshold) tests ≤ against <
    heights = [uniform_cost(curve, metric, unit), *losses.values(), 2 * final]
    epsilon = epsilon_for(data, curve, metric, unit, heights)
    result = sdl(curve, epsilon, metric=metric, unit=unit, rule=rule)

    assert result.final_loss == final
    threshold = epsilon if rule == "last" else epsilon / 2
    assert result.lower_bound == (not result.final_loss <= threshold)
    assert result.rule == rule
    other = sdl(curve, epsilon, metric=metric, unit=unit, rule="half" if rule == "last" else "last")
    assert other.value == result.value  # the rule decides the flag, not the area
    half, last = (result, other) if rule == "half" else (other, result)
    assert last.lower_bound <= half.lower_bound  # tight under ε/2 implies tight under ε
    assert result.format().startswith("> ") == result.lower_bound


# εSC


@given(
    curve=curves(), metric_unit=metric_units, data=st.data(), rule=st.sampled_from(["last", "half"])
)
def test_sample_complexity_is_exact_iff_some_measured_size_reaches_epsilon(
    curve: LossDataCurve, metric_unit: tuple[str, str], data: st.DataObject, rule: str
) -> None:
    metric, unit = metric_unit
    losses = curve_losses(curve, metric, unit)
    assert losses == pytest.approx(numpy_means(curve, metric, unit), rel=1e-12, abs=1e-15)
    heights = [*losses.values(), *(2 * loss for loss in losses.values())]
    epsilon = epsilon_for(data, curve, metric, unit, heights)
    threshold = epsilon if rule == "last" else epsilon / 2
    result = sample_complexity(curve, epsilon, metric=metric, unit=unit, rule=rule)

    reached = [int(n) for n, loss in losses.items() if loss <= threshold]
    assert result.lower_bound == (not reached)
    assert result.format().startswith("> ") == result.lower_bound
    assert result.unit == "examples" and result.loss_unit == unit and result.n == curve.pool_size
    if reached:
        assert result.value == reached[0]  # the first size at or below the threshold
        assert all(loss > threshold for n, loss in losses.items() if n < result.value)
    else:
        assert result.value == int(curve.sizes[-1])  # "> n_G"


@given(curve=curves(), metric_unit=metric_units, data=st.data())
def test_sample_complexity_is_monotone_in_epsilon_and_rule(
    curve: LossDataCurve, metric_unit: tuple[str, str], data: st.DataObject
) -> None:
    metric, unit = metric_unit
    heights = list(curve_losses(curve, metric, unit).values())
    low, high = sorted(
        epsilon_for(data, curve, metric, unit, heights, label=label)
        for label in ("epsilon 1", "epsilon 2")
    )
    strict = sample_complexity(curve, low, metric=metric, unit=unit)
    loose = sample_complexity(curve, high, metric=metric, unit=unit)
    half = sample_complexity(curve, low, metric=metric, unit=unit, rule="half")
    for tighter, looser in ((strict, loose), (half, strict)):
        assert looser.lower_bound <= tighter.lower_bound  # reached at ε → reached at ε' > ε
        if not looser.lower_bound:
            assert looser.value <= tighter.value


@given(
    curve=curves(),
    metric_unit=st.sampled_from([pair for pair in METRIC_UNITS if pair[0] != "error"]),
    factor=_floats(1.0, 1e6),
)
def test_a_cross_entropy_epsilon_the_uniform_code_meets_is_refused(
    curve: LossDataCurve, metric_unit: tuple[str, str], factor: float
) -> None:
    """ε ≥ the uniform code's loss (ln K, min(ln K, 1) truncated) is met without any data:
    SDL and εSC refuse it, naming the limit, whatever the curve's losses."""
    metric, unit = metric_unit
    epsilon = uniform_cost(curve, metric, unit) * factor
    for measure in (sdl, sample_complexity):
        with pytest.raises(ValueError, match=f"give epsilon below .* {unit}$"):
            measure(curve, epsilon, metric=metric, unit=unit)


@given(curve=curves(), accuracy=st.floats(0, 1, exclude_min=True, exclude_max=True))
def test_sample_complexity_for_accuracy_is_the_error_sample_complexity(
    curve: LossDataCurve, accuracy: float
) -> None:
    assume(1.0 - accuracy < 1.0)  # below 2**-53 see the test after this one
    by_accuracy = sample_complexity_for_accuracy(curve, accuracy)
    by_error = sample_complexity(curve, 1.0 - accuracy, metric="error")
    assert by_accuracy == by_error
    reached = [n for n, acc in curve.mean("accuracy").items() if 1.0 - acc <= 1.0 - accuracy]
    assert by_accuracy.lower_bound == (not reached)


@pytest.mark.parametrize("accuracy", [5e-324, 1e-17, 2.0**-54])
def test_sample_complexity_for_a_tiny_accuracy_needs_any_correct_prediction(
    accuracy: float,
) -> None:
    """Found by the property above: 1 − a rounds to 1 for a < 2⁻⁵³, and the accuracy, valid
    in (0, 1), was refused as "epsilon must be a number in (0, 1); got 1.0"."""
    points = pd.DataFrame(
        {
            "n": [10, 20, 40],
            "seed": [0, 0, 0],
            "loss": [2.0, 1.0, 0.5],
            "loss_truncated": [1.0, 1.0, 0.5],
            "accuracy": [0.0, 0.25, 0.5],
        }
    )
    curve = LossDataCurve("rep", points, n_classes=4, pool_size=40, n_test=4)
    result = sample_complexity_for_accuracy(curve, accuracy)
    assert (result.value, result.lower_bound) == (20, False)
    assert 0 < result.epsilon < 1


# VA and MI


@given(curve=curves(), metric_unit=metric_units, data=st.data())
@pytest.mark.slow
def test_va_reads_the_largest_measured_size_and_mi_the_largest_of_all(
    curve: LossDataCurve, metric_unit: tuple[str, str], data: st.DataObject
) -> None:
    metric, unit = metric_unit
    losses = numpy_means(curve, metric, unit)
    n = data.draw(st.integers(int(curve.sizes[0]), curve.pool_size), label="n")
    va = validation_performance(curve, n, metric=metric, unit=unit)
    n_measured = max(size for size in losses if size <= n)
    assert (va.n, va.n_measured, va.lower_bound) == (n, n_measured, False)
    assert va.value == pytest.approx(losses[n_measured], rel=1e-12, abs=1e-15)
    accuracy = curve.points.loc[curve.points["n"] == n_measured, "accuracy"].mean()
    assert va.accuracy == pytest.approx(accuracy, rel=1e-12, abs=1e-15)
    if metric == "error":
        assert va.value == pytest.approx(1.0 - va.accuracy, abs=1e-15)

    mi = mutual_information(curve, metric=metric, unit=unit)
    full = validation_performance(curve, metric=metric, unit=unit)
    assert (mi.value, mi.n) == (full.value, int(curve.sizes[-1]))
    assert mi.information_lower_bound is None
    if metric == "loss":
        entropy = data.draw(_floats(0.0, 10.0), label="label entropy (nats)")
        bound = mutual_information(curve, unit=unit, label_entropy=entropy)
        assert bound.label_entropy == pytest.approx(entropy / SCALES[unit], rel=1e-12)
        assert bound.information_lower_bound == pytest.approx(
            entropy / SCALES[unit] - mi.value, rel=1e-12, abs=1e-12
        )


# MDL and SDL along n


def coded_between(losses: dict[int, float], small: int, large: int) -> list[tuple[int, float]]:
    """The points (small, large] as (count, loss of the probe that codes them): each point is
    coded by the probe trained on the largest measured size below it (left edges, App. C)."""
    edges = sorted({small, large, *(size for size in losses if small < size < large)})
    return [
        (end - start, losses[max(size for size in losses if size <= start)])
        for start, end in itertools.pairwise(edges)
    ]


@given(curve=curves(), metric_unit=metric_units, data=st.data())
@pytest.mark.slow
def test_mdl_and_sdl_grow_with_n_by_the_loss_of_the_probe_coding_each_point(
    curve: LossDataCurve, metric_unit: tuple[str, str], data: st.DataObject
) -> None:
    metric, unit = metric_unit
    losses = curve_losses(curve, metric, unit)
    cost = uniform_cost(curve, metric, unit)
    heights = [cost, *losses.values()]
    epsilon = epsilon_for(data, curve, metric, unit, heights)
    first = int(curve.sizes[0])
    small, large = sorted(
        data.draw(st.integers(first, curve.pool_size), label=label) for label in ("n 1", "n 2")
    )
    sizes = (first, small, large)
    mdl = [description_length(curve, n, metric=metric, unit=unit).value for n in sizes]
    surplus = [sdl(curve, epsilon, n, metric=metric, unit=unit).value for n in sizes]
    slack = tolerance(curve, *heights)
    # the first n_1 points are sent with the first block's code, before any probe is trained
    assert mdl[0] == pytest.approx(first * cost, rel=1e-12)
    assert surplus[0] == pytest.approx(first * max(cost - epsilon, 0.0), rel=1e-12, abs=slack)
    assert mdl[1] <= mdl[2] and surplus[1] <= surplus[2]
    blocks = coded_between(losses, small, large)
    assert mdl[2] - mdl[1] == pytest.approx(sum(k * loss for k, loss in blocks), abs=slack)
    surplus_added = sum(k * max(loss - epsilon, 0.0) for k, loss in blocks)
    assert surplus[2] - surplus[1] == pytest.approx(surplus_added, abs=slack)


@given(
    level=_floats(0.0, 1.0),
    pool_size=st.integers(1, 5000),
    data=st.data(),
    metric_unit=metric_units,
)
def test_flat_curve_codes_every_point_at_its_loss(
    level: float, pool_size: int, data: st.DataObject, metric_unit: tuple[str, str]
) -> None:
    """With L̂(n) = L everywhere and first block L, MDL = N·L whatever the sizes and seeds."""
    metric, unit = metric_unit
    sizes = data.draw(st.lists(st.integers(1, pool_size), min_size=1, max_size=6, unique=True))
    seeds = data.draw(st.integers(1, 3))
    points = pd.DataFrame(
        [(n, s, level, level, 1.0 - level) for n in sizes for s in range(seeds)],
        columns=["n", "seed", "loss", "loss_truncated", "accuracy"],
    )
    curve = LossDataCurve("flat", points, 10, pool_size, 50)
    mdl = description_length(curve, first_block=level, metric=metric, unit=unit)
    expected = pool_size * level / SCALES[unit]
    assert mdl.value == pytest.approx(expected, rel=1e-9, abs=1e-9)


# units


@given(curve=curves(), metric=st.sampled_from(["loss", "loss_truncated"]), data=st.data())
@pytest.mark.slow
def test_bits_are_nats_over_ln2_for_every_loss_valued_output(
    curve: LossDataCurve, metric: str, data: st.DataObject
) -> None:
    losses = curve_losses(curve, metric, "nats")
    heights = [uniform_cost(curve, metric, "nats"), *losses.values()]
    epsilon = epsilon_for(data, curve, metric, "nats", heights)  # in nats
    first_block = data.draw(first_blocks(metric), label="first_block")  # always in nats
    n = data.draw(st.integers(int(curve.sizes[0]), curve.pool_size), label="n")
    delta = 0.05 if metric == "loss_truncated" else None
    units = ("nats", "bits")

    va = [validation_performance(curve, n, metric=metric, unit=u) for u in units]
    mi = [
        mutual_information(
            curve, metric=metric, unit=u, label_entropy=2.0 if metric == "loss" else None
        )
        for u in units
    ]
    mdl = [
        description_length(curve, n, first_block=first_block, metric=metric, unit=u) for u in units
    ]
    surplus = [
        sdl(
            curve,
            epsilon / SCALES[u],
            n,
            first_block=first_block,
            metric=metric,
            unit=u,
            delta=delta,
        )
        for u in units
    ]
    sc = [sample_complexity(curve, epsilon / SCALES[u], n, metric=metric, unit=u) for u in units]

    # sums of N terms [L − ε]_+ with L at ε to within rounding: only absolute precision
    slack = tolerance(curve, *heights) * 1e-3
    # a loss within rounding of ε (not at it) may compare differently after the division by
    # ln 2; a loss exactly at ε stays exactly at ε/ln 2 and must keep its flag
    at_threshold = any(
        loss != epsilon and math.isclose(loss, epsilon, rel_tol=1e-12) for loss in losses.values()
    )
    fields = {
        "value",
        "first_block",
        "epsilon",
        "final_loss",
        "half_width",
        "label_entropy",
        "information_lower_bound",
    }
    for nats, bits in (va, mi, mdl, surplus):
        assert (nats.unit, bits.unit, nats.n) == ("nats", "bits", bits.n)
        assert nats.lower_bound == bits.lower_bound or at_threshold
        for field in fields & set(vars(nats)):
            in_nats, in_bits = getattr(nats, field), getattr(bits, field)
            assert (in_nats is None) == (in_bits is None), field
            if in_nats is not None:
                assert in_bits == pytest.approx(in_nats / LN2, rel=1e-12, abs=slack), field
    assert va[0].accuracy == va[1].accuracy and va[0].n_measured == va[1].n_measured
    if delta is not None:
        low, high = surplus[1].interval
        assert 0.0 <= low <= surplus[1].value <= high
    assert (sc[0].value, sc[0].lower_bound) == (sc[1].value, sc[1].lower_bound) or at_threshold
    assert (sc[0].loss_unit, sc[1].loss_unit, sc[0].unit) == ("nats", "bits", sc[1].unit)


# invariance and storage


def _all_measures(curve: LossDataCurve, epsilon: float) -> list[Any]:
    """Every measure at ε on the cross-entropy; SDL with its Hoeffding interval (which counts
    the seeds) and εSC on the 0–1 loss (ε clipped below 1), where accuracies are averaged."""
    eps = min(epsilon, 0.5)
    return [
        validation_performance(curve),
        mutual_information(curve),
        description_length(curve),
        sdl(curve, epsilon, rule="half"),
        sample_complexity(curve, epsilon),
        sdl(curve, eps, metric="error", delta=0.1),
        sample_complexity(curve, eps, metric="error"),
    ]


def _approx_equal(results: list[Any], expected: list[Any]) -> bool:
    """Same measures, fields equal, floats to within 1e-12 (a mean summed in another order)."""
    assert [type(r) for r in results] == [type(e) for e in expected]
    for result, reference in zip(results, expected):
        for name, value in vars(reference).items():
            other = getattr(result, name)
            if isinstance(value, float):
                assert other == pytest.approx(value, rel=1e-12, abs=1e-15), name
            else:
                assert other == value, name
    return True


@given(curve=curves(), data=st.data(), fraction=_floats(1e-3, 0.999))
@pytest.mark.slow
def test_measures_do_not_depend_on_row_order_or_seed_labels(
    curve: LossDataCurve, data: st.DataObject, fraction: float
) -> None:
    epsilon = fraction * uniform_cost(curve, "loss", "nats")  # below ln K, as ε must be
    expected = _all_measures(curve, epsilon)
    points = curve.points
    order = data.draw(st.permutations(range(len(points))), label="row order")
    shuffled = points.iloc[list(order)].reset_index(drop=True)
    again = LossDataCurve(curve.name, shuffled, curve.n_classes, curve.pool_size, curve.n_test)
    assert _all_measures(again, epsilon) == expected  # rows are put in (n, seed) order: exact
    seeds = sorted(set(points["seed"]))
    relabel = dict(zip(seeds, data.draw(st.permutations(seeds), label="seed labels")))
    renamed = shuffled.assign(seed=shuffled["seed"].map(relabel))
    other = LossDataCurve(curve.name, renamed, curve.n_classes, curve.pool_size, curve.n_test)
    assert _approx_equal(_all_measures(other, epsilon), expected)


def no_versions() -> Any:
    """Skip the library-version lookup of ``save_results`` (~0.1 s a file, not under test)."""
    return mock.patch("probemeter.curves.results.environment", return_value={})


@given(curve=curves(), fraction=_floats(1e-3, 0.999))
@pytest.mark.slow
def test_measures_survive_a_results_file_round_trip(curve: LossDataCurve, fraction: float) -> None:
    epsilon = fraction * uniform_cost(curve, "loss", "nats")  # below ln K, as ε must be
    with tempfile.TemporaryDirectory() as folder, no_versions():
        path = Path(folder) / "results.json"
        save_results(path, [curve, curve.truncate(int(curve.sizes[-1]))])
        loaded = load_curves(path)
    assert len(loaded) == 2
    pd.testing.assert_frame_equal(loaded[0].points, curve.points, check_exact=True)
    assert (loaded[0].name, loaded[0].n_classes, loaded[0].pool_size, loaded[0].n_test) == (
        curve.name,
        curve.n_classes,
        curve.pool_size,
        curve.n_test,
    )
    for metric in ("loss", "error"):
        eps = min(epsilon, 0.5)
        for measure in (description_length, partial(sdl, epsilon=eps)):
            assert measure(loaded[0], metric=metric) == measure(curve, metric=metric)
    assert loaded[1].pool_size == int(curve.sizes[-1])


@given(
    curve=curves(max_sizes=3),
    data=st.data(),
    column_value=st.sampled_from(
        [
            ("loss", -1e-9),
            ("loss", -5.0),
            ("loss_truncated", 1.5),
            ("loss_truncated", -0.1),
            ("accuracy", 1.0000001),
            ("accuracy", -0.5),
            ("n", 0),
        ]
    ),
)
def test_a_saved_curve_with_an_impossible_value_is_refused(
    curve: LossDataCurve, data: st.DataObject, column_value: tuple[str, float]
) -> None:
    column, value = column_value
    payload = curve.to_dict()
    row = data.draw(st.integers(0, len(curve.points) - 1), label="row")
    payload["points"][column][row] = value
    with pytest.raises(ValueError, match=f"points.{column} must be"):
        LossDataCurve.from_dict(payload)
    payload["points"][column][row] = curve.points[column].iloc[row]
    assert LossDataCurve.from_dict(payload).points.equals(curve.points)
