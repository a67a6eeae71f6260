"""Arc pairs, head shuffles, UAS, Edmonds' MST and the biaffine parsing probe (Pimentel App. B)."""

import itertools

import numpy as np
import pytest

from probemeter.pareto.biaffine import fit_biaffine_parsers
from probemeter.pareto.parsing import (
    arc_pairs,
    attachment_score,
    check_parse,
    is_tree,
    mst_heads,
    sentence_offsets,
    shuffle_heads,
)
from probemeter.probes import MLP
from probemeter.training.config import ParserTraining

# two sentences: "She saw him" (saw is the root) and "Go !" (Go is the root)
HEADS = np.array([2, 0, 2, 0, 1])
SENTENCES = np.array([0, 0, 0, 1, 1])


def test_attachment_score_is_the_hand_count():
    predicted = np.array([2, 0, 1, 0, 0])  # words 3 and 5 wrong
    assert attachment_score(predicted, HEADS) == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="predicted"):
        attachment_score([], [])


def test_arc_pairs_concatenate_tail_and_head_and_skip_roots():
    features = np.arange(10, dtype=float).reshape(5, 2)
    pairs, tails, heads = arc_pairs(features, HEADS, SENTENCES)
    assert tails.tolist() == [0, 2, 4] and heads.tolist() == [1, 1, 3]
    np.testing.assert_array_equal(pairs[2], [8, 9, 6, 7])


def test_sentences_without_a_root_and_bad_heads_are_rejected():
    with pytest.raises(ValueError, match="sentence 1 has no root"):
        check_parse([2, 0, 2, 2, 1], SENTENCES)
    with pytest.raises(ValueError, match="outside"):
        check_parse([4, 0, 2, 0, 1], SENTENCES)
    with pytest.raises(ValueError, match="contiguously"):
        sentence_offsets([0, 1, 0])


def test_shuffle_heads_permutes_within_sentences():
    rng = np.random.default_rng(0)
    sentences = np.repeat(np.arange(30), 6)
    heads = np.concatenate([rng.permutation([0, 1, 1, 2, 3, 4]) for _ in range(30)])
    shuffled = shuffle_heads(heads, sentences, random_state=2)
    for s in range(30):
        block = slice(6 * s, 6 * s + 6)
        assert sorted(shuffled[block]) == sorted(heads[block])
    assert not np.array_equal(shuffled, heads)


def _brute_force_best_tree(scores):
    n = scores.shape[0] - 1
    trees = (h for h in itertools.product(range(n + 1), repeat=n) if is_tree(h))
    return max(sum(scores[h, d + 1] for d, h in enumerate(t)) for t in trees)


@pytest.mark.parametrize(
    "seed", [*range(10), *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(10, 40))]
)
def test_mst_returns_the_best_tree_of_a_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    scores = rng.normal(size=(n + 1, n + 1))
    heads = mst_heads(scores)
    assert is_tree(heads)
    total = sum(scores[h, d + 1] for d, h in enumerate(heads))
    assert total == pytest.approx(_brute_force_best_tree(scores))


def test_mst_breaks_the_cycle_a_greedy_choice_makes():
    scores = np.full((4, 4), -5.0)
    scores[2, 1], scores[1, 2] = 10, 10  # 1 <-> 2 prefer each other
    scores[0, 1], scores[0, 2], scores[1, 3] = 1, 3, 4
    heads = mst_heads(scores)
    assert heads.tolist() == [2, 0, 1] and is_tree(heads)
    with pytest.raises(ValueError, match="square"):
        mst_heads(np.zeros((2, 3)))


def _synthetic_corpus(n_sentences, seed):
    """Each word's features code its own position and its head's: the head is recoverable."""
    rng = np.random.default_rng(seed)
    features, heads, sentences = [], [], []
    for sentence in range(n_sentences):
        length = int(rng.integers(2, 7))
        root = int(rng.integers(1, length + 1))
        for word in range(1, length + 1):
            head = 0 if word == root else root
            row = np.zeros(16, dtype=np.float32)
            row[word - 1] = 1
            row[8 + head] = 1
            features.append(row)
            heads.append(head)
            sentences.append(sentence)
    return np.array(features), np.array(heads), np.array(sentences)


def test_biaffine_parser_learns_recoverable_heads_and_reports_its_uas():
    train, test = _synthetic_corpus(150, 0), _synthetic_corpus(40, 1)
    result = fit_biaffine_parsers(
        *train, [test, train], MLP((16,)), [(0,), (1,)], config=ParserTraining(250, 32, 1e-2)
    )
    assert result.uas.shape == (2, 2) and np.all(result.uas > 0.95)
    for p in range(2):  # the reported UAS is the count over the returned heads
        assert result.uas[p, 0] == attachment_score(result.heads[0][p], test[1])


def test_mst_decoding_returns_trees_and_shuffled_heads_are_harder():
    train, test = _synthetic_corpus(100, 2), _synthetic_corpus(20, 3)
    config = ParserTraining(steps=60, batch_sentences=32, lr=1e-2)
    result = fit_biaffine_parsers(*train, [test], MLP(()), [(0,)], config=config, decode="mst")
    _, lengths = sentence_offsets(test[2])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for start, length in zip(starts, lengths):
        assert is_tree(result.heads[0][0, start : start + length])
    shuffled = shuffle_heads(train[1], train[2])
    memorised = fit_biaffine_parsers(
        train[0], shuffled, train[2], [(train[0], shuffled, train[2])], MLP(()), [(0,)],
        config=config,
    )  # fmt: skip
    assert memorised.uas[0, 0] < 0.9


def test_biaffine_rejects_bad_input():
    train = _synthetic_corpus(5, 0)
    with pytest.raises(ValueError, match="keys"):
        fit_biaffine_parsers(*train, [], MLP(()), [])
    with pytest.raises(ValueError, match="decode"):
        fit_biaffine_parsers(*train, [], MLP(()), [(0,)], decode="greedy")
    no_root = train[1].copy()
    no_root[train[1] == 0] = 1
    with pytest.raises(ValueError, match="no root"):
        fit_biaffine_parsers(train[0], no_root, train[2], [], MLP(()), [(0,)])
