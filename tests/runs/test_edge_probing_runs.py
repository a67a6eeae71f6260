"""The ``edge-probing`` task of experiment files: its keys, the methods that can learn span
pooling, word features pooled into the targets' spans, and runs with both methods."""

from __future__ import annotations

import json

import numpy as np
import pytest
from experiment_files import EDGE_MDL, EDGE_WORDS, edge_probing_experiment, write_edge_probing_files

from probemeter.cli.main import main
from probemeter.datasets.edge_probing import (
    EdgeProbingSet,
    EdgeSentence,
    EdgeTarget,
    write_edge_probing,
)
from probemeter.encoders import TransformerEncoder
from probemeter.runs.config import ExperimentError, load_experiment
from probemeter.runs.runner import prepare_data

pytest.importorskip("transformers")

LABELS = {"the": "DET", "a": "DET", "cat": "NOUN", "mat": "NOUN", "dogs": "NOUN",
          "night": "NOUN", "fox": "NOUN", "books": "NOUN", "sat": "VERB", "bark": "VERB",
          "jumps": "VERB", "reads": "VERB", "on": "ADP", "at": "ADP", "quick": "ADJ",
          "old": "ADJ", "she": "PRON"}  # fmt: skip


def _phrases(sentences):
    """Every word as a target, and every two-word phrase labelled by its second word."""
    return EdgeProbingSet(
        tuple(
            EdgeSentence(
                words,
                tuple(EdgeTarget((i, i + 1), (LABELS[w],)) for i, w in enumerate(words))
                + tuple(EdgeTarget((i, i + 2), (LABELS[w],)) for i, w in enumerate(words[1:])),
            )
            for words in sentences
        )
    )  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_edge_probing_files(tmp_path_factory.mktemp("edges"), _phrases, test_copies=2)


CURVE = 'kind = "curve"\nepsilon = 0.5\nsizes = [20, 60]\nseeds = 1\nsteps = 5\nprobe = [8]'


def _experiment(folder, task="", method=CURVE):
    return edge_probing_experiment(folder, task, method)


def test_task_keys_and_methods_are_checked(files, tmp_path):
    experiment = load_experiment(_experiment(files))
    assert experiment.task.options["train"] == str(files / "train.json")
    assert experiment.task.options["pooling"] == "mean"
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[task]\ndataset = "edge-probing"\ntest = "nowhere.json"\npooling = "sum"\n'
        '[[representations]]\nname = "g"\nkind = "glove"\n[method]\nkind = "mdl"\n'
    )
    with pytest.raises(ExperimentError) as error:
        load_experiment(bad)
    problems = "\n".join(error.value.problems)
    assert "task.train: missing (required)" in problems
    assert "task.pooling: must be one of ['mean', 'max', 'endpoints', 'self-attention']" in problems


def test_word_features_are_pooled_into_the_spans_of_each_split(files):
    undeclared = load_experiment(_experiment(files, 'pooling = "self-attention"'))
    with pytest.raises(ExperimentError, match="'PRON' that no target of the pool"):
        prepare_data(undeclared)  # the test split alone never adds a label
    experiment = load_experiment(
        _experiment(files, 'pooling = "self-attention"\nlabels = ["PRON"]')
    )
    data = prepare_data(experiment)["bert-2"]
    encoder = TransformerEncoder(files / "tiny-bert", 2, pooling="words", progress=False)
    train_words = encoder.encode([list(w) for w in EDGE_WORDS[:3] * 4])
    test_words = encoder.encode([list(w) for w in EDGE_WORDS[3:] * 2])
    mean, std = train_words.mean(axis=0), train_words.std(axis=0)
    assert data.span_tokens == (2,) and data.n_features == 1 + 2 * train_words.shape[1]
    # the second target of the first sentence: "cat" alone (one token, one pad)
    np.testing.assert_allclose(data.X_train[1, 0], 1)
    np.testing.assert_allclose(data.X_train[1, 1:33], (train_words[1] - mean) / std, rtol=1e-5)
    np.testing.assert_array_equal(data.X_train[1, 33:], 0)
    # the first test phrase: "she reads", standardised with the training tokens' statistics
    first_phrase = len(EDGE_WORDS[3])
    np.testing.assert_allclose(data.X_test[first_phrase, 0], 2)
    expected = ((test_words[:2] - mean) / std).ravel()
    np.testing.assert_allclose(data.X_test[first_phrase, 1:], expected, rtol=1e-4, atol=1e-5)
    assert data.classes == ("ADJ", "ADP", "DET", "NOUN", "PRON", "VERB")  # PRON: declared
    assert data.y_test[0] == data.classes.index("PRON")
    # each target's sentence is its cluster: the first sentence's targets, then the second's
    targets = 2 * len(EDGE_WORDS[0]) - 1
    assert data.clusters_train[: targets + 1].tolist() == [0] * targets + [1]


@pytest.mark.slow
def test_runs_of_both_methods_on_an_edge_probing_task(files, tmp_path):
    curve = _experiment(files, 'pooling = "self-attention"\nlabels = ["PRON"]')
    assert main(["run", str(curve), "--out", str(tmp_path), "--no-progress", "--n-jobs", "1"]) == 0
    results = json.loads((tmp_path / "exp" / "results.json").read_text())
    assert [c["name"] for c in results["curves"]] == ["bert-0", "bert-2"]
    assert results["curves"][0]["metadata"]["probe"]["span"] == [2]
    mdl = _experiment(files, 'pooling = "endpoints"\nlabels = ["PRON"]', EDGE_MDL)
    assert main(["run", str(mdl), "--out", str(tmp_path / "mdl"), "--no-progress"]) == 0
    power = 'kind = "power"\nbaseline = "bert-0"\nper_class = [4]\nseeds = 1\nsteps = 5'
    # every class often enough for stratified 4:1:1 splits of 4 training examples per class
    write_edge_probing(_phrases(EDGE_WORDS[:3] * 6), files / "power_train.json")
    write_edge_probing(_phrases(EDGE_WORDS[:3] * 2), files / "power_test.json")
    span_power = _experiment(files, 'pooling = "self-attention"', power)
    text = span_power.read_text().replace('"train.json"', '"power_train.json"')
    span_power.write_text(text.replace('"test.json"', '"power_test.json"'))
    assert main(["run", str(span_power), "--out", str(tmp_path / "power"), "-q"]) == 0
    compared = json.loads((tmp_path / "power" / "exp" / "results.json").read_text())
    probes = compared["metadata"]["training"]["probes"]
    assert probes["bert-2"]["span"] == [2] and probes["bert-0"]["projection"] == 256
    results = json.loads((tmp_path / "mdl" / "exp" / "results.json").read_text())
    entry = results["entries"][0]
    assert entry["name"] == "bert-0" and entry["control_online"] is not None  # span-text control
