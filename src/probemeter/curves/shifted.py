"""The probes of a loss-data curve's largest size on shifted test sets.

A probe that monitors text in production meets text unlike its training data; a probe that
holds on the in-distribution test set may collapse there (Goldowsky-Dill et al. 2025, §4.3:
deception probes under stylistic shift). The data's shifted test sets
(:attr:`~probemeter.data.ProbeData.shifted`, standardised with the pool's statistics) are
scored by the very probes the curve trained — each of the largest size, one per seed, trained
once — with the engine's arithmetic (:func:`~probemeter.probes.stacked_mlp.evaluate_as_row`:
each probe placed at its row of the stack it was evaluated in, so that on a set equal to the
test set every number is the engine's, bit for bit on the CPU).

For each set, per seed: the mean cross-entropy (nats) and the accuracy; per example: the
cross-entropy and the arg-max prediction, from which :mod:`probemeter.runs.shift` bootstraps
the gap to the test set and tests representations against each other on the shifted set. The
in-distribution test set's per-example cross-entropies of the same probes are kept beside
them (``test_nll``), for the loss gap's interval.

References:
    Goldowsky-Dill, N., Chughtai, B., Heimersheim, S. & Hobbhahn, M. (2025). Detecting
    Strategic Deception Using Linear Probes. arXiv:2502.03407
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from probemeter.data import ProbeData

__all__ = ["shifted_evaluations"]


def shifted_evaluations(
    data: ProbeData,
    evaluation: Any,
    final: Sequence[int],
    seeds: Sequence[int],
    n_train: int,
    device: str,
    *,
    dev_rows: np.ndarray | None = None,
    positive: int = 1,
    random_state: int = 0,
) -> dict[str, Any] | None:
    """The probes at positions ``final`` of the engine's ``evaluation`` (trained with
    ``return_parameters``), one per seed of ``seeds``, on each of ``data.shifted``: a
    JSON-ready dictionary ``{"seeds", "n_train", "test_nll", "sets": {name: {"n", "loss",
    "accuracy", "nll", "predictions", "labels"}}}`` (per seed: mean loss and accuracy; per seed
    and example: cross-entropy and prediction), or None without shifted sets. For two classes
    each set also has ``"monitor"``: :func:`~probemeter.monitor.monitor_metrics` of the same
    probes on it (AUROC, Brier, ECE; with ``dev_rows``, the pool rows of the curve's
    development split, recall at 1 % and 5 % FPR with each probe's threshold set on the
    in-distribution development split, never on a shifted set), ``positive`` the positive
    class, ``random_state`` the bootstrap's seed.

    Raises:
        ValueError: the evaluation holds no parameters; label sets (one class per example is
            predicted)."""
    if not data.shifted:
        return None
    if evaluation.parameters is None:
        raise ValueError("shifted test sets are scored by the trained probes; none returned")
    if data.multilabel:
        raise ValueError("shifted test sets take single labels; the data have label sets")
    sets = {}
    for shifted in data.shifted:
        X = shifted.X.toarray() if sp.issparse(shifted.X) else np.asarray(shifted.X)
        scored = [_score(evaluation, i, X, shifted.y, device) for i in final]
        sets[shifted.name] = {
            "n": len(shifted.y),
            "loss": [float(score["loss"]) for score in scored],
            "accuracy": [float(score["accuracy"]) for score in scored],
            "nll": [score["nll"].astype(float).tolist() for score in scored],
            "predictions": [score["predictions"].astype(int).tolist() for score in scored],
            "labels": np.asarray(shifted.y).astype(int).tolist(),
        }
        monitor = _monitor(
            data, evaluation, final, scored, shifted.y, seeds, dev_rows, positive, random_state
        )
        if monitor is not None:
            sets[shifted.name]["monitor"] = monitor
    return {
        "seeds": [int(seed) for seed in seeds],
        "n_train": int(n_train),
        "test_nll": [evaluation.nll[i].astype(float).tolist() for i in final],
        "sets": sets,
    }


def _score(evaluation: Any, probe: int, X: np.ndarray, y: np.ndarray, device: str) -> Any:
    """Probe ``probe`` of the evaluation on ``(X, y)``, at its row of the stack it was
    evaluated in (bit for bit the engine's arithmetic there): loss, accuracy, per-example
    cross-entropy and prediction."""
    import torch

    from probemeter._device import resolve_device
    from probemeter.probes.stacked_mlp import evaluate_as_row

    layers = tuple((weights[probe], biases[probe]) for weights, biases in evaluation.parameters)
    mix = None
    if evaluation.mix_logits is not None:
        mix = (evaluation.mix_logits[probe], float(evaluation.mix_scale[probe]))
    target = resolve_device(device)
    features = torch.as_tensor(np.asarray(X, dtype=np.float32), device=target)
    labels = torch.as_tensor(np.asarray(y, dtype=np.int64), device=target)
    row = 0 if evaluation.stack_rows is None else int(evaluation.stack_rows[probe])
    metrics = evaluate_as_row(layers, row, features, labels, per_example=True, mix=mix)
    return {name: np.asarray(values[0]) for name, values in metrics.items()}


def _monitor(
    data: ProbeData,
    evaluation: Any,
    final: Sequence[int],
    scored: Sequence[Any],
    labels: np.ndarray,
    seeds: Sequence[int],
    dev_rows: np.ndarray | None,
    positive: int,
    random_state: int,
) -> dict[str, Any] | None:
    """The monitor metrics of the probes on a shifted set, their thresholds from the
    in-distribution development split; None for more than two classes or a set of one class
    (no AUROC)."""
    from probemeter.monitor import monitor_metrics, positive_scores

    if data.n_classes != 2 or len(np.unique(labels)) < 2:
        return None
    test = [positive_scores(score["nll"], labels, positive) for score in scored]
    dev = None
    if dev_rows is not None:
        dev_labels = np.asarray(data.y_train)[dev_rows]
        dev = [positive_scores(evaluation.pool_nll[i], dev_labels, positive) for i in final]
    return monitor_metrics(test, dev, seeds=list(seeds), random_state=random_state)
