"""Feature files on disk: arrays ``X`` (examples × features, or examples × layers × features
for stacked hidden states) and ``y`` (labels) in an ``.npz`` archive, a ``.pt`` dict (loaded
with ``weights_only=True``: tensors, never code), a ``.safetensors`` file, a ``.parquet`` table
(column ``y`` and either a list column ``X``, nested for layers, or one numeric column per
feature), or a ``.npy`` pair (``X.npy`` beside ``X.labels.npy``).

**Sparse features** (e.g. sparse-autoencoder latents) are an ``.npz`` file written by
``scipy.sparse.save_npz`` (arrays ``format``, ``shape``, ``data`` and ``indices``/``indptr``
for CSR or CSC, ``row``/``col`` for COO), its labels the array ``y`` of the same archive or
the file ``<stem>.labels.npy`` beside it. They are read as a CSR matrix and never made dense;
CSC and COO are converted to CSR (memory of the stored values), other formats refused.
Only callers that take sparse features (``sparse=True``) get them.

Every problem a file can have — missing, a folder, truncated or not an archive, arrays of
Python objects (which would need pickle, never loaded), missing arrays, shapes that do not
fit together, NaN or inf among the features — is a :class:`ValueError` naming the file and
what a valid one holds. :func:`inspect_features` reads only the arrays' headers (and, of a
sparse file, its index arrays, in chunks), so an experiment's ``--check`` can validate files
of any size without loading them.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import scipy.sparse as sp

from probemeter._arrays import as_numpy

__all__ = [
    "SUFFIXES",
    "FeatureFileInfo",
    "as_numpy",
    "inspect_features",
    "load_array",
    "load_features",
    "load_sparse_features",
]

#: the feature-file formats read here
SUFFIXES = (".npz", ".npy", ".pt", ".safetensors", ".parquet")

#: how to write a file every loader here accepts
_HOW_TO_SAVE = "Save features as X and labels as y: np.savez(path, X=features, y=labels)"
#: how to write a sparse feature file
_HOW_TO_SAVE_SPARSE = (
    "Save sparse features with scipy.sparse.save_npz(path, X.tocsr()) and their labels with "
    "np.save(path.with_suffix('.labels.npy'), y)"
)
#: the index arrays of each sparse format read (besides ``format``, ``shape`` and ``data``)
_SPARSE_INDICES = {
    "csr": ("indices", "indptr"),
    "csc": ("indices", "indptr"),
    "coo": ("row", "col"),
}


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
        sparse: whether ``X`` is a sparse matrix (``scipy.sparse.save_npz``; always 2-D).
    """

    path: Path
    n_rows: int
    n_features: int
    feature_dtype: str
    label_dtype: str
    n_layers: int | None = None
    sparse: bool = False


def load_features(
    path: str | Path, *, sparse: bool = False
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray]:
    """Load ``(X, y)`` from a feature file of any suffix in :data:`SUFFIXES` (module docstring).

    The shapes are checked as by :func:`inspect_features` before the arrays are read, and
    the features once read: NaN or inf in ``X`` is refused naming the file (a run of several
    files tells which one). Tensors come back as numpy arrays (floating ones as float32, so
    bfloat16 is widened). ``X`` is 2-D,
    or 3-D (examples, layers, features): one layer of it is chosen by
    :func:`probemeter.data.layer_data` or an experiment file's ``layer`` key. With ``sparse``,
    a sparse ``.npz`` (module docstring) gives ``X`` as a scipy CSR matrix, its stored arrays
    validated (:func:`load_sparse_features`); without, such a file is refused.

    Raises:
        ValueError: naming the path — see :func:`inspect_features` and
            :func:`load_sparse_features`; a sparse file without ``sparse``; NaN or inf in
            ``X`` (with the number of such rows and the first, counted from 0).
    """
    path = Path(path)
    info = inspect_features(path)
    if info.sparse:
        if not sparse:
            raise ValueError(
                f"{str(path)!r} holds a sparse matrix (scipy.sparse.save_npz), which this reader "
                "does not take: loss-data curves and online codes read sparse features (the "
                "curve and mdl methods of an experiment file); or save X dense. " + _HOW_TO_SAVE
            )
        return load_sparse_features(path)
    if path.suffix == ".npz":
        with _open_npz(path) as archive:
            X, y = _read(archive, "X", path), _read(archive, "y", path)
    elif path.suffix in _READERS:
        X, y = _READERS[path.suffix](path)
    else:
        X, y = _load_npy(path), _load_npy(_label_path(path))
    _check_finite(path, X)
    return X, y


def _check_finite(path: Path, X: np.ndarray) -> None:
    """Refuse NaN or inf in the features ``X`` of ``path``, naming the file: the same check
    as :meth:`~probemeter.data.ProbeData.from_arrays`, which cannot know the file. Done in
    blocks of rows, so the check holds at most 16 M flags at a time."""
    if X.dtype.kind not in "fc":
        return
    flat = X.reshape(len(X), -1)
    step = max(1, (1 << 24) // max(1, flat.shape[1]))
    bad = [
        np.flatnonzero(~np.isfinite(flat[start : start + step]).all(axis=1)) + start
        for start in range(0, len(flat), step)
    ]
    rows = np.concatenate(bad) if bad else np.empty(0, np.int64)
    if rows.size:
        raise ValueError(
            f"{str(path)!r}: X contains NaN or inf in {rows.size} row(s), the first at row "
            f"{rows[0]} (counting from 0); remove or impute them"
        )


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
    """Shapes and dtypes of a feature file, from its array headers (no data are read). Of a
    sparse ``.npz`` (module docstring) the tiny ``format`` and ``shape`` arrays are read and
    the others' headers checked against them (``indptr`` of rows + 1 entries for CSR,
    ``indices``/``row``/``col`` as long as ``data``, integer indices, real values), and its
    index arrays are read in chunks (not the values): every index within the stated shape,
    ``indptr`` from 0 to the stored values, never decreasing. A file whose indices exceed its
    shape is refused here, by its own name, before its shape is compared with another file's;
    its info says ``sparse``.

    Raises:
        ValueError: naming the path, when the file is missing or a folder, has a suffix not in
            :data:`SUFFIXES`, is truncated or not of its format, lacks ``X`` or ``y``
            (or the ``.labels.npy`` beside a ``.npy``), holds Python objects, has ``X`` neither
            2-D nor 3-D or ``y`` not 1-D, or row counts that differ; for a sparse file,
            naming the array: a format other than CSR, CSC or COO, a missing array, lengths
            or dtypes that do not fit, indices outside the shape, row pointers that decrease
            or do not end at the stored values, labels in neither ``y`` nor
            ``<stem>.labels.npy``.
    """
    path = _existing_file(Path(path))
    if path.suffix == ".npz" and _is_sparse_npz(path):
        return _sparse_info(path)
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
    _check_labels(path, x_shape[0], y_shape)
    n_layers = int(x_shape[1]) if len(x_shape) == 3 else None
    return FeatureFileInfo(
        path, int(x_shape[0]), int(x_shape[-1]), str(x_dtype), str(y_dtype), n_layers
    )


def load_sparse_features(path: str | Path) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(X, y)`` of a sparse feature file (module docstring): ``X`` a scipy CSR matrix, never
    dense, ``y`` the archive's ``y`` or the ``<stem>.labels.npy`` beside it.

    Beyond the headers (:func:`inspect_features`) the stored arrays are checked: CSR/CSC row
    (column) pointers ``indptr`` start at 0, never decrease and end at the number of stored
    values; every index lies within the shape; no stored value is NaN or inf. CSC and COO
    are converted to CSR (duplicates of COO summed).

    Raises:
        ValueError: naming the file and the array (``'indptr'``, ``'data'``, …) and what is
            wrong with it; a file that holds no sparse matrix.
    """
    path = Path(path)
    info = inspect_features(path)
    if not info.sparse:
        raise ValueError(f"{str(path)!r} holds no sparse matrix (scipy.sparse.save_npz)")
    with _open_npz(path) as archive:
        fmt, shape = _sparse_format(archive, path), _sparse_shape(archive, path)
        arrays = {name: _read(archive, name, path) for name in ("data", *_SPARSE_INDICES[fmt])}
        labels = _read(archive, "y", path) if "y" in archive.files else None
    if labels is None:
        labels = _load_npy(_label_path(path))
    return _checked_sparse(path, fmt, shape, arrays), labels


def _is_sparse_npz(path: Path) -> bool:
    """Whether the ``.npz`` at ``path`` is a ``scipy.sparse.save_npz`` file (no ``X``, a
    ``format``)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise _not_an_archive(path, error) from None
    return "X.npy" not in names and "format.npy" in names


def _sparse_info(path: Path) -> FeatureFileInfo:
    """:func:`inspect_features` of a sparse ``.npz``: ``format`` and ``shape`` are read (a few
    bytes), every other array only by its header; the labels' rows must match the shape."""
    with _open_npz(path) as archive:
        fmt, shape = _sparse_format(archive, path), _sparse_shape(archive, path)
        held = [name for name in archive.files if name not in ("format", "shape")]
    arrays = ("data", *_SPARSE_INDICES[fmt])
    missing = [name for name in arrays if name not in held]
    if missing:
        raise ValueError(
            f"{str(path)!r} is a sparse {fmt.upper()} file lacking array(s) {missing}; it holds "
            f"{sorted(held)}. {_HOW_TO_SAVE_SPARSE}"
        )
    headers = dict(zip(arrays, _npz_headers(path, arrays)))
    for name, (array_shape, dtype) in headers.items():
        if dtype.kind not in ("biuf" if name == "data" else "iu"):
            wanted = "real numbers" if name == "data" else "integers"
            raise ValueError(f"{str(path)!r} (array {name!r}) must hold {wanted}; got {dtype}")
        if len(array_shape) != 1:
            raise ValueError(f"{str(path)!r} (array {name!r}) must be 1-D; got {array_shape}")
    stored = headers["data"][0][0]
    lengths = {name: headers[name][0][0] for name in arrays[1:]}
    expected = {"indices": stored, "row": stored, "col": stored}
    if fmt != "coo":
        pointers = shape[0] if fmt == "csr" else shape[1]
        expected["indptr"] = pointers + 1
    for name, length in lengths.items():
        if length != expected[name]:
            what = (
                f"one per {'row' if fmt == 'csr' else 'column'} of shape {shape}, plus one"
                if name == "indptr"
                else "one per stored value of 'data'"
            )
            raise ValueError(
                f"{str(path)!r} (array {name!r}) has {length} entries; expected "
                f"{expected[name]} ({what})"
            )
    _check_sparse_structure(path, fmt, shape, stored)
    y_shape, y_dtype = _sparse_label_header(path, "y" in held)
    _check_labels(path, shape[0], y_shape)
    return FeatureFileInfo(
        path, shape[0], shape[1], str(headers["data"][1]), str(y_dtype), None, sparse=True
    )


def _check_sparse_structure(path: Path, fmt: str, shape: tuple[int, int], stored: int) -> None:
    """The index arrays of a sparse ``.npz`` against its stated ``shape``, read in chunks
    (:func:`_npz_chunks`): indices within the shape; ``indptr`` starts at 0, never decreases
    and ends at ``stored`` (the values)."""
    bounds = {"csr": {"indices": 1}, "csc": {"indices": 0}, "coo": {"row": 0, "col": 1}}[fmt]
    for name, axis in bounds.items():
        low = high = None
        for chunk in _npz_chunks(path, name):
            low = chunk.min() if low is None else min(low, chunk.min())
            high = chunk.max() if high is None else max(high, chunk.max())
        if low is not None and (low < 0 or high >= shape[axis]):
            side = "feature" if axis == 1 else "row"
            raise ValueError(
                f"{str(path)!r} (array {name!r}) has indices outside 0..{shape[axis] - 1} "
                f"(from {low} to {high}), while the shape {shape} it states (array 'shape') "
                f"has {shape[axis]} {side}s: the file is damaged. {_HOW_TO_SAVE_SPARSE}"
            )
    if fmt == "coo":
        return
    first = last = None
    decreases = False
    for chunk in _npz_chunks(path, "indptr"):
        first = chunk[0] if first is None else first
        decreases |= bool((last is not None and chunk[0] < last) or (np.diff(chunk) < 0).any())
        last = chunk[-1]
    if first != 0 or decreases or last != stored:
        raise ValueError(
            f"{str(path)!r} (array 'indptr') must start at 0, never decrease and end at "
            f"{stored} (the stored values); it starts at {first}"
            f"{', decreases' if decreases else ''} and ends at {last}: the file is damaged. "
            + _HOW_TO_SAVE_SPARSE
        )


def _npz_chunks(path: Path, name: str, size: int = 1 << 22) -> Iterator[np.ndarray]:
    """The 1-D array ``name`` of the ``.npz`` at ``path`` in chunks of ``size`` values,
    decompressed as it is read: its whole length never in memory at once."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(f"{name}.npy") as stream:
            shape, dtype = _header(stream)
            remaining = int(np.prod(shape))
            while remaining:
                count = min(size, remaining)
                data = stream.read(count * dtype.itemsize)
                if len(data) != count * dtype.itemsize:
                    raise EOFError(f"array {name!r} ends early")
                remaining -= count
                yield np.frombuffer(data, dtype=dtype)
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as error:
        raise _unreadable(path, name, error) from None


def _sparse_label_header(path: Path, in_archive: bool) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of a sparse file's labels: its array ``y``, else ``<stem>.labels.npy``."""
    if in_archive:
        return _npz_headers(path, ("y",))[0]
    label_path = _label_path(path)
    if not label_path.is_file():
        raise ValueError(
            f"labels for the sparse matrix {str(path)!r} expected as its array 'y' or in "
            f"{str(label_path)!r}. {_HOW_TO_SAVE_SPARSE}"
        )
    return _npy_header(label_path)


def _sparse_format(archive: np.lib.npyio.NpzFile, path: Path) -> str:
    """The ``format`` array of a sparse ``.npz``, one of :data:`_SPARSE_INDICES`."""
    stored = _read(archive, "format", path)
    value = stored.item() if stored.ndim == 0 else None
    fmt = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    if fmt not in _SPARSE_INDICES:
        shown = fmt if isinstance(fmt, str) else repr(stored)
        raise ValueError(
            f"{str(path)!r} (array 'format'): a sparse matrix of format {shown!r}; CSR, CSC and "
            f"COO are read (others may hold dense blocks or diagonals). {_HOW_TO_SAVE_SPARSE}"
        )
    return fmt


def _sparse_shape(archive: np.lib.npyio.NpzFile, path: Path) -> tuple[int, int]:
    """The ``shape`` array of a sparse ``.npz``: two non-negative integers, neither zero."""
    shape = _read(archive, "shape", path)
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or (shape <= 0).any():
        raise ValueError(
            f"{str(path)!r} (array 'shape') must be two positive integers (rows, features); "
            f"got {shape.tolist()}"
        )
    return int(shape[0]), int(shape[1])


def _checked_sparse(
    path: Path, fmt: str, shape: tuple[int, int], arrays: dict[str, np.ndarray]
) -> sp.csr_matrix:
    """The stored arrays of a sparse file as a CSR matrix, after the checks of
    :func:`load_sparse_features` (each error names the file and the array)."""
    data = arrays["data"]

    def bad(name: str, message: str) -> ValueError:
        return ValueError(f"{str(path)!r} (array {name!r}) {message}. {_HOW_TO_SAVE_SPARSE}")

    if fmt == "coo":
        rows, columns = arrays["row"], arrays["col"]
        for name, index, bound in (("row", rows, shape[0]), ("col", columns, shape[1])):
            if index.size and (index.min() < 0 or index.max() >= bound):
                raise bad(name, f"has indices outside 0..{bound - 1}")
    else:
        indptr, indices = arrays["indptr"], arrays["indices"]
        if indptr[0] != 0 or indptr[-1] != data.size or (np.diff(indptr) < 0).any():
            raise bad(
                "indptr",
                f"must start at 0, never decrease and end at {data.size} (the stored values); "
                f"it starts at {indptr[0]} and ends at {indptr[-1]}",
            )
        bound = shape[1] if fmt == "csr" else shape[0]
        if indices.size and (indices.min() < 0 or indices.max() >= bound):
            raise bad("indices", f"has indices outside 0..{bound - 1}")
        rows = indices if fmt == "csc" else None
    finite = np.isfinite(data) if data.dtype.kind == "f" else np.ones(data.size, dtype=bool)
    if not finite.all():
        first = int(np.flatnonzero(~finite)[0])
        row = (
            rows[first]
            if rows is not None
            else np.searchsorted(arrays["indptr"], first, side="right") - 1
        )
        raise bad("data", f"holds {int((~finite).sum())} NaN or inf value(s), first in row {row}")
    if fmt == "coo":
        return sp.coo_matrix((data, (rows, columns)), shape=shape).tocsr()
    if fmt == "csc":
        return sp.csc_matrix((data, indices, indptr), shape=shape).tocsr()
    return sp.csr_matrix((data, indices, indptr), shape=shape)


def _check_labels(path: Path, n_rows: int, y_shape: tuple[int, ...]) -> None:
    """A ValueError naming ``path`` unless ``y`` is 1-D (or one column) with ``n_rows`` labels."""
    if len(y_shape) == 2 and y_shape[1] == 1:
        y_shape = y_shape[:1]
    if len(y_shape) != 1:
        raise ValueError(f"{str(path)!r}: y must be 1-D (one label per row); got shape {y_shape}")
    if n_rows != y_shape[0]:
        raise ValueError(f"{str(path)!r}: X has {n_rows} rows but y has {y_shape[0]} labels")


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


def _with_safetensors(
    path: Path, use: Callable[[Any], Any], unreadable: Callable[[BaseException], ValueError]
) -> Any:
    """``use(stored)`` of the ``.safetensors`` file at ``path`` opened for torch (its header
    read; tensors and slices read when ``use`` asks): a ValueError naming the file when
    safetensors is not installed (an optional dependency), ``unreadable(error)`` when the file
    is not a readable safetensors file. The readers of feature files and of activation files
    share it; what tensors each expects differs (``X``/``y`` here, hook-named ones there)."""
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:
        raise ValueError(
            f"reading {str(path)!r} needs safetensors: pip install 'probemeter[encoders]'"
        ) from None
    try:
        with safe_open(str(path), framework="pt") as stored:
            return use(stored)
    except (SafetensorError, OSError) as error:
        raise unreadable(error) from None


def _safetensors(path: Path, read: bool) -> list:
    def use(stored: Any) -> list:
        _require(path, list(stored.keys()))
        if read:
            return [as_numpy(stored.get_tensor(k)) for k in ("X", "y")]
        slices = [stored.get_slice(k) for k in ("X", "y")]
        return [(tuple(part.get_shape()), part.get_dtype()) for part in slices]

    return _with_safetensors(path, use, partial(_unreadable, path, None))


def _open_parquet(
    path: Path, unreadable: Callable[[BaseException], ValueError]
) -> tuple[ModuleType, Any, Any]:
    """pyarrow, the ``pyarrow.parquet.ParquetFile`` at ``path`` (its footer read, no rows) and
    its Arrow schema: a ValueError naming the file when pyarrow is not installed (an optional
    dependency), ``unreadable(error)`` when the file is not a readable Parquet file. The
    readers of feature files and of activation files share it; what columns each expects
    differs (``X``/``y`` here, a column per feature and ``label`` there)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(
            f"reading {str(path)!r} needs pyarrow: pip install 'probemeter[encoders]'"
        ) from None
    try:
        stored = pq.ParquetFile(path)
        return pa, stored, stored.schema_arrow
    except (pa.ArrowException, OSError) as error:
        raise unreadable(error) from None


def _parquet(path: Path, read: bool) -> list:
    """``[(shape, type) of X, (shape, type) of y]`` from the schema and the first row, or, with
    ``read``, the arrays ``[X, y]``."""
    pa, stored, schema = _open_parquet(path, partial(_unreadable, path, None))
    try:
        names = schema.names
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
            x_header = ((rows, *width), schema.field("X").type)
        else:
            x_header = ((rows, len(columns)), "columns")
        return [x_header, ((rows,), schema.field("y").type)]
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
