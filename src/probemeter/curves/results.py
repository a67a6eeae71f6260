"""The results file: every curve and the comparison of one run, as JSON.

Schema ``probemeter.results/1`` (documented in the docs' Results and reports page)::

    {
      "schema": "probemeter.results/1",
      "created": ISO-8601 time,
      "versions": {"probemeter", "python", "numpy", "torch", "pandas"},
      "curves": [LossDataCurve.to_dict(), ...],      # losses in nats; "classes": the
                                                     # original labels of the class indices
                                                     # (list), null or absent; "monitor":
                                                     # two-class monitor metrics, or absent
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
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from probemeter._exports import export_formats, export_frames
from probemeter._io import environment, read_json, write_json_atomic
from probemeter._summary import SeedCorrectness
from probemeter.curves.comparison import Comparison
from probemeter.curves.curve import METRICS, LossDataCurve

__all__ = [
    "SCHEMA",
    "load_curves",
    "monitor_frame",
    "monitor_table",
    "result_frames",
    "save_results",
    "settings_note",
    "stored_comparison",
]

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
        ValueError: the file is missing or not JSON; a comparison that lacks one of these
            keys or holds a value of the wrong type (naming the key).
    """
    payload = read_json(path, "results file")
    comparison = payload.get("comparison") if isinstance(payload, dict) else None
    if comparison is None:
        return None
    _check_comparison(comparison, path)
    try:
        return {key: comparison[key] for key in ("epsilon", "metric", "unit", "rule")}
    except KeyError as error:
        raise ValueError(f"results file {str(path)!r}: its comparison lacks {error}") from None


def result_frames(
    curves: Sequence[LossDataCurve], comparison: Comparison | None = None
) -> dict[str, Any]:
    """The tables of a results file, by name: ``points``, every probe of every curve
    (:meth:`LossDataCurve.to_frame`, losses in nats, concatenated in curve order), with a
    comparison ``measures`` (:meth:`Comparison.to_frame`, each value's unit in a column), and
    for curves whose probe settings were chosen from a grid ``settings``: every setting's
    development loss per size, which was chosen, ``chosen_on`` and ``tested_on``
    (:meth:`LossDataCurve.settings_frame`, with the representation's name)."""
    import pandas as pd

    frames = {"points": pd.concat([curve.to_frame() for curve in curves], ignore_index=True)}
    if comparison is not None:
        frames["measures"] = comparison.to_frame()
    grids = [
        curve.settings_frame().assign(representation=curve.name)
        for curve in curves
        if curve.has_settings_grid
    ]
    if grids:
        frames["settings"] = pd.concat(grids, ignore_index=True)
    monitor = monitor_frame(curves)
    if monitor is not None:
        frames["monitor"] = monitor
    return frames


def monitor_frame(curves: Sequence[LossDataCurve]) -> Any:
    """The monitor metrics of the curves that have them (two classes;
    :attr:`LossDataCurve.monitor`), one row per representation and metric: ``value`` (mean over
    seeds), ``ci_low``/``ci_high`` (its cluster-bootstrap interval), ``seed_low``/``seed_high``,
    ``test_fpr`` (for recall: the test FPR reached at the dev threshold), ``positive`` (the
    positive class) and ``threshold_split``; None when no curve has them."""
    import pandas as pd

    records = []
    for curve in curves:
        if curve.monitor is None:
            continue
        positive = curve.monitor["positive"]
        for name, metric in curve.monitor["metrics"].items():
            fpr = curve.monitor["test_fpr"].get(name)
            records.append(
                {
                    "representation": curve.name,
                    "metric": name,
                    "value": metric["value"],
                    "ci_low": metric["low"],
                    "ci_high": metric["high"],
                    "seed_low": metric["seed_low"],
                    "seed_high": metric["seed_high"],
                    "test_fpr": None if fpr is None else fpr["value"],
                    "positive": _positive_name(positive),
                    "threshold_split": "dev" if fpr is not None else None,
                }
            )
    return pd.DataFrame(records) if records else None


def _positive_name(positive: Mapping[str, Any]) -> str:
    label = positive.get("label")
    return f"class {positive['index']}" + ("" if label is None else f" ({label})")


def monitor_table(curves: Sequence[LossDataCurve], fmt: str = "markdown") -> str:
    """The monitor metrics of the curves that have them as a table in ``fmt`` (one row per
    representation: each metric's mean over seeds with its cluster-bootstrap interval, recall
    with the test FPR its dev threshold reached), titled with the positive class, the
    bootstrap and where the thresholds were set; empty when no curve has them."""
    from probemeter._tables import render_table
    from probemeter.monitor import MONITOR_METRICS

    found = [curve for curve in curves if curve.monitor is not None]
    if not found:
        return ""
    first = found[0].monitor
    names = [name for name in MONITOR_METRICS if name in first["metrics"]]
    rows = []
    for curve in found:
        cells = [curve.name]
        for name in names:
            metric = curve.monitor["metrics"].get(name)
            cell = "—" if metric is None else _interval(metric)
            fpr = curve.monitor["test_fpr"].get(name)
            if fpr is not None and fpr["value"] is not None:
                cell += f"; test FPR {fpr['value']:.1%}"
            cells.append(cell)
        rows.append(cells)
    boot = first["bootstrap"]
    seeds = len(first["seeds"])
    title = (
        f"Monitor metrics of the largest size's probes, mean over {seeds} seed"
        f"{'s' if seeds > 1 else ''} [{boot['confidence']:.0%} bootstrap interval over "
        f"{boot['n_units']:,} test {boot['resampled']}, {boot['replicates']:,} replicates]; "
        f"positive class: {_positive_name(first['positive'])}; recall at a false-positive "
        "rate: threshold set on the development split's negatives, applied unchanged to the "
        f"test set (the test FPR it reached after it){_few_negatives(found)}; ECE: "
        f"{first['ece_bins']}."
    )
    header = ["representation", *(MONITOR_METRICS[name][0] for name in names)]
    return render_table(header, rows, fmt, title=title)


def _few_negatives(curves: Sequence[LossDataCurve]) -> str:
    """A warning where a development split holds fewer than 100 negatives: no threshold can
    then reach 1 % FPR there, and it is their highest score (no negative flagged)."""
    counts = [n for curve in curves for n in curve.monitor["thresholds"].get("dev_negatives", [])]
    if not counts or min(counts) >= 100:
        return ""
    return (
        f" — as few as {min(counts):,} development negatives: below 1/FPR of them, the "
        "threshold is their highest score"
    )


def _interval(metric: Mapping[str, Any]) -> str:
    """``"v [low, high]"``; ``"—"`` for a metric undefined on the test set (one class)."""
    if metric["value"] is None or metric["low"] is None:
        return "—"
    return f"{metric['value']:.3f} [{metric['low']:.3f}, {metric['high']:.3f}]"


def settings_note(curves: Sequence[LossDataCurve]) -> str:
    """The note under a results table on the probe settings chosen from a grid: the grid,
    which split chose (dev) and which tested (test), and per representation the setting
    chosen at each size; empty when no curve had a grid."""
    lines = []
    for curve in curves:
        if not curve.has_settings_grid:
            continue
        record = curve.metadata["settings"]
        if not lines:
            grid = record["grid"]
            lines.append(
                f"Probe settings: a grid of weight_decay {grid['weight_decay']} x lr "
                f"{grid['lr']}, every setting trained side by side; chosen per size on "
                f"{record['chosen_on']} (lowest mean development loss), tested on "
                f"{record['tested_on']}: the test set was not used to choose."
            )
        chosen = ", ".join(
            f"n={row['n']}: weight_decay {row['weight_decay']:g}, lr {row['lr']:g}"
            for row in record["chosen"]
        )
        lines.append(f"  {curve.name}: {chosen}")
    return "\n".join(lines)


def load_curves(path: str | Path) -> list[LossDataCurve]:
    """Read the curves of a results file (or of a single saved curve).

    Raises:
        ValueError: the file is missing, not JSON, or not a probemeter results/curve file;
            a damaged one, naming the key whose value is missing or of the wrong kind
            (``curves[0].points.loss[3] is '0.5', not a number``).
    """
    payload = read_json(path, "results file")
    if isinstance(payload, dict) and payload.get("schema") == SCHEMA:
        curves = _required(payload, "curves", list, path)
        if not curves:
            raise _damaged(path, "curves", "is empty: the file holds no curve")
        for index, curve in enumerate(curves):
            _check_curve(curve, f"curves[{index}]", path)
        if payload.get("comparison") is not None:
            _check_comparison(payload["comparison"], path)
        for key in ("versions", "experiment", "timings"):
            if key in payload and not isinstance(payload[key], dict):
                raise _damaged(path, key, f"is {_kind(payload[key])}, not a JSON object")
    elif isinstance(payload, dict) and "points" in payload:
        curves = [payload]
        _check_curve(payload, "the curve", path)
    elif isinstance(payload, dict) and str(payload.get("schema")).startswith("probemeter."):
        raise ValueError(
            f"{str(path)!r} holds no loss-data curves: its schema is {payload['schema']!r}, the "
            f"results of another method; curves ({SCHEMA}) are written by demo, curve and "
            "runs of kind 'curve' (probemeter report writes any run's report)"
        )
    else:
        raise ValueError(
            f"{str(path)!r} is not a results file: neither a {SCHEMA} file (its 'schema' key) "
            "nor a saved loss-data curve (its 'points' key)"
        )
    try:
        return [LossDataCurve.from_dict(curve) for curve in curves]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"results file {str(path)!r} is damaged: {error}") from None


def _damaged(path: str | Path, key: str, problem: str) -> ValueError:
    """``results file 'x' is damaged: curves[0].name is 3, not a text``."""
    return ValueError(f"results file {str(path)!r} is damaged: {key} {problem}")


def _kind(value: Any) -> str:
    """A JSON value for messages: short values as they are, long ones by their type."""
    shown = repr(value)
    return shown if len(shown) <= 30 else f"a {type(value).__name__}"


def _required(payload: Mapping[str, Any], key: str, kind: type, path: str | Path) -> Any:
    """``payload[key]``, which must be a ``kind`` (list or dict)."""
    if key not in payload:
        raise ValueError(f"results file {str(path)!r} is damaged: it lacks the key {key!r}")
    value = payload[key]
    if not isinstance(value, kind):
        wanted = "a JSON list" if kind is list else "a JSON object"
        raise _damaged(path, key, f"is {_kind(value)}, not {wanted}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_curve(curve: Any, key: str, path: str | Path) -> None:
    """A curve's entry (``LossDataCurve.to_dict``): the kinds of its values, and its points'
    columns — integers ``n`` and ``seed``, numbers (or null) elsewhere, all one length —
    before they reach pandas, whose errors name neither the file nor the key."""
    if not isinstance(curve, dict):
        raise _damaged(path, key, f"is {_kind(curve)}, not a JSON object (a curve)")
    for name in ("name", "n_classes", "pool_size", "n_test", "points"):
        if name not in curve:
            raise _damaged(path, key, f"lacks the key {name!r}")
    if not isinstance(curve["name"], str):
        raise _damaged(path, f"{key}.name", f"is {_kind(curve['name'])}, not a text")
    for name in ("n_classes", "pool_size", "n_test"):
        value = curve[name]
        if not (isinstance(value, int) and not isinstance(value, bool)) or value < 1:
            raise _damaged(path, f"{key}.{name}", f"is {_kind(value)}, not a positive integer")
    for name, kind, wanted in (
        ("metadata", dict, "a JSON object"),
        ("classes", list, "a JSON list or null"),
        ("final_correct", dict, "a JSON object or null"),
    ):
        value = curve.get(name)
        if value is not None and not isinstance(value, kind):
            raise _damaged(path, f"{key}.{name}", f"is {_kind(value)}, not {wanted}")
    if curve.get("final_correct") is not None:
        try:
            SeedCorrectness.from_dict(curve["final_correct"])
        except KeyError as error:
            raise _damaged(path, f"{key}.final_correct", f"lacks the key {error}") from None
        except (ValueError, TypeError, AttributeError) as error:
            raise _damaged(path, f"{key}.final_correct", f"cannot be read: {error}") from None
    points = curve["points"]
    if not isinstance(points, dict):
        raise _damaged(path, f"{key}.points", f"is {_kind(points)}, not a JSON object")
    for name in ("n", "seed", *METRICS):
        if name not in points:
            raise _damaged(path, f"{key}.points", f"lacks the column {name!r}")
    lengths = {}
    for name, values in points.items():
        if not isinstance(values, list):
            raise _damaged(path, f"{key}.points.{name}", f"is {_kind(values)}, not a JSON list")
        lengths[name] = len(values)
        whole = name in ("n", "seed")
        for index, value in enumerate(values):
            good = (
                isinstance(value, int) and not isinstance(value, bool)
                if whole
                else value is None or _is_number(value)
            )
            if not good:
                wanted = "an integer" if whole else "a number"
                raise _damaged(path, f"{key}.points.{name}[{index}]", f"is {value!r}, not {wanted}")
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name} {length}" for name, length in lengths.items())
        raise _damaged(path, f"{key}.points", f"has columns of different lengths ({shown} values)")


def _check_comparison(comparison: Any, path: str | Path) -> None:
    """A comparison's entry (``Comparison.to_dict``): ε a finite number, the metric, unit and
    rule texts, the sizes integers and the representations texts (where present)."""
    if not isinstance(comparison, dict):
        raise _damaged(path, "comparison", f"is {_kind(comparison)}, not a JSON object or null")
    epsilon = comparison.get("epsilon")
    if "epsilon" in comparison and not (_is_number(epsilon) and math.isfinite(epsilon)):
        raise _damaged(path, "comparison.epsilon", f"is {_kind(epsilon)}, not a number")
    for name in ("metric", "unit", "rule"):
        if name in comparison and not isinstance(comparison[name], str):
            raise _damaged(path, f"comparison.{name}", f"is {_kind(comparison[name])}, not a text")
    for name, wanted, good in (
        ("sizes", "integers", lambda v: isinstance(v, int) and not isinstance(v, bool)),
        ("representations", "texts", lambda v: isinstance(v, str)),
    ):
        values = comparison.get(name)
        if values is not None and not (isinstance(values, list) and all(map(good, values))):
            problem = f"is {_kind(values)}, not a list of {wanted}"
            raise _damaged(path, f"comparison.{name}", problem)
