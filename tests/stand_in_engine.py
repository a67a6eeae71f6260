"""A stand-in for :func:`probemeter.training.engine.fit_evaluate` in online-code tests: the
cross-entropies are given by a formula, so codelengths can be computed by hand."""

from collections.abc import Callable, Sequence

import numpy as np

from probemeter.training.engine import ProbeEvaluation


def stand_in_evaluation(
    y_train: np.ndarray,
    y_eval: np.ndarray,
    n_probes: int,
    pool_rows: Sequence[np.ndarray | None] | None,
    nll: Callable[[int, np.ndarray], np.ndarray],
) -> ProbeEvaluation:
    """Probe i gives pool example j the cross-entropy ``nll(i, j)`` nats (``j`` an array of
    pool indices) on its ``pool_rows``, every evaluation example 0 nats, and every prediction
    is the label."""
    zeros = np.zeros(n_probes)
    predictions = np.repeat(y_eval[None, :], n_probes, axis=0).astype(np.int32)
    pool_nll, pool_predictions = None, None
    if pool_rows is not None:
        pool_nll = tuple(
            None if rows is None else np.asarray(nll(i, rows), dtype=np.float32)
            for i, rows in enumerate(pool_rows)
        )
        pool_predictions = tuple(
            None if rows is None else y_train[rows].astype(np.int32) for rows in pool_rows
        )
    return ProbeEvaluation(
        zeros,
        zeros,
        zeros,
        nll=np.zeros((n_probes, len(y_eval)), dtype=np.float32),
        predictions=predictions,
        pool_nll=pool_nll,
        pool_predictions=pool_predictions,
    )
