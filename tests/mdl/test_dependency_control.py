"""Hewitt & Liang's dependency control task: each word type attaches to itself, the first or
the last word of its sentence, and carries one control relation, as a function of the word
form and the seed alone."""

import hashlib
from collections import Counter

import numpy as np
import pytest

from probemeter.mdl import CONTROL_BEHAVIOURS, dependency_control

SENTENCES = [
    ("the", "cat", "sat", "on", "the", "mat"),
    ("a", "dog", "sat"),
    ("cat", "the", "dog"),
]
RELATIONS = [
    ("det", "nsubj", "root", "case", "det", "obl"),
    ("det", "nsubj", "root"),
    ("nsubj", "det", "root"),
]


def test_heads_follow_each_types_behaviour_by_hand():
    control = dependency_control(SENTENCES, random_state=0)
    behaviour = {}
    words = [word for sentence in SENTENCES for word in sentence]
    for word, b in zip(words, control.behaviours.tolist()):
        assert behaviour.setdefault(word, b) == b  # one behaviour per type, every token
    expected = []
    for sentence in SENTENCES:
        for position, word in enumerate(sentence, start=1):
            name = CONTROL_BEHAVIOURS[behaviour[word]]
            expected.append({"self": position, "first": 1, "last": len(sentence)}[name])
    assert control.heads.tolist() == expected
    assert control.labels is None
    # the behaviour is the documented hash of seed and form: reproducible anywhere
    for word, b in behaviour.items():
        digest = hashlib.blake2b(f"0\x00behaviour\x00{word}".encode(), digest_size=8).digest()
        assert b == int(3 * int.from_bytes(digest, "big") / 2**64)


def test_the_control_is_a_function_of_the_word_type_and_seed_alone():
    many = [tuple(f"w{i}-{j}" for j in range(5)) for i in range(400)]
    control = dependency_control(many, random_state=3)
    # the same word in another corpus, another sentence and position: the same behaviour
    shuffled = [tuple(reversed(sentence)) for sentence in reversed(many)]
    again = dependency_control(shuffled, random_state=3)
    first = dict(zip((w for s in many for w in s), control.behaviours.tolist()))
    second = dict(zip((w for s in shuffled for w in s), again.behaviours.tolist()))
    assert first == second
    # the three behaviours are drawn uniformly: 2000 types, each about a third
    shares = np.bincount(control.behaviours, minlength=3) / 2000
    np.testing.assert_allclose(shares, [1 / 3] * 3, atol=0.04)
    # another seed, another assignment
    other = dependency_control(many, random_state=4).behaviours
    assert 0.5 < np.mean(other != control.behaviours) < 0.8


def test_control_relations_follow_the_empirical_distribution_per_type():
    vocabulary = ("case", "det", "nsubj", "obl", "root", "vocative")  # one unseen relation
    control = dependency_control(SENTENCES, RELATIONS, vocabulary=vocabulary, random_state=1)
    assert control.vocabulary == vocabulary
    words = [word for sentence in SENTENCES for word in sentence]
    per_type = {}
    for word, label in zip(words, control.labels.tolist()):
        assert per_type.setdefault(word, label) == label
    assert vocabulary.index("vocative") not in control.labels  # probability 0
    # the inverse distribution function, by hand, from the same per-type uniform numbers
    many = [tuple(f"t{i}-{j}" for j in range(6)) for i in range(500)]
    relations = [RELATIONS[0]] * 500
    big = dependency_control(many, relations, random_state=2)
    counts = Counter(RELATIONS[0])
    expected = np.array([counts[label] for label in big.vocabulary]) / 6
    shares = np.bincount(big.labels, minlength=len(big.vocabulary)) / big.labels.size
    np.testing.assert_allclose(shares, expected, atol=0.03)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="non-empty word lists"):
        dependency_control([("a",), ()])
    with pytest.raises(ValueError, match="one label per word"):
        dependency_control([("a", "b")], [("det",)])
    with pytest.raises(ValueError, match=r"\['det'\] are outside the vocabulary"):
        dependency_control([("a",)], [("det",)], vocabulary=("root",))
