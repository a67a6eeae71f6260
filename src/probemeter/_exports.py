"""Tables of results as CSV or Parquet files beside ``results.json``: probe points, measures and
each method's tables (the ``to_frame()`` of its results), for pandas, R, spreadsheets or a
paper's plotting scripts.

Each file is ``FOLDER/<table>.<format>``, written atomically (:mod:`probemeter._io`): a reader
sees the previous file or the whole new one. CSV is written without the index (every table
here is tidy: one row per observation, its keys as columns); Parquet (which keeps column
types) needs ``pyarrow`` (``pip install 'probemeter[parquet]'``).
"""

from __future__ import annotations

import importlib.util
import io
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from probemeter._io import write_bytes_atomic, write_text_atomic

__all__ = ["EXPORT_FORMATS", "export_formats", "export_frames", "write_frame"]

#: the formats tables are exported in
EXPORT_FORMATS = ("csv", "parquet")

_log = logging.getLogger(__name__)


def export_formats(values: Iterable[str] | str | None, argument: str = "export") -> tuple[str, ...]:
    """The export formats of ``values``: names or comma-separated lists of them (``"csv"``,
    ``["csv,parquet"]``, ``["csv", "parquet"]``), each once, in the order given; ``None``:
    none.

    Raises:
        ValueError: naming ``argument``, for an unknown format, or for ``parquet`` when
            ``pyarrow`` is not installed (checked now, before any work whose results it would
            export).
    """
    if values is None:
        return ()
    items = [values] if isinstance(values, str) else list(values)
    formats = [part.strip().lower() for item in items for part in str(item).split(",")]
    unknown = [name for name in formats if name not in EXPORT_FORMATS]
    if unknown or not formats:
        raise ValueError(
            f"{argument} takes formats among {', '.join(EXPORT_FORMATS)} (repeat it or separate "
            f"them with commas); got {', '.join(map(repr, unknown or items))}"
        )
    if "parquet" in formats and importlib.util.find_spec("pyarrow") is None:
        raise ValueError(
            f"{argument} parquet needs the pyarrow package: pip install 'probemeter[parquet]' "
            "(or export csv)"
        )
    return tuple(dict.fromkeys(formats))


def write_frame(path: str | Path, frame: Any, fmt: str) -> Path:
    """Write the pandas DataFrame ``frame`` to ``path`` as ``fmt`` (``"csv"`` or
    ``"parquet"``), atomically and without its index (a non-default index, such as a
    table indexed by representation, becomes columns first). Returns ``path``."""
    import pandas as pd

    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"fmt must be one of {list(EXPORT_FORMATS)}; got {fmt!r}")
    if not isinstance(frame.index, pd.RangeIndex):
        frame = frame.reset_index()
    if fmt == "csv":
        write_text_atomic(path, frame.to_csv(index=False))
    else:
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False, engine="pyarrow")
        write_bytes_atomic(path, buffer.getvalue())
    _log.debug("wrote %s (%d rows, %d columns)", path, len(frame), frame.shape[1])
    return Path(path)


def export_frames(
    frames: Mapping[str, Any], folder: str | Path, formats: Iterable[str]
) -> tuple[Path, ...]:
    """Write each table of ``frames`` (name → DataFrame) as ``folder/<name>.<format>`` for
    every format of ``formats`` (checked by :func:`export_formats`). Returns the paths, in
    the order of ``frames`` then ``formats``."""
    names = list(formats)
    checked = export_formats(names, "formats") if names else ()
    return tuple(
        write_frame(Path(folder) / f"{name}.{fmt}", frame, fmt)
        for name, frame in frames.items()
        for fmt in checked
    )
