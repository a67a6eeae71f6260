"""Worker processes that do not outlive the process that started them.

The engine trains chunks of probes in joblib's loky worker processes (several hundred MB each).
When the process that started them is killed abruptly (``kill -9``, the out-of-memory killer),
nothing tells the workers: a worker busy with a chunk finishes it, then idles until loky's
timeout — minutes of memory held for a run that no longer exists. :func:`exit_with_parent`,
called once inside a worker, starts a daemon thread that notices the parent's death within
about a second and ends the worker with :func:`os._exit` (no cleanup: its results have nobody
to go to, and the unit store only ever holds complete units).

:func:`pid_alive` also tells :mod:`probemeter.runs.lock` whether the holder of a run folder's
lock still runs. Both work on POSIX systems (where an orphan is re-parented, so
:func:`os.getppid` changes the moment its parent dies) and on Windows (through the process
handle); a zombie (dead, not yet reaped) counts as dead on Linux.

:func:`worker_count` says how many worker processes an ``n_jobs`` means.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

import joblib

from probemeter._validation import check_scalar

__all__ = [
    "ORPHAN_EXIT_STATUS",
    "exit_with_parent",
    "parent_alive",
    "pid_alive",
    "worker_count",
]

#: exit status of a worker ended by :func:`exit_with_parent` (EX_SOFTWARE of sysexits.h)
ORPHAN_EXIT_STATUS = 70

_guard = threading.Lock()
#: the process in which the watcher runs; a process forked from it has another pid, no
#: watcher thread (fork copies only the calling thread), and so may start its own
_watching_pid: int | None = None


def exit_with_parent(interval: float = 1.0) -> bool:
    """End this process as soon as its parent process dies (polled every ``interval`` s).

    Call it at the start of a function that runs in a worker process (e.g. a joblib/loky
    task). The first call in a process records the parent (:func:`os.getppid`) and starts a
    daemon thread that checks :func:`parent_alive` every ``interval`` seconds; once the parent
    is gone it writes one line to stderr and calls ``os._exit(ORPHAN_EXIT_STATUS)``. Later
    calls in the same process do nothing, so calling it once per task costs nothing.

    Returns:
        True if this call started the watcher, False if it already ran in this process.

    Raises:
        ValueError: ``interval`` is not a positive number of seconds.
    """
    global _watching_pid
    if (
        isinstance(interval, bool)
        or not isinstance(interval, (int, float))
        or not interval > 0
        or interval == float("inf")
    ):
        raise ValueError(f"interval must be a positive number of seconds; got {interval!r}")
    with _guard:
        pid = os.getpid()
        if _watching_pid == pid:
            return False
        parent = os.getppid()
        watcher = threading.Thread(
            target=_watch,
            args=(parent, float(interval)),
            name=f"probemeter-exit-with-parent-{parent}",
            daemon=True,
        )
        watcher.start()
        _watching_pid = pid
        return True


def _watch(parent: int, interval: float) -> None:
    """Sleep while ``parent`` lives, then end this process at once."""
    while parent_alive(parent):
        time.sleep(interval)
    try:
        print(
            f"probemeter: worker process {os.getpid()} exits: its parent process {parent} is gone",
            file=sys.stderr,
            flush=True,
        )
    except (OSError, ValueError):  # stderr was a pipe to the dead parent, or is closed
        pass
    os._exit(ORPHAN_EXIT_STATUS)


def parent_alive(parent: int) -> bool:
    """Whether ``parent``, the process that was this process's parent, still runs.

    On POSIX systems a process whose parent dies is re-parented (to init or a subreaper) at
    once, so a changed :func:`os.getppid` means the parent is gone, whatever became of its
    pid; otherwise the parent is checked by :func:`pid_alive`.
    """
    if os.name != "nt" and os.getppid() != parent:
        return False
    return pid_alive(parent)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine and has not exited.

    A process of another user counts as alive; on Linux a zombie (exited, not yet reaped by its
    parent) counts as dead. A pid may be reused by a later process: callers that keep a pid
    for long compare the process's start time too (:mod:`probemeter.runs.lock` does).
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    if os.name == "nt":
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, but belongs to another user
        return True
    except OverflowError:  # beyond pid_t: no such process
        return False
    return _linux_state(pid) not in ("Z", "X")


def _linux_state(pid: int) -> str | None:
    """The state letter of ``pid`` in ``/proc/<pid>/stat`` (``R``, ``S``, ``Z``, ...); None
    when there is no ``/proc`` (not Linux) or the process just vanished."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the command name in (...) may hold spaces
    return fields[0] if fields else None


def _windows_pid_alive(pid: int) -> bool:
    """:func:`pid_alive` on Windows, where ``os.kill(pid, 0)`` would send Ctrl-C instead."""
    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    query_limited_information, still_active, access_denied = 0x1000, 259, 5
    handle = kernel32.OpenProcess(query_limited_information, False, pid)
    if not handle:
        return kernel32.GetLastError() == access_denied
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)


def worker_count(n_jobs: int | None) -> int:
    """How many worker processes ``n_jobs`` means here (scikit-learn's convention: None is 1,
    −1 all usable CPUs, −2 all but one, …); a ValueError for 0 or fewer than −CPUs.

    The usable CPUs are joblib's count: those this process may run on (its affinity mask:
    ``taskset``, a cluster job's cgroup cpuset), bounded by a cgroup CPU quota and by the
    environment variable ``LOKY_MAX_CPU_COUNT``; not every CPU of the machine, which on a shared
    node would start more workers than the job was given.
    """
    cores = joblib.cpu_count()
    if n_jobs is None:
        return 1
    check_scalar(n_jobs, "n_jobs", int, min_val=-cores)
    if n_jobs == 0:
        raise ValueError("n_jobs must be a non-zero integer or None; got 0")
    return int(n_jobs) if n_jobs > 0 else cores + 1 + int(n_jobs)
