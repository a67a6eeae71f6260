"""Features in shared memory, held once by the run and all its worker processes.

The engine trains chunks of probes in joblib's loky worker processes. An ordinary numpy
array handed to them is written by joblib, at every engine call, to a temporary file that
the workers map: the caller's array and that file are two copies of the pool (3 GiB each
for a million 768-d tokens), and every call writes the file again. An array that already
*is* a memory map of a file is passed to the workers by reference — its file name, offset
and strides — and mapped by every process from the same pages. :func:`share_data` puts a
:class:`~probemeter.data.ProbeData`'s features there once, so the pool is held once for the
whole run however many engine calls read it.

The files live in ``/dev/shm`` (memory, not disk) when it has room, else in the system's
temporary folder (then the page cache shares them), in a folder of this process,
``probemeter-shared-<pid>``. A file is removed as soon as its array (every view of it) is
garbage collected, and at exit; the folder of a process that died without cleaning up
(``kill -9``) is removed by the next process that shares an array there.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import uuid
import warnings
import weakref
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from probemeter.data import ProbeData
from probemeter.training.workers import pid_alive, worker_count

__all__ = [
    "SHARED_MEMORY",
    "backing_file",
    "share_array",
    "share_data",
    "share_for_workers",
]

#: the folder of memory-backed files preferred for shared arrays (Linux)
SHARED_MEMORY = Path("/dev/shm")
_PREFIX = "probemeter-shared-"
#: room left free in the shared-memory folder beyond the file (other programs use it too)
_HEADROOM = 0.1
_guard = threading.Lock()


def share_array(array: np.ndarray) -> np.ndarray:
    """``array`` as a memory map of a file in shared memory (the same values, dtype and
    shape, C-ordered); an array already backed by a file (:func:`backing_file`), or empty
    (nothing to share), is returned as it is.

    The file's space is reserved before it is written (``posix_fallocate``), so a full
    folder is an error here, not a crash (SIGBUS) when a page is first touched. Without room
    in shared memory nor in the temporary folder, ``array`` itself is returned, with a
    :class:`ResourceWarning`: the run goes on without shared memory, the engine's workers
    receiving copies.

    Raises:
        ValueError: ``array`` holds Python objects (they cannot live in a file).
    """
    if not isinstance(array, np.ndarray):
        array = np.asarray(array)
    if array.dtype.hasobject:
        raise ValueError(f"array of dtype {array.dtype} cannot be shared: it holds objects")
    if array.size == 0 or backing_file(array) is not None:
        return array
    for base in _base_folders(array.nbytes):
        path = _folder(base) / f"{uuid.uuid4().hex}.bin"
        try:
            _reserve(path, array.nbytes)
        except OSError:
            _remove(path)
            continue
        shared = np.memmap(path, dtype=array.dtype, mode="r+", shape=array.shape)
        shared[...] = array
        # the file goes when the map does (every view of it holds the map), or at exit
        weakref.finalize(shared._mmap, _remove, path)
        return shared
    warnings.warn(
        f"no room for {array.nbytes / 2**20:.1f} MiB in {SHARED_MEMORY} or the temporary "
        "folder: the features stay in this process's memory (worker processes receive copies)",
        ResourceWarning,
        stacklevel=2,
    )
    return array


def share_data(data: ProbeData) -> ProbeData:
    """``data`` with what the engine reads in shared memory (:func:`share_array`): the
    features of pool and test set (dense arrays, or a CSR matrix's three arrays) and their
    labels; everything else as it is.

    Call it where the data is made and keep only the result: the engine's worker processes
    then map the arrays the caller holds instead of receiving a copy at every engine call,
    so the pool is held once (:mod:`probemeter.training.shared_memory`).
    """
    return replace(
        data,
        X_train=_shared_features(data.X_train),
        y_train=share_array(data.y_train),
        X_test=_shared_features(data.X_test),
        y_test=share_array(data.y_test),
    )


def share_for_workers(data: ProbeData, n_jobs: int | None) -> ProbeData:
    """``data`` in shared memory (:func:`share_data`) when ``n_jobs`` means worker processes
    (:func:`~probemeter.training.workers.worker_count` above one), else ``data`` itself."""
    return share_data(data) if worker_count(n_jobs) > 1 else data


def backing_file(array: np.ndarray) -> str | None:
    """The file ``array`` is a shared memory map of (following views to their base), or None
    for an array in the process's own memory — a copy-on-write map (``mode="c"``) included:
    its changes are private to this process, so other processes mapping its file would not
    see them."""
    base = array
    while base is not None:
        if isinstance(base, np.memmap) and getattr(base, "filename", None):
            return None if base.mode == "c" else str(base.filename)
        base = getattr(base, "base", None)
    return None


def _shared_features(features: np.ndarray | sp.csr_matrix) -> np.ndarray | sp.csr_matrix:
    if sp.issparse(features):
        arrays = (features.data, features.indices, features.indptr)
        return type(features)(
            tuple(share_array(a) for a in arrays), shape=features.shape, copy=False
        )
    return share_array(features)


def _base_folders(nbytes: int) -> list[Path]:
    """Where a file of ``nbytes`` may go, in order: :data:`SHARED_MEMORY` when it has the room
    (beyond a headroom of its size), then the temporary folder."""
    folders = [Path(tempfile.gettempdir())]
    if SHARED_MEMORY.is_dir() and os.access(SHARED_MEMORY, os.W_OK):
        stats = os.statvfs(SHARED_MEMORY)
        free, total = stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize
        if nbytes <= free - _HEADROOM * total:
            folders.insert(0, SHARED_MEMORY)
    return folders


def _folder(base: Path) -> Path:
    """This process's folder in ``base``, created on first use, after removing the folders of
    dead processes there."""
    folder = base / f"{_PREFIX}{os.getpid()}"
    with _guard:
        if not folder.is_dir():
            _remove_orphans(base)
            folder.mkdir(mode=0o700, exist_ok=True)
            atexit.register(_remove_folder, folder, os.getpid())
    return folder


def _reserve(path: Path, nbytes: int) -> None:
    """Create the file ``path`` of ``nbytes``, its blocks allocated where the system can
    (an OSError, e.g. no space left, instead of a SIGBUS when its map is written)."""
    descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(descriptor, 0, nbytes)
        else:  # macOS, Windows: a sparse file of that size
            os.ftruncate(descriptor, nbytes)
    finally:
        os.close(descriptor)


def _remove_orphans(base: Path) -> None:
    """Remove the shared folders in ``base`` of processes that no longer run."""
    for folder in base.glob(f"{_PREFIX}*"):
        pid = folder.name.removeprefix(_PREFIX)
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _remove_folder(folder: Path, owner: int) -> None:
    """At exit, remove ``folder`` if this is the process that made it (a forked child runs
    its parent's exit handlers too)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
