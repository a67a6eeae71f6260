"""Surface floors of texts (datasets/surface.py): every vocabulary learnt from the pool alone,
the features equal to scikit-learn's vectorisers' and to hand-counted values."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from probemeter.datasets.surface import (
    SURFACE_FLOORS,
    surface_features,
    word_tokens,
)

POOL = ["The cat sat on the mat", "A dog ran to the cat", "Dogs bark at night"]
TEST = ["The zebra sat", "night night cat"]
TEXTS = POOL + TEST
POOL_ROWS = [0, 1, 2]


def test_words_are_scikit_learns_default_tokens():
    # lowercased, two word characters or more: "A" and "I" are no tokens
    assert word_tokens("A cat, I said: Cat-like!") == ["cat", "said", "cat", "like"]


def test_bag_of_words_is_count_vectorizer_fitted_on_the_pool_only():
    features = surface_features("bag-of-words", TEXTS, POOL_ROWS)
    reference = CountVectorizer().fit(POOL)
    assert sp.isspmatrix_csr(features) and features.dtype == np.float32
    np.testing.assert_array_equal(features.toarray(), reference.transform(TEXTS).toarray())
    vocabulary = reference.vocabulary_
    assert "zebra" not in vocabulary  # a word of the test texts only gets no column
    assert features.shape == (5, len(vocabulary))
    # by hand: "The zebra sat" counts "the" and "sat" once, nothing else
    row = features[3].toarray()[0]
    assert row.sum() == 2 and row[vocabulary["the"]] == 1 and row[vocabulary["sat"]] == 1
    # "night night cat": night twice
    assert features[4, vocabulary["night"]] == 2 and features[4].sum() == 3


def test_tf_idf_is_tfidf_vectorizer_fitted_on_the_pool_and_the_smoothed_idf_by_hand():
    features = surface_features("tf-idf", TEXTS, POOL_ROWS)
    reference = TfidfVectorizer().fit(POOL)
    np.testing.assert_allclose(
        features.toarray(), reference.transform(TEXTS).toarray(), rtol=1e-6, atol=1e-7
    )
    # "The zebra sat": "the" in 2 of the 3 pool texts, "sat" in 1: idf = ln(4 / (1 + df)) + 1,
    # the row scaled to unit length
    idf_the, idf_sat = math.log(4 / 3) + 1, math.log(4 / 2) + 1
    norm = math.hypot(idf_the, idf_sat)
    vocabulary = reference.vocabulary_
    assert features[3, vocabulary["the"]] == pytest.approx(idf_the / norm, rel=1e-6)
    assert features[3, vocabulary["sat"]] == pytest.approx(idf_sat / norm, rel=1e-6)


def test_a_word_only_in_the_test_texts_changes_no_feature():
    for floor in ("bag-of-words", "tf-idf", "first-token", "last-token"):
        before = surface_features(floor, TEXTS, POOL_ROWS)
        changed = surface_features(floor, [*POOL, "The zebra okapi sat", TEST[1]], POOL_ROWS)
        assert before.shape == changed.shape, floor
        np.testing.assert_array_equal(before.toarray()[:3], changed.toarray()[:3])
    np.testing.assert_array_equal(before.toarray()[3], changed.toarray()[3])  # last-token: sat


def test_length_counts_tokens_of_words_or_of_a_tokenizer():
    texts = ["A cat sat.", "dogs bark at the night sky", "x"]
    words = surface_features("length", texts, [0, 1])
    assert words.dtype == np.float32 and words.shape == (3, 1)
    assert words[:, 0].tolist() == [2, 6, 0]  # "A" and "x" are one letter: no word tokens
    characters = surface_features("length", texts, [0, 1], tokenize=list)
    assert characters[:, 0].tolist() == [10, 26, 1]


def test_first_and_last_token_one_hot_over_the_pools_with_zeros_for_an_unseen_one():
    pool = ["x y", "y z", "x", ""]
    texts = [*pool, "z x", "w"]
    split = str.split
    first = surface_features("first-token", texts, range(4), tokenize=split).toarray()
    # the pool's first tokens: x, y, x and "" (no token): columns "", x, y in sorted order
    np.testing.assert_array_equal(
        first, [[0, 1, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]
    )
    last = surface_features("last-token", texts, range(4), tokenize=split).toarray()
    # the pool's last tokens: y, z, x, "": columns "", x, y, z; "z x" ends with x, "w" unseen
    np.testing.assert_array_equal(
        last,
        [[0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]],
    )


def test_every_floor_is_declared_once_with_help_and_refused_when_unknown():
    assert list(SURFACE_FLOORS) == ["bag-of-words", "tf-idf", "length", "first-token", "last-token"]
    for name, floor in SURFACE_FLOORS.items():
        assert floor.name == name and floor.help
    with pytest.raises(ValueError, match="unknown surface floor 'bow'"):
        surface_features("bow", TEXTS, POOL_ROWS)
    with pytest.raises(ValueError, match="hold no token"):
        surface_features("bag-of-words", ["a", "b", "c d"], [0, 1])
