"""Linear views of a representation: PCA and Gaussian random projection, fitted on the
training pool only (so nothing about the test set leaks into the features)."""

from __future__ import annotations

import numpy as np
from sklearn.decomposition import PCA
from sklearn.random_projection import GaussianRandomProjection

from probemeter._validation import one_of

__all__ = ["PROJECTIONS", "project"]

PROJECTIONS = ("pca", "random-projection")


def project(
    kind: str, n_components: int, pool: np.ndarray, test: np.ndarray, random_state: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Fit a ``kind`` projection to ``n_components`` dimensions on ``pool``; return the
    projected pool and test features."""
    one_of(*PROJECTIONS)(kind, "kind")
    transform = (
        PCA(n_components, random_state=random_state)
        if kind == "pca"
        else GaussianRandomProjection(n_components, random_state=random_state)
    ).fit(pool)
    return transform.transform(pool), transform.transform(test)
