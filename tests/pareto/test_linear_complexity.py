"""Nuclear-norm and rank-constrained linear probes (Pimentel et al., §4.1)."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from probemeter.pareto.defaults import LINEAR_TRAINING
from probemeter.pareto.linear_probes import (
    fit_nuclear_norm_probes,
    fit_rank_probes,
    matrix_rank,
    nuclear_norm,
    nuclear_norm_penalties,
    nuclear_norm_subgradient,
)
from probemeter.training.config import TrainingConfig


def _steps(steps: int) -> TrainingConfig:
    """The method's linear training with ``steps`` updates."""
    return replace(LINEAR_TRAINING, steps=steps)


@pytest.fixture(scope="module")
def problem():
    """A 5-class Gaussian-mixture problem in 12 dimensions, split 400 / 200."""
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 1.5, (5, 12))
    y = rng.integers(0, 5, 600)
    X = (centres[y] + rng.normal(0, 1, (600, 12))).astype(np.float32)
    return X[:400], y[:400], X[400:], y[400:]


@pytest.mark.numerics
def test_nuclear_norm_is_the_sum_of_singular_values():
    stack = np.random.default_rng(1).normal(size=(3, 7, 4))
    expected = [np.linalg.svd(m, compute_uv=False).sum() for m in stack]
    np.testing.assert_allclose(nuclear_norm(stack), expected, rtol=1e-5)


@pytest.mark.parametrize("shape", [(6, 3), (3, 6)])
def test_subgradient_is_u_v_transpose(shape):
    matrix = np.random.default_rng(2).normal(size=shape)
    u, _, vt = np.linalg.svd(matrix, full_matrices=False)
    got = nuclear_norm_subgradient(torch.tensor(matrix[None], dtype=torch.float64))[0]
    np.testing.assert_allclose(got.numpy(), u @ vt, atol=1e-8)


def test_rank_drops_zero_singular_values():
    low = np.outer(np.arange(1, 5), np.arange(1, 4)).astype(float)  # rank 1
    assert matrix_rank(np.stack([low, np.eye(4, 3)])).tolist() == [1, 3]


def test_penalties_start_at_zero_and_span_the_paper_range():
    penalties = nuclear_norm_penalties(50)
    assert penalties.size == 50 and penalties[0] == 0
    assert penalties[1] == pytest.approx(2**-10) and penalties[-1] == pytest.approx(8.0)
    assert np.all(np.diff(penalties) > 0)


def test_penalty_lowers_the_nuclear_norm_monotonically(problem):
    X, y, X_test, y_test = problem
    lambdas = [0.0, 1e-3, 1e-2, 3e-2, 1e-1]
    result = fit_nuclear_norm_probes(X, y, X_test, y_test, 5, lambdas, config=_steps(300))
    assert np.all(np.diff(result.complexity) < 0), result.complexity
    np.testing.assert_allclose(result.complexity, result.nuclear_norm)
    # the unpenalised probe learns the task; the strongest penalty costs accuracy
    assert result.accuracy[0] > 0.8 and result.accuracy[-1] < result.accuracy[0]
    assert result.to_frame().shape[0] == 5


@pytest.mark.numerics
def test_probes_of_a_sweep_do_not_depend_on_their_companions(problem):
    X, y, X_test, y_test = problem
    both = fit_nuclear_norm_probes(X, y, X_test, y_test, 5, [0.0, 1e-2], config=_steps(50))
    alone = fit_nuclear_norm_probes(X, y, X_test, y_test, 5, [1e-2], config=_steps(50))
    np.testing.assert_allclose(both.nuclear_norm[1], alone.nuclear_norm[0], rtol=1e-4)


def test_rank_probes_have_rank_at_most_r(problem):
    X, y, X_test, y_test = problem
    result = fit_rank_probes(X, y, X_test, y_test, 5, config=_steps(200))
    assert result.setting.tolist() == [1, 2, 3, 4, 5]
    assert np.all(result.rank <= result.setting)
    assert np.all(result.rank >= 1)
    assert result.accuracy[-1] > result.accuracy[0]  # rank 1 cannot separate 5 classes


def test_learned_input_trains_an_unpenalised_embedding(problem):
    X, y, X_test, y_test = problem
    result = fit_nuclear_norm_probes(
        X, y, X_test, y_test, 5, [0.0], learned_input=8, config=_steps(100)
    )
    assert result.metadata["learned_input"] == 8 and result.accuracy[0] > 0.5


def test_bad_input_is_named(problem):
    X, y, X_test, y_test = problem
    with pytest.raises(ValueError, match="ranks"):
        fit_rank_probes(X, y, X_test, y_test, 5, [6])
    with pytest.raises(ValueError, match="ranks"):
        fit_rank_probes(X, y, X_test, y_test, 5, [])
    with pytest.raises(ValueError, match="penalties"):
        fit_nuclear_norm_probes(X, y, X_test, y_test, 5, [])
    with pytest.raises(ValueError, match="penalties"):
        fit_nuclear_norm_probes(X, y, X_test, y_test, 5, [-1.0])
    with pytest.raises(ValueError, match="y_train"):
        fit_nuclear_norm_probes(X, y + 5, X_test, y_test, 5, [0.0])
    with pytest.raises(ValueError, match="n_probes"):
        nuclear_norm_penalties(1)
