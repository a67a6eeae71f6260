"""Whitney et al.'s VAE and CNN representations (App. C.1), trained on another split."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from probemeter.encoders import Encoder, train_cnn, train_vae

#: end-to-end: real models, worker processes or a Ray cluster (pytest -m 'not slow' skips)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray]:
    images, labels = load_digits(return_X_y=True)
    return images, labels


@pytest.fixture(scope="module")
def vae(digits):
    images, _ = digits
    return train_vae(images[:1200], latent_dim=8, epochs=40, scale=16.0, random_state=0)


def _probe_accuracy(encoder, fit, test) -> float:
    (x_fit, y_fit), (x_test, y_test) = fit, test
    model = LogisticRegression(max_iter=2000).fit(encoder.encode(x_fit), y_fit)
    return model.score(encoder.encode(x_test), y_test)


def test_vae_learns_and_its_means_carry_the_classes(vae, digits) -> None:
    images, labels = digits
    assert isinstance(vae, Encoder) and vae.dimension == 8 and vae.name == "vae-8"
    assert vae.losses[-1] < 0.8 * vae.losses[0]  # the negative ELBO fell
    features = vae.encode(images[1200:])
    assert features.shape == (597, 8) and features.dtype == np.float32
    # trained without labels, the 8-d means still separate digits far above chance (0.1)
    split = (images[1200:1500], labels[1200:1500]), (images[1500:], labels[1500:])
    assert _probe_accuracy(vae, *split) > 0.6


def test_training_is_seeded_and_leaves_the_global_rng_alone(digits) -> None:
    images, _ = digits
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    first = train_vae(images[:200], epochs=1, scale=16.0, random_state=5)
    assert torch.equal(torch.rand(1), expected_next)
    again = train_vae(images[:200], epochs=1, scale=16.0, random_state=5)
    other = train_vae(images[:200], epochs=1, scale=16.0, random_state=6)
    np.testing.assert_array_equal(first.encode(images[:50]), again.encode(images[:50]))
    assert not np.allclose(first.encode(images[:50]), other.encode(images[:50]))


def _bars(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """12×12 noisy images: class 0 a horizontal bar, class 1 a vertical one, class 2 a dot."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=n)
    images = rng.uniform(0, 80, size=(n, 12, 12))
    for image, label, where in zip(images, labels, rng.integers(2, 10, size=n)):
        if label == 0:
            image[where, 2:10] = 255
        elif label == 1:
            image[2:10, where] = 255
        else:
            image[where - 1 : where + 1, where - 1 : where + 1] = 255
    return images, labels


def test_cnn_hidden_layer_transfers_to_fresh_images() -> None:
    images, labels = _bars(600, seed=0)
    cnn = train_cnn(images, labels, epochs=3, random_state=0)
    assert cnn.dimension == 784 and cnn.losses[-1] < cnn.losses[0]
    assert cnn.encode(images[:5]).shape == (5, 784)
    assert _probe_accuracy(cnn, _bars(200, seed=1), _bars(200, seed=2)) > 0.9


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: train_vae(np.full((4, 8, 8), np.nan)), "NaN"),
        (lambda: train_vae(np.full((4, 8, 8), 300.0)), r"\[0, scale=255.0\]"),
        (lambda: train_vae(np.zeros((4, 64)), latent_dim=0), "latent_dim"),
        (lambda: train_vae(np.zeros((4, 64)), epochs=0), "epochs"),
        (lambda: train_cnn(np.zeros((4, 60)), np.arange(4)), "square"),
        (lambda: train_cnn(np.zeros((4, 64)), np.arange(4)), "at least 10 pixels"),
        (lambda: train_cnn(np.zeros((4, 144)), np.zeros(4, int)), "single class"),
        (lambda: train_cnn(np.zeros((4, 144)), np.arange(3)), "labels must be 4"),
    ],
)
def test_bad_inputs_are_rejected(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()
