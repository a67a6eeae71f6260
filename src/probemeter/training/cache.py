"""How much of the CPU's last-level cache one training process can count on.

A training step of a chunk of stacked probes touches every parameter several times: the forward
and backward passes read each weight, the backward pass writes each gradient, and the fused Adam
step reads and writes the weights, their gradients and both moments (16 bytes per f32
parameter and more, :class:`~probemeter.training.memory.MemoryEstimate`). On few rows the
arithmetic per parameter is small, so when the chunk's state does not fit the cache the step
waits on main memory, while on many rows the arithmetic hides the traffic
(``benchmarks/cache_bound.py``; figures in benchmarks/README.md). The engine therefore caps,
on the CPU, the probes of a chunk on few rows to what fits half of a core's share of the
last-level cache (:func:`probemeter.training.engine.fit_evaluate`'s chunk planning).
"""

from __future__ import annotations

import functools
from pathlib import Path

__all__ = ["CACHE_BOUND_ROWS", "cache_budget", "last_level_cache_share"]

#: chunks on fewer minibatch rows than this are capped to the cache budget (below it the cap
#: gains, above it neither gains nor loses: benchmarks/README.md)
CACHE_BOUND_ROWS = 128
#: the least state a capped chunk may hold: below it a step is dominated by its fixed cost
#: (operator launches), not by memory traffic
MIN_CACHE_BUDGET_BYTES = 4 * 2**20
_SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def last_level_cache_share(root: Path = _SYSFS_CACHE) -> int:
    """Bytes of CPU 0's last-level data (or unified) cache divided by the number of CPUs that
    share it, read from Linux's sysfs description under ``root`` (``indexN/level``, ``type``,
    ``size`` such as ``32768K`` and ``shared_cpu_list`` such as ``0-7,64-71``); 0 where the
    files are absent or unreadable (other systems)."""
    caches = []
    for entry in sorted(root.glob("index*")):
        try:
            if (entry / "type").read_text().strip() == "Instruction":
                continue
            level = int((entry / "level").read_text())
            size = _parse_size((entry / "size").read_text().strip())
            sharing = _count_cpus((entry / "shared_cpu_list").read_text().strip())
        except (OSError, ValueError):
            continue
        caches.append((level, size // sharing))
    return max(caches)[1] if caches else 0


@functools.cache
def cache_budget() -> int:
    """Bytes of training state one chunk on few rows may hold on this machine: half of a core's
    share of the last-level cache (the rest holds the minibatch, the pool's rows and the
    libraries' own data), at least ``MIN_CACHE_BUDGET_BYTES``."""
    return max(last_level_cache_share() // 2, MIN_CACHE_BUDGET_BYTES)


def _parse_size(text: str) -> int:
    """``"512K"``, ``"32M"`` or ``"4096"`` as bytes."""
    if text[-1:].upper() in _UNITS:
        return int(text[:-1]) * _UNITS[text[-1].upper()]
    return int(text)


def _count_cpus(cpu_list: str) -> int:
    """How many CPUs a list such as ``"0-3,8,10-11"`` names (at least 1)."""
    count = 0
    for part in cpu_list.split(","):
        first, _, last = part.partition("-")
        count += int(last or first) - int(first) + 1
    if count < 1:
        raise ValueError(f"no CPUs in {cpu_list!r}")
    return count
