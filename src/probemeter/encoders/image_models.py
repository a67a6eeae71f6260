"""Image representations learned on another split: Whitney et al.'s VAE and CNN (App. C.1).

Whitney et al. (§5, App. C.1) compare raw MNIST pixels with two learned representations:

* **VAE** — a variational autoencoder (Kingma & Welling 2014) trained to generate the images,
  encoder 784→400→400→400 (ReLU) with 8-dimensional mean and log-variance heads, decoder
  8→400→400→784; the representation is the encoder's *mean*. We train it with the Bernoulli
  likelihood on pixels scaled to [0, 1] (binary cross-entropy on logits) plus the closed-form
  KL to N(0, I), by Adam.
* **CNN** — the last hidden layer (784 units) of a small convolutional network
  ``Conv(1→32, 3) ReLU MaxPool(2) Conv(32→64, 3) ReLU MaxPool(2) Linear(→784) ReLU Linear(→K)``
  trained by cross-entropy on *another* labelled task (CIFAR-10 in the paper).

Both are fitted on images that are **not** in the probe's pool or test set (the experiment
runner hands them a disjoint split), so the probe measures transfer, not memorisation. Training
is seeded by ``random_state`` (a forked torch RNG; the global one is left alone) and runs on one
device; ``encode`` is deterministic.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368

    Kingma, D. P. & Welling, M. (2014). Auto-encoding variational Bayes. *ICLR 2014*.
    arXiv:1312.6114
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from probemeter._device import resolve_device
from probemeter._validation import check_scalar

__all__ = ["TrainedImageEncoder", "train_cnn", "train_vae"]


class _VAE(nn.Module):
    def __init__(self, n_pixels: int, latent_dim: int, width: int = 400) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(n_pixels, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
        )
        self.mean = nn.Linear(width, latent_dim)
        self.log_variance = nn.Linear(width, latent_dim)
        self.decoder = nn.Sequential(
            nn.Linear(latent_dim, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, n_pixels),
        )

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.mean(self.encoder(x))

    def loss(self, x: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
        """Negative ELBO per image, in nats: BCE(x, decoder(z)) + KL(q(z|x) ‖ N(0, I))."""
        hidden = self.encoder(x)
        mean, log_variance = self.mean(hidden), self.log_variance(hidden)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * log_variance)
        reconstruction = nn.functional.binary_cross_entropy_with_logits(
            self.decoder(z), x, reduction="sum"
        )
        kl = 0.5 * torch.sum(mean**2 + log_variance.exp() - 1.0 - log_variance)
        return (reconstruction + kl) / x.shape[0]


class _CNN(nn.Module):
    def __init__(self, side: int, n_classes: int, width: int = 784) -> None:
        super().__init__()
        after = ((side - 2) // 2 - 2) // 2
        self.body = nn.Sequential(
            nn.Unflatten(1, (1, side, side)),
            nn.Conv2d(1, 32, 3, 1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, 1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * after * after, width),
            nn.ReLU(),
        )
        self.head = nn.Linear(width, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.head(self.body(x)), y)


class TrainedImageEncoder:
    """An :class:`~probemeter.encoders.Encoder` from a network trained by :func:`train_vae` or
    :func:`train_cnn`: ``encode(images)`` returns the VAE's latent mean or the CNN's last
    hidden layer.

    Attributes:
        name, dimension: label and feature count.
        losses: mean training loss of each epoch (nats; negative ELBO per image for the VAE,
            cross-entropy for the CNN).
        scale: pixels are divided by it before entering the network (255 for 8-bit images).
    """

    def __init__(
        self, network: nn.Module, name: str, dimension: int, scale: float, losses: list[float]
    ) -> None:
        self.network = network.eval()
        self.name = name
        self.dimension = dimension
        self.scale = scale
        self.losses = losses

    @torch.no_grad()
    def encode(self, inputs: np.ndarray, batch_size: int = 1024) -> np.ndarray:
        """(n, dimension) float32 features of ``inputs`` (n images, flattened or square)."""
        x = _flat_images(inputs, "inputs") / self.scale
        device = next(self.network.parameters()).device
        rows = [
            self.network.features(torch.as_tensor(x[i : i + batch_size], device=device))
            for i in range(0, len(x), batch_size)
        ]
        return torch.cat(rows).cpu().numpy().astype(np.float32)


def train_vae(
    images: np.ndarray,
    latent_dim: int = 8,
    *,
    epochs: int = 10,
    batch_size: int = 128,
    lr: float = 1e-3,
    scale: float = 255.0,
    random_state: int = 0,
    device: str = "cpu",
    progress: bool = False,
) -> TrainedImageEncoder:
    """Train Whitney et al.'s VAE (App. C.1) on ``images``; its encoder mean is the features.

    Args:
        images: (n, side, side) or (n, pixels) intensities in [0, ``scale``] (labels unused).
        latent_dim: latent dimension (8 in the paper).
        epochs, batch_size, lr: Adam training of the negative ELBO.
        scale: maximum pixel value; pixels are divided by it to lie in [0, 1].

    Raises:
        ValueError: images that are not 2-D/3-D finite arrays within [0, scale], or bad
            training settings.
    """
    x = _flat_images(images, "images") / scale
    if x.min() < 0 or x.max() > 1:
        raise ValueError(f"images must lie in [0, scale={scale}]")
    check_scalar(latent_dim, "latent_dim", int, min_val=1)

    def build() -> nn.Module:
        return _VAE(x.shape[1], int(latent_dim))

    return _train(build, x, None, f"vae-{latent_dim}", latent_dim, scale, epochs, batch_size,
                  lr, random_state, device, progress)  # fmt: skip


def train_cnn(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    epochs: int = 3,
    batch_size: int = 128,
    lr: float = 1e-3,
    scale: float = 255.0,
    random_state: int = 0,
    device: str = "cpu",
    progress: bool = False,
) -> TrainedImageEncoder:
    """Train Whitney et al.'s small CNN (App. C.1) on labelled square ``images``; its last
    hidden layer (784 units) is the features.

    Raises:
        ValueError: images that are not square, labels not integers in [0, K) of the same
            length, a single class, or bad training settings.
    """
    x = _flat_images(images, "images") / scale
    side = math.isqrt(x.shape[1])
    if side * side != x.shape[1]:
        raise ValueError(f"images must be square; got {x.shape[1]} pixels")
    y = np.asarray(labels)
    if y.shape != (len(x),) or not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
        raise ValueError(f"labels must be {len(x)} non-negative integers; got shape {y.shape}")
    if len(np.unique(y)) < 2:
        raise ValueError("labels hold a single class: the CNN needs at least two")
    n_classes = int(y.max()) + 1
    if side < 10:
        raise ValueError(f"images must be at least 10 pixels wide for the CNN; got {side}")

    def build() -> nn.Module:
        return _CNN(side, n_classes)

    return _train(build, x, y.astype(np.int64), "cnn-784", 784, scale, epochs, batch_size,
                  lr, random_state, device, progress)  # fmt: skip


def _flat_images(images: object, argument: str) -> np.ndarray:
    x = np.asarray(images)
    if x.ndim not in (2, 3) or len(x) == 0 or not np.issubdtype(x.dtype, np.number):
        raise ValueError(f"{argument} must be a non-empty numeric (n, side, side) or (n, pixels)")
    x = x.reshape(len(x), -1).astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError(f"{argument} holds NaN or infinite values")
    return x


def _train(
    build: Callable[[], nn.Module],
    x: np.ndarray,
    y: np.ndarray | None,
    name: str,
    dimension: int,
    scale: float,
    epochs: int,
    batch_size: int,
    lr: float,
    random_state: int,
    device: str,
    progress: bool,
) -> TrainedImageEncoder:
    """Build the network and run Adam on its ``loss`` over shuffled minibatches, all seeded by
    ``random_state`` inside a forked torch RNG."""
    check_scalar(epochs, "epochs", int, min_val=1)
    check_scalar(batch_size, "batch_size", int, min_val=1)
    check_scalar(lr, "lr", float, min_val=0, include_boundaries="neither")
    torch_device = resolve_device(device)
    losses: list[float] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(random_state)
        network = build().to(torch_device)
        optimizer = torch.optim.Adam(network.parameters(), lr=lr)
        x_t = torch.as_tensor(x, device=torch_device)
        y_t = torch.as_tensor(np.zeros(len(x), np.int64) if y is None else y, device=torch_device)
        rng = np.random.default_rng(random_state)
        with tqdm(total=epochs, disable=not progress, desc=f"training {name}") as bar:
            for _ in range(epochs):
                total = 0.0
                order = torch.as_tensor(rng.permutation(len(x)), device=torch_device)
                for start in range(0, len(x), batch_size):
                    batch = order[start : start + batch_size]
                    loss = network.loss(x_t[batch], y_t[batch])
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    total += float(loss.detach()) * len(batch)
                losses.append(total / len(x))
                bar.update(1)
    return TrainedImageEncoder(network, name, dimension, scale, losses)
