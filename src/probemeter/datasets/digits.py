"""The bundled default: scikit-learn's 8×8 digits, in three representations.

The shape of Whitney et al.'s MNIST study (§5, Table 1) on data that ships with scikit-learn:
raw pixels (64-d), a PCA to 8 dimensions (a compact, "easy" code, like the paper's 8-d VAE),
and the pixels seen through a random projection to 8 dimensions (same size as PCA, no
structure learned). The pool/test split is 1297/500, the split the reference implementation
uses for digits.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

from probemeter.data import ProbeData
from probemeter.datasets.projections import project

__all__ = ["digits_representations", "digits_split"]


def digits_split(n_test: int = 500, random_state: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(pool, test)`` of the digits: a seeded shuffle, the first ``n_test`` rows
    of it for testing (1797 images in all)."""
    order = np.random.default_rng(random_state).permutation(1797)
    return order[n_test:], order[:n_test]


def digits_representations(
    n_test: int = 500, n_components: int = 8, random_state: int = 0
) -> dict[str, ProbeData]:
    """Return ``{"pixels": ..., "pca-8": ..., "random-proj-8": ...}`` on one shuffled split.

    PCA and the random projection are fitted on the training pool only; every representation is
    standardised with pool statistics.
    """
    images, labels = load_digits(return_X_y=True)
    train, test = digits_split(n_test, random_state)
    pool, test_images = images[train], images[test]
    views = {
        "pixels": (pool, test_images),
        f"pca-{n_components}": project("pca", n_components, pool, test_images, random_state),
        f"random-proj-{n_components}": project(
            "random-projection", n_components, pool, test_images, random_state
        ),
    }
    return {
        name: ProbeData.from_arrays(features, labels[train], test_features, labels[test], name=name)
        for name, (features, test_features) in views.items()
    }
