"""Feature rankings for k-sparse probes (Gurnee et al. 2023, §2–3): which k neurons or SAE
latents a probe restricted to k features gets, ranked on the training pool alone.

Two rankings of Gurnee et al.'s sparse-probing variants:

* ``"mean-difference"``: the absolute difference of class means, |μ₁ − μ₀| per feature for two
  classes (on the features as :class:`~probemeter.data.ProbeData` holds them, standardised by
  default), and for K classes the largest one-vs-rest difference
  max_c |μ_c − μ_{¬c}|, which for K = 2 is |μ₁ − μ₀| again;
* ``"l1"``: the L1-regularised logistic-regression path (Tibshirani 1996): the order in which
  features enter as the inverse regularisation C grows from ``sklearn.svm.l1_min_c`` (below
  which every weight is zero).

References:
    Gurnee, W., Nanda, N., Pauly, M., Harvey, K., Troitskii, D. & Bertsimas, D. (2023).
    Finding Neurons in a Haystack: Case Studies with Sparse Probing. *Transactions on Machine
    Learning Research*. arXiv:2305.01610

    Tibshirani, R. (1996). Regression shrinkage and selection via the lasso. *Journal of the
    Royal Statistical Society B*, 58(1), 267–288. doi:10.1111/j.2517-6161.1996.tb02080.x
"""

from __future__ import annotations

import inspect

import numpy as np
import scipy.sparse as sp

from probemeter._validation import check_scalar, one_of
from probemeter.data import ProbeData, check_probe_data, check_single_label

__all__ = ["L1_GRID", "L1_SPAN", "RANKINGS", "mean_differences", "rank_features"]

#: the rankings :func:`rank_features` computes
RANKINGS = ("mean-difference", "l1")
#: values of C on the L1 path (log-spaced)
L1_GRID = 30
#: the path's largest C over its smallest, ``l1_min_c``
L1_SPAN = 1e3


def rank_features(
    data: ProbeData,
    method: str = "mean-difference",
    *,
    rows: np.ndarray | None = None,
    l1_grid: int = L1_GRID,
    l1_span: float = L1_SPAN,
    n_top: int | None = None,
    random_state: int = 0,
    n_jobs: int | None = None,
) -> np.ndarray:
    """Every feature of ``data``, best first, ranked on the training pool alone (``X_train``,
    ``y_train``; the test set is never read).

    ``method="mean-difference"`` scores feature j by the largest one-vs-rest difference of class
    means, s_j = max_c |μ_{c,j} − μ_{¬c,j}| — for two classes |μ_{1,j} − μ_{0,j}| (Gurnee et al.
    2023, §3) — and ranks by decreasing s_j. ``method="l1"`` fits L1-regularised logistic
    regressions (liblinear; one-vs-rest for K > 2 classes) at ``l1_grid`` values of C
    log-spaced in (c₀, ``l1_span``·c₀], with c₀ = ``sklearn.svm.l1_min_c`` the largest C at
    which every weight is zero, and ranks feature j by the first C at which its weight (for any
    class) is nonzero; features entering at the same C, or never, by decreasing |weight| at the
    last C fitted. The path stops once ``n_top`` features (default: all) have entered: the
    first ``n_top`` of the ranking are then the features entered by that C. Remaining ties go
    to the lower index.

    Sparse features (SAE latents, :attr:`ProbeData.is_sparse`) stay sparse: the class means are
    sparse column sums, and liblinear takes CSR input.

    Args:
        data: features and labels, one class per example.
        method: ``"mean-difference"`` or ``"l1"``.
        rows: pool rows to rank on (e.g. the rows probes train on, without a development
            split); default the whole pool.
        l1_grid: number of C values on the L1 path.
        l1_span: the path's largest C over c₀ (> 1).
        n_top: with ``method="l1"``, how many features must have entered before the path
            stops (each C is a fit; a k-sparse probe needs only the top k).
        random_state: liblinear's seed (its coordinate order).
        n_jobs: parallel one-vs-rest fits for K > 2 classes (scikit-learn's convention).

    Returns:
        (n_features,) int64 feature indices, best first.

    Examples:
        Feature 1 separates the classes best, feature 2 a little, feature 0 not at all:

        >>> import numpy as np
        >>> from probemeter import ProbeData
        >>> from probemeter.sparse_probing import rank_features
        >>> X = np.array([[0., -2., 1.], [1., -1., 0.], [0., 1., 1.], [1., 2., 1.]])
        >>> data = ProbeData.from_arrays(X, [0, 0, 1, 1], X, [0, 0, 1, 1], standardize=False)
        >>> rank_features(data).tolist()
        [1, 2, 0]
        >>> rank_features(data, "l1").tolist()[0]
        1

    Raises:
        ValueError: naming the argument: ``data`` not a ProbeData or holding label sets, an
            unknown ``method``, bad ``rows``, ``l1_grid``, ``l1_span``, ``n_top`` or
            ``random_state``.
    """
    check_single_label(check_probe_data(data, sparse=True), "rank_features")
    one_of(*RANKINGS)(method, "method")
    check_scalar(l1_grid, "l1_grid", int, min_val=1)
    check_scalar(l1_span, "l1_span", float, min_val=1, include_boundaries="neither")
    n_top = data.n_features if n_top is None else n_top
    check_scalar(n_top, "n_top", int, min_val=1, max_val=data.n_features)
    check_scalar(random_state, "random_state", int, min_val=0)
    X, y = data.X_train, data.y_train
    if rows is not None:
        rows = _check_rows(rows, data.pool_size)
        X, y = X[rows], y[rows]
    if np.unique(y).size < 2:
        raise ValueError("rows: the ranked pool rows hold a single class; ranking needs two")
    if method == "mean-difference":
        score = mean_differences(X, y)
        return np.lexsort((np.arange(score.size), -score)).astype(np.int64)
    entry, weight = _l1_entry(X, y, l1_grid, l1_span, n_top, random_state, n_jobs)
    return np.lexsort((np.arange(entry.size), -weight, entry)).astype(np.int64)


def mean_differences(X: np.ndarray | sp.csr_matrix, y: np.ndarray) -> np.ndarray:
    """max_c |μ_c − μ_{¬c}| per column of ``X`` (float64), over the classes present in ``y``:
    class sums one class's rows at a time (sparse column sums for CSR ``X``, never densified),
    the rest's as total − class."""
    total = _column_sums(X)
    best = np.zeros(X.shape[1])
    for label in np.unique(y):
        inside = y == label
        count = int(inside.sum())
        if count == y.size:
            continue
        class_sum = _column_sums(X[inside])
        difference = np.abs(class_sum / count - (total - class_sum) / (y.size - count))
        np.maximum(best, difference, out=best)
    return best


def _column_sums(X: np.ndarray | sp.csr_matrix) -> np.ndarray:
    """Column sums in float64 (a sparse matrix's are a (1, d) matrix, flattened here)."""
    return np.asarray(X.sum(axis=0, dtype=np.float64)).ravel()


def _check_rows(rows: object, pool_size: int) -> np.ndarray:
    values = np.asarray(rows)
    if values.ndim != 1 or values.size == 0 or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"rows must be a non-empty 1-D array of pool row indices; got {rows!r}")
    if values.min() < 0 or values.max() >= pool_size:
        raise ValueError(f"rows must be pool row indices in [0, {pool_size}); got {rows!r}")
    return values


def _l1_penalty() -> dict[str, object]:
    """The L1 penalty in the spelling of the installed scikit-learn: 1.8 deprecated
    ``penalty="l1"`` for ``l1_ratio=1``, which earlier versions ignore without
    ``penalty="elasticnet"`` (they would fit an L2 path)."""
    from sklearn.linear_model import LogisticRegression

    deprecated = inspect.signature(LogisticRegression).parameters["penalty"].default
    return {"l1_ratio": 1.0} if deprecated == "deprecated" else {"penalty": "l1"}


def _l1_entry(
    X: np.ndarray | sp.csr_matrix,
    y: np.ndarray,
    grid: int,
    span: float,
    n_top: int,
    random_state: int,
    n_jobs: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per feature, the index on the C grid at which its weight first is nonzero (``grid`` when
    never) and its largest |weight| over classes at the last C fitted, the first at which
    ``n_top`` features have entered or the path's end."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import l1_min_c

    # liblinear fits binary problems only; K > 2 classes are its one-vs-rest fits
    binary = np.unique(y).size == 2
    X = X.astype(np.float64)  # liblinear's dtype, converted once rather than once per fit
    c_min = l1_min_c(X, y, loss="log")
    entry = np.full(X.shape[1], grid, dtype=np.int64)
    weight = np.zeros(X.shape[1])
    for step, c in enumerate(c_min * np.geomspace(1, span, grid + 1)[1:]):
        model = LogisticRegression(
            C=c, solver="liblinear", random_state=random_state, **_l1_penalty()
        )
        if binary:
            coef = model.fit(X, y).coef_
        else:
            fitted = OneVsRestClassifier(model, n_jobs=n_jobs).fit(X, y)
            coef = np.vstack([estimator.coef_ for estimator in fitted.estimators_])
        weight = np.abs(coef).max(axis=0)
        entry[(weight > 0) & (entry == grid)] = step
        if np.count_nonzero(entry < grid) >= n_top:
            break
    return entry, weight
