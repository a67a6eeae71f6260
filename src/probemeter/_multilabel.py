"""Multi-label targets: what the methods share about them (the uniform code, F1 scores).

A multi-label target is a *set* of labels out of K, held as a row of a 0/1 indicator matrix
(n, K). Following Tenney et al. (2019, §3, "What do you learn from context?"), a probe has K
sigmoid outputs σ(z_k) and is trained with binary cross-entropy per label; the code of a
target's label set is the sum of K independent Bernoulli codes::

    −log p(y | x) = Σ_k −[y_k log σ(z_k) + (1 − y_k) log(1 − σ(z_k))]   (nats),

so a codelength is defined as for one label per target (Voita & Titov 2020, eq. 3–4) and the
uniform code (σ = ½ for every label) costs K·ln 2 nats, K bits, per example.

The accuracy-like metrics are F1 scores of the predictions ŷ_k = [σ(z_k) > 0.5] (z_k > 0):
micro-F1 = 2·TP / (2·TP + FP + FN) over all labels and examples (Tenney et al. report it),
macro-F1 the mean of the per-label F1 = 2·TP_k / (2·TP_k + FP_k + FN_k). Per-example
correctness (McNemar's test, a result's ``accuracy``) is the *exact set match*: ŷ = y on every
label.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["check_label_sets", "f1_scores", "label_counts", "uniform_nats"]


def uniform_nats(n_classes: int, multilabel: bool = False) -> float:
    """Nats per example of the uniform code: ln K for one label out of K, K·ln 2 for a label
    set (K independent fair coins)."""
    return n_classes * math.log(2.0) if multilabel else math.log(n_classes)


def label_counts(predictions: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per label, the true positives, false positives and false negatives of 0/1
    ``predictions`` against 0/1 ``targets`` ((n, K) each; leading axes are summed over too):
    an int64 array (3, K)."""
    predicted = np.asarray(predictions).astype(bool)
    true = np.asarray(targets).astype(bool)
    axes = tuple(range(predicted.ndim - 1))
    return np.stack(
        [
            (predicted & true).sum(axis=axes),
            (predicted & ~true).sum(axis=axes),
            (~predicted & true).sum(axis=axes),
        ]
    ).astype(np.int64)


def f1_scores(counts: np.ndarray) -> tuple[float, float]:
    """Micro-F1 and macro-F1 from per-label ``counts`` (3, K): true positives, false positives,
    false negatives (:func:`label_counts`).

    micro-F1 = 2·ΣTP / (2·ΣTP + ΣFP + ΣFN), 1.0 when nothing was to be found and nothing was
    predicted; macro-F1 is the mean of 2·TP_k / (2·TP_k + FP_k + FN_k) over the labels that
    occur in the targets or the predictions (a label absent from both has no F1, 0/0, and is
    left out), 1.0 when there is none.
    """
    tp, fp, fn = (np.asarray(row, dtype=np.float64) for row in counts)
    total = 2 * tp.sum() + fp.sum() + fn.sum()
    micro = 1.0 if total == 0 else float(2 * tp.sum() / total)
    per_label = 2 * tp + fp + fn
    present = per_label > 0
    macro = float(np.mean(2 * tp[present] / per_label[present])) if present.any() else 1.0
    return micro, macro


def check_label_sets(y_train: np.ndarray, y_eval: np.ndarray, n_classes: int) -> None:
    """Label sets given to a probe engine: both 0/1 indicator matrices of ``n_classes``
    columns.

    Raises:
        ValueError: naming the array, when one holds label sets and the other class indices,
            its width is not ``n_classes``, or it holds values other than 0 and 1.
    """
    for name, labels in (("y_train", y_train), ("y_eval", y_eval)):
        if np.ndim(labels) != 2:
            raise ValueError(
                f"{name} must be a 0/1 indicator matrix (n, {n_classes}) like the other labels "
                f"(multi-label targets); got shape {np.shape(labels)}"
            )
        if labels.shape[1] != n_classes:
            raise ValueError(
                f"{name} has {labels.shape[1]} label columns but n_classes={n_classes}"
            )
        if labels.size and not np.isin(labels, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0 and 1 (label k absent / present)")
