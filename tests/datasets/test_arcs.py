"""Head selection and arc labelling data: Hewitt & Liang's dependency control heads for the
biaffine probe (word types given by id: one behaviour per type, the first / last word of the
sentence, and an attachment to the word itself on the ROOT slot (0), which the parser's
candidates include and the word itself not); arc labels from dependent-head pairs, whose
classes are the labels of their rows (root arcs are none); trees checked for every label that
reads heads."""

from dataclasses import replace

import numpy as np
import pytest

from probemeter.datasets.arcs import (
    arc_label_data,
    arc_relations,
    check_trees,
    control_heads,
    head_probe_data,
)
from probemeter.datasets.conll import UPOS_TAGS, Treebank, write_conllu
from probemeter.datasets.dependency_control import CONTROL_BEHAVIOURS, dependency_control
from probemeter.datasets.treebank_splits import ARC_LABELS, read_treebank_splits


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


# "the dog barks" / "run !" / "a cat saw it": the third sentence is the test set
BANK = Treebank(
    sentences=(("the", "dog", "barks"), ("run", "!"), ("a", "cat", "saw", "it")),
    upos=(("DET", "NOUN", "VERB"), ("VERB", "PUNCT"), ("DET", "NOUN", "VERB", "PRON")),
    heads=((2, 3, 0), (0, 1), (2, 3, 0, 3)),
    deprels=(("det", "nsubj", "root"), ("root", "punct"), ("det", "nsubj", "root", "obj")),
    silver=False,
    source="hand",
)
TEST = np.array([False] * 5 + [True] * 4)


@pytest.mark.filterwarnings("ignore:test labels .* never occur")  # obj: in the test set only
def test_arc_label_data_rows_are_the_non_root_arcs_and_k_their_labels():
    features = np.column_stack([np.arange(9.0), 10 * np.arange(9.0)])  # word i: (i, 10 i)
    assert arc_relations([BANK]) == ("det", "nsubj", "obj", "punct")  # root labels no row
    data = arc_label_data(BANK, features, TEST, standardize=False, name="hand")
    assert data.n_classes == 4 and data.classes == ("det", "nsubj", "obj", "punct")
    # pool arcs the→dog, dog→barks, !→run; test arcs a→cat, cat→saw, it→saw
    np.testing.assert_array_equal(data.X_train, [[0, 0, 1, 10], [1, 10, 2, 20], [4, 40, 3, 30]])
    np.testing.assert_array_equal(data.X_test, [[5, 50, 6, 60], [6, 60, 7, 70], [8, 80, 7, 70]])
    np.testing.assert_array_equal(data.y_train, [0, 1, 3])  # det, nsubj, punct
    np.testing.assert_array_equal(data.y_test, [0, 1, 2])  # det, nsubj, obj
    np.testing.assert_array_equal(data.clusters_train, [0, 0, 1])  # the dependents' sentences
    np.testing.assert_array_equal(data.clusters_test, [2, 2, 2])
    types = BANK.word_type_ids  # the dependents' word types, for the control task
    np.testing.assert_array_equal(data.groups_train, types[[0, 1, 4]])
    np.testing.assert_array_equal(data.groups_test, types[[5, 6, 8]])
    # standardised with the pool words' statistics before pairing: word columns (0..4)
    scaled = arc_label_data(BANK, features, TEST)
    pool = features[:5]
    z = (features - pool.mean(0)) / pool.std(0)
    np.testing.assert_allclose(scaled.X_test[0], np.concatenate([z[5], z[6]]), rtol=1e-6)
    with pytest.raises(ValueError, match=r"'hand' has arc relations \['obj'\] outside"):
        arc_label_data(BANK, features, TEST, relations=("det", "nsubj", "punct"))
    with pytest.raises(ValueError, match="whole sentences"):
        arc_label_data(BANK, features, np.arange(9) < 2)


def test_trees_are_checked_for_every_label_that_reads_heads():
    cyclic = replace(BANK, heads=((2, 3, 0), (0, 1), (0, 3, 2, 3)))
    message = (
        r"^'hand' sentence 3, word 2: its heads form no tree: the heads of words 2 → 3 → 2 form "
        r"a cycle, which never reaches the root$"
    )
    features = np.ones((9, 2))
    with pytest.raises(ValueError, match=message):
        check_trees(cyclic)
    with pytest.raises(ValueError, match=message):
        head_probe_data(cyclic, features, TEST)
    with pytest.raises(ValueError, match=message):
        arc_label_data(cyclic, features, TEST)
    rootless = replace(BANK, heads=((2, 3, 0), (2, 1), (2, 3, 0, 3)))
    with pytest.raises(ValueError, match=r"'hand' sentence 2, word 1: .*no word has head 0"):
        head_probe_data(rootless, features, TEST)
    check_trees(BANK)


def test_official_split_arc_labels_count_the_labels_of_their_rows(tmp_path):
    files = {}
    for split, treebank in (("train", BANK), ("test", replace(BANK, deprels=VOCATIVE))):
        files[split] = tmp_path / f"{split}.conllu"
        write_conllu(treebank, files[split])
    splits = read_treebank_splits(files["train"], files["test"])
    assert splits.vocabulary("deprel") == ("det", "nsubj", "obj", "punct", "root", "vocative")
    assert splits.vocabulary(ARC_LABELS) == ("det", "nsubj", "obj", "punct", "vocative")
    # the test file's "it" is a vocative: one arc of a label train never has
    assert splits.unseen(ARC_LABELS) == {"test": {"vocative": 1}}
    assert splits.describe_unseen(ARC_LABELS) == (
        "test: 1 arc with 1 deprel-arcs label never seen in train (vocative 1)"
    )
    features = np.random.default_rng(0).normal(size=(splits.combined.n_words, 3))
    with pytest.warns(UserWarning, match="never occur in the training pool"):
        data = splits.probe_data(features, ARC_LABELS, name="r")
    assert data.n_classes == 5 and data.classes == splits.vocabulary(ARC_LABELS)
    assert (data.pool_size, len(data.y_test), data.n_features) == (6, 6, 6)  # 9 words, 3 roots
    assert [data.classes[i] for i in data.y_test[-3:]] == ["det", "nsubj", "vocative"]


VOCATIVE = (("det", "nsubj", "root"), ("root", "punct"), ("det", "nsubj", "root", "vocative"))


def test_tag_groups_are_ptb_xpos_where_the_treebank_has_them():
    """Structural runs lay out each word's tag: PTB XPOS where the treebank has them (Hewitt
    & Manning's punctuation is "," but not "HYPH", which UPOS calls PUNCT too), else UPOS."""
    from probemeter.structural.method import probe_trees

    bank = Treebank(
        sentences=(("well", ",", "re", "-", "run"), ("go", ".")),
        upos=(("INTJ", "PUNCT", "VERB", "PUNCT", "VERB"), ("VERB", "PUNCT")),
        heads=((5, 1, 5, 5, 0), (0, 1)),
        deprels=(("discourse", "punct", "compound", "punct", "root"), ("root", "punct")),
        xpos=(("UH", ",", "VB", "HYPH", "VB"), ("VB", ".")),
        silver=False,
        source="hand",
    )
    features = np.zeros((7, 2), dtype=np.float32)
    test = np.array([False] * 5 + [True] * 2)
    data = head_probe_data(bank, features, test, groups="tags", standardize=False)
    assert data.group_names == (",", ".", "HYPH", "UH", "VB")
    assert data.groups_train.tolist() == [3, 0, 4, 2, 4] and data.groups_test.tolist() == [4, 1]
    _, trees, _, _ = probe_trees(data)
    assert trees.punctuation == ((False, True, False, False, False), (False, True))
    assert trees.punctuation_rule.startswith("XPOS")
    plain = head_probe_data(replace(bank, xpos=None), features, test, groups="tags")
    assert plain.group_names == tuple(UPOS_TAGS)
    _, upos_trees, _, _ = probe_trees(plain)
    assert upos_trees.punctuation[0] == (False, True, False, True, False)  # "-" too, by UPOS
    with pytest.raises(ValueError, match="groups"):
        head_probe_data(bank, features, test, groups="xpos")
