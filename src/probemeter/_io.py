"""Results on disk: atomic file writes (a reader sees the old file or the whole new one, never a
partial write) and the library versions recorded in every result."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

__all__ = [
    "JsonResult",
    "classes_from_json",
    "classes_to_json",
    "environment",
    "pack_bits",
    "read_json",
    "save_npy_atomic",
    "unpack_bits",
    "writable_folder",
    "write_bytes_atomic",
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
        """The result that :meth:`save` wrote to ``path``, through ``from_dict``.

        Raises:
            ValueError: naming ``path``, when it is missing, not JSON, or not such a result.
        """
        payload = read_json(path, f"{cls.__name__} file")
        try:
            return cls.from_dict(payload)  # type: ignore[attr-defined]
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{str(path)!r} is no valid {cls.__name__} file: {error}") from None


def classes_to_json(classes: Sequence[Any] | None) -> list[Any] | None:
    """The original labels of class indices 0..K−1 (``ProbeData.classes``) as a JSON list:
    numpy scalars as Python numbers, booleans as booleans, strings as strings, anything else
    (dates, tuples) as its ``str``; None stays None (data without recorded labels)."""
    if classes is None:
        return None
    values = [label.item() if isinstance(label, np.generic) else label for label in classes]
    return [label if isinstance(label, (bool, int, float, str)) else str(label) for label in values]


def classes_from_json(value: Sequence[Any] | None) -> tuple[Any, ...] | None:
    """The labels :func:`classes_to_json` wrote, as a tuple; None (or a file written before
    labels were recorded, which lacks the key) gives None."""
    return None if value is None else tuple(value)


def read_json(path: str | Path, what: str) -> Any:
    """The JSON document in ``path``, a ``what`` (e.g. "results file") for messages.

    A UTF-8 byte-order mark at the start (what some editors write) is ignored.

    Raises:
        ValueError: naming the path, when it is missing, a folder, or not UTF-8 JSON.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; give the file")
    if not path.exists():
        raise ValueError(f"{what} {str(path)!r} does not exist")
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{what} {str(path)!r} is not valid JSON: {error}") from None


def write_json_atomic(path: str | Path, payload: Any) -> None:
    """Write ``payload`` as JSON to ``path`` atomically (see :func:`_write_atomic`)."""
    _write_atomic(path, lambda stream: json.dump(payload, stream, indent=1))


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`_write_atomic`)."""
    _write_atomic(path, lambda stream: stream.write(text))


def pack_bits(values: np.ndarray) -> str:
    """A boolean array as base64 text of its packed bits (8 values a byte), for JSON;
    :func:`unpack_bits` restores it."""
    return base64.b64encode(np.packbits(np.asarray(values).astype(bool)).tobytes()).decode("ascii")


def unpack_bits(text: str, length: int) -> np.ndarray:
    """The ``length`` booleans :func:`pack_bits` wrote as ``text``."""
    bits = np.unpackbits(np.frombuffer(base64.b64decode(text), dtype=np.uint8))
    if bits.size < length:
        raise ValueError(f"packed bits hold {bits.size} values, fewer than {length}")
    return bits[:length].astype(bool)


def save_npy_atomic(path: str | Path, array: np.ndarray) -> None:
    """Save ``array`` as ``.npy`` (no pickles) to ``path`` atomically, flushed to disk before
    the rename (see :func:`_write_atomic`)."""
    _write_durable(path, lambda stream: np.save(stream, array, allow_pickle=False))


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, flushed to disk before the rename (see
    :func:`_write_atomic`)."""
    _write_durable(path, lambda stream: stream.write(data))


def _write_durable(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """:func:`_write_atomic` of a binary file, with its bytes flushed to disk (``fsync``)
    before the rename: a crash right after leaves the whole file, not an empty one."""

    def durable(stream: IO[bytes]) -> None:
        write(stream)
        stream.flush()
        os.fsync(stream.fileno())

    _write_atomic(path, durable, binary=True)


def writable_folder(folder: str | Path, argument: str) -> Path:
    """Create ``folder`` (with parents) and prove it can be written, before any work that
    would write there: a file is created in it and removed.

    Raises:
        ValueError: ``folder`` is an existing file (naming ``argument``).
        OSError: the folder cannot be created or written (permissions, a read-only or full
            disk), with the folder as ``filename``.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{argument} {str(folder)!r} is a file; give a folder")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".probemeter-write-test.")
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(folder)) from None
    os.close(handle)
    os.unlink(probe)
    return folder


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
