"""Control tasks, shuffled labels, selectivity and the orthonormal random encoder."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter.data import ProbeData
from probemeter.mdl.controls import (
    control_task,
    control_task_labels,
    selectivity,
    shuffled_labels,
)


def _word_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.zipf(1.5, size=n) % 300
    y = rng.choice(5, size=n, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return ProbeData.from_arrays(x, y, groups=groups, test_size=0.25, random_state=seed), groups, y


def test_control_labels_are_a_function_of_word_type_only():
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
