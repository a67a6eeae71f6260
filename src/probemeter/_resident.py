"""Large memory-mapped arrays read without becoming resident.

A pool read from disk (:meth:`~probemeter.data.ProbeData.load`, the layer files of
:class:`~probemeter.encoders.FeatureCache`) is a read-only memory map. Every page of it the
process touches stays mapped, and mapped file pages count in the resident set (``VmRSS``,
``VmHWM``, ``ru_maxrss``) like the process's own memory, though the kernel may drop them: a run
over a pool larger than memory would report, and compete for, the whole pool. Worse, recent
Linux kernels keep files in the page cache as large folios (up to 2 MiB) and map a whole folio
on a fault, so gathering a minibatch of 512 random rows of 6 KiB through the map makes ~0.5 GB
resident (measured on ext4, Linux 6.18).

* :class:`FileRows` reads rows of such a map with ``pread`` instead (into the caller's buffer:
  the page cache holds them, the process never maps them), for maps of files of at least
  :data:`RESIDENT_FILE_BYTES`; pools that fit in memory keep being read through the map.
* :func:`release` tells the kernel the process no longer needs the pages of a map
  (``madvise(MADV_DONTNEED)``) after a sequential pass over it (evaluating the test set,
  hashing the data): the next access maps them again from the page cache.

Neither changes a value read: results are bit-identical.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

__all__ = ["RESIDENT_FILE_BYTES", "SCAN_BYTES", "FileRows", "release"]

#: maps of files at least this large are read with ``pread`` and released after passes
RESIDENT_FILE_BYTES = 256 * 2**20
#: bytes of a map read between two releases in a sequential pass
SCAN_BYTES = 64 * 2**20


def _shared_map(array: Any) -> tuple[np.memmap, mmap.mmap] | None:
    """The read-only memory map (``mode="r"``) an array views and its ``mmap``, or None: an
    array in memory, a writable map (shared memory, whose pages are memory anyway) or a
    copy-on-write one (``mode="c"``: dropping its pages would lose the process's changes)."""
    base = array
    while base is not None:
        if isinstance(base, np.memmap) and isinstance(getattr(base, "_mmap", None), mmap.mmap):
            return (base, base._mmap) if base.mode in ("r", "readonly") else None
        base = getattr(base, "base", None)
    return None


def release(*arrays: Any) -> None:
    """Drop the pages of the large read-only memory maps under ``arrays`` from the resident
    set (arrays in memory, and maps of files under :data:`RESIDENT_FILE_BYTES`, are left)."""
    for array in arrays:
        found = _shared_map(array)
        if found is not None and len(found[1]) >= RESIDENT_FILE_BYTES:
            found[1].madvise(mmap.MADV_DONTNEED)


def scan_blocks(array: np.ndarray) -> Any:
    """The rows of ``array`` a block of about :data:`SCAN_BYTES` at a time, released after
    each (:func:`release`): a sequential pass that never holds more than a block resident."""
    step = max(1, SCAN_BYTES // max(1, array[:1].nbytes))
    for start in range(0, len(array), step):
        yield array[start : start + step]
        release(array)


class FileRows:
    """The rows of a large read-only memory-mapped C-ordered array, read with ``pread``.

    Attributes:
        path: the file.
        offset: where the array's data starts in it.
        row_bytes: bytes per row.
    """

    def __init__(self, path: str, offset: int, row_bytes: int) -> None:
        self.path, self.offset, self.row_bytes = path, offset, row_bytes
        self._fd: int | None = None

    @classmethod
    def of(cls, array: Any) -> FileRows | None:
        """The rows of ``array`` when it is a whole read-only memory map (as :func:`numpy.load`
        with ``mmap_mode="r"`` returns) of a file of at least :data:`RESIDENT_FILE_BYTES`;
        else None (read it through the map or in memory)."""
        found = _shared_map(array)
        if found is None or found[0] is not array or not isinstance(array.base, mmap.mmap):
            return None
        if not array.flags.c_contiguous or array.ndim != 2 or not array.filename:
            return None
        if len(found[1]) < RESIDENT_FILE_BYTES:
            return None
        return cls(str(array.filename), int(array.offset), int(array[:1].nbytes))

    def _descriptor(self) -> int:
        if self._fd is None:  # opened in the process that reads (engine workers included)
            self._fd = os.open(self.path, os.O_RDONLY)
        return self._fd

    def gather(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Rows ``index`` into ``out`` (a C-ordered array of ``len(index)`` rows of the
        array's dtype and width), in order; returns ``out``."""
        fd, size, offset = self._descriptor(), self.row_bytes, self.offset
        view = memoryview(out).cast("B")
        for position, row in enumerate(np.asarray(index, dtype=np.int64).tolist()):
            start = position * size
            if os.preadv(fd, [view[start : start + size]], offset + row * size) != size:
                raise OSError(f"{self.path!r} ended before row {row}: truncated while in use?")
        return out

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)

    def __getstate__(self) -> dict[str, Any]:  # a worker process opens its own descriptor
        return {**self.__dict__, "_fd": None}
