import numpy as np
import pytest

import probemeter as pm


@pytest.fixture(scope="module")
def digits():
    return pm.digits_representations()["pca-8"]


@pytest.fixture(scope="module")
def coarse(digits):
    return pm.loss_data_curve(
        digits, pm.MLP((32,)), sizes=[20, 200, 1297], seeds=2, steps=300, lr=3e-3, progress=False
    )


def test_refinement_narrows_the_bracket_with_nested_retraining(digits, coarse):
    epsilon = float(coarse.mean().loc[200]) + 0.05  # crossed between 20 and 200
    before = pm.sample_complexity(coarse, epsilon)
    assert before.value == 200 and not before.lower_bound
    refined = pm.refine_sample_complexity(digits, coarse, epsilon, rounds=2, points=5)
    lo, hi = refined.bracket
    assert 20 <= lo < hi <= 200 and hi - lo <= (200 - 20) / 5
    assert refined.result.value == hi and not refined.result.lower_bound
    assert refined.rounds_run == 2
    # old points are kept unchanged, new ones are what a fresh curve at those sizes gives
    new_sizes = np.setdiff1d(refined.curve.sizes, coarse.sizes)
    assert new_sizes.size >= 4
    direct = pm.loss_data_curve(
        digits, pm.MLP((32,)), sizes=new_sizes, seeds=2, steps=300, lr=3e-3, progress=False
    )
    merged = refined.curve.points.set_index(["n", "seed"])
    for row in direct.points.itertuples():
        # same subsets, seeds and settings; only the chunk companions differ, which moves the
        # float rounding of the batched matmuls (~1e-6), nothing else
        assert merged.loc[(row.n, row.seed), "loss"] == pytest.approx(row.loss, rel=1e-5)
    assert refined.curve.points[refined.curve.points["n"] == 200]["loss"].tolist() == (
        coarse.points[coarse.points["n"] == 200]["loss"].tolist()
    )


def test_refinement_reports_lower_bound_when_never_reached(digits, coarse):
    refined = pm.refine_sample_complexity(digits, coarse, 1e-4, rounds=3)
    assert refined.result.lower_bound and refined.rounds_run == 0
    assert refined.bracket == (1297, 1297)


def test_refinement_checks_data_and_arguments(digits, coarse):
    other = pm.digits_representations()["pixels"]
    with pytest.raises(ValueError, match="data does not match"):
        pm.refine_sample_complexity(other, coarse, 1.0)
    with pytest.raises(ValueError, match="rounds"):
        pm.refine_sample_complexity(digits, coarse, 1.0, rounds=0)
    with pytest.raises(ValueError, match="points"):
        pm.refine_sample_complexity(digits, coarse, 1.0, points=1)


def test_recommend_epsilon_is_the_full_data_test_loss(digits):
    epsilon = pm.recommend_epsilon(digits, pm.MLP((32,)), seeds=2, steps=200, lr=3e-3)
    curve = pm.loss_data_curve(
        digits,
        pm.MLP((32,)),
        sizes=[digits.pool_size],
        seeds=2,
        steps=200,
        lr=3e-3,
        progress=False,
    )
    assert epsilon == pytest.approx(curve.points["loss"].mean())
    assert 0 < epsilon < np.log(10)
