"""The interface every representation encoder implements.

An encoder turns raw inputs (sentences, images, ...) into a float32 feature matrix whose rows are
the frozen representations that probes are trained on (Whitney et al.; Pimentel et al. 2020).

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368

    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Encoder"]


@runtime_checkable
class Encoder(Protocol):
    """Something that maps a batch of inputs to a ``(n, dimension)`` float32 feature matrix.

    Attributes:
        name: short human-readable identifier, used in result tables and cache keys.
        dimension: number of features per row.
    """

    name: str
    dimension: int

    def encode(self, inputs: Any) -> np.ndarray:
        """Return the features of ``inputs`` as a float32 array of shape ``(n, dimension)``."""
        ...
