"""An on-disk cache of encoded features, so each encoder runs once per input set.

Files are ``.npy`` arrays named by the SHA-256 of the encoder's key (model, layer, pooling,
random initialisation and seed, ...) together with a hash of the inputs. Writes are atomic: the
array goes to a temporary file in the same directory which is then renamed over the target, so a
crash never leaves a truncated file behind.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from probemeter._io import save_npy_atomic

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
        if not isinstance(encoder_key, Mapping) or not encoder_key:
            raise ValueError(
                "encoder_key must be a non-empty mapping (e.g. TransformerEncoder.cache_key); "
                f"got {encoder_key!r}"
            )
        key = _digest(dict(encoder_key), "encoder_key")
        data = _digest(inputs, "inputs")
        combined = hashlib.sha256(f"{key}:{data}".encode()).hexdigest()
        return self.root / f"{combined}.npy"

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
