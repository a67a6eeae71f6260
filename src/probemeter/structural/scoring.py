"""One trained structural probe scored on a set of sentences: its loss, UUAS or root accuracy,
Spearman correlation, and its codelength (Hewitt & Manning 2019, §3.1; the codelength of
:mod:`probemeter.structural.likelihood`).

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

from probemeter.structural.evaluation import (
    SPEARMAN_LENGTHS,
    centred_ranks,
    gold_edges,
    minimum_spanning_edges,
    root_correct,
    spanning_parents,
    spearman_by_length,
)
from probemeter.structural.likelihood import (
    fit_laplace_scale,
    laplace_codelengths,
    uniform_codelengths,
)
from probemeter.structural.trees import TreeData

__all__ = [
    "Scores",
    "SentencePredictions",
    "fitted_scale",
    "kept_gold_edges",
    "mean_loss",
    "predict_sentences",
    "score",
    "sentence_codelengths",
    "sentence_truncated_losses",
    "spanning_edges",
    "target_codes",
    "uniform_codelength",
    "uniform_truncated_losses",
]


@dataclass(frozen=True)
class SentencePredictions:
    """A probe's predictions for some sentences, with their gold targets (float64).

    Attributes:
        sentences: the sentence indices, in order.
        predicted: per sentence, (n, n) squared distances or (n,) squared norms.
        gold: per sentence, the gold distances or depths of the same shape (read-only:
            the trees' own, :attr:`TreeData.memo`).
        trees: the trees of the sentences, whose :attr:`TreeData.memo` holds what the
            scores need of the gold side; None: computed from ``gold`` each time.
    """

    sentences: tuple[int, ...]
    predicted: tuple[np.ndarray, ...]
    gold: tuple[np.ndarray, ...]
    trees: TreeData | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class _SentenceGold:
    """One sentence's gold side, from its tree alone (kept in :attr:`TreeData.memo`)."""

    values: np.ndarray  # float64 (n, n) distances or (n,) depths, read-only
    #: its gold rows' :func:`~probemeter.structural.evaluation.centred_ranks` where the
    #: sentence's length is one whose Spearman correlations count, else None
    ranked: tuple[np.ndarray, np.ndarray] | None


_Value = TypeVar("_Value")


def _memo(trees: TreeData, key: tuple[Any, ...], compute: Callable[[], _Value]) -> _Value:
    """``trees.memo[key]``, computed by ``compute()`` the first time."""
    memo = trees.memo
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _sentence_gold(trees: TreeData, target: str, sentence: int) -> _SentenceGold:
    """The gold side of ``sentence``'s ``target``, computed once per trees."""

    def compute() -> _SentenceGold:
        source = trees.depths(sentence) if target == "depth" else trees.distances(sentence)
        values = source.astype(np.float64)
        values.setflags(write=False)
        low, high = SPEARMAN_LENGTHS
        ranked = centred_ranks(values) if low <= values.shape[-1] <= high else None
        return _SentenceGold(values, ranked)

    return _memo(trees, ("gold", target, sentence), compute)


def _golds(trees: TreeData, target: str, sentences: tuple[int, ...]) -> tuple[_SentenceGold, ...]:
    """:func:`_sentence_gold` of each of ``sentences``, the tuple itself kept per set of
    sentences (a dev or test set is scored for every probe: one look-up, not one each)."""

    def compute() -> tuple[_SentenceGold, ...]:
        return tuple(_sentence_gold(trees, target, s) for s in sentences)

    return _memo(trees, ("golds", target, sentences), compute)


def kept_gold_edges(
    trees: TreeData, sentence: int
) -> tuple[np.ndarray, list[tuple[int, int]], set[tuple[int, int]]]:
    """(the kept words, the gold edges over them as a sorted list and as a set) of
    ``sentence``: the non-punctuation words and
    :func:`~probemeter.structural.evaluation.gold_edges`, against which UUAS counts the
    edges found; computed once per trees."""

    def compute() -> tuple[np.ndarray, list[tuple[int, int]], set[tuple[int, int]]]:
        keep = ~np.asarray(trees.punctuation[sentence], dtype=bool)  # type: ignore[index]
        edges = gold_edges(trees.heads[sentence], keep)
        return np.flatnonzero(keep), edges, set(edges)

    return _memo(trees, ("edges", sentence), compute)


@lru_cache(maxsize=512)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs i < j of n words (``np.triu_indices(n, k=1)``)."""
    return np.triu_indices(n, k=1)


def predict_sentences(
    projection: np.ndarray,
    features: np.ndarray,
    trees: TreeData,
    target: str,
    sentences: Sequence[int] | np.ndarray,
) -> SentencePredictions:
    """The probe B's predictions ‖Bᵀ(h_i − h_j)‖² (distance) or ‖Bᵀh_i‖² (depth) for each
    sentence, computed in float64."""
    weights = np.asarray(projection, dtype=np.float64)
    predicted = []
    index = tuple(int(s) for s in np.asarray(sentences).reshape(-1))
    for s in index:
        words = np.asarray(features[trees.offsets[s] : trees.offsets[s + 1]], dtype=np.float64)
        projected = words @ weights
        norms = np.einsum("ir,ir->i", projected, projected)
        if target == "depth":
            predicted.append(norms)
        else:
            squared = norms[:, None] + norms[None, :] - 2.0 * projected @ projected.T
            predicted.append(np.maximum(squared, 0.0))
    gold = tuple(sentence.values for sentence in _golds(trees, target, index))
    return SentencePredictions(index, tuple(predicted), gold, trees)


def target_codes(
    predictions: SentencePredictions, target: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The coded targets of the sentences, flattened: (gold, predicted, lowest, highest,
    sentence position) — pairs i < j for distances (support 1..n − 1), every word for depths
    (support 0..n − 1). All but the predictions depend on the sentences alone: computed once
    per trees and set of sentences (:attr:`TreeData.memo`) where the predictions carry their
    trees."""
    y, low, high, position = _gold_codes(predictions, target)
    mu = [
        predicted[_pairs(predicted.shape[0])] if target == "distance" else predicted
        for predicted in predictions.predicted
    ]
    return y, np.concatenate(mu) if mu else np.empty(0), low, high, position


def _gold_codes(
    predictions: SentencePredictions, target: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(gold, lowest, highest, sentence position) of :func:`target_codes`."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        columns: list[list[np.ndarray]] = [[], [], [], []]
        for position, gold in enumerate(predictions.gold):
            n = gold.shape[0]
            y, low = (gold[_pairs(n)], 1.0) if target == "distance" else (gold, 0.0)
            for column, values in zip(
                columns,
                (y, np.full(y.size, low), np.full(y.size, n - 1.0), np.full(y.size, position)),
            ):
                column.append(values)
        found = [np.concatenate(column) if column else np.empty(0) for column in columns]
        for values in found:
            values.setflags(write=False)  # shared by every probe scored on these sentences
        return found[0], found[1], found[2], found[3]

    if predictions.trees is None:
        return compute()
    key = ("codes", target, predictions.sentences)
    return _memo(predictions.trees, key, compute)


@dataclass(frozen=True)
class Scores:
    """A probe's scores on a set of sentences.

    Attributes:
        loss: the paper's normalised L1 loss, averaged over the sentences.
        uuas: distance probe: UUAS (punctuation left out), NaN for the depth probe.
        root_accuracy: depth probe: root accuracy, NaN for the distance probe.
        spearman: DSpr. (distance) or NSpr. (depth): Spearman correlation averaged per length
            5–50, then over lengths (NaN when no sentence has such a length).
        codelength: total codelength of the sentences' targets in nats, under the discretised
            Laplace with ``scale`` (None when no scale was given).
        sentence_codelengths: per sentence, its targets' codelength in nats (or None).
        uniform_codelength: the uniform code of the same targets, in nats.
    """

    loss: float
    uuas: float
    root_accuracy: float
    spearman: float
    codelength: float | None
    sentence_codelengths: np.ndarray | None
    uniform_codelength: float


def mean_loss(predictions: SentencePredictions, target: str) -> float:
    """The paper's normalised L1 loss averaged over the sentences: Σ|pred − gold| / |s|² for
    distances (every ordered pair, the diagonal included), / |s| for depths."""
    losses = [
        float(np.abs(predicted - gold).sum())
        / (gold.size if target == "distance" else gold.shape[0])
        for predicted, gold in zip(predictions.predicted, predictions.gold)
    ]
    return float(np.mean(losses))


def sentence_codelengths(predictions: SentencePredictions, target: str, scale: float) -> np.ndarray:
    """Per sentence, the codelength of its targets in nats under the discretised Laplace of
    scale ``scale`` (:func:`~probemeter.structural.likelihood.laplace_codelengths`)."""
    y, mu, low, high, position = target_codes(predictions, target)
    codes = laplace_codelengths(y, mu, low, high, scale)
    count = len(predictions.sentences)
    return np.bincount(position.astype(np.int64), weights=codes, minlength=count)


def sentence_truncated_losses(
    predictions: SentencePredictions, target: str, scale: float
) -> np.ndarray:
    """Per sentence s, the truncated loss of its coded targets in [0, 1]::

        ℓ(s) = (1/|T_s|) Σ_{t ∈ T_s} min(−ln Q(y_t | μ_t, b), 1 nat)

    over its targets T_s (pairs i < j for distances, words for depths), 0 for a sentence
    with none (a one-word sentence's distances). Whitney et al. (2020), App. A, bound the
    loss of one test example in [0, 1] by truncating its cross-entropy at 1 nat, so that
    Hoeffding's inequality applies to its mean over independent examples; here the examples
    sampled independently are sentences, and a sentence's codelength (tens of nats) truncated
    at 1 would be 1 for every probe. Each target's codelength is truncated instead and the
    truncated codes averaged over the sentence: ℓ(s) ∈ [0, 1], one value per independently
    drawn sentence, which is what Theorem 4 needs. A uniform code over supports of more than
    e values costs 1 per target, a probe that codes every target in under 1 nat less."""
    y, mu, low, high, position = target_codes(predictions, target)
    codes = np.minimum(laplace_codelengths(y, mu, low, high, scale), 1.0)
    return _per_sentence_mean(codes, position, len(predictions.sentences))


def _per_sentence_mean(values: np.ndarray, position: np.ndarray, count: int) -> np.ndarray:
    """The mean of ``values`` per sentence position (0 for a sentence without values)."""
    index = position.astype(np.int64)
    totals = np.bincount(index, weights=values, minlength=count)
    sizes = np.bincount(index, minlength=count)
    return np.divide(totals, sizes, out=np.zeros(count), where=sizes > 0)


def uniform_truncated_losses(
    trees: TreeData, target: str, sentences: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Per sentence, the truncated loss (:func:`sentence_truncated_losses`) of the uniform code
    over each target's support: the mean over its targets of min(ln(hi − lo + 1), 1), i.e.
    min(ln(n − 1), 1) for distances and min(ln n, 1) for depths of an n-word sentence (0 for
    one word)."""
    lengths = trees.lengths[np.asarray(sentences, dtype=np.int64)].astype(np.float64)
    support = lengths - 1 if target == "distance" else lengths
    return np.minimum(np.log(np.maximum(support, 1.0)), 1.0)


def score(
    predictions: SentencePredictions,
    trees: TreeData,
    target: str,
    scale: float | None = None,
) -> Scores:
    """Score a probe's predictions against the trees (module docstring)."""
    found, total, roots = 0, 0, []
    if target == "distance":
        found, total = _uuas_counts(predictions, trees)
    else:
        for s, predicted in zip(predictions.sentences, predictions.predicted):
            punctuation = trees.punctuation[s]  # type: ignore[index]
            roots.append(root_correct(predicted, trees.heads[s], punctuation))
    # the gold ranks once per trees, where the gold values are these trees' own
    ranked = (
        [sentence.ranked for sentence in _golds(trees, target, predictions.sentences)]
        if predictions.trees is trees
        else None
    )
    spearman, _ = spearman_by_length(
        zip(predictions.predicted, predictions.gold), ranked_gold=ranked
    )
    per_sentence = None if scale is None else sentence_codelengths(predictions, target, scale)
    _, low, high, _ = _gold_codes(predictions, target)
    nan = float("nan")
    return Scores(
        loss=mean_loss(predictions, target),
        uuas=(found / total if total else nan) if target == "distance" else nan,
        root_accuracy=(float(np.mean(roots)) if roots else nan) if target == "depth" else nan,
        spearman=spearman,
        codelength=None if per_sentence is None else float(per_sentence.sum()),
        sentence_codelengths=per_sentence,
        uniform_codelength=float(uniform_codelengths(low, high).sum()),
    )


def _uuas_counts(predictions: SentencePredictions, trees: TreeData) -> tuple[int, int]:
    """(gold edges found, gold edges) over the sentences: per sentence
    :func:`~probemeter.structural.evaluation.uuas_counts`, the gold side once per trees
    (:func:`kept_gold_edges`), the predicted trees grown together (:func:`spanning_edges`)."""
    found, total = 0, 0
    for s, edges in zip(predictions.sentences, spanning_edges(predictions, trees)):
        gold = kept_gold_edges(trees, s)[2]
        found, total = found + len(edges & gold), total + len(gold)
    return found, total


def spanning_edges(predictions: SentencePredictions, trees: TreeData) -> list[set[tuple[int, int]]]:
    """Per sentence, the edges ``(i, j)``, i < j (word indices in the sentence), of the
    minimum spanning tree of its predicted distances among its non-punctuation words
    (:func:`~probemeter.structural.evaluation.minimum_spanning_edges`; empty for fewer than
    two), those of the sentences with the same number of such words grown together
    (:func:`~probemeter.structural.evaluation.spanning_parents`: the same trees, edge for
    edge).

    Raises:
        ValueError: predictions that hold NaN.
    """
    found: list[set[tuple[int, int]]] = [set() for _ in predictions.sentences]
    groups: dict[int, list[int]] = {}
    kept = [kept_gold_edges(trees, s)[0] for s in predictions.sentences]
    for position, words in enumerate(kept):
        if words.size > 1:
            groups.setdefault(words.size, []).append(position)
    for positions in groups.values():
        matrices = np.stack([predictions.predicted[p][np.ix_(kept[p], kept[p])] for p in positions])
        if np.isfinite(matrices).all():
            parents = spanning_parents(matrices)
            for p, parent in zip(positions, parents):
                words = kept[p]
                pairs = zip(words[1:].tolist(), words[parent[1:]].tolist())
                found[p] = {(min(a, b), max(a, b)) for a, b in pairs}
            continue
        for p, matrix in zip(positions, matrices):  # one at a time: NaN refused there
            found[p] = {
                (int(kept[p][i]), int(kept[p][j])) for i, j in minimum_spanning_edges(matrix)
            }
    return found


def fitted_scale(predictions: SentencePredictions, target: str) -> float:
    """The maximum-likelihood Laplace scale of a probe's predictions on the given sentences
    (:func:`~probemeter.structural.likelihood.fit_laplace_scale`): held-out sentences for the
    codes of :mod:`probemeter.structural.codes`."""
    y, mu, low, high, _ = target_codes(predictions, target)
    if y.size == 0:
        raise ValueError(
            "the sentences a scale is fitted on hold no coded target (one-word sentences only)"
        )
    return fit_laplace_scale(y, mu, low, high)


def uniform_codelength(
    trees: TreeData, target: str, sentences: Sequence[int] | np.ndarray
) -> float:
    """The uniform code of the sentences' targets in nats: Σ over sentences of n = |s| words of
    (n choose 2)·ln(n − 1) for distances (pairs i < j in 1..n − 1), n·ln n for depths."""
    lengths = trees.lengths[np.asarray(sentences, dtype=np.int64)].astype(np.float64)
    if target == "distance":
        pairs = lengths * (lengths - 1) / 2
        return float(np.sum(pairs * np.log(np.maximum(lengths - 1, 1))))
    return float(np.sum(lengths * np.log(lengths)))
