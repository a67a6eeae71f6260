"""The results file: every curve and the comparison of one run, as JSON.

Schema ``probemeter.results/1`` (documented in the README)::

    {
      "schema": "probemeter.results/1",
      "created": ISO-8601 time,
      "versions": {"probemeter", "python", "numpy", "torch", "pandas"},
      "curves": [LossDataCurve.to_dict(), ...],      # losses in nats; "classes": the
                                                     # original labels of the class indices
                                                     # (list) or null; absent in old files
      "comparison": Comparison.to_dict() or null,    # measures at the chosen ε
      "experiment": {...},                           # optional: the parsed experiment file
      "timings": {name: {"key", "seconds", "loaded"}}  # optional: per unit of `probemeter run`
    }

``experiment`` (:meth:`Experiment.to_dict`, defaults filled in) and ``timings`` (each
representation's unit key, the seconds its curve took, and whether it was loaded from the run's
store rather than computed in this run) are written by ``probemeter run`` only; readers must
not require them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from probemeter._exports import export_formats, export_frames
from probemeter._io import environment, read_json, write_json_atomic
from probemeter.curves.comparison import Comparison
from probemeter.curves.curve import LossDataCurve

__all__ = ["SCHEMA", "load_curves", "result_frames", "save_results", "stored_comparison"]

SCHEMA = "probemeter.results/1"


def save_results(
    path: str | Path,
    curves: Sequence[LossDataCurve],
    comparison: Comparison | None = None,
    *,
    experiment: Mapping[str, Any] | None = None,
    timings: Mapping[str, Any] | None = None,
    export: Iterable[str] = (),
) -> tuple[Path, ...]:
    """Write curves (and their comparison) to ``path`` atomically.

    ``experiment`` and ``timings`` (JSON mappings) become the optional keys of the same name;
    left out when not given. ``export`` formats (``"csv"``, ``"parquet"``;
    :func:`~probemeter._exports.export_formats`) also write the tables of
    :func:`result_frames` beside ``path`` (``points.csv``, ``measures.csv``, …).

    Returns:
        the exported files (none without ``export``).
    """
    formats = export_formats(list(export), "export") if export else ()
    payload: dict[str, Any] = {
        "schema": SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": environment(),
        "curves": [curve.to_dict() for curve in curves],
        "comparison": None if comparison is None else comparison.to_dict(),
    }
    for key, value in (("experiment", experiment), ("timings", timings)):
        if value is not None:
            payload[key] = dict(value)
    write_json_atomic(path, payload)
    return export_frames(result_frames(curves, comparison), Path(path).parent, formats)


def stored_comparison(path: str | Path) -> dict[str, Any] | None:
    """The settings of the comparison a results file holds: ``epsilon``, ``metric``, ``unit``
    (of ε and the losses) and ``rule``; None when it holds none (curves saved without ε, or a
    single saved curve).

    Raises:
        ValueError: the file is missing or not JSON.
    """
    payload = read_json(path, "results file")
    comparison = payload.get("comparison") if isinstance(payload, dict) else None
    if not isinstance(comparison, dict):
        return None
    try:
        return {key: comparison[key] for key in ("epsilon", "metric", "unit", "rule")}
    except KeyError as error:
        raise ValueError(f"results file {str(path)!r}: its comparison lacks {error}") from None


def result_frames(
    curves: Sequence[LossDataCurve], comparison: Comparison | None = None
) -> dict[str, Any]:
    """The tables of a results file, by name: ``points``, every probe of every curve
    (:meth:`LossDataCurve.to_frame`, losses in nats, concatenated in curve order), and with a
    comparison ``measures`` (:meth:`Comparison.to_frame`, each value's unit in a column)."""
    import pandas as pd

    frames = {"points": pd.concat([curve.to_frame() for curve in curves], ignore_index=True)}
    if comparison is not None:
        frames["measures"] = comparison.to_frame()
    return frames


def load_curves(path: str | Path) -> list[LossDataCurve]:
    """Read the curves of a results file (or of a single saved curve).

    Raises:
        ValueError: the file is missing, not JSON, or not a probemeter results/curve file.
    """
    payload = read_json(path, "results file")
    try:
        if isinstance(payload, dict) and payload.get("schema") == SCHEMA:
            return [LossDataCurve.from_dict(curve) for curve in payload["curves"]]
        if isinstance(payload, dict) and "points" in payload:
            return [LossDataCurve.from_dict(payload)]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"results file {str(path)!r} is damaged: {error}") from None
    raise ValueError(f"{str(path)!r} is neither a {SCHEMA} file nor a saved loss-data curve")
