"""Where and how probes train: one frozen value instead of four keyword arguments.

Every function that trains probes (the engine's :func:`~probemeter.training.engine.fit_evaluate`,
:func:`~probemeter.curves.curve.loss_data_curve`, the online and switching codes, the k-sparse
probes, the units of the runner) takes ``execution: Execution | None``; None means
``Execution()``, the defaults declared here once. None of the four changes a result: they say
where the same numbers are computed (``device`` on a GPU aside, whose kernels round differently
from the CPU's).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

__all__ = ["Execution", "execution_of"]


@dataclass(frozen=True)
class Execution:
    """Where and how probes train (scikit-learn's ``n_jobs``, the engine's memory budget).

    Attributes:
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"`` or ``"cuda:1"``.
        n_jobs: CPU worker processes (``-1``: one per usable CPU; None: 1); results do not
            depend on it.
        max_memory: GiB budget per chunk of stacked probes (None: the engine's default, sized to
            the device: :func:`~probemeter.training.memory.memory_budget`).
        progress: show progress bars.
    """

    device: str = "auto"
    n_jobs: int | None = -1
    max_memory: float | None = None
    progress: bool = False


#: the keyword arguments :class:`Execution` replaced
_FIELDS = tuple(f.name for f in fields(Execution))


def execution_of(
    execution: Execution | None,
    old: Mapping[str, Any],
    function: str,
    default: Execution | None = None,
) -> Execution:
    """``execution`` (None: ``default``, itself None: ``Execution()``), with the old keyword
    arguments ``old`` a caller still passes (``device=``, ``n_jobs=``, ``max_memory=``,
    ``progress=``) applied on top, under a DeprecationWarning naming ``execution``; accepted
    for one release. Every function that took the four declares ``**old`` and calls this once.

    Raises:
        TypeError: ``old`` holds another keyword (named as Python names an unexpected one), or
            an old keyword next to ``execution``.
    """
    unknown = sorted(set(old) - set(_FIELDS))
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    default = Execution() if default is None else default
    if not old:
        return default if execution is None else execution
    if execution is not None:
        raise TypeError(
            f"{function}(): pass {', '.join(old)} in execution=Execution(...), not beside it"
        )
    passed = ", ".join(f"{name}={value!r}" for name, value in old.items())
    warnings.warn(
        f"{function}({', '.join(f'{name}=' for name in old)}) is deprecated and will be removed "
        f"in the next release: pass execution=Execution({passed})",
        DeprecationWarning,
        stacklevel=3,
    )
    return replace(default, **old)
