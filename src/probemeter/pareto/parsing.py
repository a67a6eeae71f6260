"""Dependency structure for probing: arc pairs, head shuffles, attachment scores, MST decoding.

Pimentel et al. (2020), §6 and §7, App. B:

* **arc labelling (DAL)** predicts a dependency's relation label from the pair of its two
  words' representations, ``[h_tail; h_head]`` (:func:`arc_pairs`; the root arc, which has no
  head word, is left out);
* **dependency parsing** scores every candidate head of every word (the biaffine probe,
  :mod:`probemeter.pareto.biaffine`) and is evaluated by the **unlabelled attachment score**,
  the fraction of words whose predicted head is the gold one (:func:`attachment_score`);
  its label-shuffled variant permutes the heads within each sentence (:func:`shuffle_heads`);
* predicted heads are the per-word arg-max (not necessarily a tree, App. B) or, optionally,
  the **maximum spanning tree** from Edmonds' (Chu–Liu–Edmonds) algorithm (:func:`mst_heads`).

Heads follow CoNLL-U: 1-based positions within the sentence, 0 for the root.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Edmonds, J. (1967). Optimum branchings.
    *Journal of Research of the National Bureau of Standards* 71B(4), 233–240.
    doi:10.6028/jres.071B.032
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "arc_pairs",
    "attachment_score",
    "check_parse",
    "is_tree",
    "mst_heads",
    "sentence_offsets",
    "shuffle_heads",
]


def check_parse(
    heads: object, sentence_ids: object, *, rooted: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Validate per-word ``heads`` and ``sentence_ids``; return them as int64 arrays.

    ``rooted=False`` accepts sentences without a word attached to the root (0), as the heads
    of a control task have (:func:`~probemeter.datasets.dependency_control.dependency_control`
    with its self-attachments on the ROOT slot, :func:`~probemeter.datasets.arcs.control_heads`).

    Raises:
        ValueError: lengths differ, sentence ids not contiguous runs, a head outside
            0..len(sentence), or (``rooted``) a sentence with no root (no word with head 0).
    """
    heads = np.asarray(heads)
    sentence_ids = np.asarray(sentence_ids)
    if heads.ndim != 1 or heads.shape != sentence_ids.shape or heads.size == 0:
        raise ValueError(
            f"heads and sentence_ids must be non-empty 1-D arrays of one length; got "
            f"{heads.shape} and {sentence_ids.shape}"
        )
    heads = heads.astype(np.int64)
    sentence_ids = sentence_ids.astype(np.int64)
    starts, lengths = sentence_offsets(sentence_ids)
    owner = np.repeat(np.arange(len(starts)), lengths)
    if heads.min() < 0 or np.any(heads > lengths[owner]):
        bad = int(np.flatnonzero((heads < 0) | (heads > lengths[owner]))[0])
        raise ValueError(f"heads[{bad}] = {heads[bad]} is outside 0..len(its sentence)")
    roots = np.bincount(owner, weights=heads == 0, minlength=len(starts))
    if rooted and np.any(roots == 0):
        sentence = int(sentence_ids[starts[int(np.flatnonzero(roots == 0)[0])]])
        raise ValueError(f"sentence {sentence} has no root: no word with head 0")
    return heads, sentence_ids


def sentence_offsets(sentence_ids: object) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of each sentence, whose words must be contiguous.

    Raises:
        ValueError: a sentence id that reappears after another sentence.
    """
    ids = np.asarray(sentence_ids)
    change = np.flatnonzero(np.diff(ids)) + 1
    starts = np.concatenate([[0], change]).astype(np.int64)
    if len(np.unique(ids[starts])) != len(starts):
        raise ValueError("sentence_ids must group each sentence's words contiguously")
    lengths = np.diff(np.concatenate([starts, [ids.size]])).astype(np.int64)
    return starts, lengths


def arc_pairs(
    features: object, heads: object, sentence_ids: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair each non-root word with its head: rows ``[h_tail; h_head]`` of shape (n_arcs, 2d).

    Returns:
        ``(pairs, tails, heads_flat)``: the pair features and, per arc, the flat indices of
        its tail (dependent) and head words (to select labels, groups and word forms).

    Raises:
        ValueError: features not (n_words, d), or invalid heads (see :func:`check_parse`).
    """
    X = np.asarray(features)
    heads, sentence_ids = check_parse(heads, sentence_ids)
    if X.ndim != 2 or X.shape[0] != heads.size:
        raise ValueError(f"features must be (n_words={heads.size}, d); got shape {X.shape}")
    starts, lengths = sentence_offsets(sentence_ids)
    start_of_word = np.repeat(starts, lengths)
    tails = np.flatnonzero(heads > 0)
    head_index = start_of_word[tails] + heads[tails] - 1
    return np.concatenate([X[tails], X[head_index]], axis=1), tails, head_index


def shuffle_heads(
    heads: object, sentence_ids: object, random_state: int = 0, *, rooted: bool = True
) -> np.ndarray:
    """Permute the heads within each sentence (the label-shuffled parsing task, §7): word i
    receives the head of another word of its sentence, so the result is generally no tree.
    ``rooted``: as for :func:`check_parse`."""
    heads, sentence_ids = check_parse(heads, sentence_ids, rooted=rooted)
    starts, lengths = sentence_offsets(sentence_ids)
    rng = np.random.default_rng([random_state, 0x4EAD])
    keys = np.repeat(np.arange(len(starts)), lengths) + rng.random(heads.size)
    return heads[np.argsort(keys, kind="stable")]


def attachment_score(predicted: object, gold: object) -> float:
    """Unlabelled attachment score: the fraction of words (over the whole corpus, punctuation
    included) whose predicted head equals the gold head.

    Raises:
        ValueError: empty or mismatched arrays.
    """
    predicted, gold = np.asarray(predicted), np.asarray(gold)
    if predicted.shape != gold.shape or predicted.size == 0:
        raise ValueError(
            f"predicted and gold must be non-empty and alike; got {predicted.shape}, {gold.shape}"
        )
    return float(np.mean(predicted == gold))


def is_tree(heads: object) -> bool:
    """True when 1-based ``heads`` (0 = root) of one sentence form a tree rooted at 0: every
    word reaches the root without meeting a cycle."""
    heads = np.asarray(heads, dtype=np.int64)
    n = heads.size
    if n == 0 or heads.min() < 0 or heads.max() > n or np.any(heads == np.arange(1, n + 1)):
        return False
    for word in range(1, n + 1):
        seen, node = 0, word
        while node != 0:
            node = heads[node - 1]
            seen += 1
            if seen > n:
                return False
    return True


def mst_heads(scores: object) -> np.ndarray:
    """Maximum spanning arborescence rooted at node 0 (Chu–Liu–Edmonds; Pimentel App. B).

    Args:
        scores: (n+1, n+1) matrix, ``scores[h, d]`` the score of head h for word d; node 0 is
            the root. Self-loops and arcs into the root are ignored. The root may take several
            dependents (no single-root constraint).

    Returns:
        (n,) int64 heads of words 1..n, 0 for the root: a tree maximising the summed score.

    Raises:
        ValueError: a non-square matrix, fewer than 2 nodes, or NaN scores.
    """
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] < 2:
        raise ValueError(f"scores must be a square (n+1, n+1) matrix, n >= 1; got {matrix.shape}")
    if np.isnan(matrix).any():
        raise ValueError("scores contain NaN")
    matrix = matrix.copy()
    np.fill_diagonal(matrix, -np.inf)
    matrix[:, 0] = -np.inf
    return _chu_liu_edmonds(matrix)[1:]


def _find_cycle(heads: np.ndarray) -> list[int] | None:
    """A cycle of the head graph (heads[0] = -1 for the root), or None."""
    n = heads.size
    state = np.zeros(n, dtype=np.int8)  # 0 new, 1 on the current path, 2 done
    for start in range(1, n):
        path, node = [], start
        while node > 0 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node]
        if node > 0 and state[node] == 1:
            return path[path.index(node) :]
        state[path] = 2
    return None


def _chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
    """Heads (with heads[0] = -1) of the best arborescence of ``scores`` (diagonal and column 0
    already -inf): greedy heads, then contract a cycle into one node, solve, and expand."""
    heads = scores.argmax(axis=0)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = np.zeros(scores.shape[0], dtype=bool)
    in_cycle[cycle] = True
    rest = np.flatnonzero(~in_cycle)  # includes the root, at position 0
    loop = np.array(cycle)
    size = rest.size + 1
    contracted = np.full((size, size), -np.inf)
    contracted[:-1, :-1] = scores[np.ix_(rest, rest)]
    # entering the cycle at v from u replaces v's cycle arc: gain s[u, v] - s[head(v), v]
    entering = scores[np.ix_(rest, loop)] - scores[heads[loop], loop][None, :]
    contracted[:-1, -1] = entering.max(axis=1)
    leaving = scores[np.ix_(loop, rest)]
    contracted[-1, :-1] = leaving.max(axis=0)
    inner = _chu_liu_edmonds(contracted)
    result = heads.copy()
    for position, node in enumerate(rest[1:], start=1):
        head = inner[position]
        result[node] = loop[leaving[:, position].argmax()] if head == size - 1 else rest[head]
    source = inner[-1]
    result[loop[entering[source].argmax()]] = rest[source]
    return result
