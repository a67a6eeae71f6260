"""Feature files on disk: arrays ``X`` (examples × features, or examples × layers × features
for stacked hidden states) and ``y`` (labels) in an ``.npz`` archive, a ``.pt`` dict (loaded
with ``weights_only=True``: tensors, never code), a ``.safetensors`` file, a ``.parquet`` table
(column ``y`` and either a list column ``X``, nested for layers, or one numeric column per
feature), or a ``.npy`` pair (``X.npy`` beside ``X.labels.npy``).

Every problem a file can have — missing, a folder, truncated or not an archive, arrays of
Python objects (which would need pickle, never loaded), missing arrays, shapes that do not
fit together — is a :class:`ValueError` naming the file and what a valid one holds.
:func:`inspect_features` reads only the arrays' headers, so an experiment's ``--check`` can
validate files of any size without loading them.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from probemeter._arrays import as_numpy

__all__ = [
    "SUFFIXES",
    "FeatureFileInfo",
    "as_numpy",
    "inspect_features",
    "load_array",
    "load_features",
]

#: the feature-file formats read here
SUFFIXES = (".npz", ".npy", ".pt", ".safetensors", ".parquet")

#: how to write a file every loader here accepts
_HOW_TO_SAVE = "Save features as X and labels as y: np.savez(path, X=features, y=labels)"


@dataclass(frozen=True)
class FeatureFileInfo:
    """What a feature file holds, read from the array headers only.

    Attributes:
        path: the file.
        n_rows: examples (rows of ``X`` and entries of ``y``).
        n_features: features per example (the last axis of ``X``).
        feature_dtype: dtype of ``X`` as stored (e.g. ``"float32"``, ``"BF16"`` in safetensors).
        label_dtype: dtype of ``y`` as stored.
        n_layers: the layers of a 3-D ``X`` (examples, layers, features); None for a 2-D ``X``.
    """

    path: Path
    n_rows: int
    n_features: int
    feature_dtype: str
    label_dtype: str
    n_layers: int | None = None


def load_features(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Load ``(X, y)`` from a feature file of any suffix in :data:`SUFFIXES` (module docstring).

    The shapes are checked as by :func:`inspect_features` before the arrays are read; tensors
    come back as numpy arrays (floating ones as float32, so bfloat16 is widened). ``X`` is 2-D,
    or 3-D (examples, layers, features): one layer of it is chosen by
    :func:`probemeter.data.layer_data` or an experiment file's ``layer`` key.

    Raises:
        ValueError: naming the path — see :func:`inspect_features`.
    """
    path = Path(path)
    inspect_features(path)
    if path.suffix == ".npz":
        with _open_npz(path) as archive:
            return _read(archive, "X", path), _read(archive, "y", path)
    if path.suffix in _READERS:
        return _READERS[path.suffix](path)
    return _load_npy(path), _load_npy(_label_path(path))


def load_array(path: str | Path, name: str | None = None) -> np.ndarray:
    """One array: a ``.npy`` file, or the array ``name`` of a ``.npz`` archive.

    Raises:
        ValueError: the file is missing, unreadable or holds Python objects; ``name`` is not
            in the archive (naming the arrays it holds); a ``.npz`` without ``name``.
    """
    path = _existing_file(Path(path))
    if path.suffix == ".npy":
        return _load_npy(path)
    if path.suffix != ".npz":
        raise ValueError(f"array file {str(path)!r} must be .npy or .npz")
    if name is None:
        raise ValueError(f"{str(path)!r} is an archive: name the array to read from it")
    with _open_npz(path) as archive:
        if name not in archive.files:
            raise ValueError(f"{str(path)!r} has no array {name!r}; it holds {archive.files}")
        return _read(archive, name, path)


def inspect_features(path: str | Path) -> FeatureFileInfo:
    """Shapes and dtypes of a feature file, from its array headers (no data are read).

    Raises:
        ValueError: naming the path, when the file is missing or a folder, has a suffix not in
            :data:`SUFFIXES`, is truncated or not of its format, lacks ``X`` or ``y``
            (or the ``.labels.npy`` beside a ``.npy``), holds Python objects, has ``X`` neither
            2-D nor 3-D or ``y`` not 1-D, or row counts that differ.
    """
    path = _existing_file(Path(path))
    if path.suffix == ".npz":
        (x_shape, x_dtype), (y_shape, y_dtype) = _npz_headers(path, ("X", "y"))
    elif path.suffix == ".npy":
        label_path = _label_path(path)
        if not label_path.is_file():
            raise ValueError(f"labels for {str(path)!r} expected in {str(label_path)!r}")
        (x_shape, x_dtype), (y_shape, y_dtype) = (_npy_header(p) for p in (path, label_path))
    elif path.suffix in _HEADERS:
        (x_shape, x_dtype), (y_shape, y_dtype) = _HEADERS[path.suffix](path)
    else:
        raise ValueError(f"feature file {str(path)!r} must be one of {', '.join(SUFFIXES)}")
    if len(x_shape) not in (2, 3):
        raise ValueError(
            f"{str(path)!r}: X must be 2-D (examples, features) or 3-D (examples, layers, "
            f"features); got shape {x_shape}"
        )
    if len(y_shape) == 2 and y_shape[1] == 1:
        y_shape = y_shape[:1]
    if len(y_shape) != 1:
        raise ValueError(f"{str(path)!r}: y must be 1-D (one label per row); got shape {y_shape}")
    if x_shape[0] != y_shape[0]:
        raise ValueError(f"{str(path)!r}: X has {x_shape[0]} rows but y has {y_shape[0]} labels")
    n_layers = int(x_shape[1]) if len(x_shape) == 3 else None
    return FeatureFileInfo(
        path, int(x_shape[0]), int(x_shape[-1]), str(x_dtype), str(y_dtype), n_layers
    )


def _existing_file(path: Path) -> Path:
    if path.is_dir():
        raise ValueError(f"{str(path)!r} is a folder; give a file")
    if not path.exists():
        raise ValueError(f"file {str(path)!r} does not exist")
    return path


def _label_path(path: Path) -> Path:
    return path.with_suffix(".labels.npy")


@contextmanager
def _open_npz(path: Path) -> Iterator[np.lib.npyio.NpzFile]:
    try:
        archive = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as error:
        raise _not_an_archive(path, error) from None
    with archive:
        yield archive


def _read(archive: np.lib.npyio.NpzFile, name: str, path: Path) -> np.ndarray:
    try:
        return archive[name]
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as error:
        raise _unreadable(path, name, error) from None


def _load_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (EOFError, ValueError, OSError) as error:
        raise _unreadable(path, None, error) from None


def _npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype]:
    try:
        with path.open("rb") as stream:
            return _header(stream)
    except (EOFError, ValueError, OSError) as error:
        raise _unreadable(path, None, error) from None


def _npz_headers(path: Path, names: tuple[str, ...]) -> list[tuple[tuple[int, ...], np.dtype]]:
    """Shapes and dtypes of arrays ``names`` of an ``.npz``, read from the zip directly."""
    try:
        with zipfile.ZipFile(path) as archive:
            _require(path, [name.removesuffix(".npy") for name in archive.namelist()], names)
            headers = []
            for name in names:
                try:
                    with archive.open(f"{name}.npy") as stream:
                        headers.append(_header(stream))
                except (zipfile.BadZipFile, EOFError, ValueError, OSError) as error:
                    raise _unreadable(path, name, error) from None
            return headers
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise _not_an_archive(path, error) from None


def _header(stream) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from an ``.npy`` header; refuses arrays of Python objects."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    else:
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    if dtype.hasobject:
        raise ValueError("it holds Python objects, which would need pickle to load")
    return shape, dtype


def _not_an_archive(path: Path, error: BaseException) -> ValueError:
    return ValueError(
        f"{str(path)!r} is not a readable .npz archive ({error}); it may be truncated or "
        "another format. " + _HOW_TO_SAVE
    )


def _unreadable(path: Path, name: str | None, error: BaseException) -> ValueError:
    array = f" (array {name!r})" if name else ""
    reason = str(error) or type(error).__name__
    if "Object arrays" in reason:
        reason = "it holds Python objects, which would need pickle to load"
    return ValueError(
        f"{str(path)!r}{array} cannot be read: {reason}. Numeric arrays are expected. "
        + _HOW_TO_SAVE
    )


Header = tuple[tuple[int, ...], object]


def _require(path: Path, held: list[str], needed: tuple[str, ...] = ("X", "y")) -> None:
    """A ValueError naming the file when it holds (``held``) not all arrays ``needed``."""
    missing = [key for key in needed if key not in held]
    if missing:
        how = _HOW_TO_SAVE if path.suffix == ".npz" else "Store features as X and labels as y"
        raise ValueError(f"{str(path)!r} lacks array(s) {missing}; it holds {sorted(held)}. {how}")


def _torch_dict(path: Path, mmap: bool) -> dict:
    import pickle

    import torch

    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        raise _unreadable(path, None, error) from None
    if not isinstance(payload, dict):
        raise ValueError(
            f"{str(path)!r} holds a {type(payload).__name__}; save a dict of tensors: "
            "torch.save({'X': features, 'y': labels}, path)"
        )
    _require(path, list(payload))
    return payload


def _pt_headers(path: Path) -> tuple[Header, Header]:
    payload = _torch_dict(path, mmap=True)
    return tuple((tuple(payload[k].shape), payload[k].dtype) for k in ("X", "y"))  # type: ignore[return-value]


def _load_pt(path: Path) -> tuple[np.ndarray, np.ndarray]:
    payload = _torch_dict(path, mmap=False)
    return as_numpy(payload["X"]), as_numpy(payload["y"])


def _safetensors(path: Path, read: bool) -> list:
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:
        raise ValueError(
            f"reading {str(path)!r} needs safetensors: pip install 'probemeter[encoders]'"
        ) from None
    try:
        with safe_open(str(path), framework="pt") as stored:
            _require(path, list(stored.keys()))
            if read:
                return [as_numpy(stored.get_tensor(k)) for k in ("X", "y")]
            slices = [stored.get_slice(k) for k in ("X", "y")]
            return [(tuple(part.get_shape()), part.get_dtype()) for part in slices]
    except (SafetensorError, OSError) as error:
        raise _unreadable(path, None, error) from None


def _parquet(path: Path, read: bool) -> list:
    """``[(shape, type) of X, (shape, type) of y]`` from the schema and the first row, or, with
    ``read``, the arrays ``[X, y]``."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(
            f"reading {str(path)!r} needs pyarrow: pip install 'probemeter[encoders]'"
        ) from None
    try:
        stored = pq.ParquetFile(path)
        names = stored.schema_arrow.names
        if "y" not in names or len(names) < 2:
            raise ValueError(
                f"{str(path)!r} has columns {names}; it needs a label column y and features: "
                "a list column X or one numeric column per feature"
            )
        columns = ["X"] if "X" in names else [name for name in names if name != "y"]
        if read:
            table = stored.read()
            labels = table["y"].to_numpy(zero_copy_only=False)
            if columns == ["X"]:
                return [np.asarray(table["X"].to_pylist(), dtype=np.float32), labels]
            features = [table[name].to_numpy(zero_copy_only=False) for name in columns]
            return [np.column_stack(features), labels]
        rows = stored.metadata.num_rows
        if columns == ["X"]:
            first = stored.read_row_group(0, columns=["X"])["X"][0].as_py() if rows else []
            width = np.shape(first) if isinstance(first, list) else ()
            x_header = ((rows, *width), stored.schema_arrow.field("X").type)
        else:
            x_header = ((rows, len(columns)), "columns")
        return [x_header, ((rows,), stored.schema_arrow.field("y").type)]
    except (pa.ArrowException, OSError) as error:
        raise _unreadable(path, None, error) from None


#: per suffix beyond .npz/.npy: the shapes and dtypes of X and y, and the loader
_HEADERS = {
    ".pt": _pt_headers,
    ".safetensors": lambda path: tuple(_safetensors(path, read=False)),
    ".parquet": lambda path: tuple(_parquet(path, read=False)),
}
_READERS = {
    ".pt": _load_pt,
    ".safetensors": lambda path: tuple(_safetensors(path, read=True)),
    ".parquet": lambda path: tuple(_parquet(path, read=True)),
}
