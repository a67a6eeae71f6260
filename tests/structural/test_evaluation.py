"""UUAS with the minimum spanning tree, root accuracy and the length-averaged Spearman
correlation, on hand-checked examples and against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.stats import spearmanr

from probemeter.structural.evaluation import (
    minimum_spanning_edges,
    root_correct,
    spearman_by_length,
    tree_edges,
    uuas_counts,
)


def test_prim_finds_the_hand_computed_tree():
    # four words; the cheapest edges 0-1 (1), 2-3 (2), then 1-2 (3); 0-3 (2.5) would close no
    # cycle before 2-3, but 0-2 (4) and 1-3 (5) lose
    d = np.array(
        [
            [0, 1, 4, 2.5],
            [1, 0, 3, 5],
            [4, 3, 0, 2],
            [2.5, 5, 2, 0],
        ]
    )
    assert minimum_spanning_edges(d) == {(0, 1), (2, 3), (0, 3)}


def test_prim_matches_scipy_on_random_matrices():
    rng = np.random.default_rng(0)
    for n in (2, 3, 10, 30):
        points = rng.normal(size=(n, 3))
        d = ((points[:, None] - points[None]) ** 2).sum(-1)
        edges = minimum_spanning_edges(d)
        assert len(edges) == n - 1
        weight = sum(d[i, j] for i, j in edges)
        assert weight == pytest.approx(minimum_spanning_tree(d).sum())


def test_uuas_ignores_punctuation_as_hand_computed():
    # "the dog barks ." : the -> dog -> barks (root), "." -> barks
    heads = (2, 3, 0, 3)
    punctuation = (False, False, False, True)
    assert tree_edges(heads, ~np.array(punctuation)) == {(0, 1), (1, 2)}
    # predicted distances put "." next to "the" and "dog" far from "barks": without
    # punctuation the tree is the-dog (1), the-barks (2): one gold edge of two found
    predicted = np.array(
        [
            [0, 1, 2, 0.1],
            [1, 0, 3, 0.1],
            [2, 3, 0, 0.1],
            [0.1, 0.1, 0.1, 0],
        ]
    )
    assert uuas_counts(predicted, heads, punctuation) == (1, 2)
    # counted with punctuation, the star around "." would find only the gold edge barks-"."
    assert uuas_counts(predicted, heads) == (1, 3)
    # a sentence of one non-punctuation word is not scored
    assert uuas_counts(np.zeros((2, 2)), (0, 1), (False, True)) == (0, 0)


def test_root_accuracy_takes_the_shallowest_word_that_is_no_punctuation():
    heads = (2, 0, 2)
    assert root_correct(np.array([1.0, 0.2, 1.5]), heads) is True
    assert root_correct(np.array([0.1, 0.2, 1.5]), heads) is False
    # punctuation at depth 0 is skipped
    assert root_correct(np.array([1.0, 0.2, 0.0]), heads, (False, False, True)) is True
    # a punctuation root is scored, and wrong: no non-punctuation word is the root
    assert root_correct(np.array([1.0, 0.2, 0.0]), heads, (False, True, False)) is False


def test_spearman_averages_within_lengths_then_over_lengths():
    rng = np.random.default_rng(1)
    sentences = []
    for n in (3, 5, 5, 6, 51):
        sentences.append((rng.normal(size=(n, n)), rng.normal(size=(n, n))))
    average, by_length = spearman_by_length(sentences)
    assert sorted(by_length) == [5, 6]  # lengths 3 and 51 fall outside 5..50

    def rows(index):
        p, g = sentences[index]
        return [spearmanr(a, b).statistic for a, b in zip(p, g)]

    five = np.mean(rows(1) + rows(2))
    six = np.mean(rows(3))
    assert by_length[5] == pytest.approx(five)
    assert by_length[6] == pytest.approx(six)
    assert average == pytest.approx((five + six) / 2)


def test_spearman_of_depths_and_constant_rows():
    gold = np.array([0.0, 1, 1, 2, 3])
    average, _ = spearman_by_length([(gold * 2 + 1, gold)])
    assert average == pytest.approx(1.0)
    average, by_length = spearman_by_length([(np.ones(5), gold)])
    assert np.isnan(average) and by_length == {}


def test_minimum_spanning_edges_refuses_bad_matrices():
    with pytest.raises(ValueError, match="square"):
        minimum_spanning_edges(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        minimum_spanning_edges(np.full((2, 2), np.nan))
