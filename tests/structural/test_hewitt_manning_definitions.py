"""UUAS, root accuracy and the Spearman correlations as Hewitt & Manning's code defines them
(john-hewitt/structural-probes, ``structural-probes/reporter.py``), on hand-computed sentences:
punctuation by their PTB tags where XPOS is at hand, the gold tree over the non-punctuation
words (n′ − 1 edges), sentences whose root is punctuation counted; and on gold English EWT."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from probemeter.data import ProbeData
from probemeter.datasets.conll import UPOS_TAGS, Treebank
from probemeter.structural.evaluation import (
    gold_edges,
    root_correct,
    spearman_by_length,
    tree_edges,
    uuas_counts,
)
from probemeter.structural.method import probe_trees
from probemeter.structural.scoring import SentencePredictions, score
from probemeter.structural.trees import XPOS_PUNCTUATION_TAGS, TreeData, tree_distances

EWT = Path(__file__).resolve().parents[2] / ".." / "shared" / "ud"


def test_the_gold_tree_over_non_punctuation_words_joins_across_punctuation():
    # "a b , c d": a -> b (root), "," -> b, c -> ",", d -> c; the words a, b, c, d are kept
    heads = (2, 0, 2, 3, 4)
    keep = np.array([True, True, False, True, True])
    # the tree's edges among kept words are a-b and c-d only; the gold tree over the kept
    # words adds b-c (distance 2 through ","): n' - 1 = 3 edges
    assert tree_edges(heads, keep) == {(0, 1), (3, 4)}
    assert gold_edges(heads, keep) == [(0, 1), (1, 3), (3, 4)]
    # three words on a punctuation root: every pair at distance 2, ties to the first pairs
    assert gold_edges((4, 4, 4, 0), np.array([True, True, True, False])) == [(0, 1), (0, 2)]
    # without punctuation the gold tree is the tree
    assert gold_edges(heads) == sorted(tree_edges(heads))
    # the minimum spanning tree of predictions that join b-d instead of b-c finds 2 of 3
    predicted = np.full((5, 5), 9.0)
    for i, j, d in ((0, 1, 1.0), (1, 4, 1.5), (3, 4, 1.0), (1, 3, 2.5)):
        predicted[i, j] = predicted[j, i] = d
    assert uuas_counts(predicted, heads, ~keep) == (2, 3)


def test_root_accuracy_counts_sentences_whose_root_is_punctuation():
    trees = TreeData(
        ((2, 0, 2), (2, 0, 2), (0, 1), (0, 1)),
        punctuation=((False, False, True), (False, True, False), (True, True), (False, False)),
    )
    predicted = (
        np.array([0.9, 0.5, 0.1]),  # "." shallowest, skipped: word 1, the root: right
        np.array([0.9, 0.1, 0.5]),  # the root is punctuation: word 2 is taken, wrong
        np.array([0.3, 0.2]),  # all punctuation: the shallowest word, word 1, not the root
        np.array([0.2, 0.2]),  # a tie goes to the first word, the root: right
    )
    flags = [root_correct(p, trees.heads[s], trees.punctuation[s]) for s, p in enumerate(predicted)]
    assert flags == [True, False, False, True]
    predictions = SentencePredictions(
        (0, 1, 2, 3), predicted, tuple(trees.depths(s).astype(float) for s in range(4))
    )
    assert score(predictions, trees, "depth").root_accuracy == 0.5  # 2 of all 4 sentences


def test_uuas_sums_edges_over_the_corpus():
    # sentence 0: "a b , c d" as above, 2 of 3 gold edges; sentence 1: "x y ." all found (1/1)
    trees = TreeData(
        ((2, 0, 2, 3, 4), (2, 0, 2)),
        punctuation=((False, False, True, False, False), (False, False, True)),
    )
    first = np.full((5, 5), 9.0)
    for i, j, d in ((0, 1, 1.0), (1, 4, 1.5), (3, 4, 1.0), (1, 3, 2.5)):
        first[i, j] = first[j, i] = d
    np.fill_diagonal(first, 0.0)
    second = tree_distances((2, 0, 2)).astype(float)
    gold = tuple(trees.distances(s).astype(float) for s in range(2))
    predictions = SentencePredictions((0, 1), (first, second), gold)
    assert score(predictions, trees, "distance").uuas == pytest.approx(3 / 4)


def test_spearman_of_depths_by_hand():
    # gold depths 1, 0, 1, 2, 2 have average ranks 2.5, 1, 2.5, 4.5, 4.5; predictions rank
    # 3, 1, 2, 5, 4; centred: (-.5, -2, -.5, 1.5, 1.5) and (0, -2, -1, 2, 1): 9 / sqrt(9 * 10)
    gold = np.array([1.0, 0, 1, 2, 2])
    predicted = np.array([0.5, 0.1, 0.4, 0.9, 0.8])
    average, by_length = spearman_by_length([(predicted, gold)])
    assert by_length == {5: pytest.approx(9 / math.sqrt(90))}
    assert average == pytest.approx(9 / math.sqrt(90))
    # a 4-word sentence is outside the lengths 5-50 and does not count; two of length 5 are
    # averaged first, then the lengths
    average, by_length = spearman_by_length(
        [(predicted, gold), (gold, gold), (np.arange(4.0), np.arange(4.0)[::-1])]
    )
    assert by_length == {5: pytest.approx((9 / math.sqrt(90) + 1) / 2)} and average < 1


def _treebank(xpos: tuple[str, ...] | None) -> Treebank:
    """'He said : `` go - on '' , Dad' with UPOS and, optionally, PTB XPOS."""
    upos = ("PRON", "VERB", "PUNCT", "PUNCT", "VERB", "PUNCT", "ADP", "PUNCT", "PUNCT", "SYM")
    deprels = ("nsubj", "root", "punct", "punct", "ccomp", "punct", "compound:prt", "punct")
    return Treebank(
        sentences=(("He", "said", ":", "``", "go", "-", "on", "''", ",", "Dad"),),
        upos=(upos,),
        heads=((2, 0, 2, 5, 2, 7, 5, 5, 10, 2),),
        deprels=((*deprels, "punct", "vocative"),),
        silver=False,
        source="<test>",
        xpos=None if xpos is None else (xpos,),
    )


def _marks(flags: str) -> tuple[bool, ...]:
    return tuple(flag == "1" for flag in flags)


def test_punctuation_by_ptb_xpos_where_the_treebank_has_it():
    xpos = ("PRP", "VBD", ":", "``", "VB", "HYPH", "RP", "''", ",", "NNP")
    by_xpos = TreeData.from_treebank(_treebank(xpos))
    # Hewitt & Manning's tags: ":", "``", "''", ","; the hyphen (HYPH) is no punctuation
    assert by_xpos.punctuation == (_marks("0011000110"),)
    assert by_xpos.punctuation_rule == "XPOS '' , . : `` -LRB- -RRB- (Hewitt & Manning 2019)"
    by_upos = TreeData.from_treebank(_treebank(xpos), punctuation="upos")
    assert by_upos.punctuation == (_marks("0011010110"),)
    assert by_upos.punctuation_rule == "UPOS PUNCT"
    assert TreeData.from_treebank(_treebank(None)).punctuation == by_upos.punctuation
    with pytest.raises(ValueError, match="punctuation='xpos' needs PTB XPOS tags"):
        TreeData.from_treebank(_treebank(None), punctuation="xpos")
    with pytest.raises(ValueError, match="punctuation must be"):
        TreeData.from_treebank(_treebank(xpos), punctuation="PUNCT")


def test_probe_trees_reads_xpos_tag_ids_when_given_their_vocabulary():
    vocabulary = ("PRP", "VBD", ":", "``", "VB", "HYPH", "RP", "''", ",", "NNP")
    ids = np.arange(10)
    upos = np.array([UPOS_TAGS.index(t) for t in _treebank(None).upos[0]])
    heads = np.array(_treebank(None).heads[0])

    def data(groups: np.ndarray) -> ProbeData:
        # one sentence as the pool, a two-word sentence as the test set
        return ProbeData(
            X_train=np.zeros((10, 2), np.float32),
            y_train=heads,
            X_test=np.zeros((2, 2), np.float32),
            y_test=np.array([0, 1]),
            n_classes=11,
            groups_train=groups,
            groups_test=np.array([0, 8]),
            sentences_train=np.zeros(10, np.int64),
            sentences_test=np.ones(2, np.int64),
        )

    _, trees, pool, test = probe_trees(data(ids), vocabulary)
    assert trees.punctuation[0] == TreeData.from_treebank(_treebank(vocabulary)).punctuation[0]
    assert trees.punctuation[1] == (False, True) and trees.punctuation_rule.startswith("XPOS")
    assert pool.tolist() == [0] and test.tolist() == [1]
    _, trees, _, _ = probe_trees(data(upos))
    assert trees.punctuation[0] == TreeData.from_treebank(_treebank(None)).punctuation[0]
    assert trees.punctuation_rule == "UPOS PUNCT"
    with pytest.raises(ValueError, match=r"tag ids outside 0\.\.2"):
        probe_trees(data(ids), vocabulary[:3])


@pytest.mark.slow
def test_gold_ewt_by_the_definitions():
    """English EWT dev, gold: punctuation by Hewitt & Manning's XPOS tags, counted from the
    file's columns; n' - 1 gold edges per sentence; gold distances and depths as predictions
    score UUAS, DSpr., NSpr. and root accuracy 1 over all 2,001 sentences."""
    path = EWT / "en_ewt-ud-dev.conllu"
    if not path.exists():
        pytest.skip(f"gold EWT is not at {EWT} (../shared/ud beside the repository)")
    from probemeter.datasets.conll import read_conllu

    words, punctuation_roots = [], []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        rows = [line.split("\t") for line in block.splitlines() if not line.startswith("#")]
        rows = [row for row in rows if row[0].isdigit()]
        marks = [row[4] in XPOS_PUNCTUATION_TAGS for row in rows]
        if any(m and row[6] == "0" for m, row in zip(marks, rows)):
            punctuation_roots.append(len(words))
        words.append(marks)
    trees = TreeData.from_treebank(read_conllu(path))
    assert trees.n_sentences == len(words) == 2001
    assert [list(p) for p in trees.punctuation] == words
    assert trees.punctuation_rule.startswith("XPOS")
    kept = [len(m) - sum(m) for m in words]
    sentences = range(trees.n_sentences)
    distances = SentencePredictions(
        tuple(sentences),
        tuple(trees.distances(s).astype(float) for s in sentences),
        tuple(trees.distances(s).astype(float) for s in sentences),
    )
    depths = SentencePredictions(
        tuple(sentences),
        tuple(trees.depths(s).astype(float) for s in sentences),
        tuple(trees.depths(s).astype(float) for s in sentences),
    )
    edges = [len(gold_edges(h, ~np.array(p))) for h, p in zip(trees.heads, trees.punctuation)]
    assert edges == [max(k - 1, 0) for k in kept]
    near, deep = score(distances, trees, "distance"), score(depths, trees, "depth")
    assert near.uuas == 1.0 and near.spearman == pytest.approx(1.0)
    assert deep.spearman == pytest.approx(1.0)
    # six sentences have a punctuation root, all of them punctuation only ("?", "[...]"):
    # counted, and right, since the shallowest of their words is the root
    assert len(punctuation_roots) == 6 and all(all(words[s]) for s in punctuation_roots)
    assert deep.root_accuracy == 1.0
