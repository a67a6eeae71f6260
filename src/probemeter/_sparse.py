"""Sparse feature matrices (scipy.sparse, torch sparse tensors) as validated float32 CSR, in one
place: what :meth:`probemeter.data.ProbeData.from_arrays` keeps for very wide, mostly-zero
features such as sparse-autoencoder latents, without ever making them dense.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

__all__ = ["as_csr", "is_sparse", "scale_columns"]


def is_sparse(array: object) -> bool:
    """Whether ``array`` is a scipy.sparse matrix or array, or a torch sparse tensor."""
    if sp.issparse(array):
        return True
    layout = getattr(array, "layout", None)
    return layout is not None and "sparse" in str(layout)


def as_csr(name: str, array: object) -> sp.csr_matrix:
    """A sparse ``array`` (any scipy.sparse format, or a torch sparse COO/CSR tensor, copied to
    the CPU) as a 2-D float32 CSR matrix with sorted column indices and no explicit zeros.

    Raises:
        ValueError: naming ``name``: not 2-D, empty, not real numbers, or NaN/inf among the
            stored values (with the first offending row).
    """
    if not sp.issparse(array):
        array = _from_torch(name, array)
    if array.ndim != 2:  # type: ignore[union-attr]
        raise ValueError(f"{name} must be a 2-D sparse matrix (n_examples, n_features)")
    dtype = array.dtype  # type: ignore[union-attr]
    if not np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"{name} must hold real numbers; got dtype {dtype}")
    # a copy: the canonical form below is made in place, and the caller's matrix stays as it is
    matrix = sp.csr_matrix(array, dtype=np.float32, copy=True)
    if 0 in matrix.shape:
        raise ValueError(f"{name} is empty (shape {matrix.shape})")
    bad = ~np.isfinite(matrix.data)
    if bad.any():
        rows = np.searchsorted(matrix.indptr, np.flatnonzero(bad), side="right") - 1
        raise ValueError(
            f"{name} contains NaN or inf in {np.unique(rows).size} row(s), first at row {rows[0]}"
        )
    matrix.sum_duplicates()  # also sorts the column indices
    matrix.eliminate_zeros()
    return matrix


def _from_torch(name: str, tensor: object) -> sp.csr_matrix:
    """A torch sparse (COO or CSR) tensor as a scipy CSR matrix (values copied to the CPU)."""
    if not is_sparse(tensor):
        raise ValueError(f"{name} is not a sparse matrix; got {type(tensor).__name__}")
    if tensor.dim() != 2:  # type: ignore[attr-defined]
        raise ValueError(f"{name} must be a 2-D sparse tensor; got {tensor.dim()}-D")  # type: ignore[attr-defined]
    with warnings.catch_warnings():  # "sparse CSR tensor support is in beta state"
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support")
        csr = tensor.detach().cpu().to_sparse_csr()  # type: ignore[attr-defined]
    values = csr.values()
    values = (values.float() if values.is_floating_point() else values).numpy()
    return sp.csr_matrix(
        (values, csr.col_indices().numpy(), csr.crow_indices().numpy()), shape=tuple(csr.shape)
    )


def scale_columns(X: sp.csr_matrix, *others: sp.csr_matrix) -> tuple[sp.csr_matrix, ...]:
    """``X`` and ``others`` with every column divided by its standard deviation over the rows
    of ``X`` (constant columns left as they are), without centring: subtracting the mean
    would fill every zero. The deviation is computed in float64 from the stored values,
    σ_j = √(E[x_j²] − E[x_j]²), the same value as the dense ``X.std(axis=0)`` up to rounding.
    """
    n_rows = X.shape[0]
    values = X.data.astype(np.float64)
    columns = X.indices
    mean = np.bincount(columns, weights=values, minlength=X.shape[1]) / n_rows
    square = np.bincount(columns, weights=values * values, minlength=X.shape[1]) / n_rows
    std = np.sqrt(np.maximum(square - mean * mean, 0.0))
    std[std == 0] = 1.0
    return tuple(_divided(matrix, std) for matrix in (X, *others))


def _divided(matrix: sp.csr_matrix, std: np.ndarray) -> sp.csr_matrix:
    """``matrix`` with column j divided by ``std[j]`` (in float64, stored as float32)."""
    data = (matrix.data / std[matrix.indices]).astype(np.float32)
    return sp.csr_matrix((data, matrix.indices, matrix.indptr), shape=matrix.shape)
