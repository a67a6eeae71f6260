"""Gold Universal Dependencies English-EWT (the official dev and test files in
``<repo>/../shared/ud``): the CoNLL-U reader yields the sentence, word and (through the
multiword-token ranges) token counts that EWT's own ``stats.xml`` states per split, every word's
columns as the file holds them (multiword-token lines and empty nodes skipped), and the
treebank-splits helper labels both files with one vocabulary.

The expected values come from outside the reader: ``stats.xml`` (parsed here, split by split)
and a plain tab-split of the files' lines. Reading both files takes a few seconds, so the tests
are marked slow; they skip, naming the folder, where the files are absent.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from probemeter.datasets import NO_FEATURE, Treebank, TreebankSplits, read_conllu
from probemeter.datasets.conll import UPOS_TAGS

pytest.importorskip("conllu", reason="conllu not installed (optional extra 'text')")

#: the shared folder beside the repository that holds the gold EWT files
UD = Path(__file__).resolve().parents[2].parent / "shared" / "ud"
SPLITS = ("dev", "test")
#: the counts of UD_English-EWT's README table (and of stats.xml) for the two files here
README_COUNTS = {
    "dev": {"sentences": 2001, "tokens": 24787, "words": 25147, "fused": 359},
    "test": {"sentences": 2077, "tokens": 24740, "words": 25094, "fused": 354},
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all((UD / f"en_ewt-ud-{split}.conllu").is_file() for split in SPLITS)
        or not (UD / "stats.xml").is_file(),
        reason=f"gold UD English-EWT dev/test files and stats.xml not found in {UD}",
    ),
]


@dataclass(frozen=True)
class Lines:
    """A CoNLL-U file split into its lines by hand, without the reader: per sentence, the
    rows of its syntactic words (integer ids) as tuples of their ten fields; and the counts of
    the lines the reader skips: multiword-token ranges (with the number of words each spans)
    and empty nodes."""

    words: tuple[tuple[tuple[str, ...], ...], ...]
    ranges: tuple[int, ...]
    empty_nodes: int


def split_lines(path: Path) -> Lines:
    sentences, current, ranges, empty = [], [], [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if current:
                sentences.append(tuple(current))
                current = []
            continue
        if line.startswith("#"):
            continue
        fields = tuple(line.split("\t"))
        assert len(fields) == 10, line
        if "-" in fields[0]:
            first, last = (int(part) for part in fields[0].split("-"))
            ranges.append(last - first + 1)
        elif "." in fields[0]:
            empty += 1
        else:
            current.append(fields)
    if current:
        sentences.append(tuple(current))
    return Lines(tuple(sentences), tuple(ranges), empty)


def stats_counts() -> dict[str, dict[str, int]]:
    """``<size>`` of ``stats.xml``: per split, its sentences, tokens, words and fused
    (multiword) tokens."""
    size = ET.parse(UD / "stats.xml").getroot().find("size")
    return {
        split: {item.tag: int(item.text) for item in size.find(split)}
        for split in ("total", "train", "dev", "test")
    }


@pytest.fixture(scope="module")
def gold() -> dict[str, Treebank]:
    return {split: read_conllu(UD / f"en_ewt-ud-{split}.conllu") for split in SPLITS}


@pytest.fixture(scope="module")
def lines() -> dict[str, Lines]:
    return {split: split_lines(UD / f"en_ewt-ud-{split}.conllu") for split in SPLITS}


def test_stats_xml_states_the_counts_of_the_readme():
    counts = stats_counts()
    for split in SPLITS:
        assert counts[split] == README_COUNTS[split]
    # the three splits add up to the treebank's total
    for key in ("sentences", "tokens", "words", "fused"):
        assert sum(counts[s][key] for s in ("train", "dev", "test")) == counts["total"][key]


@pytest.mark.parametrize("split", SPLITS)
def test_the_reader_yields_the_counts_stats_xml_states(gold, lines, split):
    stated = stats_counts()[split]
    treebank, found = gold[split], lines[split]
    assert treebank.n_sentences == stated["sentences"]
    # words are the syntactic words: multiword-token lines and empty nodes are not words
    assert treebank.n_words == len(treebank.words) == stated["words"]
    assert len(treebank.sentence_ids) == len(treebank.upos_ids) == stated["words"]
    # a multiword token is one token for the words it spans: tokens = words - sum(span - 1)
    assert len(found.ranges) == stated["fused"]
    assert treebank.n_words - sum(span - 1 for span in found.ranges) == stated["tokens"]
    # EWT's enhanced graphs hold empty nodes (4 in dev, 2 in test): none became a word
    assert found.empty_nodes == {"dev": 4, "test": 2}[split]
    assert not treebank.silver and treebank.source == str(UD / f"en_ewt-ud-{split}.conllu")


@pytest.mark.parametrize("split", SPLITS)
def test_every_word_has_the_columns_the_file_holds(gold, lines, split):
    treebank, found = gold[split], lines[split]
    assert len(found.words) == treebank.n_sentences
    for index, rows in enumerate(found.words):
        assert [int(row[0]) for row in rows] == list(range(1, len(rows) + 1))
        assert treebank.sentences[index] == tuple(row[1] for row in rows)
        assert treebank.upos[index] == tuple(row[3] for row in rows)
        assert treebank.xpos[index] == tuple(row[4] for row in rows)
        assert treebank.feats[index] == tuple(row[5] for row in rows)
        assert treebank.heads[index] == tuple(int(row[6]) for row in rows)
        assert treebank.deprels[index] == tuple(row[7] for row in rows)
        # one root per sentence in the basic tree
        assert treebank.heads[index].count(0) == 1


def test_one_label_vocabulary_over_dev_and_test(gold, lines):
    # dev is the pool (the split's "train"), test the test set; the train file is not at hand
    splits = TreebankSplits(train=gold["dev"], test=gold["test"])
    column = {"upos": 3, "xpos": 4, "deprel": 7}
    values = {
        split: {
            name: [row[i] for rows in lines[split].words for row in rows]
            for name, i in column.items()
        }
        for split in SPLITS
    }
    assert splits.vocabulary("upos") == UPOS_TAGS
    for name in ("xpos", "deprel"):
        union = sorted(set(values["dev"][name]) | set(values["test"][name]))
        assert list(splits.vocabulary(name)) == union
    # subtyped relations (nmod:poss, obl:tmod, ...) are labels of their own
    assert {"nmod:poss", "compound:prt"} <= set(splits.vocabulary("deprel"))
    # labels of test never seen in dev are reported with their word counts, not renumbered
    seen = set(values["dev"]["deprel"])
    unseen = Counter(label for label in values["test"]["deprel"] if label not in seen)
    assert splits.unseen("deprel") == ({"test": dict(sorted(unseen.items()))} if unseen else {})
    # the ids: both files' words decode to their own labels through the one vocabulary
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning of test labels absent from the pool
        data = splits.probe_data(np.zeros((splits.combined.n_words, 1)), "deprel")
    vocabulary = splits.vocabulary("deprel")
    assert data.classes == vocabulary and data.n_classes == len(vocabulary)
    assert [vocabulary[i] for i in data.y_train] == values["dev"]["deprel"]
    assert [vocabulary[i] for i in data.y_test] == values["test"]["deprel"]
    # a feature's vocabulary holds "_" for the words without it
    assert NO_FEATURE in splits.vocabulary("feats:Number")
    assert {"Sing", "Plur"} <= set(splits.vocabulary("feats:Number"))
