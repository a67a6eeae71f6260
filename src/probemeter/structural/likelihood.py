"""A codelength for the integer targets of the structural probes, in nats.

Tree distances and depths are integers on a known support given the sentence length n:
distances of two different words lie in {1, …, n − 1}, depths in {0, …, n − 1}. A probe's
prediction μ (the squared norm ‖B(h_i − h_j)‖² or ‖Bh_i‖²) becomes a distribution over that
support by a **Laplace likelihood discretised to the integers and truncated to the support**,
with one scale b per probe::

    P(y = k | μ, b) = [F(k + ½) − F(k − ½)] / [F(hi + ½) − F(lo − ½)],   k ∈ {lo, …, hi}
    F(x) = ½·exp((x − μ)/b) for x < μ,   1 − ½·exp(−(x − μ)/b) for x ≥ μ

mixed with the uniform code over the support with a small fixed weight α
(:data:`UNIFORM_WEIGHT`)::

    Q(y = k | μ, b) = (1 − α)·P(y = k | μ, b) + α / (hi − lo + 1)

and a target costs −ln Q(y | μ, b) nats. The Laplace matches the probes' L1 training loss
(Hewitt & Manning 2019, §2: L1 is the Laplace negative log-density up to the scale);
discretising makes the cost a true codelength (a probability mass, so ≥ 0 and summable over
blocks), and truncating puts no mass on impossible values. The mixture bounds the cost of a
target the probe missed badly by ln(1/α) + ln(hi − lo + 1) (the uniform code plus ln 100 for
α = 0.01) and costs at most ln(1/(1 − α)) ≈ 0.01 nats where the probe is right; without it, a
probe that fits its training targets to within ½ drives the maximum-likelihood scale to 0 and
one test residual above ½ to thousands of nats.

The scale b is fitted per probe by maximum likelihood (:func:`fit_laplace_scale`) on sentences
**held out** from the probe's training (:mod:`probemeter.structural.codes`): on its training
sentences the probe's residuals are optimistic, the more so the more it overfits. For the
continuous Laplace the fit has the closed form b = (1/N) Σ |y − μ|, the mean absolute residual;
the discretised, truncated, mixed Q is minimised numerically in ln b. Held-out sentences taken
from the transmitted data keep the scale a function of what a receiver has already decoded, so
the online code of Voita & Titov (2020, eq. 4) and the loss-data curves of Whitney et al.
(2020) apply unchanged. The uniform code over the support, ln(hi − lo + 1) nats per target,
codes the first block. Every codelength here is in nats; bits = nats / ln 2
(:data:`probemeter.mdl.online.BITS_PER_NAT` = 1 / ln 2).

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "MAX_SCALE",
    "MIN_SCALE",
    "UNIFORM_WEIGHT",
    "fit_laplace_scale",
    "laplace_codelengths",
    "uniform_codelengths",
]

#: the range searched for the Laplace scale b (in target units)
MIN_SCALE, MAX_SCALE = 1e-3, 1e3
#: α, the weight of the uniform code in the mixture
UNIFORM_WEIGHT = 0.01
_LOG_HALF = math.log(0.5)


def _log_mass(lower: np.ndarray, upper: np.ndarray, mean: np.ndarray, scale: float) -> np.ndarray:
    """ln(F(upper) − F(lower)) of a Laplace(mean, scale), stable far in both tails."""
    a = (lower - mean) / scale
    c = (upper - mean) / scale
    out = np.empty(np.broadcast(a, c).shape, dtype=np.float64)
    left = c <= 0  # the whole interval below the mean
    right = a >= 0  # the whole interval above the mean
    middle = ~left & ~right
    out[left] = _LOG_HALF + c[left] + np.log(-np.expm1(a[left] - c[left]))
    out[right] = _LOG_HALF - a[right] + np.log(-np.expm1(a[right] - c[right]))
    out[middle] = np.log1p(-0.5 * np.exp(a[middle]) - 0.5 * np.exp(-c[middle]))
    return out


def laplace_codelengths(
    targets: np.ndarray,
    predictions: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    scale: float,
) -> np.ndarray:
    """−ln Q(y | μ, b) in nats, elementwise: the discretised Laplace truncated to the integer
    support {lowest, …, highest}, mixed with the uniform code (module docstring).

    Raises:
        ValueError: ``scale`` not positive, or a target outside its support.
    """
    if not scale > 0:
        raise ValueError(f"scale must be > 0; got {scale}")
    y = np.asarray(targets, dtype=np.float64)
    mu = np.asarray(predictions, dtype=np.float64)
    lo = np.asarray(lowest, dtype=np.float64)
    hi = np.asarray(highest, dtype=np.float64)
    if np.any(y < lo) or np.any(y > hi):
        raise ValueError("a target lies outside its support {lowest, ..., highest}")
    laplace = _log_mass(y - 0.5, y + 0.5, mu, scale) - _log_mass(lo - 0.5, hi + 0.5, mu, scale)
    uniform = -uniform_codelengths(lo, hi)
    mixed = np.logaddexp(math.log1p(-UNIFORM_WEIGHT) + laplace, math.log(UNIFORM_WEIGHT) + uniform)
    return -mixed


def uniform_codelengths(lowest: np.ndarray, highest: np.ndarray) -> np.ndarray:
    """ln(highest − lowest + 1) nats per target: the uniform code over the support."""
    return np.log(np.asarray(highest, np.float64) - np.asarray(lowest, np.float64) + 1.0)


def fit_laplace_scale(
    targets: np.ndarray, predictions: np.ndarray, lowest: np.ndarray, highest: np.ndarray
) -> float:
    """The maximum-likelihood scale b of :func:`laplace_codelengths` on the given targets
    (held-out ones, module docstring): the b in [MIN_SCALE, MAX_SCALE] minimising their total
    codelength Σ −ln Q(y | μ, b) (bounded Brent search in ln b, to 10⁻⁴ in ln b: the scale
    within 0.01 %). For wide supports and b ≫ 1 it approaches the continuous Laplace's
    b = mean |y − μ|."""
    from scipy.optimize import minimize_scalar

    y, mu = np.asarray(targets, np.float64), np.asarray(predictions, np.float64)
    lo, hi = np.asarray(lowest, np.float64), np.asarray(highest, np.float64)
    if y.size == 0:
        raise ValueError("targets is empty; a scale needs training targets")

    def total(log_scale: float) -> float:
        return float(laplace_codelengths(y, mu, lo, hi, math.exp(log_scale)).sum())

    found = minimize_scalar(
        total,
        bounds=(math.log(MIN_SCALE), math.log(MAX_SCALE)),
        method="bounded",
        options={"xatol": 1e-4},
    )
    return float(math.exp(found.x))
