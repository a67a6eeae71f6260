"""One-hot and random baseline representations; the lookup model of App. C."""

import numpy as np
import pytest

from probemeter.pareto.baselines import (
    lookup_arc_labels,
    lookup_labels,
    one_hot_features,
    random_features,
)


def test_one_hot_columns_follow_training_frequency_and_unknowns_share_one():
    train, test = np.array([5, 2, 5, 7, 2, 5]), np.array([2, 9, 7])
    X_train, X_test, vocabulary = one_hot_features(train, test)
    assert vocabulary.tolist() == [5, 2, 7]
    assert X_train.shape == (6, 4) and np.all(X_train.sum(axis=1) == 1)
    assert X_train.argmax(axis=1).tolist() == [0, 1, 0, 2, 1, 0]
    assert X_test.argmax(axis=1).tolist() == [1, 3, 2]  # type 9 is unknown: column 3
    _, X_test_small, kept = one_hot_features(train, test, max_types=1)
    assert kept.tolist() == [5] and X_test_small.argmax(axis=1).tolist() == [1, 1, 1]


def test_random_features_are_fixed_per_type():
    types = np.array([3, 1, 3, 8])
    X = random_features(types, 16, random_state=4)
    np.testing.assert_array_equal(X[0], X[2])
    assert not np.allclose(X[0], X[1])
    np.testing.assert_array_equal(random_features(np.array([8]), 16, random_state=4)[0], X[3])
    assert abs(random_features(np.arange(2000), 8).std() - 1) < 0.05


def test_baselines_reject_bad_input():
    with pytest.raises(ValueError, match="types_train"):
        one_hot_features(np.array([]), np.array([1]))
    with pytest.raises(ValueError, match="max_types"):
        one_hot_features(np.array([1]), np.array([1]), max_types=0)
    with pytest.raises(ValueError, match="dim"):
        random_features(np.array([1]), 0)
    with pytest.raises(ValueError, match="train_labels"):
        lookup_labels(["a", "b"], [0], ["a"])


def test_pos_lookup_uses_most_common_tag_then_the_overall_one():
    words = ["the", "run", "run", "run", "dog", "dog", "the"]
    tags = [0, 2, 1, 2, 1, 1, 0]  # overall: 1 (x3) beats 0 and 2 (x2 each)
    got = lookup_labels(words, tags, ["run", "the", "cat", "dog"])
    assert got.tolist() == [2, 0, 1, 1]


def test_pos_lookup_breaks_ties_towards_the_smaller_label():
    assert lookup_labels(["a", "a"], [4, 3], ["a"]).tolist() == [3]


def test_arc_lookup_applies_the_four_rules_in_order():
    arcs = [("dog", "barks"), ("dog", "barks"), ("dog", "saw"), ("the", "dog"), ("cat", "saw")]
    labels = [0, 0, 1, 2, 1]  # overall most frequent: 0 and 1 tie (x2) -> 0
    test = [
        ("dog", "saw"),  # (i) seen arc: 1
        ("dog", "runs"),  # (ii) unseen arc, tail 'dog' seen: its most common label 0
        ("a", "saw"),  # (iii) tail unknown, head 'saw' heads labels 1, 1: 1
        ("a", "b"),  # (iv) both unknown: overall 0
        ("the", "cat"),  # (ii): tail 'the' -> 2
    ]
    assert lookup_arc_labels(arcs, labels, test).tolist() == [1, 0, 1, 0, 2]


def test_ud2pos_word_types_are_real_english_tags():
    pytest.importorskip("probemeter.datasets.word_types")
    from probemeter.datasets.conll import UPOS_TAGS
    from probemeter.datasets.word_types import ud2pos_word_types

    try:
        forms, labels = ud2pos_word_types()
    except ValueError as error:
        pytest.skip(str(error))
    tag = dict(zip(forms, labels))
    assert len(forms) > 20000 and len(set(forms)) == len(forms)
    assert UPOS_TAGS[tag["the"]] == "DET" and UPOS_TAGS[tag[","]] == "PUNCT"
    assert labels.max() < len(UPOS_TAGS)
