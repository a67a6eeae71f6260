"""Attention and max-pooled probes over the tokens of each text (``pooling = "attention"`` /
``"max"`` of a texts task): the layout of the tokens the texts task writes, one row per text,
and a planted task whose label one token at a random position carries, which attention probes
solve and the last token or the mean of the tokens do not (issue 42, item 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from probemeter.cli.main import main
from probemeter.curves.results import load_curves
from probemeter.data import ProbeData
from probemeter.datasets.token_spans import token_spans
from probemeter.encoders.tiny import keyword_texts, tiny_decoder


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    """A tiny Llama-style decoder built from a config, long enough for 200-token texts, and
    400 texts of 200 characters whose label one keyword at a random position carries."""
    folder = tmp_path_factory.mktemp("attention")
    tiny_decoder(folder / "model", positions=256)
    keyword_texts(folder / "texts.csv", n=400, length=200)
    return folder


def _experiment(folder: Path, poolings: list[str]) -> Path:
    entries = "".join(
        f'\n[[representations]]\nname = "{pooling}"\nkind = "transformer"\nmodel = "model"\n'
        f'layer = 0\npooling = "{pooling}"\n'
        for pooling in poolings
    )
    path = folder / f"{'-'.join(poolings)}.toml"
    path.write_text(
        '[task]\ndataset = "texts"\npath = "texts.csv"\n'
        + entries
        + '\n[method]\nkind = "curve"\nepsilon = 0.1\nprobe = []\nlr = 0.01\nseeds = 1\n'
        "steps = 300\nsizes = [60, 288]\n"
    )
    return path


def _final_accuracy(run: Path) -> dict[str, float]:
    """Each representation's test accuracy at the largest size."""
    curves = load_curves(next(run.glob("*/results.json")))
    return {
        curve.name: float(curve.points.loc[curve.points["n"].idxmax(), "accuracy"])
        for curve in curves
    }


@pytest.mark.slow
def test_attention_probes_find_the_one_token_that_says_the_label(planted):
    experiment = _experiment(planted, ["attention", "last", "mean"])
    assert main(["run", str(experiment), "--out", str(planted / "runs"), "-q"]) == 0
    accuracy = _final_accuracy(planted / "runs")
    assert accuracy["attention"] >= 0.95
    assert accuracy["last"] <= 0.7 and accuracy["mean"] <= 0.7


def test_token_spans_lays_out_each_text_once():
    rng = np.random.default_rng(0)
    counts_train, counts_test = [3, 1, 2], [2, 4]
    tokens = rng.normal(size=(sum(counts_train) + sum(counts_test), 5)).astype(np.float32)
    texts_train = np.repeat([4, 0, 7], counts_train)  # text ids as a texts task numbers them
    texts_test = np.repeat([1, 2], counts_test)
    labels = np.repeat([1, 0, 1, 0, 1], counts_train + counts_test)
    cut = sum(counts_train)
    data = ProbeData.from_arrays(
        tokens[:cut], labels[:cut], tokens[cut:], labels[cut:], n_classes=2, standardize=False
    )
    data = data.__class__(
        **{**data.__dict__, "clusters_train": texts_train, "clusters_test": texts_test}
    )
    for pooling, q in (("attention", 3), ("max", 2)):
        spans = token_spans(data, pooling)
        assert spans.span_tokens == (4,) and spans.span_pooling == pooling
        assert spans.span_projection == q  # K + 1 (a query and K values), or K logits
        assert spans.clusters_train is None  # the texts are the units now
        np.testing.assert_array_equal(spans.y_train, [1, 0, 1])
        np.testing.assert_array_equal(spans.y_test, [0, 1])
        np.testing.assert_array_equal(spans.X_train[:, 0], counts_train)
        second = spans.X_test[1, 1:].reshape(4, 5)
        np.testing.assert_array_equal(second, tokens[cut + 2 :])
        first = spans.X_train[1, 1:].reshape(4, 5)
        np.testing.assert_array_equal(first[0], tokens[3])
        assert not first[1:].any()  # padded with zeros
    assert token_spans(data, "attention", projection=16).span_projection == 16


def test_token_spans_refuses_what_it_cannot_lay_out():
    data = ProbeData.from_arrays(
        np.ones((4, 2), np.float32), [0, 0, 1, 1], np.ones((2, 2), np.float32), [0, 1],
        n_classes=2,
    )  # fmt: skip
    with pytest.raises(ValueError, match="cluster"):
        token_spans(data)
    with pytest.raises(ValueError, match="pooling"):
        token_spans(data, "mean")
    split = data.__class__(
        **{
            **data.__dict__,
            "clusters_train": np.array([0, 1, 0, 2]),
            "clusters_test": np.array([3, 4]),
        }
    )
    with pytest.raises(ValueError, match="contiguous"):
        token_spans(split)
    mixed = data.__class__(
        **{
            **data.__dict__,
            "clusters_train": np.array([0, 0, 0, 1]),
            "clusters_test": np.array([3, 4]),
        }
    )
    with pytest.raises(ValueError, match="disagree on its label"):
        token_spans(mixed)


def test_the_cache_lays_texts_out_a_block_at_a_time_as_in_memory(planted, tmp_path):
    """With a feature cache the padded rows are written from the layer files a block of token
    rows at a time (TokenSpanSplit.save); the data equal those built in memory, byte for byte."""
    from probemeter.runs.config import load_experiment
    from probemeter.runs.runner import prepare_data

    experiment = load_experiment(_experiment(planted, ["attention", "max"]))
    in_memory = prepare_data(experiment, progress=False)
    cached = prepare_data(experiment, tmp_path / "cache", progress=False)
    again = prepare_data(experiment, tmp_path / "cache", progress=False)  # read back
    for name, data in in_memory.items():
        for built in (cached[name], again[name]):
            assert isinstance(built.X_train, np.memmap)
            for array in ("X_train", "X_test", "y_train", "y_test"):
                np.testing.assert_array_equal(getattr(built, array), getattr(data, array))
            fields = ("span_tokens", "span_pooling", "span_projection", "n_classes")
            assert [getattr(built, f) for f in fields] == [getattr(data, f) for f in fields]
    assert not list((tmp_path / "cache").rglob("tokens"))  # the scratch token rows are gone


def test_token_span_split_saves_what_it_makes_in_memory(tmp_path):
    from probemeter.data import RowSplit
    from probemeter.datasets.token_spans import TokenSpanSplit

    rng = np.random.default_rng(1)
    counts = np.array([3, 1, 4, 2, 5, 2])
    texts_of = np.repeat(np.arange(6), counts)
    features = rng.normal(size=(counts.sum(), 7)).astype(np.float32)
    train_texts, test_texts = [0, 2, 3, 5], [1, 4]
    train, test = (np.flatnonzero(np.isin(texts_of, t)) for t in (train_texts, test_texts))
    labels = np.array([0, 1, 1, 0, 1, 0])[texts_of]
    rows = RowSplit(train, test, labels[train], labels[test], 2)
    split = TokenSpanSplit(rows, texts_of[train], texts_of[test], "max", projection=4)
    expected = split.probe_data(features, name="x")
    split.save(tmp_path / "data", lambda indices: features[indices], 7, name="x")
    saved = ProbeData.load(tmp_path / "data")
    for array in ("X_train", "X_test", "y_train", "y_test"):
        np.testing.assert_array_equal(getattr(saved, array), getattr(expected, array))
    assert (saved.span_tokens, saved.span_pooling, saved.span_projection) == ((5,), "max", 4)
    assert not (tmp_path / "data" / "tokens").exists()
