"""Baseline representations and the dictionary lookup model (Pimentel et al. §6, App. C).

* :func:`one_hot_features` — one indicator column per word type of the training pool; a probe's
  first layer on it is a *learned* word embedding ("one-hot ... are learned with the other
  network parameters", §6). Types unseen in training share one extra column that no training
  example activates, so its weights stay at their random initialisation: an untrained vector,
  as the paper samples "on the spot (untrained) for any out of vocabulary words".
* :func:`random_features` — a fixed standard-normal vector per word type (§6), kept fixed.
* :func:`lookup_labels` / :func:`lookup_arc_labels` — the most-frequent-label dictionary
  baseline of App. C (Table 1) for POS labelling and dependency-arc labelling, with its
  fall-back rules. Ties between equally frequent labels go to the smallest label id.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

from probemeter._validation import check_scalar

__all__ = ["lookup_arc_labels", "lookup_labels", "one_hot_features", "random_features"]


def _type_ids(name: str, types: object) -> np.ndarray:
    ids = np.asarray(types)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of word-type ids")
    if not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0:
        raise ValueError(f"{name} must hold non-negative integer word-type ids")
    return ids.astype(np.int64)


def one_hot_features(
    types_train: object, types_test: object, max_types: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indicator features for the one-hot baseline.

    Args:
        types_train, types_test: word-type id of every training / test token (e.g.
            :attr:`probemeter.datasets.conll.Treebank.word_type_ids` split like the data).
        max_types: keep only the most frequent training types (ties: smaller id first); the
            rest share the unknown column. None keeps every training type.

    Returns:
        ``(X_train, X_test, vocabulary)``: float32 arrays of shape (n, V + 1) — column j < V
        is ``vocabulary[j]``, column V the unknown column — and the (V,) kept type ids.

    Raises:
        ValueError: empty or non-integer type arrays, ``max_types`` < 1.
    """
    train = _type_ids("types_train", types_train)
    test = _type_ids("types_test", types_test)
    if max_types is not None:
        check_scalar(max_types, "max_types", int, min_val=1)
    kinds, counts = np.unique(train, return_counts=True)
    order = np.lexsort((kinds, -counts))
    vocabulary = kinds[order[:max_types]] if max_types else kinds[order]
    column = {int(t): j for j, t in enumerate(vocabulary)}
    unknown = len(vocabulary)

    def encode(ids: np.ndarray) -> np.ndarray:
        features = np.zeros((ids.size, unknown + 1), dtype=np.float32)
        features[np.arange(ids.size), [column.get(int(t), unknown) for t in ids]] = 1.0
        return features

    return encode(train), encode(test), vocabulary


def random_features(types: object, dim: int, random_state: int = 0) -> np.ndarray:
    """A fixed N(0, I_dim) vector per word type: row i is the vector of type ``types[i]``.

    The vector of type t is drawn from a stream keyed by (random_state, t) alone, so it does
    not depend on which other types occur or on their order.

    Raises:
        ValueError: bad ``types`` or ``dim`` < 1.
    """
    ids = _type_ids("types", types)
    check_scalar(dim, "dim", int, min_val=1)
    kinds, inverse = np.unique(ids, return_inverse=True)
    table = np.stack(
        [np.random.default_rng([random_state, int(t), 0x4A4D]).standard_normal(dim) for t in kinds]
    )
    return table[inverse].astype(np.float32)


def _most_frequent(labels: Sequence[int]) -> int:
    counts = Counter(labels)
    best = max(counts.values())
    return min(label for label, count in counts.items() if count == best)


def _table(keys: Sequence[Hashable], labels: Sequence[int]) -> dict[Hashable, int]:
    grouped: dict[Hashable, list[int]] = {}
    for key, label in zip(keys, labels):
        grouped.setdefault(key, []).append(int(label))
    return {key: _most_frequent(values) for key, values in grouped.items()}


def _check_labels(labels: object, n: int) -> list[int]:
    values = np.asarray(labels)
    if values.shape != (n,) or n == 0:
        raise ValueError(f"train_labels must be a non-empty 1-D array of {n} labels")
    return values.astype(np.int64).tolist()


def lookup_labels(
    train_words: Sequence[Hashable], train_labels: object, test_words: Sequence[Hashable]
) -> np.ndarray:
    """POS lookup model (App. C, "POSL"): (i) a word seen in training gets its most common
    training label; (ii) an out-of-vocabulary word gets the most frequent label overall.

    Raises:
        ValueError: no training words, or labels not aligned with them.
    """
    labels = _check_labels(train_labels, len(train_words))
    table = _table(list(train_words), labels)
    overall = _most_frequent(labels)
    return np.array([table.get(word, overall) for word in test_words], dtype=np.int64)


def lookup_arc_labels(
    train_arcs: Sequence[tuple[Hashable, Hashable]],
    train_labels: object,
    test_arcs: Sequence[tuple[Hashable, Hashable]],
) -> np.ndarray:
    """Arc-label lookup model (App. C, "DAL") over arcs ``(tail, head)`` (dependent, head):

    (i) an arc seen in training gets its most common label; (ii) an unseen arc whose tail word
    was seen (as a tail) gets that tail's most common label; (iii) if the tail is
    out-of-vocabulary, the head word's most common label (over training arcs it heads);
    (iv) if the head is unknown too, the most frequent arc label overall.

    Raises:
        ValueError: no training arcs, or labels not aligned with them.
    """
    labels = _check_labels(train_labels, len(train_arcs))
    arcs = [tuple(arc) for arc in train_arcs]
    by_arc = _table(arcs, labels)
    by_tail = _table([tail for tail, _ in arcs], labels)
    by_head = _table([head for _, head in arcs], labels)
    overall = _most_frequent(labels)
    predictions = []
    for tail, head in test_arcs:
        if (tail, head) in by_arc:
            predictions.append(by_arc[tail, head])
        elif tail in by_tail:
            predictions.append(by_tail[tail])
        elif head in by_head:
            predictions.append(by_head[head])
        else:
            predictions.append(overall)
    return np.array(predictions, dtype=np.int64)
