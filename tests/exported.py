"""Checks shared by the tests of ``--export``: each exported file reads back equal to the
table it was written from."""

from pathlib import Path

import pandas as pd


def assert_exported(folder: Path, frames: dict, formats: tuple[str, ...]) -> None:
    """``folder/<name>.<format>`` exists for every table of ``frames`` and format, and reads
    back (pandas) equal to the table: values, column order and dtypes (a non-default index,
    e.g. representations, comes back as columns)."""
    for name, frame in frames.items():
        if not isinstance(frame.index, pd.RangeIndex):
            frame = frame.reset_index()
        for fmt in formats:
            path = folder / f"{name}.{fmt}"
            read = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
            pd.testing.assert_frame_equal(read, frame, check_exact=True, obj=str(path))
