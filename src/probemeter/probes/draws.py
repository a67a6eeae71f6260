"""The float32 uniform draws of probes' initial parameters, one function for the MLP probes
(:mod:`probemeter.probes.mlp`), their span poolings (:mod:`probemeter.probes.span_attention`) and
the Bayesian span poolings, at the bottom of the package so that all of them can import it."""

from __future__ import annotations

import numpy as np

__all__ = ["fill_uniform"]


def fill_uniform(rng: np.random.Generator, out: np.ndarray, fan_in: int) -> None:
    """Fill the float32 array ``out`` in place with U(-1/sqrt(fan_in), 1/sqrt(fan_in)) draws.

    The draws are made in float32 (``rng.random(dtype=np.float32)``: u = k / 2**24, k uniform
    on 0 .. 2**24 - 1, one 32-bit draw each) and mapped in place to ``(2u - 1) · bound``
    (``2u - 1`` is exact in float32; the product is rounded once), so no float64 array is ever
    made and the values lie in [-bound, bound), the support of ``nn.Linear``'s default
    ``uniform_``. ``out`` must be C-contiguous.
    """
    rng.random(out=out, dtype=np.float32)
    out *= np.float32(2.0)
    out -= np.float32(1.0)
    out *= np.float32(1.0 / np.sqrt(fan_in))
