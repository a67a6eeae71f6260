"""CCS as a direction family (``Direction("ccs")``): the engine's probe decides as CCS does (its
accuracy is CCS's decision), its loss is the calibrated one at the calibration's optimum,
seeds draw different restarts, and data that are no contrast pairs are refused before any
work."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar
from test_ccs import _planted

from probemeter import Execution, ProbeData
from probemeter.probes import Direction
from probemeter.training.ccs import fit_ccs
from probemeter.training.config import TrainingConfig
from probemeter.training.directions import DIRECTION_FAMILIES, PoolRows, fit_ccs_directions
from probemeter.training.engine import fit_evaluate

CPU = Execution(device="cpu", n_jobs=1)


def _noisy_pairs(n: int = 260):
    """Planted pairs with noise that overlaps the classes, so that no probe separates its
    subset (the calibration then has a finite optimum)."""
    X, y = _planted(n=n, d=10, seed=4)
    rng = np.random.default_rng(9)
    return (X + 2.5 * rng.normal(size=X.shape)).astype(np.float32), y


@pytest.mark.slow
def test_the_engines_ccs_probe_decides_as_ccs_and_is_calibrated():
    X, y = _noisy_pairs()
    data = ProbeData.from_arrays(X[:200], y[:200], X[200:], y[200:])
    subsets = [np.arange(40), np.arange(200), np.arange(100, 200)]
    keys = [(0, 1), (0, 2), (5,)]
    evaluation = fit_evaluate(
        data.X_train, data.y_train, data.X_test, data.y_test, 2, subsets, keys,
        Direction("ccs"), TrainingConfig(steps=1), execution=CPU, per_example=True,
    )  # fmt: skip
    fits = fit_ccs(data.X_train.astype(np.float64), data.y_train, subsets, keys)
    # the accuracy is CCS's decision, oriented by the sign fixed on the training subset
    np.testing.assert_array_equal(evaluation.predictions, fits.decisions(data.X_test))
    np.testing.assert_allclose(evaluation.accuracy, fits.accuracy(data.X_test, data.y_test))
    # the loss: logits (0, a·s·u), a minimising the subset's cross-entropy against add-one
    # smoothed targets (1 − ε) e_y + ε/2, ε = 1/(n + 1), as the other families' (no offset)
    vectors, offsets = fits.signed_margin_map()
    for probe, subset in enumerate(subsets):
        train = data.X_train[subset].astype(np.float64) @ vectors[probe] + offsets[probe]
        labels = data.y_train[subset]

        smoothing = 1 / (len(subset) + 1)

        def cross_entropy(a, margins=train, labels=labels, eps=smoothing):
            minus_log_p1 = np.logaddexp(0, a * margins) - a * margins
            minus_log_p0 = np.logaddexp(0, a * margins)
            own = np.where(labels == 1, minus_log_p1, minus_log_p0)
            return np.mean((1 - eps) * own + eps / 2 * (minus_log_p0 + minus_log_p1))

        best = minimize_scalar(
            cross_entropy, bounds=(0, 100), method="bounded", options={"xatol": 1e-10}
        )
        test = data.X_test.astype(np.float64) @ vectors[probe] + offsets[probe]
        expected = np.mean(np.logaddexp(0, best.x * test) - data.y_test * best.x * test)
        assert evaluation.loss[probe] == pytest.approx(expected, rel=1e-5)
    # the seed draws the restarts: the same subset under two keys, two different probes
    twice = fit_ccs_directions(
        PoolRows(torch.from_numpy(data.X_train)),
        torch.from_numpy(data.y_train),
        [np.arange(200), np.arange(200)],
        2,
        keys=[(1,), (2,)],
    )
    assert not torch.equal(twice.weights[0], twice.weights[1])


def test_data_that_are_no_contrast_pairs_are_refused_before_any_work():
    X, y = _noisy_pairs(n=60)
    three = np.arange(60) % 3
    arguments = ([np.arange(30)], [(0,)], Direction("ccs"), TrainingConfig(steps=1))
    with pytest.raises(ValueError, match="probe ccs: ccs decides which of two texts is true"):
        fit_evaluate(X, three, X, three, 3, *arguments, execution=CPU)
    with pytest.raises(ValueError, match="19 features are no two equal halves"):
        fit_evaluate(X[:, :19], y, X[:, :19], y, 2, *arguments, execution=CPU)
    family = DIRECTION_FAMILIES["ccs"]
    assert family.seeded and family.problem(20, 2) is None
