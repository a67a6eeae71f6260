"""Edge probing files (jiant's JSON lines), span representations computed by hand, one label
vocabulary over the splits, and the probing data the engine's span probes read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from probemeter.data import ProbeData
from probemeter.datasets.conll import Treebank
from probemeter.datasets.edge_probing import (
    EdgeProbingSet,
    EdgeSentence,
    EdgeTarget,
    SpanLayout,
    edge_labels,
    edge_probe_data,
    read_edge_probing,
    span_features,
    split_sentences,
    treebank_targets,
    write_edge_probing,
)
from probemeter.probes import probe_for

LINES = [
    {"text": "the cat sat", "targets": [{"span1": [0, 2], "span2": [2, 3], "label": "A0"}]},
    {"text": "dogs bark loudly today", "targets": [
        {"span1": [1, 2], "span2": [0, 1], "label": "A1", "info": {"x": 1}},
        {"span1": [2, 4], "span2": [1, 2], "label": "AM"},
    ]},
]  # fmt: skip


def _file(tmp_path, lines, name="train.json"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _features():
    """Token features whose values name them: sentence s, token t, dimension k → 100s + 10t + k."""
    return [
        np.array([[100 * s + 10 * t + k for k in range(2)] for t in range(n)], dtype=np.float32)
        for s, n in enumerate((3, 4))
    ]


def test_reader_and_writer_round_trip(tmp_path):
    data = read_edge_probing(_file(tmp_path, LINES))
    assert data.n_spans == 2 and len(data.targets) == 3 and data.n_tokens == 7
    assert data.sentences[1].tokens == ("dogs", "bark", "loudly", "today")
    assert data.targets[2] == EdgeTarget((2, 4), ("AM",), (1, 2))
    write_edge_probing(data, tmp_path / "again.json")
    again = read_edge_probing(tmp_path / "again.json")
    assert again.sentences == data.sentences


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", r"train.json:2: not JSON"),
        (json.dumps({"targets": []}), r"train.json:2: each line must be an object with a 'text'"),
        (json.dumps({"text": "a b", "targets": [{"span1": [1, 3], "label": "X"}]}),
         r"train.json:2: a span must be \[start, end\) with 0 <= start < end <= 2"),
        (json.dumps({"text": "a b", "targets": [{"span1": [0, 1]}]}),
         r"train.json:2: a target needs 'span1' and 'label'"),
        (json.dumps({"text": "a b", "targets": [{"span1": [0, 1], "label": "X"}]}),
         r"mix targets of one and of two spans"),
    ],
)  # fmt: skip
def test_bad_files_are_refused_naming_the_line(tmp_path, line, message):
    path = tmp_path / "train.json"
    path.write_text(json.dumps(LINES[0]) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message):
        read_edge_probing(path)


def test_fixed_poolings_pool_the_span_tokens():
    data = EdgeProbingSet((
        EdgeSentence(("a", "b", "c"), (EdgeTarget((0, 2), ("X",), (2, 3)),)),
        EdgeSentence(("d", "e", "f", "g"), (EdgeTarget((1, 4), ("Y",), (0, 1)),)),
    ))  # fmt: skip
    features = _features()
    mean, _ = span_features(data, features, "mean")
    # sentence 0: span1 = tokens 0-1 → mean (5, 6); span2 = token 2 → (20, 21)
    # sentence 1: span1 = tokens 1-3 → mean (120, 121); span2 = token 0 → (100, 101)
    np.testing.assert_array_equal(mean, [[5, 6, 20, 21], [120, 121, 100, 101]])
    maximum, _ = span_features(data, features, "max")
    np.testing.assert_array_equal(maximum, [[10, 11, 20, 21], [130, 131, 100, 101]])
    ends, layout = span_features(data, features, "endpoints")
    assert layout is None
    np.testing.assert_array_equal(
        ends, [[0, 1, 10, 11, 20, 21, 20, 21], [110, 111, 130, 131, 100, 101, 100, 101]]
    )


def test_self_attention_rows_hold_counts_and_padded_tokens():
    data = EdgeProbingSet((
        EdgeSentence(("a", "b", "c"), (EdgeTarget((0, 2), ("X",)),)),
        EdgeSentence(("d", "e", "f", "g"), (EdgeTarget((1, 4), ("Y",)),)),
    ))  # fmt: skip
    rows, layout = span_features(data, _features(), "self-attention")
    assert layout == SpanLayout((3,), 2) and rows.shape == (2, 1 + 3 * 2)
    np.testing.assert_array_equal(rows[0], [2, 0, 1, 10, 11, 0, 0])  # two tokens, one pad
    np.testing.assert_array_equal(rows[1], [3, 110, 111, 120, 121, 130, 131])
    padded, _ = span_features(data, _features(), "self-attention", tokens=[4])
    assert padded.shape == (2, 1 + 4 * 2)
    with pytest.raises(ValueError, match="longer than max_tokens=2"):
        span_features(data, _features(), "self-attention", max_tokens=2)
    with pytest.raises(ValueError, match=r"token_features\[1\] must be \(4, d\)"):
        span_features(data, [_features()[0], _features()[0]], "mean")
    with pytest.raises(ValueError, match="pooling"):
        span_features(data, _features(), "sum")


def test_the_vocabulary_is_the_pools_labels_and_the_declared_ones(tmp_path):
    train = read_edge_probing(_file(tmp_path, LINES))  # labels A0, A1, AM
    only_test = [{"text": "x y", "targets": [{"span1": [0, 1], "span2": [1, 2], "label": "AA"}]}]
    test = read_edge_probing(_file(tmp_path, only_test, "test.json"))
    # "AA" is in the test split alone: K stays the pool's 3, and the target is refused
    unseen = r"test\.json': 1 target\(s\) carry label\(s\) 'AA' that no target of the pool"
    with pytest.raises(ValueError, match=unseen):
        edge_labels(train, test)
    x_y = [np.zeros((2, 2), dtype=np.float32)]
    with pytest.raises(ValueError, match=unseen):
        edge_probe_data(train, test, _features(), x_y, "mean")
    # declared by the task: K = pool + declared = 4, sorted
    (y_train, y_test), vocabulary = edge_labels(train, test, labels=["AA"])
    assert vocabulary == ("A0", "A1", "AA", "AM")
    assert y_train.tolist() == [0, 1, 3] and y_test.tolist() == [2]
    with pytest.warns(UserWarning, match=r"test labels \[2\] never occur in the training pool"):
        data = edge_probe_data(train, test, _features(), x_y, "mean", labels=["AA"])
    assert data.n_classes == 4 and data.classes == vocabulary
    # a declared label no target carries is a class too; a test split within the pool's
    # labels leaves K at the pool's, whatever it holds
    _, vocabulary = edge_labels(train, labels=["ZZ"])
    assert vocabulary == ("A0", "A1", "AM", "ZZ")
    within = read_edge_probing(_file(tmp_path, LINES[:1], "within.json"))
    (_, y_within), vocabulary = edge_labels(train, within)
    assert vocabulary == ("A0", "A1", "AM") and y_within.tolist() == [0]
    with pytest.raises(ValueError, match="labels must be a list of labels, not one string"):
        edge_labels(train, test, labels="AA")
    with pytest.raises(ValueError, match="labels must be non-empty strings; got ''"):
        edge_labels(train, test, labels=[""])
    several = [{"text": "x y", "targets": [{"span1": [0, 1], "label": ["A", "B"]}]}]
    with pytest.raises(ValueError, match="several labels"):
        edge_labels(read_edge_probing(_file(tmp_path, several, "multi.json")))


def test_label_sets_take_the_pools_vocabulary_too(tmp_path):
    sets = [{"text": "a b", "targets": [{"span1": [0, 1], "label": ["N", "S"]},
                                        {"span1": [1, 2], "label": "V"}]}]  # fmt: skip
    train = read_edge_probing(_file(tmp_path, sets))
    test_sets = [{"text": "c", "targets": [{"span1": [0, 1], "label": ["N", "P"]}]}]
    test = read_edge_probing(_file(tmp_path, test_sets, "test.json"))
    with pytest.raises(ValueError, match=r"1 target\(s\) carry label\(s\) 'P' that no target"):
        edge_labels(train, test, multilabel=True)
    (y_train, y_test), vocabulary = edge_labels(train, test, multilabel=True, labels=["P"])
    assert vocabulary == ("N", "P", "S", "V")
    np.testing.assert_array_equal(y_train, [[1, 0, 1, 0], [0, 0, 0, 1]])
    np.testing.assert_array_equal(y_test, [[1, 1, 0, 0]])


def test_split_sentences_keeps_every_test_label_in_the_training_split():
    # ten sentences labelled X; the last also holds Z, the only one to hold it
    sentences = tuple(
        EdgeSentence(("w",), (EdgeTarget((0, 1), ("Z" if i == 9 else "X",)),)) for i in range(10)
    )
    data = EdgeProbingSet(sentences, "ten")
    moved = 0
    for seed in range(20):
        drawn = np.random.default_rng(seed).permutation(10)[:2]  # test_size 0.2: 2 of 10
        train, test = split_sentences(data, 0.2, random_state=seed)
        assert {t.labels[0] for t in test.targets} <= {t.labels[0] for t in train.targets}
        assert len(train.sentences) + len(test.sentences) == 10
        # drawn for the test set, the Z sentence moves to the training set, and only it
        assert len(test.sentences) == (1 if 9 in drawn else 2)
        moved += 9 in drawn
    assert moved > 0  # the case arises within these seeds


def test_probe_data_for_self_attention_keeps_its_layout(tmp_path):
    train = read_edge_probing(_file(tmp_path, LINES))
    test = read_edge_probing(_file(tmp_path, LINES[:1], "test.json"))
    features = _features()
    data = edge_probe_data(train, test, features, features[:1], "self-attention")
    assert data.span_tokens == (2, 1) and data.classes == ("A0", "A1", "AM")
    tokens = np.concatenate(features)
    mean, std = tokens.mean(axis=0), tokens.std(axis=0)
    # target 0 of sentence 0: span1 tokens 0-1, standardised with the training tokens' stats
    np.testing.assert_allclose(data.X_train[0, :2], [2, 1])
    np.testing.assert_allclose(data.X_train[0, 2:6], ((features[0][:2] - mean) / std).ravel())
    np.testing.assert_array_equal(data.X_test, data.X_train[:1])
    probe = probe_for(data, (16,), projection=8)
    assert probe.span == (2, 1) and probe.input_width(data.n_features) == 16
    again = ProbeData.load(data.save(tmp_path / "saved"))
    assert again.span_tokens == (2, 1)
    mean_data = edge_probe_data(train, test, features, features[:1], "mean")
    assert mean_data.span_tokens is None and mean_data.n_features == 4


def test_treebank_tasks_are_single_token_tags_and_dependent_head_pairs():
    treebank = Treebank(
        sentences=(("the", "cat", "sat"),),
        upos=(("DET", "NOUN", "VERB"),),
        heads=((2, 3, 0),),
        deprels=(("det", "nsubj", "root"),),
        silver=True,
        source="hand",
    )
    pos = treebank_targets(treebank, "pos")
    assert [t.span1 for t in pos.targets] == [(0, 1), (1, 2), (2, 3)] and pos.silver
    assert [t.labels[0] for t in pos.targets] == ["DET", "NOUN", "VERB"]
    dependencies = treebank_targets(treebank, "dependencies")
    assert [(t.span1, t.span2, t.labels) for t in dependencies.targets] == [
        ((0, 1), (1, 2), ("det",)),
        ((1, 2), (2, 3), ("nsubj",)),
    ]  # the root has no head: no target
