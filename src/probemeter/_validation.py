"""Checks of arguments, in the style of scikit-learn's ``check_scalar``: one place that says what
a valid integer, number, probability, choice or list is, used by the API, the experiment-file
reader and the command line alike.

Two forms of each check:

* ``check_scalar(value, name, ...)`` (and the ``check_*`` functions) return the value or raise a
  ``ValueError`` that names the argument: ``"seeds must be an integer >= 1; got 0"``;
* :class:`Check` objects (``integer(1)``, ``number(0, 1, closed="neither")``, ``one_of(...)``,
  ...) describe a constraint once; ``check.problem(value)`` returns the problem as text (or
  None), which the experiment-file reader collects with the key's location and the command line
  reports with the flag's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Check",
    "boolean",
    "check_delta",
    "check_scalar",
    "integer",
    "integer_list",
    "is_integer",
    "is_number",
    "listed",
    "number",
    "one_of",
    "positive",
    "text",
]


def listed(items: Sequence[str], limit: int = 5) -> str:
    """The first ``limit`` of ``items`` for an error message, comma-separated, with ``", ..."``
    where more follow.

    Examples:
        >>> listed(["a", "b", "c"], 2)
        'a, b, ...'
    """
    return ", ".join(items[:limit]) + (", ..." if len(items) > limit else "")


def is_integer(value: object) -> bool:
    """True for Python and numpy integers, False for bools (which Python counts as ints)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_number(value: object) -> bool:
    """A real number, excluding booleans."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Check:
    """A constraint on one value: ``problem(value)`` says what is wrong with it (None: valid)."""

    describe: Callable[[Any], str | None]
    #: the valid values, where they are a short list (``one_of``)
    choices: tuple[Any, ...] | None = None

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (``"must be ...; got ..."``), or None when valid."""
        return self.describe(value)

    def __call__(self, value: Any, name: str) -> Any:
        """``value`` when valid, else a ``ValueError`` naming ``name``."""
        problem = self.describe(value)
        if problem:
            raise ValueError(f"{name} {problem}")
        return value


def _bounds(low: float | None, high: float | None, closed: str) -> str:
    """Words for an interval: ">= 1", "in (0, 1)", "between 1 and 10"."""
    left, right = closed in ("both", "left"), closed in ("both", "right")
    if high is None:
        return f"{'>=' if left else '>'} {low}"
    if low is None:
        return f"{'<=' if right else '<'} {high}"
    return f"in {'[' if left else '('}{low}, {high}{']' if right else ')'}"


def _inside(value: float, low: float | None, high: float | None, closed: str) -> bool:
    left, right = closed in ("both", "left"), closed in ("both", "right")
    above = low is None or (value >= low if left else value > low)
    below = high is None or (value <= high if right else value < high)
    return above and below


def integer(low: int | None = None, high: int | None = None, closed: str = "both") -> Check:
    """An integer (not a bool) within the bounds."""

    def describe(value: Any) -> str | None:
        if not is_integer(value):
            return f"must be an integer; got {value!r}"
        if not _inside(value, low, high, closed):
            return f"must be an integer {_bounds(low, high, closed)}; got {value!r}"
        return None

    return Check(describe)


def _finite(value: Any) -> bool:
    """Finite and representable as a float (an integer beyond ~1.8e308 is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def number(low: float | None = None, high: float | None = None, closed: str = "both") -> Check:
    """A finite real number (not a bool) within the bounds."""

    def describe(value: Any) -> str | None:
        if not is_number(value) or not _finite(value):
            return f"must be a finite number; got {value!r}"
        if not _inside(value, low, high, closed):
            return f"must be a number {_bounds(low, high, closed)}; got {value!r}"
        return None

    return Check(describe)


def positive() -> Check:
    """A finite number > 0 (a learning rate, a memory budget in GiB)."""
    return number(0, closed="neither")


def one_of(*choices: Any) -> Check:
    """One of ``choices``."""
    return Check(
        lambda value: (
            None if value in choices else f"must be one of {list(choices)}; got {value!r}"
        ),
        choices=choices,
    )


def boolean() -> Check:
    """``True`` or ``False``."""
    return Check(
        lambda value: None if isinstance(value, bool) else f"must be true or false; got {value!r}"
    )


def text() -> Check:
    """A non-empty string without NUL characters (no path, name or option holds one)."""

    def describe(value: Any) -> str | None:
        if not isinstance(value, str) or not value:
            return f"must be a non-empty string; got {value!r}"
        if "\x00" in value:
            return f"must not contain NUL characters; got {value!r}"
        return None

    return Check(describe)


def integer_list(low: int = 1, *, distinct: bool = False, non_empty: bool = False) -> Check:
    """A list (or tuple) of integers >= ``low``; optionally distinct and non-empty."""
    each = integer(low)
    kind = "positive" if low == 1 else "non-negative" if low == 0 else f">= {low}"

    def describe(value: Any) -> str | None:
        if not isinstance(value, (list, tuple)) or any(each.problem(item) for item in value):
            return f"must be a list of {kind} integers; got {value!r}"
        if (non_empty or distinct) and not value:
            return f"must be a non-empty list of {kind} integers; got {value!r}"
        if distinct and len(set(value)) != len(value):
            return f"must be a list of distinct {kind} integers; got {value!r}"
        return None

    return Check(describe)


def check_scalar(
    value: Any,
    name: str,
    target_type: type | tuple[type, ...],
    *,
    min_val: float | None = None,
    max_val: float | None = None,
    include_boundaries: str = "both",
) -> Any:
    """``value`` when it is a ``target_type`` within [``min_val``, ``max_val``] (boundaries
    per ``include_boundaries``: "both", "left", "right" or "neither"), else a ``ValueError``
    naming ``name`` — scikit-learn's ``check_scalar``, with bools never counted as numbers and
    numbers required to be finite."""
    types: Sequence[type] = target_type if isinstance(target_type, tuple) else (target_type,)
    if all(issubclass(t, (int, np.integer)) for t in types):
        check = integer(min_val, max_val, include_boundaries)  # type: ignore[arg-type]
    else:
        check = number(min_val, max_val, include_boundaries)
    return check(value, name)


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
