"""An on-disk cache of encoded features, so each encoder runs once per input set.

Files are ``.npy`` arrays named by the SHA-256 of the encoder's key (model, layer, pooling,
random initialisation and seed, ...) together with a hash of the inputs. Writes are atomic: the
array goes to a temporary file in the same directory which is then renamed over the target, so a
crash never leaves a truncated file behind.

:meth:`FeatureCache.layers` keeps every layer of a model in a file of its own
(``<hash>.layer<i>.npy``), written batch by batch through memory maps and read back
memory-mapped: encoding all layers of a model holds one batch in memory, not all layers, and
a run reads only the pages of the layer it trains on. :meth:`FeatureCache.probe_data` does the
same for split and standardised :class:`~probemeter.data.ProbeData`.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from probemeter._io import save_npy_atomic
from probemeter._validation import check_scalar, integer_list
from probemeter.data import ProbeData

__all__ = ["FeatureCache"]


def _digest(value: object, name: str) -> str:
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except TypeError as error:
        raise ValueError(f"{name} must be JSON-serialisable to be hashed: {error}") from error
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    ) -> list[np.ndarray]:
        """Every layer's features of ``inputs``, each a read-only float32 memory map of its own
        ``.npy`` file (:meth:`layer_paths`).

        On a miss, ``fill(outputs)`` writes layer i into ``outputs[i]``, a writable memory map of
        shape ``shape[1:]`` backed by a temporary file (e.g.
        :meth:`~probemeter.encoders.TransformerEncoder.encode_layers_into`); once it returns,
        the files are flushed to disk and renamed into place, so a crash or an exception leaves
        no partial layer behind. A layer file of another shape or dtype, or an unreadable one,
        counts as a miss.

        Args:
            encoder_key: JSON-serialisable description of everything that determines the
                features of every layer (as for :meth:`features`).
            inputs: the JSON-serialisable inputs.
            shape: ``(n_layers, n_rows, dimension)``.
            fill: writes the features; called on a miss only.
        """
        n_layers, n_rows, dimension = _check_shape(shape)
        paths = self.layer_paths(encoder_key, inputs, n_layers)
        found = [_open_layer(path, (n_rows, dimension)) for path in paths]
        if all(array is not None for array in found):
            self.hits += 1
            return found
        del found
        self.root.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        temporaries = [path.with_name(f".{path.name}.{token}.tmp") for path in paths]
        try:
            outputs = [
                np.lib.format.open_memmap(
                    temporary, mode="w+", dtype=np.float32, shape=(n_rows, dimension)
                )
                for temporary in temporaries
            ]
            fill(outputs)
            for output in outputs:
                output.flush()
            del outputs
            for temporary in temporaries:
                with open(temporary, "rb+") as stream:
                    os.fsync(stream.fileno())
            for temporary, path in zip(temporaries, paths):
                os.replace(temporary, path)
        finally:
            for temporary in temporaries:
                temporary.unlink(missing_ok=True)
        self.misses += 1
        return [np.load(path, mmap_mode="r") for path in paths]

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


def _check_shape(shape: Sequence[int]) -> tuple[int, int, int]:
    """``shape`` as ``(n_layers, n_rows, dimension)``; a ValueError naming it otherwise."""
    sizes = integer_list(1)(tuple(shape), "shape")
    if len(sizes) != 3:
        raise ValueError(f"shape must be (n_layers, n_rows, dimension); got {tuple(shape)}")
    return int(sizes[0]), int(sizes[1]), int(sizes[2])


def _open_layer(path: Path, shape: tuple[int, int]) -> np.ndarray | None:
    """The layer file at ``path`` memory-mapped read-only, or None when it is missing,
    unreadable, or not a float32 array of ``shape``."""
    if not path.is_file():
        return None
    try:
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError, EOFError):
        return None
    return array if array.shape == shape and array.dtype == np.float32 else None
