"""An on-disk cache of encoded features, so each encoder runs once per input set.

Files are ``.npy`` arrays named by the SHA-256 of the encoder's key (model, layer, pooling,
random initialisation and seed, ...) together with a hash of the inputs. Writes are atomic: the
array goes to a temporary file in the same directory which is then renamed over the target, so a
crash never leaves a truncated file behind.

:meth:`FeatureCache.layers` keeps every layer of a model in a file of its own
(``<hash>.layer<i>.npy``), written batch by batch through memory maps and read back
memory-mapped: encoding all layers of a model holds one batch in memory, not all layers, and
a run reads only the pages of the layer it trains on. :meth:`FeatureCache.probe_data` does the
same for split and standardised :class:`~probemeter.data.ProbeData`, and
:meth:`FeatureCache.split_probe_data` builds the same files a block of rows at a time, so a
pool larger than memory never has to be held.

Layer files are stored as float32 (the default), float16 or bfloat16 (``storage``; numpy has no
bfloat16, so its files hold each value's upper 16 bits as uint16, rounded to nearest even when
written and widened back to float32 a block of rows at a time when read: :class:`Bfloat16Rows`).
The set is complete when ``<hash>.layers.json``, written atomically after every layer file has
been renamed into place, says so; the disk space the files take is checked before encoding starts.
:meth:`FeatureCache.layer_sets` fills the sets of several keys at once (every site of a model
from one forward pass per batch), each set complete or not on its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from probemeter._io import read_json, save_npy_atomic, write_text_atomic
from probemeter._resident import FileRows
from probemeter._validation import check_scalar, integer_list
from probemeter.data import ProbeData

__all__ = [
    "STORAGES",
    "Bfloat16Rows",
    "FeatureCache",
    "LayerSet",
    "SplitRows",
    "to_bfloat16_bits",
]

#: the dtypes layer files can be stored as (``storage``), with their bytes per value
STORAGES = {"float32": 4, "float16": 2, "bfloat16": 2}
#: free space kept on the cache's disk beyond the layer files: the larger of this share of the
#: disk and :data:`_MARGIN_BYTES` (the run still writes probe data, results and logs there)
_MARGIN_SHARE = 0.02
_MARGIN_BYTES = 256 * 2**20
#: rows widened from bfloat16 at a time: float32 blocks of at most ~16 MB
_WIDEN_ELEMENTS = 1 << 22
#: what ``<hash>.layers.json`` records, so a reader knows the files are complete and their dtype
_LAYERS_SCHEMA = "probemeter.layers/1"


def _digest(value: object, name: str) -> str:
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except TypeError as error:
        raise ValueError(f"{name} must be JSON-serialisable to be hashed: {error}") from error
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class LayerSet(NamedTuple):
    """One key's layer files of :meth:`FeatureCache.layer_sets`: the key (as for
    :meth:`FeatureCache.layers`), ``(n_layers, n_rows, dimension)`` and the stored dtype."""

    key: Mapping[str, Any]
    shape: tuple[int, int, int]
    storage: str = "float32"


class SplitRows(Protocol):
    """What :meth:`FeatureCache.split_probe_data` builds data from: a split of a feature
    matrix's rows that writes its data to a folder a block of rows at a time
    (:meth:`~probemeter.data.RowSplit.save`)."""

    def save(
        self,
        folder: str | os.PathLike[str],
        read_rows: Callable[[np.ndarray], np.ndarray],
        n_features: int,
        *,
        name: str,
    ) -> Path: ...


class FeatureCache:
    """Stores encoded features under ``root`` and reloads them instead of re-encoding.

    Attributes:
        root: directory holding the ``.npy`` files (created on first write).
        hits: number of :meth:`features` calls answered from disk.
        misses: number of :meth:`features` calls that ran ``compute``.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"root must be a directory; {self.root} is a file")
        self.hits = 0
        self.misses = 0

    def path_for(self, encoder_key: Mapping[str, Any], inputs: object) -> Path:
        """The file that holds the features of ``inputs`` under ``encoder_key``."""
        return self.root / f"{self._hash(encoder_key, inputs)}.npy"

    def layer_paths(
        self, encoder_key: Mapping[str, Any], inputs: object, n_layers: int
    ) -> list[Path]:
        """The files of :meth:`layers`: one per layer, ``<hash>.layer<i>.npy``."""
        check_scalar(n_layers, "n_layers", int, min_val=1)
        stem = self._hash(encoder_key, inputs)
        return [self.root / f"{stem}.layer{layer}.npy" for layer in range(n_layers)]

    def _hash(self, encoder_key: Mapping[str, Any], inputs: object) -> str:
        if not isinstance(encoder_key, Mapping) or not encoder_key:
            raise ValueError(
                "encoder_key must be a non-empty mapping (e.g. TransformerEncoder.cache_key); "
                f"got {encoder_key!r}"
            )
        key = _digest(dict(encoder_key), "encoder_key")
        data = _digest(inputs, "inputs")
        return hashlib.sha256(f"{key}:{data}".encode()).hexdigest()

    def features(
        self,
        encoder_key: Mapping[str, Any],
        inputs: object,
        compute: Callable[[Any], np.ndarray],
    ) -> np.ndarray:
        """Return the cached features of ``inputs``, or ``compute(inputs)`` stored for next time.

        Args:
            encoder_key: JSON-serialisable description of everything that determines the
                features (model path, layer, pooling, random initialisation and seed, ...).
            inputs: the JSON-serialisable inputs (a list of sentences, of word lists, ...).
            compute: called with ``inputs`` on a miss; must return a numeric array.
        """
        path = self.path_for(encoder_key, inputs)
        if path.is_file():
            try:
                array = np.load(path, allow_pickle=False)
            except (OSError, ValueError, EOFError):
                array = None  # unreadable (e.g. written by another program): recompute it
            if array is not None:
                self.hits += 1
                return array
        array = np.asarray(compute(inputs))
        if not np.issubdtype(array.dtype, np.number):
            raise ValueError(f"compute must return a numeric array; got dtype {array.dtype}")
        self.misses += 1
        self.root.mkdir(parents=True, exist_ok=True)
        save_npy_atomic(path, array)
        return array

    def layers(
        self,
        encoder_key: Mapping[str, Any],
        inputs: object,
        shape: tuple[int, int, int],
        fill: Callable[[list[np.ndarray]], None],
        *,
        storage: str = "float32",
    ) -> list[np.ndarray]:
        """Every layer's features of ``inputs``, each read-only and memory-mapped from its own
        ``.npy`` file (:meth:`layer_paths`): float32 memory maps, float16 ones with
        ``storage="float16"``, :class:`Bfloat16Rows` (float32 rows on indexing) with
        ``storage="bfloat16"``.

        On a miss, ``fill(outputs)`` writes layer i into ``outputs[i]``, a writable array of
        shape ``shape[1:]`` backed by a temporary file (e.g.
        :meth:`~probemeter.encoders.TransformerEncoder.encode_layers_into`): float32 values
        assigned to it are stored as ``storage`` (float16 and bfloat16 rounded to nearest even).
        Once ``fill`` returns, the files are flushed to disk and renamed into place, then
        ``<hash>.layers.json`` is written (atomically, last): only a set with that marker is
        read back, so an exception or a kill leaves no partial layer that counts as complete.
        A killed encoding restarts from the beginning on the next call, which first removes the
        temporary files the killed process left (their names hold its process id). float32
        files written before the marker existed are read as they are (each was renamed into
        place whole). A layer file of another shape or dtype, or an unreadable one, counts as
        a miss.

        Before encoding, the bytes the layer files take (n_layers × n_rows × dimension × bytes
        per value) are checked against the free space of the cache's disk less a margin.

        Args:
            encoder_key: JSON-serialisable description of everything that determines the
                features of every layer (as for :meth:`features`).
            inputs: the JSON-serialisable inputs.
            shape: ``(n_layers, n_rows, dimension)``.
            fill: writes the features; called on a miss only.
            storage: ``"float32"`` (default), ``"float16"`` or ``"bfloat16"`` (half the disk
                and page cache; part of the files' key, except float32, whose keys are those
                of files written before storage could be chosen).

        Raises:
            ValueError: a bad ``shape`` or ``storage``; the layer files would not fit on the
                cache's disk (naming the root, the bytes needed and free, and the storage
                that halves them).
        """
        found = self.layer_sets(
            [LayerSet(encoder_key, shape, storage)], inputs, lambda missing: fill(missing[0])
        )
        return found[0]

    def layer_sets(
        self,
        sets: Sequence[LayerSet],
        inputs: object,
        fill: Callable[[dict[int, list[np.ndarray]]], None],
    ) -> list[list[np.ndarray]]:
        """:meth:`layers` of several keys over the same ``inputs`` at once: the sets already
        complete are read back, and one call ``fill(missing)`` writes every other set
        (``missing``: index in ``sets`` → its writable outputs, as :meth:`layers` gives them),
        so that one encoder pass fills them all (every site of a model:
        :meth:`~probemeter.encoders.TransformerEncoder.encode_sites_into`). Each set is then
        renamed into place and marked complete on its own, as :meth:`layers` does, so a kill
        leaves every set whole or not counted; the sets still missing are filled again on
        the next call. The disk check covers the missing sets together.

        Returns:
            Each set's layers, in the order of ``sets``.

        Raises:
            ValueError: as :meth:`layers`, naming the set; two sets of the same files.
        """
        planned = []
        for key, shape, storage in sets:
            n_layers, n_rows, dimension = _check_shape(shape)
            if storage not in STORAGES:
                raise ValueError(f"storage must be one of {', '.join(STORAGES)}; got {storage!r}")
            paths = self.layer_paths(_storage_key(key, storage), inputs, n_layers)
            planned.append((paths, _marker(paths[0]), (n_rows, dimension), storage))
        if len({str(paths[0]) for paths, *_ in planned}) != len(planned):
            raise ValueError("sets: two sets have the same key and storage (the same files)")
        found = [_open_layers(*plan) for plan in planned]
        missing = [index for index, layers in enumerate(found) if layers is None]
        self.hits += len(sets) - len(missing)
        if missing:
            self._fill_layers({index: planned[index] for index in missing}, fill)
            self.misses += len(missing)
            for index in missing:
                found[index] = _open_layers(*planned[index])
                assert found[index] is not None  # just written whole
        return found

    def _fill_layers(
        self,
        planned: dict[int, tuple[list[Path], Path, tuple[int, int], str]],
        fill: Callable[[dict[int, list[np.ndarray]]], None],
    ) -> None:
        """The layer files of the ``planned`` sets (index → paths, marker, shape, storage)
        written by one ``fill`` into temporary files, then renamed into place and marked
        complete set by set."""
        self.root.mkdir(parents=True, exist_ok=True)
        for paths, marker, _, _ in planned.values():
            _remove_abandoned(paths)
            marker.unlink(missing_ok=True)
        needed = {
            storage: len(paths) * shape[0] * shape[1] * STORAGES[storage]
            for paths, _, shape, storage in planned.values()
        }
        self._check_disk(sum(needed.values()), max(needed, key=needed.__getitem__))
        token = f"{os.getpid()}-{uuid.uuid4().hex}"
        temporaries = {
            index: [path.with_name(f".{path.name}.{token}.tmp") for path in paths]
            for index, (paths, *_) in planned.items()
        }
        try:
            files = {
                index: [
                    np.lib.format.open_memmap(
                        temporary,
                        mode="w+",
                        dtype={"float16": np.float16, "bfloat16": np.uint16}.get(
                            storage, np.float32
                        ),
                        shape=shape,
                    ).view(_LayerOutput)
                    for temporary in temporaries[index]
                ]
                for index, (_, _, shape, storage) in planned.items()
            }
            fill(
                {
                    index: [_Bfloat16Writer(f) for f in layers]
                    if planned[index][3] == "bfloat16"
                    else layers
                    for index, layers in files.items()
                }
            )
            for layers in files.values():
                for file in layers:
                    file.flush()
            del files
            for index, (paths, marker, shape, storage) in planned.items():
                for temporary in temporaries[index]:
                    with open(temporary, "rb+") as stream:
                        os.fsync(stream.fileno())
                for temporary, path in zip(temporaries[index], paths):
                    os.replace(temporary, path)
                described = {
                    "schema": _LAYERS_SCHEMA,
                    "storage": storage,
                    "shape": [len(paths), *shape],
                }
                write_text_atomic(marker, json.dumps(described))
        finally:
            for names in temporaries.values():
                for temporary in names:
                    temporary.unlink(missing_ok=True)

    def _check_disk(self, needed: int, storage: str) -> None:
        """A ValueError when ``needed`` bytes of layer files would not fit on the root's disk
        with the margin kept free."""
        usage = shutil.disk_usage(self.root)
        margin = max(_MARGIN_BYTES, int(_MARGIN_SHARE * usage.total))
        if needed <= usage.free - margin:
            return
        halves = (
            'storage="float16" or storage="bfloat16" would halve it'
            if storage == "float32"
            else "no storage option is smaller"
        )
        raise ValueError(
            f"the layer files need {needed:,} bytes ({needed / 2**30:.2f} GiB) as {storage} but "
            f"the cache root {str(self.root)!r} has {usage.free:,} bytes free "
            f"({usage.free / 2**30:.2f} GiB), of which {margin:,} are kept free: {halves}; "
            "or give a cache folder on a larger disk, or fewer layers or rows"
        )

    def probe_data(self, key: Mapping[str, Any], build: Callable[[], ProbeData]) -> ProbeData:
        """The :class:`~probemeter.data.ProbeData` stored under ``key``, memory-mapped
        (:meth:`ProbeData.load`), or ``build()``'s, saved under ``key`` (``root/probe-data/<hash>``)
        and returned memory-mapped, so the built arrays are released at once.

        Args:
            key: JSON-serialisable description of everything that determines the data (the
                features, the labels and how they were split and standardised).
            build: makes the data on a miss.
        """
        folder = self.root / "probe-data" / self._hash(key, None)
        try:
            data = ProbeData.load(folder)
        except ValueError:  # missing, incomplete or unreadable: build it
            build().save(folder)
            self.misses += 1
            return ProbeData.load(folder)
        self.hits += 1
        return data

    def split_probe_data(
        self, key: Mapping[str, Any], features: Any, split: SplitRows, *, name: str
    ) -> ProbeData:
        """:meth:`probe_data` of ``split.probe_data(features, name=name)`` (the same key, the
        same files), built without holding the pool: on a miss the rows are read a block at a
        time (:meth:`RowSplit.save`) — from a large layer file with ``pread``, so its pages are
        never mapped into this process (:class:`~probemeter._resident.FileRows`) — standardised
        and written straight to the saved data's files, then read back memory-mapped.

        Args:
            key: as for :meth:`probe_data`.
            features: ``(n_rows, d)`` features, e.g. a layer of :meth:`layers` (a memory map,
                or :class:`Bfloat16Rows`), or any array.
            split: the pool's and the test set's rows and labels (a
                :class:`~probemeter.data.RowSplit`, or any :class:`SplitRows`: a texts
                task's rows of tokens laid out one row per text,
                :class:`~probemeter.datasets.token_spans.TokenSpanSplit`).
            name: the data's name.
        """
        folder = self.root / "probe-data" / self._hash(key, None)
        try:
            data = ProbeData.load(folder)
        except ValueError:  # missing, incomplete or unreadable: build it
            split.save(folder, _row_reader(features), int(features.shape[1]), name=name)
            self.misses += 1
            return ProbeData.load(folder)
        self.hits += 1
        return data


def _row_reader(features: Any) -> Callable[[np.ndarray], np.ndarray]:
    """``read(indices)``: those rows of ``features`` as float32, in order — read with
    ``pread`` from a large read-only memory map (bfloat16 bits widened), else indexed."""
    stored = features.bits if isinstance(features, Bfloat16Rows) else features
    rows = FileRows.of(stored)
    if rows is None:
        array = (
            features if isinstance(features, (np.ndarray, Bfloat16Rows)) else np.asarray(features)
        )
        return lambda indices: np.asarray(array[indices], dtype=np.float32)

    def read(indices: np.ndarray) -> np.ndarray:
        out = rows.gather(indices, np.empty((len(indices), stored.shape[1]), stored.dtype))
        return _widen(out) if stored is not features else out.astype(np.float32, copy=False)

    return read


def _check_shape(shape: Sequence[int]) -> tuple[int, int, int]:
    """``shape`` as ``(n_layers, n_rows, dimension)``; a ValueError naming it otherwise."""
    sizes = integer_list(1)(tuple(shape), "shape")
    if len(sizes) != 3:
        raise ValueError(f"shape must be (n_layers, n_rows, dimension); got {tuple(shape)}")
    return int(sizes[0]), int(sizes[1]), int(sizes[2])


def _storage_key(encoder_key: Mapping[str, Any], storage: str) -> Mapping[str, Any]:
    """The key of the layer files: ``encoder_key`` itself for float32 (the files written before
    storage could be chosen), with ``"storage"`` added otherwise."""
    if storage == "float32" or not isinstance(encoder_key, Mapping):
        return encoder_key
    return {**encoder_key, "storage": storage}


def _marker(first: Path) -> Path:
    """``<hash>.layers.json`` beside ``<hash>.layer0.npy``: written last, marks a complete set."""
    return first.with_name(first.name.split(".", 1)[0] + ".layers.json")


def _open_layers(
    paths: list[Path], marker: Path, shape: tuple[int, int], storage: str
) -> list[Any] | None:
    """The layer files memory-mapped (bfloat16 ones as :class:`Bfloat16Rows`), or None unless
    every one is readable with ``shape`` and the stored dtype and the marker says the set is
    complete and stored as ``storage`` (float32 sets without a marker: complete)."""
    if marker.is_file():
        try:
            described = read_json(marker, "layer files' marker")
        except ValueError:
            return None
        if not isinstance(described, dict) or described.get("schema") != _LAYERS_SCHEMA:
            return None
        if described.get("storage") != storage:
            return None
    elif storage != "float32":
        return None
    dtype = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}[storage]
    found = [_open_layer(path, shape, dtype) for path in paths]
    if any(array is None for array in found):
        return None
    return [Bfloat16Rows(array) for array in found] if storage == "bfloat16" else found


def _remove_abandoned(paths: list[Path]) -> None:
    """Remove the temporary files of these layers that a killed process left behind (named
    ``.<layer file>.<pid>-<token>.tmp``, the pid no longer running); a live process's are kept:
    it may be encoding the same inputs right now."""
    for path in paths:
        for temporary in path.parent.glob(f".{path.name}.*.tmp"):
            pid = temporary.name[len(path.name) + 2 :].split("-", 1)[0]
            if not pid.isdigit() or not _running(int(pid)):
                temporary.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    """Whether a process ``pid`` exists (signal 0 checks without signalling)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _open_layer(path: Path, shape: tuple[int, int], dtype: type = np.float32) -> np.ndarray | None:
    """The layer file at ``path`` memory-mapped read-only, or None when it is missing,
    unreadable, or not an array of ``dtype`` and ``shape``."""
    if not path.is_file():
        return None
    try:
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError, EOFError):
        return None
    return array if array.shape == shape and array.dtype == dtype else None


def to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """The bfloat16 nearest to each float32 value (ties to even), as its 16 bits (uint16): the
    upper half of the float32 bit pattern after adding ``0x7FFF`` plus the lowest kept bit, the
    rounding of IEEE 754 round-to-nearest-even; NaN stays a (quiet) NaN."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def _widen(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits (uint16) as the float32 values they are (exact)."""
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


class _LayerOutput(np.memmap):
    """A layer file being written: a memory map of it whose rows are written with ``pwrite``
    (each run of consecutive rows at once), not through the map, when they are given as a row
    index (a slice, integers or a mask) — as encoders write them, a batch at a time.

    Mapped file pages count in the resident set, and an encoder writes each batch's rows all
    over the file (its batches go by length), so through the maps every layer would soon be
    wholly resident: the peak would be the bytes stored. Written with ``pwrite`` the rows go to
    the page cache only. (Dropping the mapped pages after each batch instead,
    ``madvise(MADV_DONTNEED)``, made writing 5× slower: each batch faulted pages that were
    being written back.) Reading the map afterwards sees the rows written: Linux has one page
    cache for both."""

    def __setitem__(self, key: Any, value: Any) -> None:
        rows = _row_index(key, len(self)) if self.ndim == 2 else None
        if rows is None or not self.filename:
            super().__setitem__(key, value)
            return
        block = np.ascontiguousarray(
            np.broadcast_to(np.asarray(value, dtype=self.dtype), (len(rows), self.shape[1]))
        )
        row_bytes = block[:1].nbytes
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        with open(self.filename, "r+b", buffering=0) as stream:
            for first, stop in zip([0, *breaks], [*breaks, len(rows)]):
                view = memoryview(block[first:stop]).cast("B")
                at = self.offset + int(rows[first]) * row_bytes
                while view:  # pwrite may write less than asked
                    written = os.pwrite(stream.fileno(), view, at)
                    view, at = view[written:], at + written


def _row_index(key: Any, n_rows: int) -> np.ndarray | None:
    """The rows a 2-D array's index ``key`` selects whole (a slice, integers, a boolean mask),
    in order, or None for any other index (a tuple, an Ellipsis, ...)."""
    if isinstance(key, slice):
        return np.arange(*key.indices(n_rows))
    if isinstance(key, (list, np.ndarray)):
        index = np.asarray(key)
        if index.dtype == bool and index.shape == (n_rows,):
            return np.flatnonzero(index)
        if index.ndim == 1 and np.issubdtype(index.dtype, np.integer):
            return np.where(index < 0, index + n_rows, index)
    return None


class _Bfloat16Writer:
    """A writable (n, d) layer output over a uint16 memory map: rows assigned to it are rounded
    to bfloat16 (:func:`to_bfloat16_bits`) and stored as their bits."""

    def __init__(self, bits: np.ndarray) -> None:
        self.bits = bits
        self.shape = bits.shape

    def __setitem__(self, rows: Any, values: Any) -> None:
        self.bits[rows] = to_bfloat16_bits(np.asarray(values, dtype=np.float32))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # what writers check (shape, writable) is the store itself; values are read back widened
        return self.bits if dtype is None else _widen(self.bits).astype(dtype)


class Bfloat16Rows:
    """A layer stored as bfloat16 (a uint16 memory map of the values' bits), read as float32:
    indexing (``x[rows]``, ``x[i:j]``, ``x[index_array]``) widens only the rows it returns, and
    ``np.asarray(x)`` widens the whole layer a block of rows at a time.

    Attributes:
        bits: the read-only uint16 memory map.
    """

    dtype = np.dtype(np.float32)
    ndim = 2

    def __init__(self, bits: np.ndarray) -> None:
        self.bits = bits

    @property
    def shape(self) -> tuple[int, int]:
        return self.bits.shape

    @property
    def nbytes(self) -> int:
        """The bytes of the layer widened to float32 (twice the file's)."""
        return int(self.bits.size) * 4

    def __len__(self) -> int:
        return len(self.bits)

    def __getitem__(self, key: Any) -> np.ndarray:
        return _widen(self.bits[key])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.empty(self.shape, dtype=np.float32)
        step = max(1, _WIDEN_ELEMENTS // max(1, self.shape[1]))
        for start in range(0, self.shape[0], step):
            out[start : start + step] = _widen(self.bits[start : start + step])
        return out if dtype is None else out.astype(dtype, copy=False)
