"""Labels of tokens from labelled character spans (issue 43, item 6): spans read and checked,
each token labelled by the span covering most of its characters, and a model's tokens located
in their text's characters (TransformerEncoder.row_offsets)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from probemeter.datasets.token_labels import OUTSIDE, parse_spans, row_labels


def test_spans_are_read_from_lists_and_json_cells():
    text = "Ada Lovelace met Babbage in London"
    assert parse_spans([[17, 24, "PER"], [0, 12, "PER"]], text, "row 1") == (
        (0, 12, "PER"),
        (17, 24, "PER"),
    )  # sorted by start
    assert parse_spans('[[28, 34, "LOC"]]', text, "row 1") == ((28, 34, "LOC"),)
    assert parse_spans(np.array([[0, 3, 7]], dtype=object), text, "r") == ((0, 3, 7),)
    assert parse_spans(None, text, "r") == () and parse_spans("", text, "r") == ()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[[0, 3", "JSON list"),
        ({"a": 1}, "list of \\[start, end, label\\]"),
        ([[0, 3]], "must be \\[start, end, label\\]"),
        ([[0.5, 3, "X"]], "integers"),
        ([[3, 3, "X"]], "not within"),
        ([[0, 99, "X"]], "not within"),
        ([[0, 3, ""]], "label"),
        ([[0, 3, True]], "label"),
    ],
)
def test_bad_spans_are_refused_naming_the_row(value, message):
    with pytest.raises(ValueError, match=f"row 7: .*{message}"):
        parse_spans(value, "Ada Lovelace", "row 7")


def test_each_token_takes_the_span_covering_most_of_its_characters():
    # "New York-based": tokens "New" [0,3), " Yo" [3,6), "rk-" [6,9), "based" [9,14)
    offsets = [np.array([[0, 0], [0, 3], [3, 6], [6, 9], [9, 14]]), np.array([[0, 2]])]
    spans = [((0, 8, "LOC"), (8, 14, "MISC")), ()]
    # "rk-" covers 2 characters of LOC and 1 of MISC; the BOS (0, 0) covers none
    assert row_labels(offsets, spans) == [OUTSIDE, "LOC", "LOC", "LOC", "MISC", OUTSIDE]
    # a tie goes to the first span; another outside label
    assert row_labels([np.array([[2, 4]])], [((0, 3, "A"), (3, 6, "B"))], outside=0) == ["A"]
    with pytest.raises(ValueError, match="one list per text"):
        row_labels(offsets, spans[:1])


def test_a_models_tokens_are_located_in_their_texts_characters(tmp_path):
    pytest.importorskip("transformers")
    from probemeter.encoders import TransformerEncoder
    from probemeter.encoders.hf import Prompt
    from probemeter.encoders.tiny import tiny_decoder

    tiny_decoder(tmp_path / "llama")
    texts = [
        "the cat sat on the mat",
        Prompt("Review: the dog barks at night Sentiment:", (8, 30)),
    ]
    for keep_bos in (True, False):
        encoder = TransformerEncoder(
            tmp_path / "llama", 0, pooling="all", progress=False, keep_bos=keep_bos
        )
        offsets = encoder.row_offsets(texts)
        assert [len(rows) for rows in offsets] == encoder.row_counts(texts).tolist()
        for item, rows in zip(texts, offsets):
            raw = item if isinstance(item, str) else item.text[slice(*item.span)]
            pieces = [raw[a:b] for a, b in rows if b > a]
            assert "".join(pieces).strip() == raw  # every character of the text, in order
            assert (rows[:, 0] == rows[:, 1]).sum() == int(keep_bos)  # the BOS covers none
    labels = row_labels(offsets, [((4, 7, "ANIMAL"),), ((4, 7, "ANIMAL"),)])
    assert labels.count("ANIMAL") == 2  # " cat" and " dog"


ANIMALS = ("cat", "dog", "fox")


def _entities(path, n: int = 60, random_state: int = 0):
    """JSON lines of texts of a few words with the animals marked as ANIMAL spans."""
    import json

    rng = np.random.default_rng(random_state)
    others = ["the", "sat", "on", "mat", "near", "river", "bank", "over", "lazy", "brown"]
    with open(path, "w") as stream:
        for _ in range(n):
            words = list(rng.choice(others, size=int(rng.integers(4, 9))))
            for _ in range(int(rng.integers(1, 3))):
                words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(ANIMALS)))
            spans, position = [], 0
            for word in words:
                if word in ANIMALS:
                    spans.append([position, position + len(word), "ANIMAL"])
                position += len(word) + 1
            stream.write(json.dumps({"text": " ".join(words), "entities": spans}) + "\n")
    return path


def _experiment(folder, task_extra: str = "", pooling: str = "all"):
    path = folder / "tokens.toml"
    path.write_text(
        '[task]\ndataset = "texts"\npath = "entities.jsonl"\nlabel_column = "entities"\n'
        f"token_labels = true\n{task_extra}"
        '[[representations]]\nname = "tiny"\nkind = "transformer"\nmodel = "model"\nlayer = 0\n'
        f'pooling = "{pooling}"\n'
        '[method]\nkind = "curve"\nepsilon = 0.1\nseeds = 1\nsteps = 200\nlr = 0.01\n'
        "weight_decay = 0.0\nsizes = [40, 300]\n"
    )
    return path


@pytest.fixture(scope="module")
def entities(tmp_path_factory):
    pytest.importorskip("transformers")
    from probemeter.encoders.tiny import tiny_decoder

    folder = tmp_path_factory.mktemp("entities")
    tiny_decoder(folder / "model")
    _entities(folder / "entities.jsonl")
    return folder


@pytest.mark.slow
def test_tokens_labelled_by_spans_through_probemeter_run(entities, tmp_path):
    """Every token a row labelled ANIMAL or O, split and clustered by text: the embeddings
    (layer 0) tell the animals' tokens apart."""
    from probemeter.curves.results import load_curves
    from probemeter.runs.config import load_experiment
    from probemeter.runs.runner import prepare_data

    experiment = load_experiment(_experiment(entities))
    (data,) = prepare_data(experiment, progress=False).values()
    assert data.classes == ("ANIMAL", "O") and data.n_classes == 2
    assert data.clusters_train is not None  # tokens clustered by their text
    assert not set(data.clusters_train) & set(data.clusters_test)  # split by text
    assert 0 < (data.y_train == 0).mean() < 0.5
    from probemeter.cli.main import main

    assert main(["run", str(entities / "tokens.toml"), "--out", str(tmp_path), "-q"]) == 0
    (curve,) = load_curves(next(tmp_path.glob("*/results.json")))
    assert curve.points.loc[curve.points["n"].idxmax(), "accuracy"] >= 0.95


@pytest.mark.parametrize(
    ("extra", "pooling", "where", "message"),
    [
        ("", "last", "representations[0].pooling", "token labels"),
        ('contrast_column = "text2"\npair = "concat"\n', "all", "task.token_labels", "no contrast"),
    ],
)
def test_token_labels_refuse_rows_other_than_tokens(entities, extra, pooling, where, message):
    from probemeter.runs.config import ExperimentError, load_experiment

    with pytest.raises(ExperimentError, match=rf"{re.escape(where)}: .*{message}"):
        load_experiment(_experiment(entities, extra, pooling))


def test_a_bad_span_is_named_with_its_row(entities, tmp_path):
    from probemeter.datasets.texts import read_texts

    (tmp_path / "bad.jsonl").write_text(
        '{"text": "a cat", "entities": [[2, 5, "ANIMAL"]]}\n'
        '{"text": "a dog", "entities": [[2, 9, "ANIMAL"]]}\n'
    )
    with pytest.raises(ValueError, match=r"row 2, entities: span .* not within"):
        read_texts(tmp_path / "bad.jsonl", label_column="entities", token_labels=True)
