"""The evaluations of the structural probe (Hewitt & Manning 2019, §3.1).

* **UUAS**: the undirected minimum spanning tree of the predicted distances among the words
  that are not punctuation, scored by the fraction of the gold tree's edges between such words
  that it contains (undirected, unlabelled attachment score).
* **DSpr. / NSpr.**: the Spearman correlation, per sentence, between predicted and gold
  distances (each word's row of the distance matrix, the word itself included) or depths;
  averaged over the sentences of each length, then over the lengths 5–50.
* **Root accuracy**: the fraction of sentences whose shallowest non-punctuation word under the
  depth probe is the gold root.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "SPEARMAN_LENGTHS",
    "minimum_spanning_edges",
    "root_correct",
    "spearman_by_length",
    "tree_edges",
    "uuas_counts",
]

#: sentence lengths whose Spearman correlations are averaged (Hewitt & Manning, §3.1)
SPEARMAN_LENGTHS = (5, 50)


def minimum_spanning_edges(distances: np.ndarray) -> set[tuple[int, int]]:
    """The edges ``(i, j)``, i < j, of an undirected minimum spanning tree of a symmetric
    (n, n) distance matrix (Prim's algorithm on the dense matrix, O(n²); ties go to the lower
    index, so the result is deterministic).

    Raises:
        ValueError: a matrix that is not square or holds NaN.
    """
    matrix = np.asarray(distances, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"distances must be a square matrix; got shape {matrix.shape}")
    if np.isnan(matrix).any():
        raise ValueError("distances holds NaN")
    n = matrix.shape[0]
    if n < 2:
        return set()
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = matrix[0].copy()  # cheapest edge from the tree to each word
    parent = np.zeros(n, dtype=np.int64)
    edges = set()
    for _ in range(n - 1):
        candidates = np.where(in_tree, np.inf, best)
        word = int(np.argmin(candidates))
        edges.add((min(word, int(parent[word])), max(word, int(parent[word]))))
        in_tree[word] = True
        closer = ~in_tree & (matrix[word] < best)
        best[closer] = matrix[word][closer]
        parent[closer] = word
    return edges


def tree_edges(heads: Sequence[int], keep: np.ndarray | None = None) -> set[tuple[int, int]]:
    """The undirected edges ``(i, j)``, i < j (0-based word indices), of a tree given by its
    1-based heads (0 = root), keeping only edges whose two words are both in ``keep``."""
    keep_mask = np.ones(len(heads), dtype=bool) if keep is None else np.asarray(keep, bool)
    edges = set()
    for word, head in enumerate(heads):
        if head > 0 and keep_mask[word] and keep_mask[head - 1]:
            edges.add((min(word, head - 1), max(word, head - 1)))
    return edges


def uuas_counts(
    predicted: np.ndarray, heads: Sequence[int], punctuation: Sequence[bool] | None = None
) -> tuple[int, int]:
    """(edges of the gold tree found, gold edges) for one sentence: the minimum spanning tree
    of ``predicted`` distances among the words that are not punctuation, against the gold
    edges between such words. UUAS over a corpus is the sum of the first counts over the sum
    of the second (Hewitt & Manning, §3.1). A sentence with fewer than two kept words gives
    (0, 0)."""
    keep = np.ones(len(heads), dtype=bool) if punctuation is None else ~np.asarray(punctuation)
    words = np.flatnonzero(keep)
    gold = tree_edges(heads, keep)
    if words.size < 2:
        return 0, 0
    found = minimum_spanning_edges(np.asarray(predicted)[np.ix_(words, words)])
    found_words = {(int(words[i]), int(words[j])) for i, j in found}
    return len(found_words & gold), len(gold)


def root_correct(
    predicted_depths: np.ndarray, heads: Sequence[int], punctuation: Sequence[bool] | None = None
) -> bool | None:
    """Whether the shallowest non-punctuation word (lowest index on ties) is the gold root;
    None when the root itself is punctuation or every word is (the sentence is not scored)."""
    keep = np.ones(len(heads), dtype=bool) if punctuation is None else ~np.asarray(punctuation)
    root = list(heads).index(0)
    if not keep[root]:
        return None
    depths = np.where(keep, np.asarray(predicted_depths, dtype=np.float64), np.inf)
    return int(np.argmin(depths)) == root


def spearman_by_length(
    pairs: Iterable[tuple[np.ndarray, np.ndarray]],
    lengths: tuple[int, int] = SPEARMAN_LENGTHS,
) -> tuple[float, dict[int, float]]:
    """The length-averaged Spearman correlation of Hewitt & Manning (§3.1).

    ``pairs`` yields one (predicted, gold) per sentence: (n,) depths, or (n, n) distance
    matrices (one correlation per row, i.e. per word). Correlations are averaged over all
    sentences of one length n, then those means over the lengths ``lengths[0]..lengths[1]``
    that occur. A row with a constant prediction or gold value has no correlation and is left
    out. Returns (the average, {length: mean correlation}); the average is NaN when no
    sentence has a length in the range.
    """
    from scipy.stats import rankdata

    by_length: dict[int, list[float]] = {}
    for predicted, gold in pairs:
        gold = np.atleast_2d(np.asarray(gold, dtype=np.float64))
        predicted = np.atleast_2d(np.asarray(predicted, dtype=np.float64))
        n = gold.shape[-1]
        if not lengths[0] <= n <= lengths[1]:
            continue
        # Spearman's rho of each row: Pearson's r of the rows' average ranks
        ranks = [rankdata(values, axis=-1) for values in (predicted, gold)]
        centred = [r - r.mean(axis=-1, keepdims=True) for r in ranks]
        norms = np.sqrt((centred[0] ** 2).sum(-1) * (centred[1] ** 2).sum(-1))
        defined = norms > 0
        rho = (centred[0] * centred[1]).sum(-1)[defined] / norms[defined]
        if rho.size:
            by_length.setdefault(n, []).extend(rho.tolist())
    means = {n: float(np.mean(values)) for n, values in sorted(by_length.items())}
    average = float(np.mean(list(means.values()))) if means else float("nan")
    return average, means
