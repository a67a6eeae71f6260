"""Concept erasure as a control representation: LEACE fitted on the pool, applied to pool
and test features.

LEACE (Belrose et al. 2023, Theorem 3.1 and eq. 5) is the affine map of least squared change
that makes every linear classifier of a concept Z from the features X no better than a
constant one. With Σ_xx the covariance of X, Σ_xz its cross-covariance with Z (one-hot, K
columns) and W = Σ_xx^{-1/2} the whitening,

    x ↦ x − W⁺ P W (x − E[x]),

where P is the orthogonal projection onto the column span of W Σ_xz (rank at most K − 1 for
one-hot Z: its centred columns sum to zero). Then Cov(x', z) = 0, so every linear predictor of
Z on the erased features x' has the loss of a constant predictor.

What this does and does not measure. LEACE removes the *linearly available* information about
Z: a non-linear probe (an MLP) may still recover Z from what is left, and a linear probe of
another task may still use it if it is non-linearly entangled. Measuring a task on the erased
representation beside the original says how much of the task's *probe-extractable*
information survives the erasure of the concept. It says nothing about the model's own
behaviour: amnesic probing (Elazar et al. 2021) asks that of the model, by feeding the erased
representation back into it and measuring its predictions; probemeter only probes.

The eraser is fitted on the pool alone (the rows probes learn from) and applied unchanged to
the test set, so the test set never informs the representation it is measured on.

INLP (Ravfogel et al. 2020, iterative nullspace projection) is not provided: the
``concept-erasure`` package this module uses implements LEACE (and an orthogonal variant), not
INLP.

References:
    Belrose, N., Schneider-Joseph, D., Ravfogel, S., Cotterell, R., Raff, E. & Biderman, S.
    (2023). LEACE: Perfect linear concept erasure in closed form. NeurIPS 2023.
    arXiv:2306.03819.

    Elazar, Y., Ravfogel, S., Jacovi, A. & Goldberg, Y. (2021). Amnesic probing: behavioral
    explanation with amnesic counterfactuals. TACL 9, 160-175. doi:10.1162/tacl_a_00359.

    Ravfogel, S., Elazar, Y., Gonen, H., Twiton, M. & Goldberg, Y. (2020). Null it out:
    guarding protected attributes by iterative nullspace projection. ACL 2020.
    doi:10.18653/v1/2020.acl-main.647.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from probemeter.data import ProbeData

__all__ = ["ERASERS", "ErasedData", "ErasureRecord", "erase", "eraser_settings", "erasure_problem"]

#: the erasers :func:`erase` fits (``concept-erasure`` provides no INLP)
ERASERS = ("leace",)
#: ``concept_erasure.LeaceFitter``'s settings (see :func:`erase`)
_LEACE = {"shrinkage": False, "svd_tol": 0.01, "constrain_cov_trace": False}
#: rows of features converted to float64 and transformed at a time (bounds the memory of a
#: large pool, which may be a memory-mapped file, to a block)
_BLOCK = 16_384


@dataclass(frozen=True)
class ErasureRecord:
    """What was erased and how: the eraser, the concept (a label name), where it was fitted
    (``"pool"``: never the test set), on how many rows, the concept's columns (K for one-hot
    classes, or the K indicator columns of label sets) and the rank of the erased subspace
    (the span of W Σ_xz: at most K − 1 for one-hot classes)."""

    eraser: str
    concept: str
    fitted_on: str
    n_rows: int
    n_columns: int
    rank: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "eraser": self.eraser,
            "concept": self.concept,
            "fitted_on": self.fitted_on,
            "n_rows": self.n_rows,
            "n_columns": self.n_columns,
            "rank": self.rank,
        }


@dataclass(frozen=True)
class ErasedData:
    """Erased data (pool and test features transformed by the pool's eraser; labels, names and
    groups as they were) and the :class:`ErasureRecord` of the eraser."""

    data: ProbeData
    record: ErasureRecord


def eraser_settings(method: str = "leace") -> dict[str, Any]:
    """The eraser as results and unit keys record it: its name, where it is fitted
    (``"pool"``) and its fitter's settings."""
    return {"eraser": method, "fitted_on": "pool", **_LEACE}


def erasure_problem() -> str | None:
    """Why erasure cannot run here (the optional ``concept-erasure`` package is missing), or
    None."""
    if importlib.util.find_spec("concept_erasure") is None:
        return (
            "needs the concept-erasure package (pip install 'probemeter[erasure]' or "
            "pip install concept-erasure)"
        )
    return None


def erase(
    data: ProbeData,
    concept_train: np.ndarray,
    *,
    method: str = "leace",
    concept: str = "label",
    n_classes: int | None = None,
) -> ErasedData:
    """``data`` with the concept ``concept_train`` (the pool rows' labels of it) erased by
    LEACE fitted on the pool: x ↦ x − W⁺ P W (x − E[x]) (see the module docstring), the
    statistics E[x], Σ_xx and Σ_xz of the pool rows only, the map applied to pool and test
    features alike.

    The concept is one-hot encoded (K columns) when it is class indices, or used as it is
    when it is a 0/1 indicator matrix (label sets). The fit is LEACE's closed form as
    ``concept_erasure.LeaceFitter`` computes it, in float64, on the sample covariance (with
    Bessel's correction), its singular values of W Σ_xz below 0.01 truncated (``svd_tol``).
    Two of the fitter's defaults are off: its trace constraint (``constrain_cov_trace``), which
    mixes the map with a projection that no longer zeroes Σ_xz when X is not white, and its
    covariance shrinkage, whose estimate is no covariance (negative eigenvalues of order 1e8)
    when the features are already white, as standardised PCA components are: its denominator
    ‖S − (tr S / d) I‖² is then zero. Features come back float32, as probes read them.

    Args:
        data: dense features (LEACE is a dense d × d map; sparse features are refused).
        concept_train: (n_pool,) class indices of the concept, or (n_pool, K) 0/1 indicators.
        method: ``"leace"``, the only eraser (``concept-erasure`` provides no INLP).
        concept: the concept's name, for the record.
        n_classes: K of class indices (default: the largest index + 1).

    Raises:
        ValueError: sparse features, a scalar mix or span layout (erasure would mix the
            layers or tokens laid side by side), a concept of another length than the pool,
            fewer than two classes, an unknown method, or ``concept-erasure`` not installed.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(400, 5)).astype(np.float32)
        >>> y = (X[:, 0] > 0).astype(np.int64)
        >>> data = ProbeData.from_arrays(X[:300], y[:300], X[300:], y[300:])
        >>> erased = erase(data, data.y_train)
        >>> erased.record.rank, erased.record.fitted_on
        (1, 'pool')
        >>> float(abs(np.corrcoef(erased.data.X_train[:, 0], data.y_train)[0, 1])) < 1e-6
        True
    """
    if method not in ERASERS:
        raise ValueError(f"method must be one of {ERASERS} (no INLP is provided); got {method!r}")
    problem = erasure_problem()
    if problem:
        raise ValueError(f"erasure {problem}")
    if sp.issparse(data.X_train):
        raise ValueError(
            f"{data.name!r} has sparse features: LEACE is a dense d × d map of every row, "
            "so erasure needs dense features"
        )
    if data.mix_layers is not None or data.span_tokens is not None:
        laid = "layers (a scalar mix)" if data.mix_layers is not None else "span tokens"
        raise ValueError(
            f"{data.name!r} holds {laid} side by side: erasure of the whole row would mix them"
        )
    z = _concept_columns(np.asarray(concept_train), data.pool_size, n_classes)
    eraser = _fit_leace(data.X_train, z)
    record = ErasureRecord(
        eraser=method,
        concept=concept,
        fitted_on="pool",
        n_rows=data.pool_size,
        n_columns=z.shape[1],
        rank=int((eraser.proj_right.norm(dim=1) > 0).sum()),
    )
    erased = replace(
        data,
        X_train=_apply(eraser, data.X_train),
        X_test=_apply(eraser, data.X_test),
        # shifted test sets go through the map fitted on the pool, as the test set does
        shifted=tuple(replace(s, X=_apply(eraser, s.X)) for s in data.shifted),
    )
    return ErasedData(erased, record)


def _concept_columns(concept: np.ndarray, n_rows: int, n_classes: int | None) -> np.ndarray:
    """Z as float64 columns: class indices one-hot, indicator matrices as they are."""
    if concept.shape[0] != n_rows:
        raise ValueError(
            f"concept_train must hold one label per pool row ({n_rows}); got shape {concept.shape}"
        )
    if concept.ndim == 2:
        return concept.astype(np.float64)
    if concept.ndim != 1 or not np.issubdtype(concept.dtype, np.integer) or concept.min() < 0:
        raise ValueError(
            "concept_train must be class indices (n_pool,) >= 0 or a 0/1 indicator matrix "
            f"(n_pool, K); got dtype {concept.dtype} and shape {concept.shape}"
        )
    k = int(concept.max()) + 1 if n_classes is None else n_classes
    if len(np.unique(concept)) < 2:
        raise ValueError("concept_train holds one class only: there is nothing to erase")
    columns = np.zeros((n_rows, k), dtype=np.float64)
    columns[np.arange(n_rows), concept] = 1.0
    return columns


def _fit_leace(X: np.ndarray, z: np.ndarray) -> Any:
    """LEACE's eraser of ``z`` from the rows of ``X``, their statistics accumulated a block
    at a time in float64."""
    import torch
    from concept_erasure import LeaceFitter

    fitter = LeaceFitter(X.shape[1], z.shape[1], dtype=torch.float64, **_LEACE)
    for start in range(0, X.shape[0], _BLOCK):
        rows = slice(start, start + _BLOCK)
        block = torch.from_numpy(np.asarray(X[rows], dtype=np.float64))
        fitter.update(block, torch.from_numpy(z[rows]))
    return fitter.eraser


def _apply(eraser: Any, X: np.ndarray) -> np.ndarray:
    """``eraser`` applied to the rows of ``X`` a block at a time (float64), as float32."""
    import torch

    out = np.empty(X.shape, dtype=np.float32)
    for start in range(0, X.shape[0], _BLOCK):
        rows = slice(start, start + _BLOCK)
        block = torch.from_numpy(np.asarray(X[rows], dtype=np.float64))
        out[rows] = eraser(block).numpy()
    return out
