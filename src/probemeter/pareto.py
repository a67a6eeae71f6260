"""Pareto analysis of probes: frontiers, dominant representations and the Pareto hypervolume.

Pimentel et al. (2020), §3: a probe is Pareto optimal within a family when no other probe is
at least as simple *and* at least as accurate (and strictly better in one of the two); the
Pareto optimal probes form the **frontier**. A representation is **Pareto dominant** within a
set when at least one of its probes lies on the frontier of all the representations' probes
pooled. The **Pareto hypervolume** (PH; Auger et al., 2012) summarises one frontier: the area
of the (complexity, accuracy) region it dominates, with complexity restricted to a bounded
interval [0, cap] so the area is finite (§3), divided by the cap (App. D, Table 3 caption).

Conventions (all functions of this module):

* lower complexity is better, higher accuracy is better;
* complexity ≥ 0 (nuclear norm, rank, or a memorisation accuracy in [0, 1]);
* the reference point of the hypervolume is (cap, 0): the region counted is
  {(x, y): 0 ≤ x ≤ cap, 0 ≤ y ≤ a_i for some probe i with c_i ≤ x}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "pareto_dominant",
    "pareto_frontier",
    "pareto_hypervolume",
]


def pareto_frontier(
    complexity: Sequence[float] | np.ndarray, accuracy: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Indices of the Pareto-optimal points, ordered by increasing complexity.

    Point i is dominated when some point j has c_j ≤ c_i and a_j ≥ a_i with at least one of
    the two strict (Pimentel et al., §3). The remaining points, sorted by complexity, have
    strictly increasing complexity *and* strictly increasing accuracy.

    Ties: several points with the same complexity keep only the most accurate; several
    identical points (same complexity and accuracy) keep only the one with the smallest
    index, so every frontier point is distinct.

    Raises:
        ValueError: empty inputs, lengths that differ, or a non-finite/negative value (the
            message names the argument).
    """
    c, a = _points(complexity, accuracy)
    # ascending complexity; among equal complexity most accurate first; then smallest index
    order = np.lexsort((np.arange(c.size), -a, c))
    frontier = []
    best = -np.inf
    for index in order:
        if a[index] > best:
            frontier.append(index)
            best = a[index]
    return np.asarray(frontier, dtype=np.int64)


def pareto_hypervolume(
    complexity: Sequence[float] | np.ndarray,
    accuracy: Sequence[float] | np.ndarray,
    cap: float,
    *,
    normalise: bool = True,
) -> float:
    """Pareto hypervolume of one set of probes, with complexity restricted to [0, cap].

    PH = (1 / cap) ∫₀^cap f(x) dx,   f(x) = max({a_i : c_i ≤ x} ∪ {0}),

    i.e. the area of the region dominated by the frontier with reference point (cap, 0),
    divided by the cap (Pimentel et al., §3 and the caption of Table 3). ``f`` is the step
    function of the frontier: a probe of complexity c_i and accuracy a_i supports accuracy a_i
    for every complexity budget x ≥ c_i (no interpolation between frontier points). Probes
    with c_i ≥ cap contribute nothing; dominated probes contribute nothing. With accuracies in
    [0, 1] the normalised PH lies in [0, 1]; ``normalise=False`` returns the raw area.

    Raises:
        ValueError: cap ≤ 0 or not finite, empty inputs, lengths that differ, NaN/inf or
            negative complexities, NaN/inf accuracies.
    """
    cap = _cap(cap)
    c, a = _points(complexity, accuracy)
    frontier = pareto_frontier(c, a)
    edges = np.append(c[frontier], cap)
    heights = np.maximum(a[frontier], 0.0)
    widths = np.clip(edges[1:], None, cap) - np.clip(edges[:-1], None, cap)
    area = float(np.sum(widths * heights))
    return area / cap if normalise else area


def pareto_dominant(
    points: Mapping[str, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
) -> list[str]:
    """Names of the Pareto-dominant representations (Pimentel et al., §3).

    ``points`` maps each representation's name to its probes' ``(complexity, accuracy)``.
    The probes of all representations are pooled; a representation is dominant when at least
    one of its probes is on the pooled frontier. Identical points of two representations are
    credited to the one listed first. Names are returned in the mapping's order.

    Raises:
        ValueError: no representation, or bad points of one (named in the message).
    """
    if not points:
        raise ValueError("points must name at least one representation")
    names, complexities, accuracies = [], [], []
    for name, pair in points.items():
        try:
            complexity, accuracy = pair
            c, a = _points(complexity, accuracy)
        except ValueError as error:
            raise ValueError(f"representation {name!r}: {error}") from None
        names += [name] * c.size
        complexities.append(c)
        accuracies.append(a)
    frontier = pareto_frontier(np.concatenate(complexities), np.concatenate(accuracies))
    on_frontier = {names[index] for index in frontier}
    return [name for name in points if name in on_frontier]


def _points(complexity: Any, accuracy: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validated 1-D float arrays of complexities and accuracies."""
    c = _vector(complexity, "complexity")
    a = _vector(accuracy, "accuracy")
    if c.size != a.size:
        raise ValueError(
            f"complexity and accuracy must have the same length; got {c.size} and {a.size}"
        )
    if np.any(c < 0):
        raise ValueError(f"complexity must be >= 0; got {c[c < 0][0]}")
    return c, a


def _vector(values: Any, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty: a frontier needs at least one probe")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return array


def _cap(cap: Any) -> float:
    try:
        value = float(cap)
    except (TypeError, ValueError):
        raise ValueError(f"cap must be a positive number; got {cap!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"cap must be a positive finite number; got {cap!r}")
    return value
