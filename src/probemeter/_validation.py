"""Checks of arguments shared by every module: integers, numbers, probabilities."""

from __future__ import annotations

import numpy as np

__all__ = ["check_delta", "is_integer", "is_number"]


def is_integer(value: object) -> bool:
    """True for Python and numpy integers, False for bools (which Python counts as ints)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_number(value: object) -> bool:
    """A real number, excluding booleans."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def check_delta(delta: object) -> float:
    """δ, the probability that a confidence statement (a Hoeffding interval, a
    generalisation bound) fails, as a float in (0, 1); a ValueError naming ``delta`` otherwise."""
    if not is_number(delta):
        raise ValueError(f"delta must be a probability in (0, 1); got {delta!r}")
    if not 0.0 < delta < 1.0:
        raise ValueError(
            f"delta must be a probability in (0, 1) (the statement fails with probability < "
            f"delta); got {delta!r}"
        )
    return float(delta)
