"""ProbeData.from_arrays(copy=False): standardisation in place, the same numbers (issue 18)."""

from __future__ import annotations

import numpy as np

from probemeter.data import ProbeData


def _features(seed: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(3.0, 2.0, size=(rows, 5)) * [1, 10, 0.1, 1, 5]).astype(np.float32)


def test_in_place_standardisation_gives_the_copying_result():
    X, X_test = _features(0, 300), _features(1, 80)
    y, y_test = np.arange(300) % 3, np.arange(80) % 3
    copied = ProbeData.from_arrays(X.copy(), y, X_test.copy(), y_test)
    own, own_test = X.copy(), X_test.copy()
    in_place = ProbeData.from_arrays(own, y, own_test, y_test, copy=False)
    np.testing.assert_array_equal(in_place.X_train, copied.X_train)
    np.testing.assert_array_equal(in_place.X_test, copied.X_test)
    assert np.shares_memory(in_place.X_train, own) and np.shares_memory(in_place.X_test, own_test)
    # pool statistics, from numpy's own float64 moments
    mean, std = X.mean(axis=0, dtype=np.float64), X.std(axis=0, dtype=np.float64)
    expected = ((X.astype(np.float64) - mean) / std).astype(np.float32)
    np.testing.assert_allclose(copied.X_train, expected, rtol=1e-6, atol=1e-6)


def test_the_default_leaves_the_callers_arrays_alone():
    X, X_test = _features(2, 100), _features(3, 40)
    before = X.copy()
    ProbeData.from_arrays(X, np.arange(100) % 2, X_test, np.arange(40) % 2)
    np.testing.assert_array_equal(X, before)
