"""Control tasks, shuffled labels, selectivity and the orthonormal random encoder."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter.data import ProbeData
from probemeter.mdl.controls import (
    control_task,
    control_task_labels,
    dependency_control,
    selectivity,
    shuffled_labels,
)


def _word_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.zipf(1.5, size=n) % 300
    y = rng.choice(5, size=n, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return ProbeData.from_arrays(x, y, groups=groups, test_size=0.25, random_state=seed), groups, y


def test_control_labels_are_one_per_word_type_within_a_corpus():
    data, _, _ = _word_data()
    control = control_task(data, random_state=4)
    groups = np.concatenate([data.groups_train, data.groups_test])
    labels = np.concatenate([control.y_train, control.y_test])
    for group in np.unique(groups):
        assert np.unique(labels[groups == group]).size == 1
    np.testing.assert_array_equal(control.X_train, data.X_train)
    assert control.name.endswith("(control)")
    # deterministic in random_state, different across seeds
    np.testing.assert_array_equal(control_task(data, random_state=4).y_train, control.y_train)
    assert not np.array_equal(control_task(data, random_state=5).y_train, control.y_train)


def test_control_labels_follow_the_empirical_distribution():
    groups = np.arange(20000)  # every example its own type: labels are i.i.d. draws of p(y)
    labels = np.repeat(np.arange(4), [10000, 6000, 3000, 1000])
    control, mapping = control_task_labels(groups, labels, random_state=0)
    frequencies = np.bincount(control, minlength=4) / control.size
    np.testing.assert_allclose(frequencies, [0.5, 0.3, 0.15, 0.05], atol=0.015)
    assert mapping[7] == control[7]


def test_control_labels_are_the_seeded_draws_of_the_sorted_types_present():
    """The documented rule: the i-th smallest type id present takes the i-th draw of
    ``default_rng(random_state).choice(K, p=p(y))``; a type's label depends on the other
    types present, not on the type alone."""
    labels = np.array([0, 0, 0, 1])  # p(y) = (3/4, 1/4)
    corpus = np.array([7, 3, 9, 3])
    control, mapping = control_task_labels(corpus, labels, random_state=11)
    draws = np.random.default_rng(11).choice(2, size=3, p=[0.75, 0.25])
    assert mapping == {3: draws[0], 7: draws[1], 9: draws[2]}
    np.testing.assert_array_equal(control, draws[[1, 0, 2, 0]])
    # type 1 present too (a smaller id): types 3, 7, 9 take draws 2-4 of the same stream
    _, shifted = control_task_labels(np.array([1, 7, 3, 9]), labels, random_state=11)
    longer = np.random.default_rng(11).choice(2, size=4, p=[0.75, 0.25])
    assert shifted == {1: longer[0], 3: longer[1], 7: longer[2], 9: longer[3]}
    # over 200 types, a type's label changes for some when one smaller id joins the corpus
    many = np.arange(1, 201)
    _, alone = control_task_labels(many, np.resize(labels, 200), random_state=11)
    _, joined = control_task_labels(np.arange(201), np.resize(labels, 201), random_state=11)
    assert any(alone[g] != joined[g] for g in many)


def test_dependency_control_relations_follow_the_corpus_relation_distribution():
    """Behaviours are hashed from the word form and the seed (the same in every corpus); the
    relation is F⁻¹(u) of the sentences given: with a single relation in the corpus, every
    word gets it, whatever it gets elsewhere."""
    sentences = [("the", "cat", "sat"), ("a", "dog", "ran")]
    mixed = dependency_control(
        sentences, [("det", "nsubj", "root")] * 2, vocabulary=("det", "nsubj", "root")
    )
    only_det = dependency_control(
        sentences, [("det", "det", "det")] * 2, vocabulary=("det", "nsubj", "root")
    )
    np.testing.assert_array_equal(only_det.behaviours, mixed.behaviours)
    np.testing.assert_array_equal(only_det.labels, [0] * 6)
    other_corpus = dependency_control([("sat", "the")], random_state=0)
    assert other_corpus.behaviours.tolist() == [mixed.behaviours[2], mixed.behaviours[0]]


def test_groups_of_wrong_length_are_rejected():
    with pytest.raises(ValueError, match="groups"):
        control_task_labels(np.zeros(5, int), np.zeros(6, int))
    with pytest.raises(ValueError, match="groups"):
        ProbeData.from_arrays(np.zeros((6, 2)), [0, 1, 0, 1, 0, 1], groups=np.zeros(5, int))
    data = ProbeData.from_arrays(np.random.default_rng(0).random((10, 2)), [0, 1] * 5)
    with pytest.raises(ValueError, match="groups"):
        control_task(data)


def test_shuffled_labels_keep_the_label_counts():
    data, _, _ = _word_data()
    shuffled = shuffled_labels(data, random_state=1)
    np.testing.assert_array_equal(np.sort(shuffled.y_train), np.sort(data.y_train))
    assert (shuffled.y_train != data.y_train).mean() > 0.3


def test_selectivity_is_task_minus_control():
    assert selectivity(0.97, 0.92) == pytest.approx(0.05)
    np.testing.assert_allclose(selectivity([0.9, 0.8], [0.95, 0.5]), [-0.05, 0.3])
