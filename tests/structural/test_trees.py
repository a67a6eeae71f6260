"""Tree distances and depths from heads, checked on hand-drawn trees and against the embedding;
TreeData's checks and its construction from a Treebank."""

from __future__ import annotations

import numpy as np
import pytest
from structural_trees import path_heads, random_heads, star_heads, tree_embedding

from probemeter.datasets.conll import Treebank
from probemeter.structural.trees import TreeData, sentence_split, tree_depths, tree_distances


def test_distances_and_depths_of_a_hand_drawn_tree():
    # 1 <- 2 (root) -> 3 -> 4, and 5 hangs from 3
    heads = (2, 0, 2, 3, 3)
    assert tree_depths(heads).tolist() == [1, 0, 1, 2, 2]
    expected = [
        [0, 1, 2, 3, 3],
        [1, 0, 1, 2, 2],
        [2, 1, 0, 1, 1],
        [3, 2, 1, 0, 2],
        [3, 2, 1, 2, 0],
    ]
    assert tree_distances(heads).tolist() == expected


def test_path_and_star_distances():
    assert tree_distances(path_heads(6, 3)).tolist() == [
        [abs(i - j) for j in range(6)] for i in range(6)
    ]
    star = tree_distances(star_heads(5, 2))
    assert star[1].tolist() == [1, 0, 1, 1, 1]
    assert star[0].tolist() == [0, 1, 2, 2, 2]


def test_the_embedding_realises_tree_distances_and_depths_exactly():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 15):
        heads = random_heads(rng, n)
        x = tree_embedding(heads, n).astype(np.float64)
        squared = ((x[:, None] - x[None]) ** 2).sum(-1)
        np.testing.assert_array_equal(squared, tree_distances(heads))
        np.testing.assert_array_equal((x**2).sum(-1), tree_depths(heads))


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        ((0, 0), "2 roots, and a UD sentence has exactly one"),
        ((2, 3, 0, 9), "outside 0..4"),
        ((2, 1, 0), "cycle"),
        ((1, 0), "its own head"),
        ((), "non-empty"),
    ],
)
def test_heads_that_form_no_tree_are_refused(heads, message):
    with pytest.raises(ValueError, match=message):
        tree_distances(heads)


def test_tree_data_checks_and_padding():
    trees = TreeData(((2, 0), (0, 1, 1)))
    assert trees.n_words == 5 and trees.offsets.tolist() == [0, 2, 5]
    assert trees.padded("depth").tolist() == [[1, 0, 0], [0, 1, 1]]
    assert trees.padded("distance")[0].tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    with pytest.raises(ValueError, match=r"heads\[1\]: word 1 is its own head"):
        TreeData(((2, 0), (1, 0)))
    with pytest.raises(ValueError, match=r"punctuation\[0\] has 1 entries"):
        TreeData(((2, 0),), punctuation=((True,),))
    with pytest.raises(ValueError, match="target must be"):
        trees.padded("heads")


def test_from_treebank_marks_punctuation():
    treebank = Treebank(
        sentences=(("Dogs", "bark", "."),),
        upos=(("NOUN", "VERB", "PUNCT"),),
        heads=((2, 0, 2),),
        deprels=(("nsubj", "root", "punct"),),
        silver=True,
        source="<test>",
    )
    trees = TreeData.from_treebank(treebank)
    assert trees.punctuation == ((False, False, True),)
    assert trees.silver and trees.source == "<test>"


def test_sentence_split_keeps_whole_sentences_and_is_seeded():
    pool, test = sentence_split(10, 0.3, random_state=1)
    assert len(test) == 3 and len(pool) == 7
    assert sorted([*pool, *test]) == list(range(10))
    again = sentence_split(10, 0.3, random_state=1)
    assert pool.tolist() == again[0].tolist()
    with pytest.raises(ValueError, match="test_size"):
        sentence_split(10, 1.0)


def test_the_package_exports_resolve():
    import probemeter as pm
    from probemeter import structural

    assert pm.structural is structural
    for name in structural.__all__:
        assert getattr(structural, name) is not None


def test_trees_from_a_conllu_file_carry_its_heads_and_punctuation():
    from probemeter.datasets.conll import read_conllu

    text = (
        "1\tDogs\t_\tNOUN\t_\t_\t2\tnsubj\t_\t_\n"
        "2\tbark\t_\tVERB\t_\t_\t0\troot\t_\t_\n"
        "3\tloudly\t_\tADV\t_\t_\t2\tadvmod\t_\t_\n"
        "4\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n"
    )
    trees = TreeData.from_treebank(read_conllu(text))
    assert trees.heads == ((2, 0, 2, 2),)
    assert trees.punctuation == ((False, False, False, True),)
    assert trees.depths(0).tolist() == [1, 0, 1, 1]
