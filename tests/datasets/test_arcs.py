"""Hewitt & Liang's dependency control heads for the biaffine probe (word types given by id):
one behaviour per type, the first / last word of the sentence, and an attachment to the word
itself on the ROOT slot (0), which the parser's candidates include and the word itself not."""

import numpy as np
import pytest

from probemeter.datasets.arcs import control_heads
from probemeter.datasets.dependency_control import CONTROL_BEHAVIOURS, dependency_control


def test_control_heads_follow_each_types_behaviour_with_self_on_the_root_slot():
    types = np.array([5, 7, 5, 9, 7, 9, 5, 11, 3, 3])
    sentences = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 2])
    heads = control_heads(types, sentences, random_state=4)
    behaviour = {
        t: CONTROL_BEHAVIOURS[b]
        for t, b in zip(
            types.tolist(),
            dependency_control([[str(t)] for t in types], random_state=4).behaviours,
        )
    }
    expected, start = [], 0
    for length in (3, 2, 5):
        for position in range(1, length + 1):
            rule = behaviour[int(types[start + position - 1])]
            head = {"self": position, "first": 1, "last": length}[rule]
            expected.append(0 if head == position else head)
        start += length
    np.testing.assert_array_equal(heads, expected)
    # the draw covers all three behaviours here, so each rule is exercised
    assert set(behaviour.values()) == set(CONTROL_BEHAVIOURS)


def test_control_heads_of_a_type_do_not_depend_on_the_other_words():
    heads = control_heads([4, 8], [0, 0], random_state=1)
    alone = control_heads([4, 8, 4, 8], [0, 0, 1, 1], random_state=1)
    np.testing.assert_array_equal(alone, np.concatenate([heads, heads]))


def test_control_heads_refuse_bad_inputs():
    with pytest.raises(ValueError, match="one length"):
        control_heads([1, 2], [0])
    with pytest.raises(ValueError, match="contiguously"):
        control_heads([1, 2, 3], [0, 1, 0])
