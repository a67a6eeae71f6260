"""Trees with an exact Euclidean embedding: node v ↦ the sum of unit vectors e_u of the edges
(u, head(u)) on v's path to the root. Two root paths share exactly the edges above their lowest
common ancestor, so ‖x_u − x_v‖² counts the edges of the u–v path (the tree distance) and
‖x_v‖² the edges to the root (the depth)."""

from __future__ import annotations

import numpy as np

from probemeter.structural.trees import TreeData


def path_heads(n: int, root: int) -> tuple[int, ...]:
    """A path 1 – 2 – … – n rooted at word ``root`` (1-based): heads point towards the root."""
    return tuple(0 if w == root else (w + 1 if w < root else w - 1) for w in range(1, n + 1))


def star_heads(n: int, centre: int) -> tuple[int, ...]:
    """A star: every word hangs from word ``centre`` (1-based), the root."""
    return tuple(0 if w == centre else centre for w in range(1, n + 1))


def random_heads(rng: np.random.Generator, n: int) -> tuple[int, ...]:
    """A random tree over n words: word order shuffled, each word's head an earlier node."""
    parents = [0] + [int(rng.integers(1, i + 1)) for i in range(1, n)]
    position = rng.permutation(n)  # position[old] = new index
    heads = [0] * n
    for old, parent in enumerate(parents):
        heads[position[old]] = 0 if parent == 0 else int(position[parent - 1]) + 1
    return tuple(heads)


def tree_embedding(heads: tuple[int, ...], dimension: int) -> np.ndarray:
    """(n, dimension) float32: word v ↦ Σ_{u on v's root path, u ≠ root} e_u (module doc)."""
    n = len(heads)
    x = np.zeros((n, dimension), dtype=np.float32)
    for v in range(n):
        u = v
        while heads[u] != 0:
            x[v, u] = 1.0
            u = heads[u] - 1
    return x


def embedded_corpus(
    heads: list[tuple[int, ...]], extra: int = 0, seed: int = 0, rotate: bool = True
) -> tuple[TreeData, np.ndarray]:
    """Trees and their exact embedding, rotated by a random orthogonal matrix into
    ``dimension + extra`` dimensions (rotations keep every distance and norm); without
    ``rotate`` the 0/1 embedding itself, on which float arithmetic is exact."""
    dimension = max(len(h) for h in heads)
    x = np.concatenate([tree_embedding(h, dimension) for h in heads])
    if not rotate:
        return TreeData(tuple(heads)), x
    rng = np.random.default_rng(seed)
    total = dimension + extra
    rotation, _ = np.linalg.qr(rng.normal(size=(total, total)))
    padded = np.concatenate([x, np.zeros((len(x), extra), np.float32)], axis=1)
    return TreeData(tuple(heads)), (padded @ rotation.T).astype(np.float32)
