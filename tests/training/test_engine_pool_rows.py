"""``fit_evaluate(pool_rows=...)``: each probe scored on its own rows of the pool, gathered
block by block, must give the numbers of scoring it on the whole pool and reading those rows."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from probemeter import Execution
from probemeter.probes import MLP, Linear
from probemeter.probes.stacked_mlp import StackedMLP
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

POOL = 300
CONFIG = TrainingConfig(steps=40, batch_size=32, lr=1e-2)


def _task(features: int = 8, classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(POOL, features)).astype(np.float32)
    y = (x @ rng.normal(size=(features, classes))).argmax(axis=1).astype(np.int64)
    return x, y


def _subsets():
    rng = np.random.default_rng(5)
    return [rng.permutation(POOL)[:n] for n in (20, 60, 150)], [(0, 0, n) for n in (20, 60, 150)]


def _check_against_whole_pool(x, y, n_classes, probe):
    subsets, keys = _subsets()
    rng = np.random.default_rng(9)
    # unsorted, repeated and empty row sets; the middle probe is scored on none
    pool_rows = [rng.integers(0, POOL, size=250), None, np.empty(0, dtype=np.int64)]
    result = fit_evaluate(
        x,
        y,
        x,
        y,
        n_classes,
        subsets,
        keys,
        probe,
        CONFIG,
        execution=Execution(n_jobs=1),
        per_example=True,
        pool_rows=pool_rows,
    )
    assert result.pool_nll[1] is None and result.pool_predictions[1] is None
    for probe_row in (0, 2):
        rows = pool_rows[probe_row]
        assert result.pool_nll[probe_row].shape == rows.shape
        assert result.pool_nll[probe_row].dtype == np.float32
        np.testing.assert_allclose(
            result.pool_nll[probe_row], result.nll[probe_row, rows], rtol=1e-5, atol=1e-6
        )
        np.testing.assert_array_equal(
            result.pool_predictions[probe_row], result.predictions[probe_row, rows]
        )
    return result


def test_pool_rows_equal_whole_pool_scores():
    x, y = _task()
    _check_against_whole_pool(x, y, 3, MLP((16,)))


def test_pool_rows_on_sparse_features():
    x, y = _task(features=40)
    x[np.abs(x) < 1.2] = 0.0  # about 23 % non-zero
    _check_against_whole_pool(sp.csr_matrix(x), y, 3, Linear())


def test_pool_rows_with_a_scalar_mix():
    x, y = _task(features=12)  # 3 layers of 4 side by side
    _check_against_whole_pool(x, y, 3, MLP((8,), mix=3))


def test_pool_rows_with_label_sets():
    x, y = _task()
    sets = np.stack([y == 0, y == 1, (y == 2) | (x[:, 0] > 0)], axis=1).astype(np.float32)
    result = _check_against_whole_pool(x, sets, 3, MLP((16,)))
    assert result.pool_predictions[0].shape == (250, 3)


@pytest.mark.numerics
def test_pool_rows_stream_in_blocks():
    """Rows gathered in blocks of 7: the same numbers as one block."""
    x, y = _task()
    layers = [
        (
            np.random.default_rng(1).normal(size=(2, 8, 3)).astype(np.float32),
            np.zeros((2, 1, 3), dtype=np.float32),
        )
    ]
    stack = StackedMLP([(torch.from_numpy(w), torch.from_numpy(b)) for w, b in layers], 4, "f32")
    rows = np.random.default_rng(2).integers(0, POOL, size=50)
    features, labels = torch.from_numpy(x), torch.from_numpy(y)
    whole = stack.evaluate_rows(1, features, labels, rows)
    blocks = stack.evaluate_rows(1, features, labels, rows, rows_per_block=7)
    logits = x[rows].astype(np.float64) @ layers[0][0][1]
    # float32 products over 7 rows and over 50 may round differently (the CPU's kernels differ
    # by shape): a loss near 0 is a difference of logits, its error their rounding's
    rounding = 4 * np.finfo(np.float32).eps * np.abs(logits).max()
    np.testing.assert_allclose(blocks["nll"], whole["nll"], rtol=1e-6, atol=rounding)
    expected = np.log(np.exp(logits).sum(axis=1)) - logits[np.arange(50), y[rows]]
    np.testing.assert_allclose(whole["nll"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(whole["predictions"], logits.argmax(axis=1))


@pytest.mark.parametrize(
    ("pool_rows", "message"),
    [
        ([np.arange(3)], "pool_rows: 1 entries for 3 probes"),
        (
            [np.arange(3), None, np.array([0, POOL])],
            r"pool_rows\[2\] indexes outside the pool of 300 rows",
        ),
        (
            [np.arange(3), None, np.array([-1])],
            r"pool_rows\[2\] indexes outside the pool of 300 rows",
        ),
        ([np.zeros((2, 2), dtype=int), None, None], r"pool_rows\[0\] must be a 1-D array"),
        (
            [np.array([0.5]), None, None],
            r"pool_rows\[0\] must be a 1-D array of integer pool indices",
        ),
    ],
)
def test_pool_rows_are_checked(pool_rows, message):
    x, y = _task()
    subsets, keys = _subsets()
    with pytest.raises(ValueError, match=message):
        fit_evaluate(
            x,
            y,
            x,
            y,
            3,
            subsets,
            keys,
            Linear(),
            CONFIG,
            execution=Execution(n_jobs=1),
            pool_rows=pool_rows,
        )
