"""CPU seconds and peak memory of this process *and every process it started* (Linux ``/proc``).

The engine trains in worker processes (joblib's loky pool), so the figures of the main process
alone miss most of the work and memory. :class:`TreeMonitor` samples the process tree from a
background thread:

* **CPU**: per process, user + system seconds from ``/proc/PID/stat`` (fields 14 and 15, in
  clock ticks); the tree's CPU over the monitored span is, summed over every process seen, its
  last sample minus its first (0 for a process born during the span). A worker that exits
  between two samples loses at most one interval of CPU; this process's own CPU is exact
  (read at the start and the end).
* **memory**: the sum over the tree of ``Rss`` (every resident page of every process, shared
  ones counted in each; ``/proc/PID/statm``) at every sample, and of ``Pss`` (proportional set
  size, from ``/proc/PID/smaps_rollup``: pages shared by k processes — the memory-mapped pool
  the workers share — count 1/k in each, so nothing is counted twice) at every
  ``pss_every``-th sample (reading it walks the page tables: ~15–30 ms per large process on a
  loaded 2-core machine); the peaks are the largest sums sampled. A peak shorter than the
  interval can be missed; this process's ``VmHWM`` (its own exact peak) is reported too.
* the sampling thread's own CPU (``time.thread_time``) is subtracted from this process's CPU
  and reported apart (``monitor_cpu_s``).
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """Child pids of every thread of ``pid`` (``/proc/PID/task/TID/children``)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
        except OSError:
            continue
        found.extend(int(child) for child in text.split())
    return found


def tree_pids(root: int | None = None) -> list[int]:
    """``root`` (default: this process) and all its descendants."""
    pids, stack = [], [os.getpid() if root is None else root]
    while stack:
        pid = stack.pop()
        pids.append(pid)
        stack.extend(_children(pid))
    return pids


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far (None once it has gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (``/proc/PID/statm``); 0 once it has gone."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE_KIB
    except (OSError, IndexError, ValueError):
        return 0


def pss_kib(pid: int) -> int:
    """Proportional set size of ``pid`` in KiB (``/proc/PID/smaps_rollup``); 0 once gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    pss = re.search(r"^Pss:\s+(\d+) kB", text, re.MULTILINE)
    return int(pss.group(1)) if pss else 0


def own_peak_mib() -> float:
    """``VmHWM`` of this process (its exact peak resident memory since it started), MiB."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


class TreeMonitor:
    """Context manager sampling the process tree every ``interval`` seconds; after the block,
    :meth:`figures` gives wall, tree CPU, this process's CPU and the peaks (MiB).

    Example::

        with TreeMonitor() as monitor:
            work()
        print(monitor.figures())
    """

    def __init__(self, interval: float = 0.25, pss_every: int = 8) -> None:
        self.interval = interval
        self.pss_every = pss_every
        self._samples = 0
        self.monitor_cpu_s = 0.0
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self.peak_pss_kib = 0
        self.peak_rss_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        pss_total = rss_total = 0
        with_pss = self._samples % self.pss_every == 0
        self._samples += 1
        for pid in tree_pids():
            cpu = cpu_seconds(pid)
            if cpu is None:
                continue
            # a process first seen after the start was born during the span: it starts at 0
            self._first.setdefault(pid, cpu if self._started_with(pid) else 0.0)
            self._last[pid] = cpu
            rss_total += rss_kib(pid)
            if with_pss:
                pss_total += pss_kib(pid)
        self.peak_pss_kib = max(self.peak_pss_kib, pss_total)
        self.peak_rss_kib = max(self.peak_rss_kib, rss_total)

    def _started_with(self, pid: int) -> bool:
        return pid in self._initial

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
        self.monitor_cpu_s = time.thread_time()

    def __enter__(self) -> TreeMonitor:
        self._initial = set(tree_pids())
        self._load_before = load_average()
        self._own_before = time.process_time()
        self._wall = time.perf_counter()
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.wall_s = time.perf_counter() - self._wall
        self.own_cpu_s = time.process_time() - self._own_before
        self._load_after = load_average()

    def figures(self) -> dict[str, Any]:
        """Wall s, CPU s of the tree and of this process (the sampling thread's own CPU apart),
        peak PSS / RSS sums (MiB), this process's VmHWM (MiB), and the 1-minute load average
        before and after."""
        me = os.getpid()
        others = sum(self._last[pid] - self._first[pid] for pid in self._last if pid != me)
        own = self.own_cpu_s - self.monitor_cpu_s
        return {
            "wall_s": self.wall_s,
            "cpu_s": own + others,
            "own_cpu_s": own,
            "monitor_cpu_s": self.monitor_cpu_s,
            "peak_tree_pss_mib": self.peak_pss_kib / 1024,
            "peak_tree_rss_mib": self.peak_rss_kib / 1024,
            "own_peak_mib": own_peak_mib(),
            "load_before": self._load_before[0],
            "load_after": self._load_after[0],
        }
