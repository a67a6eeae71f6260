"""Gold treebanks with official splits: files kept as split, one label vocabulary over all of
them (unseen labels reported, not renumbered), xpos and feats labels, multiword tokens."""

import numpy as np
import pytest

from probemeter.datasets import (
    NO_FEATURE,
    TreebankSplits,
    label_vocabulary,
    read_conllu,
    read_treebank_splits,
    task_labels,
    write_conllu,
)
from probemeter.datasets.conll import label_problem

pytest.importorskip("conllu", reason="conllu not installed (optional extra 'text')")


def row(*fields: object) -> str:
    return "\t".join(str(field) for field in fields)


def conllu(*sentences: list[str]) -> str:
    return "\n".join(line for sentence in sentences for line in [*sentence, ""]) + "\n"


# train: "punct" occurs before "nsubj"; test: "nsubj" first, then "vocative" (only in test)
TRAIN = conllu(
    [
        row(1, "Go", "go", "VERB", "VB", "Mood=Imp|VerbForm=Fin", 0, "root", "_", "_"),
        row(2, "!", "!", "PUNCT", ".", "_", 1, "punct", "_", "_"),
    ],
    [
        row(1, "Dogs", "dog", "NOUN", "NNS", "Number=Plur", 2, "nsubj", "_", "_"),
        row(2, "bark", "bark", "VERB", "VBP", "Mood=Ind|Tense=Pres", 0, "root", "_", "_"),
        row(3, ".", ".", "PUNCT", ".", "_", 2, "punct", "_", "_"),
    ],
)
DEV = conllu(
    [
        row(1, "Cats", "cat", "NOUN", "NNS", "Number=Plur", 2, "nsubj", "_", "_"),
        row(2, "sleep", "sleep", "VERB", "VBP", "_", 0, "root", "_", "_"),
    ],
)
# "I don't know, John": a multiword token (2-3) and an empty node (4.1)
TEST = conllu(
    [
        row(1, "I", "I", "PRON", "PRP", "Number=Sing|Person=1", 4, "nsubj", "_", "_"),
        row("2-3", "don't", "_", "_", "_", "_", "_", "_", "_", "_"),
        row(2, "do", "do", "AUX", "VBP", "_", 4, "aux", "_", "_"),
        row(3, "n't", "not", "PART", "RB", "Polarity=Neg", 4, "advmod", "_", "_"),
        row(4, "know", "know", "VERB", "VB", "_", 0, "root", "_", "_"),
        row("4.1", "know", "know", "VERB", "_", "_", "_", "_", "4:conj", "_"),
        row(5, ",", ",", "PUNCT", ",", "_", 6, "punct", "_", "_"),
        row(6, "John", "John", "PROPN", "NNP", "Number=Sing", 4, "vocative", "_", "_"),
    ],
)


@pytest.fixture
def splits(tmp_path) -> TreebankSplits:
    for name, text in (("train", TRAIN), ("dev", DEV), ("test", TEST)):
        (tmp_path / f"x-ud-{name}.conllu").write_text(text, encoding="utf-8")
    return read_treebank_splits(
        tmp_path / "x-ud-train.conllu", tmp_path / "x-ud-test.conllu", tmp_path / "x-ud-dev.conllu"
    )


@pytest.mark.filterwarnings("ignore:test labels .* never occur")
def test_official_splits_are_kept_as_the_files_hold_them(splits):
    assert splits.train.sentences == (("Go", "!"), ("Dogs", "bark", "."))
    assert splits.dev.sentences == (("Cats", "sleep"),)
    # multiword token 2-3 read as its two syntactic words, empty node 4.1 skipped
    assert splits.test.sentences == (("I", "do", "n't", "know", ",", "John"),)
    assert splits.test.heads == ((4, 4, 4, 0, 6, 4),)
    combined = splits.combined
    assert combined.sentences == splits.train.sentences + splits.test.sentences
    np.testing.assert_array_equal(splits.test_mask, [False] * 5 + [True] * 6)
    # features = word index: the pool is exactly train's words, the test set test's, in order
    index = np.arange(11, dtype=np.float64)[:, None]
    data = splits.probe_data(index, "upos")
    pool = np.arange(5.0)
    restored = data.X_test[:, 0] * pool.std() + pool.mean()
    np.testing.assert_allclose(restored, np.arange(5, 11), atol=1e-5)
    tags = [splits.vocabulary("upos")[i] for i in data.y_test]
    assert tags == ["PRON", "AUX", "PART", "VERB", "PUNCT", "PROPN"]
    assert data.pool_size == 5


@pytest.mark.filterwarnings("ignore:test labels .* never occur")
def test_one_deprel_vocabulary_over_all_splits(splits):
    vocabulary = splits.vocabulary("deprel")
    assert vocabulary == ("advmod", "aux", "nsubj", "punct", "root", "vocative")
    # the same vocabulary whatever the order labels first occur in (train: punct first,
    # test: nsubj first), so punct has one id in both files
    train_ids, _ = task_labels(splits.train, "deprel", vocabulary)
    test_ids, _ = task_labels(splits.test, "deprel", vocabulary)
    punct = vocabulary.index("punct")
    assert train_ids.tolist() == [4, punct, 2, 4, punct]
    assert test_ids.tolist() == [2, 1, 0, 4, punct, vocabulary.index("vocative")]
    # the bug fixed: per-file vocabularies give punct different ids in train and test
    own_train = task_labels(splits.train, "deprel")[1]
    own_test = task_labels(splits.test, "deprel")[1]
    assert own_train.index("punct") != own_test.index("punct")
    data = splits.probe_data(np.ones((11, 2)), "deprel")
    assert data.classes == vocabulary and data.n_classes == 6
    np.testing.assert_array_equal(data.y_test, test_ids)


def test_labels_unseen_in_train_are_reported_not_renumbered(splits):
    assert splits.unseen("deprel") == {"test": {"advmod": 1, "aux": 1, "vocative": 1}}
    assert splits.unseen("upos") == {"test": {"AUX": 1, "PART": 1, "PRON": 1, "PROPN": 1}}
    line = splits.describe_unseen("deprel")
    assert line == (
        "test: 3 words with 3 deprel labels never seen in train (advmod 1, aux 1, vocative 1)"
    )
    # test words lack Mood, as train's "!" does: nothing unseen
    assert splits.describe_unseen("feats:Mood") is None


def test_xpos_and_feature_labels(splits):
    assert splits.vocabulary("xpos") == (",", ".", "NNP", "NNS", "PRP", "RB", "VB", "VBP")
    vocabulary = splits.vocabulary("feats:Number")
    assert vocabulary == ("Plur", "Sing", NO_FEATURE)
    ids, _ = task_labels(splits.test, "feats:Number", vocabulary)
    assert [vocabulary[i] for i in ids] == ["Sing", "_", "_", "_", "_", "Sing"]
    assert splits.unseen("feats:Number") == {"test": {"Sing": 2}}
    with pytest.raises(ValueError, match="outside the vocabulary"):
        task_labels(splits.test, "deprel", ("root", "punct"))


def test_label_names_are_checked():
    assert label_problem("feats:Number") is None
    assert label_problem("feats:Number[psor]") is None
    for bad in ("lemma", "feats:", "feats:a b", 3):
        assert "feats:<Name>" in label_problem(bad)


def test_xpos_and_feats_round_trip_and_are_optional(tmp_path):
    treebank = read_conllu(TEST)
    write_conllu(treebank, tmp_path / "t.conllu")
    assert read_conllu(tmp_path / "t.conllu") == treebank
    # a file without XPOS or FEATS annotation carries neither column
    bare = read_conllu(conllu([row(1, "Hi", "_", "INTJ", "_", "_", 0, "root", "_", "_")]))
    assert bare.xpos is None and bare.feats is None
    with pytest.raises(ValueError, match="needs the XPOS column"):
        label_vocabulary([bare], "xpos")


@pytest.mark.filterwarnings("ignore:test labels .* never occur")
def test_parsing_and_arc_labelling_on_the_official_split(splits):
    from probemeter.pareto import treebank_tasks

    features = np.random.default_rng(0).normal(size=(11, 4))
    vocabulary = splits.vocabulary("deprel")
    posl, dal, parsing = treebank_tasks(
        splits.combined, features, splits.test_mask, relations=vocabulary
    )
    # the parsing probe's data are the files' own sentences and heads
    assert parsing.heads_train.tolist() == [0, 1, 2, 0, 2]
    assert parsing.heads_test.tolist() == [4, 4, 4, 0, 6, 4]
    assert posl.pool_size == 5 and len(posl.y_test) == 6
    # arcs [tail; head] of test (the root left out), labelled with the shared vocabulary
    assert dal.n_classes == len(vocabulary) and dal.n_features == 8
    names = [vocabulary[i] for i in dal.y_test]
    assert names == ["nsubj", "aux", "advmod", "punct", "vocative"]
