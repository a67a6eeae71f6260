"""Sparse inputs for stacked probes: rows of a CSR matrix, gathered and multiplied without ever
being made dense (for very wide, mostly-zero features such as sparse-autoencoder latents).

The engine reads its features through a handful of row operations — gather rows by index,
slice a block of rows, view a gathered batch as P groups of rows (one per probe), broadcast a
block to all P probes — and multiplies them by each probe's first-layer weights. For a
scipy.sparse pool :func:`feature_tensor` returns a :class:`SparseRows`, which does exactly
these operations on its CSR arrays (torch tensors sharing the scipy arrays' memory on the
CPU), and :func:`baddbmm` / :func:`transposed_bmm` compute the first layer's product and its
weight gradient (for dense tensors, plain ``torch.baddbmm`` / ``torch.bmm``):

* forward, per probe p: ``Z_p = b_p + X_p W_p``, a sparse-dense product. The P batches of a
  training step are one block-diagonal sparse matrix (probe p's columns shifted by p · d), so
  all P products are one ``torch.sparse.mm`` with the stacked weights seen as (P · d, h);
* backward: ``∂L/∂W_p = X_pᵀ ∂L/∂Z_p``, accumulated non-zero by non-zero into the (dense)
  gradient with one ``index_add_``: O(nnz · h) arithmetic instead of O(rows · d · h).

Only the first layer reads the inputs, so everything after it — ReLUs, later layers, softmax,
Adam on dense parameters — is the dense engine's own code, and a probe's numbers equal the
dense path's up to float rounding (the order of the sums differs).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

__all__ = [
    "SparseRows",
    "StackedSparseRows",
    "baddbmm",
    "feature_tensor",
    "sparse_row_bytes",
    "transposed_bmm",
]


def feature_tensor(array: Any, device: torch.device) -> torch.Tensor | SparseRows:
    """Features as the engine reads them: a scipy.sparse matrix as :class:`SparseRows`, anything
    else as a float32 tensor on ``device`` (the CPU's float32 arrays used in place)."""
    if sp.issparse(array):
        return SparseRows.from_scipy(array, device)
    return torch.as_tensor(array, dtype=torch.float32, device=device)


class SparseRows:
    """An (n, d) float32 CSR matrix as torch tensors: ``crow`` (n + 1,) int64 row pointers,
    ``col`` (nnz,) column indices (int32 or int64) and ``values`` (nnz,) float32.

    Supports the row operations of a (n, d) feature tensor that the engine uses: ``len``,
    ``shape``, ``device``, ``x[i:j]`` (a block of rows: views), ``x[index]`` and
    ``x.index_select(0, index)`` (gathered rows), ``x.view(P, m, -1)`` (P groups of m rows, one
    per probe), ``x.unsqueeze(0).expand(P, -1, -1)`` or ``x.expand(P, -1, -1)`` (the same rows
    for all P probes).
    """

    def __init__(
        self, crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, n_features: int
    ) -> None:
        self.crow, self.col, self.values = crow, col, values
        self.n_features = int(n_features)

    @classmethod
    def from_scipy(cls, matrix: sp.spmatrix, device: torch.device) -> SparseRows:
        """``matrix`` (converted to float32 CSR if it is not) on ``device``; on the CPU its
        column indices and values are shared, not copied."""
        csr = sp.csr_matrix(matrix, dtype=np.float32)
        with warnings.catch_warnings():  # worker processes read shared, read-only memory maps
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            crow = torch.as_tensor(csr.indptr, dtype=torch.int64, device=device)
            col = torch.as_tensor(csr.indices, device=device)
            values = torch.as_tensor(csr.data, dtype=torch.float32, device=device)
        return cls(crow, col, values, csr.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        return (self.crow.numel() - 1, self.n_features)

    @property
    def device(self) -> torch.device:
        return self.values.device

    def __len__(self) -> int:
        return self.crow.numel() - 1

    def __getitem__(self, index: slice | torch.Tensor) -> SparseRows:
        """A block of rows (a slice with step 1: views of the arrays) or the rows at ``index``."""
        if not isinstance(index, slice):
            return self.index_select(0, index)
        start, stop, step = index.indices(len(self))
        if step != 1:
            raise ValueError("SparseRows slices take a step of 1")
        stop = max(start, stop)
        crow = self.crow[start : stop + 1]
        first, last = int(crow[0]), int(crow[-1])
        return SparseRows(
            crow - first, self.col[first:last], self.values[first:last], self.n_features
        )

    def index_select(self, dim: int, index: torch.Tensor) -> SparseRows:
        """The rows at ``index`` (int64 row numbers; ``dim`` must be 0), in that order."""
        if dim != 0:
            raise ValueError("SparseRows gathers rows only (dim=0)")
        index = torch.as_tensor(index, dtype=torch.int64, device=self.device).reshape(-1)
        starts = self.crow[index]
        counts = self.crow[index + 1] - starts
        crow = torch.zeros(index.numel() + 1, dtype=torch.int64, device=self.device)
        torch.cumsum(counts, 0, out=crow[1:])
        nnz = int(crow[-1])
        # position of every gathered non-zero in the source: its row's start + rank in the row
        shift = torch.repeat_interleave(starts - crow[:-1], counts, output_size=nnz)
        positions = shift + torch.arange(nnz, device=self.device)
        return SparseRows(crow, self.col[positions], self.values[positions], self.n_features)

    def view(self, n_probes: int, rows: int, width: int = -1) -> StackedSparseRows:
        """These n = P · m rows as P groups of m consecutive rows, group p for probe p."""
        if n_probes * rows != len(self) or width not in (-1, self.n_features):
            raise ValueError(f"cannot view {self.shape} rows as ({n_probes}, {rows}, {width})")
        return StackedSparseRows(self, n_probes, shared=False)

    def unsqueeze(self, dim: int) -> StackedSparseRows:
        """These rows as one group (shape (1, n, d)), to :meth:`StackedSparseRows.expand`."""
        if dim != 0:
            raise ValueError("SparseRows adds a leading probe axis only (dim=0)")
        return StackedSparseRows(self, 1, shared=True)

    def expand(self, n_probes: int, *sizes: int) -> StackedSparseRows:
        """These rows for every one of ``n_probes`` probes (no copy)."""
        return self.unsqueeze(0).expand(n_probes, *sizes)

    def to_scipy(self) -> sp.csr_matrix:
        """The rows as a scipy CSR matrix on the host."""
        arrays = (t.cpu().numpy() for t in (self.values, self.col, self.crow))
        return sp.csr_matrix(tuple(arrays), shape=self.shape)


class StackedSparseRows:
    """A (P, m, d) batch of sparse rows: P groups of m rows of one :class:`SparseRows` (group p
    for probe p), or, ``shared``, the same m rows for all P probes."""

    def __init__(self, rows: SparseRows, n_probes: int, *, shared: bool) -> None:
        self.rows, self.n_probes, self.shared = rows, int(n_probes), shared
        self._blocks: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        m = len(self.rows) if self.shared else len(self.rows) // self.n_probes
        return (self.n_probes, m, self.rows.n_features)

    @property
    def device(self) -> torch.device:
        return self.rows.device

    def expand(self, n_probes: int, *sizes: int) -> StackedSparseRows:
        """One shared group for ``n_probes`` probes (``sizes``, as in torch: -1 or unchanged)."""
        if not self.shared or any(size not in (-1, s) for size, s in zip(sizes, self.shape[1:])):
            raise ValueError("only one shared group of sparse rows can be expanded")
        return StackedSparseRows(self.rows, n_probes, shared=True)

    def __getitem__(self, probes: slice | torch.Tensor) -> StackedSparseRows:
        """The groups of the probes ``probes`` (indices or a slice of the probe axis)."""
        chosen = torch.arange(self.n_probes, device=self.device)[probes].reshape(-1)
        if self.shared:
            return StackedSparseRows(self.rows, chosen.numel(), shared=True)
        m = self.shape[1]
        index = (chosen.view(-1, 1) * m + torch.arange(m, device=self.device)).reshape(-1)
        return StackedSparseRows(self.rows.index_select(0, index), chosen.numel(), shared=False)

    def _block_diagonal(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The rows' block-diagonal (P · m, P · d) CSR matrix (probe p's columns shifted by
        p · d), the row of every non-zero and its shifted column, computed once."""
        if self._blocks is None:
            rows = self.rows
            n_rows, m, d = len(rows), self.shape[1], rows.n_features
            nnz = rows.values.numel()
            row_of = torch.repeat_interleave(
                torch.arange(n_rows, device=self.device), rows.crow.diff(), output_size=nnz
            )
            columns = rows.col.to(torch.int64) + torch.div(row_of, m, rounding_mode="floor") * d
            with warnings.catch_warnings():  # "sparse CSR support is in beta state"
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support")
                matrix = torch.sparse_csr_tensor(
                    rows.crow,
                    columns,
                    rows.values,
                    size=(n_rows, self.n_probes * d),
                    check_invariants=False,
                )
            self._blocks = (matrix, row_of, columns)
        return self._blocks

    def affine(
        self, bias: torch.Tensor, weight: torch.Tensor, out: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``bias[p] + X_p @ weight[p]`` for every probe p: (P, m, h), into ``out`` when given;
        ``weight`` (P, d, h) and ``bias`` (P, 1, h) float32."""
        n_probes, m, _ = self.shape
        if weight.shape[0] != n_probes:
            raise ValueError(f"{n_probes} groups of rows but {weight.shape[0]} probes' weights")
        width = weight.shape[2]
        if out is None:
            out = torch.empty(n_probes, m, width, device=weight.device, dtype=weight.dtype)
        if self.shared:  # one product per probe: no copy of the rows or of the weights
            matrix = _csr(self.rows)
            for probe in range(n_probes):
                torch.mm(matrix, weight[probe], out=out[probe])
        else:
            matrix, _, _ = self._block_diagonal()
            torch.mm(matrix, weight.reshape(-1, width), out=out.view(n_probes * m, width))
        return out.add_(bias)

    def weight_gradient(self, upstream: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """``out[p] = X_pᵀ @ upstream[p]`` (the first layer's weight gradient, (P, d, h)), from
        ``upstream`` (P, m, h), non-zero by non-zero."""
        if self.shared:
            raise ValueError("weight gradients need one group of rows per probe")
        _, row_of, columns = self._block_diagonal()
        width = upstream.shape[2]
        contributions = upstream.reshape(-1, width)[row_of] * self.rows.values.view(-1, 1)
        out.zero_().view(-1, width).index_add_(0, columns, contributions.to(out.dtype))
        return out


def _csr(rows: SparseRows) -> torch.Tensor:
    """``rows`` as a torch sparse CSR tensor (views of its arrays)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support")
        return torch.sparse_csr_tensor(
            rows.crow,
            rows.col.to(torch.int64),
            rows.values,
            size=rows.shape,
            check_invariants=False,
        )


def baddbmm(
    bias: torch.Tensor,
    inputs: torch.Tensor | StackedSparseRows,
    weight: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """``torch.baddbmm(bias, inputs, weight)``, for sparse ``inputs`` too (:meth:`affine`)."""
    if isinstance(inputs, StackedSparseRows):
        return inputs.affine(bias, weight, out)
    return torch.baddbmm(bias, inputs, weight, out=out)


def transposed_bmm(
    inputs: torch.Tensor | StackedSparseRows, upstream: torch.Tensor, *, out: torch.Tensor
) -> torch.Tensor:
    """``torch.bmm(inputs.transpose(1, 2), upstream)`` into ``out``, for sparse ``inputs`` too
    (:meth:`StackedSparseRows.weight_gradient`)."""
    if isinstance(inputs, StackedSparseRows):
        return inputs.weight_gradient(upstream, out)
    return torch.bmm(inputs.transpose(1, 2), upstream, out=out)


#: bytes per gathered non-zero besides the first layer's width: its value (f32), column
#: (int64, then shifted), row, and the int64 temporaries of the gather
_BYTES_PER_NONZERO = 4 + 8 + 8 + 8 + 16


def sparse_row_bytes(matrix: sp.spmatrix, first_width: int) -> float:
    """Bytes one gathered row of ``matrix`` takes in a training step, on average: per stored
    value its index arrays and temporaries (:data:`_BYTES_PER_NONZERO`) and the two float32
    rows of the weight gradient's contributions (``first_width`` each); what replaces a dense
    row's 4 · d bytes in the engine's memory estimate."""
    nonzeros_per_row = matrix.nnz / max(1, matrix.shape[0])
    return nonzeros_per_row * (_BYTES_PER_NONZERO + 2 * 4 * first_width)
