"""Atomic file writes: a reader sees the old file or the whole new one, never a partial write."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["write_json_atomic"]


def write_json_atomic(path: str | Path, payload: Any) -> None:
    """Write JSON to ``path`` via a temporary file in the same folder and an atomic rename, so
    an interrupted write never leaves a truncated file.

    The temporary file is named ``.<name>.<random>.tmp``; a writer killed before the rename
    (SIGKILL, power loss) can leave one behind, which readers must ignore.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump(payload, stream, indent=1)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
