"""Fixtures of the structural-probe tests: trees with an exact Euclidean embedding."""

from __future__ import annotations

import numpy as np
import pytest
from structural_trees import embedded_corpus, path_heads, random_heads, star_heads

from probemeter.structural.trees import TreeData


def path_and_star_heads() -> list[tuple[int, ...]]:
    """Paths and stars of 5–12 words with different roots, plus random trees."""
    rng = np.random.default_rng(3)
    heads = []
    for n in range(5, 13):
        heads += [path_heads(n, 1), path_heads(n, n // 2 + 1), star_heads(n, 1)]
        heads += [star_heads(n, n), random_heads(rng, n)]
    return heads


@pytest.fixture(scope="module")
def path_and_star_corpus() -> tuple[TreeData, np.ndarray]:
    """The trees of :func:`path_and_star_heads` embedded exactly, rotated into 16 dimensions."""
    return embedded_corpus(path_and_star_heads(), extra=4)


@pytest.fixture(scope="module")
def exact_corpus() -> tuple[TreeData, np.ndarray]:
    """The trees of :func:`path_and_star_heads` with their 0/1 embedding (12 dimensions)."""
    return embedded_corpus(path_and_star_heads(), rotate=False)
