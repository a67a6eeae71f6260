"""Sparse rows for the engine: every row operation and both products against dense torch."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from probemeter.probes.sparse_inputs import (
    SparseRows,
    StackedSparseRows,
    baddbmm,
    feature_tensor,
    sparse_row_bytes,
    transposed_bmm,
)

CPU = torch.device("cpu")


@pytest.fixture
def matrix() -> sp.csr_matrix:
    """12 × 9 float32 CSR with empty rows (2 and 7) and an empty column."""
    dense = np.random.default_rng(0).normal(size=(12, 9)).astype(np.float32)
    dense[np.random.default_rng(1).random((12, 9)) < 0.6] = 0.0
    dense[[2, 7]] = 0.0
    dense[:, 4] = 0.0
    return sp.csr_matrix(dense)


def test_feature_tensor_shares_the_scipy_arrays_and_keeps_dense_as_tensors(matrix):
    rows = feature_tensor(matrix, CPU)
    assert isinstance(rows, SparseRows)
    assert rows.shape == (12, 9) and len(rows) == 12 and rows.device == CPU
    assert np.shares_memory(rows.values.numpy(), matrix.data)
    assert np.shares_memory(rows.col.numpy(), matrix.indices)
    np.testing.assert_array_equal(rows.to_scipy().toarray(), matrix.toarray())
    dense = feature_tensor(matrix.toarray(), CPU)
    assert isinstance(dense, torch.Tensor) and dense.dtype == torch.float32


def test_row_operations_match_dense_indexing(matrix):
    rows, dense = SparseRows.from_scipy(matrix, CPU), matrix.toarray()
    index = torch.tensor([7, 0, 0, 11, 2, 5])  # repeats and empty rows
    np.testing.assert_array_equal(rows[index].to_scipy().toarray(), dense[index.numpy()])
    np.testing.assert_array_equal(
        rows.index_select(0, index).to_scipy().toarray(), dense[index.numpy()]
    )
    np.testing.assert_array_equal(rows[3:8].to_scipy().toarray(), dense[3:8])
    np.testing.assert_array_equal(rows[10:20].to_scipy().toarray(), dense[10:])
    assert len(rows[5:5]) == 0
    with pytest.raises(ValueError, match="step of 1"):
        rows[::2]
    with pytest.raises(ValueError, match="rows only"):
        rows.index_select(1, index)
    with pytest.raises(ValueError, match="cannot view"):
        rows.view(5, 2, -1)


def _stack(weight_shape, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*weight_shape, generator=generator)


@pytest.mark.numerics
def test_per_probe_groups_affine_and_weight_gradient_equal_dense_bmm(matrix):
    """P = 3 groups of m = 4 rows: Z_p = b_p + X_p W_p and X_pᵀ U_p, as dense torch does."""
    rows, dense = SparseRows.from_scipy(matrix, CPU), torch.from_numpy(matrix.toarray())
    stacked = rows.view(3, 4, -1)
    assert isinstance(stacked, StackedSparseRows) and stacked.shape == (3, 4, 9)
    weight, bias = _stack((3, 9, 5), 0), _stack((3, 1, 5), 1)
    expected = torch.baddbmm(bias, dense.view(3, 4, 9), weight)
    torch.testing.assert_close(baddbmm(bias, stacked, weight), expected, rtol=1e-6, atol=1e-6)
    out = torch.full((3, 4, 5), np.nan)
    baddbmm(bias, stacked, weight, out=out)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)
    upstream = _stack((3, 4, 5), 2)
    gradient = torch.full((3, 9, 5), np.nan)  # every entry is written, zeros included
    transposed_bmm(stacked, upstream, out=gradient)
    torch.testing.assert_close(
        gradient, torch.bmm(dense.view(3, 4, 9).transpose(1, 2), upstream), rtol=1e-6, atol=1e-6
    )
    assert torch.all(gradient[:, 4] == 0)  # the empty column gets no gradient


@pytest.mark.numerics
def test_shared_rows_and_probe_selection_equal_dense(matrix):
    rows, dense = SparseRows.from_scipy(matrix, CPU), torch.from_numpy(matrix.toarray())
    weight, bias = _stack((4, 9, 3), 3), _stack((4, 1, 3), 4)
    for shared in (rows.expand(4, -1, -1), rows.unsqueeze(0).expand(4, -1, -1)):
        assert shared.shape == (4, 12, 9)
        torch.testing.assert_close(
            baddbmm(bias, shared, weight),
            torch.baddbmm(bias, dense.expand(4, -1, -1), weight),
            rtol=1e-6,
            atol=1e-6,
        )
    chosen = torch.tensor([2, 0])
    picked = rows.expand(4, -1, -1)[chosen]
    assert picked.shape == (2, 12, 9)
    torch.testing.assert_close(
        baddbmm(bias[chosen], picked, weight[chosen]),
        torch.baddbmm(bias[chosen], dense.expand(2, -1, -1), weight[chosen]),
    )
    with pytest.raises(ValueError, match="one group of rows per probe"):
        transposed_bmm(rows.expand(4, -1, -1), torch.zeros(4, 12, 3), out=torch.empty(4, 9, 3))
    # per-probe groups: probes 2 and 0 of 3 groups of 4 rows
    groups = rows.view(3, 4, -1)[chosen]
    torch.testing.assert_close(
        baddbmm(bias[:2], groups, weight[:2]),
        torch.baddbmm(bias[:2], dense.view(3, 4, 9)[chosen], weight[:2]),
    )
    with pytest.raises(ValueError, match="2 groups of rows but 4"):
        baddbmm(bias, groups, weight)


def test_sparse_row_bytes_counts_stored_values_per_row(matrix):
    per_row = matrix.nnz / 12
    assert sparse_row_bytes(matrix, 7) == pytest.approx(per_row * (44 + 2 * 4 * 7))
