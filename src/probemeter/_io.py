"""Results on disk: atomic file writes (a reader sees the old file or the whole new one, never a
partial write) and the library versions recorded in every result."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

__all__ = [
    "JsonResult",
    "environment",
    "save_npy_atomic",
    "write_json_atomic",
    "write_text_atomic",
]

_Result = TypeVar("_Result", bound="JsonResult")


class JsonResult:
    """Mixin of the result classes that define ``to_dict()`` and a ``from_dict(payload)``
    classmethod: ``save`` writes ``to_dict()`` as JSON atomically, ``load`` reads it back."""

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_dict` as JSON to ``path``, atomically (see :func:`write_json_atomic`)."""
        write_json_atomic(path, self.to_dict())  # type: ignore[attr-defined]

    @classmethod
    def load(cls: type[_Result], path: str | Path) -> _Result:
        """The result that :meth:`save` wrote to ``path``, through ``from_dict``."""
        return cls.from_dict(json.loads(Path(path).read_text()))  # type: ignore[attr-defined]


def write_json_atomic(path: str | Path, payload: Any) -> None:
    """Write ``payload`` as JSON to ``path`` atomically (see :func:`_write_atomic`)."""
    _write_atomic(path, lambda stream: json.dump(payload, stream, indent=1))


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`_write_atomic`)."""
    _write_atomic(path, lambda stream: stream.write(text))


def save_npy_atomic(path: str | Path, array: np.ndarray) -> None:
    """Save ``array`` as ``.npy`` (no pickles) to ``path`` atomically, flushed to disk before
    the rename (see :func:`_write_atomic`)."""

    def write(stream: IO[bytes]) -> None:
        np.save(stream, array, allow_pickle=False)
        stream.flush()
        os.fsync(stream.fileno())

    _write_atomic(path, write, binary=True)


def _write_atomic(path: str | Path, write: Callable[[IO[Any]], Any], binary: bool = False) -> None:
    """Call ``write`` on a temporary file in ``path``'s folder, then rename it onto ``path``,
    so an interrupted write never leaves a truncated file.

    The temporary file is named ``.<name>.<random>.tmp``; a writer killed before the rename
    (SIGKILL, power loss) can leave one behind, which readers must ignore.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        stream = os.fdopen(handle, "wb") if binary else os.fdopen(handle, "w", encoding="utf-8")
        with stream:
            write(stream)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's 0600 would hide results from others
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _umask() -> int:
    """The process's file-creation mask (reading it means setting it, so restore it at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def environment() -> dict[str, str]:
    """Library versions recorded in every result (results drift between versions)."""
    import platform

    import pandas as pd
    import torch

    return {
        "probemeter": _package_version(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "pandas": pd.__version__,
    }


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("probemeter")
    except PackageNotFoundError:  # running from a source tree without installation
        return "unknown"
