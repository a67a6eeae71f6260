"""Pareto frontier, dominant representations and hypervolume on hand-made point sets."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter.pareto import pareto_dominant, pareto_frontier, pareto_hypervolume


def test_frontier_drops_dominated_points_and_orders_by_complexity() -> None:
    complexity = [5.0, 1.0, 3.0, 2.0, 4.0]
    accuracy = [0.9, 0.5, 0.6, 0.7, 0.8]
    # (3, 0.6) is dominated by (2, 0.7); the others form the frontier
    assert pareto_frontier(complexity, accuracy).tolist() == [1, 3, 4, 0]


def test_frontier_ties_keep_the_most_accurate_and_the_first_duplicate() -> None:
    complexity = [1.0, 1.0, 2.0, 2.0, 3.0]
    accuracy = [0.4, 0.6, 0.7, 0.7, 0.7]
    # equal complexity: the more accurate (index 1); identical points 2 and 3: the first;
    # (3, 0.7) is dominated by (2, 0.7) (equal accuracy, strictly simpler)
    assert pareto_frontier(complexity, accuracy).tolist() == [1, 2]


def test_single_point_is_its_own_frontier() -> None:
    assert pareto_frontier([7.0], [0.1]).tolist() == [0]


def test_hypervolume_is_the_area_under_the_step_frontier() -> None:
    # frontier (1, 0.5), (2, 0.7), (4, 0.8) up to cap 5; (3, 0.6) is dominated
    complexity = [1.0, 2.0, 3.0, 4.0]
    accuracy = [0.5, 0.7, 0.6, 0.8]
    area = 1 * 0.0 + 1 * 0.5 + 2 * 0.7 + 1 * 0.8
    assert pareto_hypervolume(complexity, accuracy, cap=5.0, normalise=False) == pytest.approx(area)
    assert pareto_hypervolume(complexity, accuracy, cap=5.0) == pytest.approx(area / 5)


def test_hypervolume_ignores_dominated_points() -> None:
    base = pareto_hypervolume([0.0, 2.0], [0.3, 0.9], cap=4.0)
    with_dominated = pareto_hypervolume([0.0, 2.0, 1.0, 3.0], [0.3, 0.9, 0.2, 0.5], cap=4.0)
    assert base == pytest.approx((2 * 0.3 + 2 * 0.9) / 4)
    assert with_dominated == pytest.approx(base)


def test_hypervolume_cap_cuts_the_area_and_drops_probes_beyond_it() -> None:
    complexity = [1.0, 3.0, 10.0]
    accuracy = [0.4, 0.6, 0.95]
    # cap 5: [1, 3) at 0.4, [3, 5) at 0.6; the probe at 10 is outside the interval
    assert pareto_hypervolume(complexity, accuracy, cap=5.0) == pytest.approx((0.8 + 1.2) / 5)
    # cap 2: only [1, 2) at 0.4
    assert pareto_hypervolume(complexity, accuracy, cap=2.0) == pytest.approx(0.4 / 2)
    # a probe exactly at the cap adds nothing
    assert pareto_hypervolume([1.0, 2.0], [0.5, 1.0], cap=2.0) == pytest.approx(0.25)


def test_zero_complexity_probe_fills_the_whole_interval() -> None:
    assert pareto_hypervolume([0.0], [0.8], cap=3.0) == pytest.approx(0.8)


def test_pareto_dominant_names_representations_on_the_pooled_frontier() -> None:
    points = {
        "onehot": ([1.0, 5.0], [0.6, 0.8]),
        "bert": ([3.0, 6.0], [0.7, 0.95]),
        "random": ([2.0, 7.0], [0.3, 0.5]),
    }
    assert pareto_dominant(points) == ["onehot", "bert"]


@pytest.mark.parametrize("cap", [0.0, -1.0, float("nan"), float("inf"), "x"])
def test_bad_cap_is_rejected(cap: object) -> None:
    with pytest.raises(ValueError, match="cap"):
        pareto_hypervolume([1.0], [0.5], cap=cap)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("complexity", "accuracy", "name"),
    [
        ([], [], "complexity"),
        ([1.0], [], "accuracy"),
        ([1.0, 2.0], [0.5], "same length"),
        ([1.0, np.nan], [0.5, 0.6], "complexity"),
        ([1.0, 2.0], [0.5, np.nan], "accuracy"),
        ([-1.0], [0.5], "complexity"),
        ([[1.0]], [[0.5]], "complexity"),
    ],
)
def test_bad_points_are_rejected_naming_the_argument(
    complexity: list, accuracy: list, name: str
) -> None:
    with pytest.raises(ValueError, match=name):
        pareto_frontier(complexity, accuracy)
    with pytest.raises(ValueError, match=name):
        pareto_hypervolume(complexity, accuracy, cap=1.0)


def test_pareto_dominant_rejects_empty_sets_naming_the_representation() -> None:
    with pytest.raises(ValueError, match="at least one"):
        pareto_dominant({})
    with pytest.raises(ValueError, match="'bert'"):
        pareto_dominant({"bert": ([], [])})
