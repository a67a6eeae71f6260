"""The evaluations of the structural probe (Hewitt & Manning 2019, §3.1), as their code
defines them (john-hewitt/structural-probes, ``structural-probes/reporter.py``; punctuation:
:mod:`probemeter.structural.trees`).

* **UUAS**: over the n′ words of a sentence that are not punctuation, the undirected minimum
  spanning tree of the predicted distances against the *gold tree over those words*: the
  minimum spanning tree of the gold tree distances among them (Kruskal's algorithm, ties to
  the pair (i, j), i < j, that comes first in the order of i then j), n′ − 1 edges. Where no
  punctuation word lies between two words it holds the gold tree's edges among them; where
  one does (a word attached to a comma), it joins the parts across it by the shortest gold
  paths. UUAS over a corpus: edges found / gold edges, summed over sentences.
* **DSpr. / NSpr.**: the Spearman correlation, per sentence, between predicted and gold
  distances (each word's row of the distance matrix, the word itself and punctuation
  included) or depths; averaged over the sentences of each length n (every word counted),
  then over the lengths 5–50 that occur. A row whose predictions or gold values are constant
  has no correlation and is left out (the reference averages its NaN, making the length's
  mean NaN).
* **Root accuracy**: the fraction of sentences whose shallowest non-punctuation word under the
  depth probe is the gold root. Every sentence counts: one whose gold root is punctuation
  counts as wrong, since no non-punctuation word can be it; in one whose words are all
  punctuation the shallowest word is taken.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from probemeter.structural.trees import tree_distances

__all__ = [
    "SPEARMAN_LENGTHS",
    "centred_ranks",
    "found_edges",
    "gold_edges",
    "minimum_spanning_edges",
    "root_correct",
    "spanning_parents",
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


def spanning_parents(distances: np.ndarray) -> np.ndarray:
    """Prim's algorithm (:func:`minimum_spanning_edges`) on k finite symmetric (n, n) distance
    matrices at once: (k, n, n) → (k, n) int64, each word's parent in its matrix's tree grown
    from word 0 (word 0's entry 0); the tree's edges are the pairs (w, parent[w]), w ≥ 1. Every
    step is the one-matrix step on each (the cheapest word outside the tree, the lower index
    on ties; comparisons and copies only, no arithmetic), so the trees are those of one matrix
    at a time, edge for edge.

    Raises:
        ValueError: not (k, n, n), or a value that is not finite.
    """
    matrices = np.asarray(distances, dtype=np.float64)
    if matrices.ndim != 3 or matrices.shape[1] != matrices.shape[2]:
        raise ValueError(f"distances must be (k, n, n); got shape {matrices.shape}")
    if not np.isfinite(matrices).all():
        raise ValueError("distances holds NaN or infinite values")
    k, n, _ = matrices.shape
    rows = np.arange(k)
    in_tree = np.zeros((k, n), dtype=bool)
    in_tree[:, 0] = True
    best = matrices[:, 0].copy()  # cheapest edge from each tree to each word
    parent = np.zeros((k, n), dtype=np.int64)
    for _ in range(n - 1):
        word = np.argmin(np.where(in_tree, np.inf, best), axis=1)
        in_tree[rows, word] = True
        offered = matrices[rows, word]
        closer = ~in_tree & (offered < best)
        best[closer] = offered[closer]
        parent[closer] = np.broadcast_to(word[:, None], (k, n))[closer]
    return parent


def tree_edges(heads: Sequence[int], keep: np.ndarray | None = None) -> set[tuple[int, int]]:
    """The undirected edges ``(i, j)``, i < j (0-based word indices), of a tree given by its
    1-based heads (0 = root), keeping only edges whose two words are both in ``keep``."""
    keep_mask = np.ones(len(heads), dtype=bool) if keep is None else np.asarray(keep, bool)
    edges = set()
    for word, head in enumerate(heads):
        if head > 0 and keep_mask[word] and keep_mask[head - 1]:
            edges.add((min(word, head - 1), max(word, head - 1)))
    return edges


def gold_edges(heads: Sequence[int], keep: np.ndarray | None = None) -> list[tuple[int, int]]:
    """The gold tree over the kept words, as Hewitt & Manning score UUAS (module docstring):
    the minimum spanning tree of the gold tree distances among the words of ``keep`` (default
    all), by Kruskal's algorithm over the pairs (i, j), i < j, sorted by (distance, i, j);
    n′ − 1 edges for n′ kept words, as 0-based ``(i, j)`` sorted. Where no punctuation word is
    left out these are exactly the tree's edges (:func:`tree_edges`)."""
    keep_mask = np.ones(len(heads), dtype=bool) if keep is None else np.asarray(keep, bool)
    words = np.flatnonzero(keep_mask)
    if words.size < 2:
        return []
    distances = tree_distances(heads)[np.ix_(words, words)]
    first, second = np.triu_indices(words.size, k=1)
    order = np.lexsort((second, first, distances[first, second]))
    component = list(range(words.size))

    def root(node: int) -> int:
        while component[node] != node:
            component[node] = component[component[node]]
            node = component[node]
        return node

    edges = []
    for pair in order:
        a, b = root(int(first[pair])), root(int(second[pair]))
        if a != b:
            component[a] = b
            edges.append((int(words[first[pair]]), int(words[second[pair]])))
            if len(edges) == words.size - 1:
                break
    return sorted(edges)


def uuas_counts(
    predicted: np.ndarray, heads: Sequence[int], punctuation: Sequence[bool] | None = None
) -> tuple[int, int]:
    """(edges of the gold tree found, gold edges) for one sentence: the minimum spanning tree
    of ``predicted`` distances among the n′ words that are not punctuation, against the gold
    tree over those words (:func:`gold_edges`, n′ − 1 edges). UUAS over a corpus is the sum
    of the first counts over the sum of the second (Hewitt & Manning, §3.1). A sentence with
    fewer than two kept words gives (0, 0).

    Examples:
        "the cat sat ." with heads 2, 3, 0, 3 (1-based, 0 = root) and the full stop left out:
        the gold tree's distances find both gold edges; distances that put "the" nearest to
        "sat" find one of the two.

        >>> from probemeter.structural import tree_distances, uuas_counts
        >>> heads, punctuation = [2, 3, 0, 3], [False, False, False, True]
        >>> gold = tree_distances(heads)
        >>> uuas_counts(gold, heads, punctuation)
        (2, 2)
        >>> predicted = gold.astype(float)
        >>> predicted[0, 2] = predicted[2, 0] = 0.5
        >>> uuas_counts(predicted, heads, punctuation)
        (1, 2)
    """
    keep = np.ones(len(heads), dtype=bool) if punctuation is None else ~np.asarray(punctuation)
    words = np.flatnonzero(keep)
    gold = set(gold_edges(heads, keep))
    return found_edges(predicted, words, gold), len(gold)


def found_edges(predicted: np.ndarray, words: np.ndarray, gold: set[tuple[int, int]]) -> int:
    """How many of the ``gold`` edges over the kept ``words`` (:func:`gold_edges`) the
    minimum spanning tree of the ``predicted`` distances among those words holds: the first
    count of :func:`uuas_counts`, given the gold side, which depends on the tree alone (a
    sweep's scoring computes it once per sentence). 0 for fewer than two kept words."""
    if words.size < 2:
        return 0
    found = minimum_spanning_edges(np.asarray(predicted)[np.ix_(words, words)])
    return len({(int(words[i]), int(words[j])) for i, j in found} & gold)


def root_correct(
    predicted_depths: np.ndarray, heads: Sequence[int], punctuation: Sequence[bool] | None = None
) -> bool:
    """Whether the shallowest non-punctuation word (lowest index on ties) is the gold root.
    A sentence whose root is punctuation is wrong (no non-punctuation word is its root); in a
    sentence of punctuation only, the shallowest word is compared (module docstring)."""
    keep = np.ones(len(heads), dtype=bool) if punctuation is None else ~np.asarray(punctuation)
    depths = np.asarray(predicted_depths, dtype=np.float64)
    if keep.any():
        depths = np.where(keep, depths, np.inf)
    return int(np.argmin(depths)) == list(heads).index(0)


def centred_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's average ranks less their mean, (rows, n) float64 (a 1-D ``values`` is one
    row), and each row's sum of their squares: one side of a Spearman correlation
    (:func:`spearman_by_length`), which for the gold side depends on the tree alone."""
    from scipy.stats import rankdata

    ranks = rankdata(np.atleast_2d(np.asarray(values, dtype=np.float64)), axis=-1)
    centred = ranks - ranks.mean(axis=-1, keepdims=True)
    return centred, (centred**2).sum(-1)


def spearman_by_length(
    pairs: Iterable[tuple[np.ndarray, np.ndarray]],
    lengths: tuple[int, int] = SPEARMAN_LENGTHS,
    *,
    ranked_gold: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
) -> tuple[float, dict[int, float]]:
    """The length-averaged Spearman correlation of Hewitt & Manning (§3.1).

    ``pairs`` yields one (predicted, gold) per sentence: (n,) depths, or (n, n) distance
    matrices (one correlation per row, i.e. per word). Correlations are averaged over all
    sentences of one length n, then those means over the lengths ``lengths[0]..lengths[1]``
    that occur. A row with a constant prediction or gold value has no correlation and is left
    out. ``ranked_gold``, one per pair, gives the gold side's :func:`centred_ranks` where
    they are already known (a sentence's, scored for many probes), the same numbers as from
    the pair's gold values. Returns (the average, {length: mean correlation}); the average is
    NaN when no sentence has a length in the range.

    The sentences of one length are ranked together, one call for all their rows: average
    ranks are multiples of 1/2 and their centring, squares and products multiples of 1/4, so
    every sum is exact in float64 and the correlations are those of one sentence at a time,
    bit for bit, in the same order.
    """
    members: dict[int, list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]]] = {}
    for number, (predicted, gold) in enumerate(pairs):
        n = np.shape(gold)[-1]
        if not lengths[0] <= n <= lengths[1]:
            continue
        known = None if ranked_gold is None else ranked_gold[number]
        rows = np.atleast_2d(np.asarray(predicted, dtype=np.float64))
        members.setdefault(n, []).append((rows, centred_ranks(gold) if known is None else known))
    by_length: dict[int, list[float]] = {}
    for n, group in members.items():
        # Spearman's rho of each row: Pearson's r of the rows' average ranks
        centred, squares = centred_ranks(np.concatenate([rows for rows, _ in group]))
        gold_centred = np.concatenate([gold[0] for _, gold in group])
        gold_squares = np.concatenate([gold[1] for _, gold in group])
        norms = np.sqrt(squares * gold_squares)
        defined = norms > 0
        rho = (centred * gold_centred).sum(-1)[defined] / norms[defined]
        if rho.size:
            by_length[n] = rho.tolist()
    means = {n: float(np.mean(values)) for n, values in sorted(by_length.items())}
    average = float(np.mean(list(means.values()))) if means else float("nan")
    return average, means
