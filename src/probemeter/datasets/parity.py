"""The parity example of Whitney et al., §3.1: VA and MDL rank two representations one way
at small n and the other way at large n.

Labels are the parity ``y = <x, s> mod 2`` of a random bit vector ``x ∈ {0,1}^d`` under a fixed
secret ``s``. Two representations of the same examples:

* **noisy label**: the single bit ``z = (<x, s> + e) mod 2`` with ``e ~ Bernoulli(α)``; guessing
  ``y = z`` is information-theoretically optimal from it and achieves accuracy ``1 − α`` at any
  n, but its loss can never go below the binary entropy ``H(α)``;
* **raw bits**: ``x`` itself, from which ``y`` is a deterministic function; a probe that has
  seen enough points predicts it perfectly.

So the noisy label wins at small n and the raw bits win at large n (on VA and MDL), while SDL
and εSC with ε below ``H(α)`` consistently report the noisy label as never reaching ε.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

import numpy as np

from probemeter._validation import check_scalar
from probemeter.data import ProbeData

__all__ = ["binary_entropy", "parity_representations"]


def binary_entropy(alpha: float) -> float:
    """H(α) = −α ln α − (1−α) ln(1−α), in nats: the loss floor of the noisy-label bit."""
    check_scalar(alpha, "alpha", float, min_val=0, max_val=0.5, include_boundaries="neither")
    return float(-alpha * np.log(alpha) - (1 - alpha) * np.log(1 - alpha))


def parity_representations(
    n_train: int = 4000,
    n_test: int = 1000,
    n_bits: int = 8,
    alpha: float = 0.1,
    random_state: int = 0,
) -> dict[str, ProbeData]:
    """Draw the parity task and return ``{"noisy label": ..., "raw bits": ...}``.

    Args:
        n_train, n_test: pool and test sizes.
        n_bits: d, the length of x (the secret s has every bit set with probability 1/2,
            and at least one bit set).
        alpha: probability that the noisy-label bit is flipped, in (0, 0.5).
        random_state: seed of x, s and the noise.
    """
    binary_entropy(alpha)  # validates alpha
    check_scalar(n_bits, "n_bits", int, min_val=1)
    check_scalar(n_train, "n_train", int, min_val=2)
    check_scalar(n_test, "n_test", int, min_val=1)
    rng = np.random.default_rng(random_state)
    secret = rng.integers(0, 2, size=n_bits)
    if not secret.any():
        secret[rng.integers(n_bits)] = 1
    total = n_train + n_test
    bits = rng.integers(0, 2, size=(total, n_bits))
    labels = bits @ secret % 2
    flips = rng.random(total) < alpha
    noisy = (labels + flips) % 2
    representations = {"noisy label": noisy[:, None], "raw bits": bits}
    return {
        name: ProbeData.from_arrays(
            features[:n_train],
            labels[:n_train],
            features[n_train:],
            labels[n_train:],
            standardize=False,
            name=name,
        )
        for name, features in representations.items()
    }
