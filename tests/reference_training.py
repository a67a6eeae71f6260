"""The slow, one-probe reference training that engine tests compare with: the engine's
documented minibatch stream and plain autograd with ``torch.optim.Adam`` (importable from any
test: pytest puts ``tests/`` on ``sys.path``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F


def minibatch_order(
    rng: np.random.Generator, subset: np.ndarray, steps: int, batch_size: int
) -> tuple[np.ndarray, int]:
    """The pool indices of every step's minibatch, as the engine draws them after a probe's
    initial parameters: one permutation of the subset per epoch, cut into batches of
    ``min(n, batch_size)``; and that batch size."""
    subset = np.asarray(subset)
    n = subset.size
    batch = min(n, batch_size)
    needed = steps * batch
    return subset[
        rng.random((math.ceil(needed / n), n)).argsort(axis=1).reshape(-1)[:needed]
    ], batch


def train_with_adam(
    forward: Callable[[torch.Tensor], torch.Tensor],
    parameters: Sequence[torch.Tensor],
    x_train: np.ndarray,
    y_train: np.ndarray,
    order: np.ndarray,
    batch: int,
    lr: float,
    loss_function: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy,
) -> None:
    """Minimise the mean ``loss_function`` (default: cross-entropy) of ``forward`` on each
    minibatch of ``order`` in turn, one ``torch.optim.Adam`` step each."""
    optimizer = torch.optim.Adam(parameters, lr=lr)
    inputs, labels = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for step in range(len(order) // batch):
        idx = torch.from_numpy(order[step * batch : (step + 1) * batch])
        loss = loss_function(forward(inputs[idx]), labels[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
