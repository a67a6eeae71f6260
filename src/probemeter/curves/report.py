"""The curve method's part of a run's report (:func:`probemeter.runs.html_report.write_report`):
the comparison in the layout of Whitney et al., Table 1, representations best first, the loss
and accuracy figures, and a table per representation (means ± standard deviations over seeds);
``table.md`` and ``table.tex`` are the comparison as :meth:`Comparison.to_markdown` and
:meth:`Comparison.to_latex` render it."""

from __future__ import annotations

import base64
import dataclasses
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probemeter._io import read_json
from probemeter._method import ReportPart
from probemeter.curves.comparison import Comparison, compare
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.results import SCHEMA, load_curves, monitor_table

__all__ = ["RESULTS_NAME", "curve_report", "ranked"]

#: the results file of a curve run (:func:`~probemeter.curves.results.save_results`)
RESULTS_NAME = "results.json"


def curve_report(run_dir: Path, epsilon: float | None) -> ReportPart:
    """The report's part of the curves of ``run_dir`` (its ``results.json``, schema
    ``probemeter.results/1``): the comparison recomputed with the stored comparison's settings
    (sizes, metric, unit, rule), ``epsilon`` replacing the stored ε (the layer analysis, made
    at the run's own ε, is then left out), ranked best first.

    Raises:
        ValueError: ``results.json`` is missing or not a results file, or it holds no
            comparison and no ``epsilon`` was given.
    """
    path = run_dir / RESULTS_NAME
    curves = load_curves(path)
    payload = read_json(path, "results file")
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA:
        raise ValueError(f"{str(path)!r} is a single saved curve, not a {SCHEMA} file")
    comparison = ranked(_comparison(curves, payload.get("comparison"), epsilon, path))
    names = ", ".join(comparison.representations)
    sections = {
        "comparison": _comparison_table(comparison),
        "figures": _curve_figures(curves, comparison),
        "figures_title": "Loss-data curves",
        "figures_note": "Lines: mean over seeds; bands: min–max over seeds; dashed line: ε.",
        "representations": [_representation(curve) for curve in curves],
        "monitor": _monitor(curves),
    }
    recorded = {key: payload.get(key) for key in ("experiment", "timings", "versions")}
    return ReportPart(
        f"probemeter report: {names}",
        {"created": payload.get("created", "unknown"), **recorded},
        sections,
        tuple(
            "\n\n".join(text for text in (table, monitor_table(curves, fmt)) if text)
            for table, fmt in (
                (comparison.to_markdown(), "markdown"),
                (comparison.to_latex(), "latex"),
            )
        ),
        layers=epsilon is None,  # the layer analysis is at the run's own ε
    )


def _monitor(curves: Sequence[LossDataCurve]) -> Any:
    """The monitor metrics' table as HTML (rendered and escaped already), None when no curve
    has them (more than two classes)."""
    import markupsafe

    table = monitor_table(curves, "html")
    return markupsafe.Markup(table) if table else None  # rendered and escaped already


def ranked(comparison: Comparison) -> Comparison:
    """The comparison with its representations reordered best-first at the largest size: by
    εSC, ties broken by SDL (each as ordered by :meth:`Comparison.ranking`)."""
    largest = comparison.sizes[-1]

    def sc_key(name: str) -> tuple[bool, float]:
        result = comparison.result("SC", largest, name)
        return (result.lower_bound, result.value)

    order = sorted(comparison.ranking("SDL"), key=sc_key)  # stable: SDL order breaks SC ties
    return dataclasses.replace(comparison, representations=tuple(order))


def _comparison(
    curves: Sequence[LossDataCurve],
    stored: dict[str, Any] | None,
    epsilon: float | None,
    path: Path,
) -> Comparison:
    """Recompute the comparison with the stored settings and ``epsilon`` (default: stored ε)."""
    if stored is None:
        if epsilon is None:
            raise ValueError(
                f"{str(path)!r} holds no comparison; give the loss tolerance with --epsilon"
            )
        return compare(curves, epsilon)
    return compare(
        curves,
        stored["epsilon"] if epsilon is None else epsilon,
        stored["sizes"],
        metric=stored["metric"],
        unit=stored["unit"],
        rule=stored["rule"],
    )


def _comparison_table(comparison: Comparison) -> dict[str, Any]:
    """The comparison in the layout of Whitney et al., Table 1, lower bounds as "> x"."""
    caption = (
        f"metric {comparison.metric}, losses in {comparison.unit} (εSC in examples), "
        f"ε = {comparison.epsilon:g}, rule {comparison.rule!r}; representations best first by "
        'εSC then SDL at the largest n; "> x": a lower bound (the data ran out).'
    )
    if comparison.classes_line() is not None:
        caption += f" {comparison.classes_line()}"
    rows = [
        {"n": n, "label": label, "cells": cells, "group": bool(n)}
        for n, label, *cells in comparison.table_rows()
    ]
    return {"caption": caption, "header": list(comparison.representations), "rows": rows}


def _curve_figures(curves: Sequence[LossDataCurve], comparison: Comparison) -> list[dict[str, str]]:
    """The loss figure (with the ε line) and the accuracy figure."""
    epsilon = comparison.epsilon
    if comparison.metric == "error":
        loss_metric, loss_epsilon, accuracy_epsilon = "loss", None, 1.0 - epsilon
    else:
        loss_metric, accuracy_epsilon = comparison.metric, None
        loss_epsilon = epsilon * (math.log(2.0) if comparison.unit == "bits" else 1.0)
    return [
        {
            "id": "loss-figure",
            "alt": "test loss against training examples",
            "src": _figure(curves, loss_metric, loss_epsilon),
        },
        {
            "id": "accuracy-figure",
            "alt": "test accuracy against training examples",
            "src": _figure(curves, "accuracy", accuracy_epsilon),
        },
    ]


def _figure(curves: Sequence[LossDataCurve], metric: str, epsilon: float | None) -> str:
    """One figure of every curve's ``metric`` (drawn by :meth:`LossDataCurve.plot`, coloured by
    :func:`~probemeter._figures.representation_colours`) as a base64 PNG ``data:`` URI."""
    from matplotlib.figure import Figure

    from probemeter._figures import representation_colours, shared_legend

    figure = Figure(figsize=(7, 4.8), layout="constrained")
    ax = figure.add_subplot()
    colours = representation_colours([curve.name for curve in curves])
    for curve in curves:
        colour = colours[curve.name]
        curve.plot(ax, metric=metric, epsilon=epsilon, shade_sdl=False, color=colour)
    shared_legend(figure, [ax], columns=4)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _representation(curve: LossDataCurve) -> dict[str, Any]:
    """Per size n: seeds, mean ± standard deviation over seeds of the test loss (nats) and of
    the accuracy."""
    loss, accuracy = curve.summary("loss"), curve.summary("accuracy")
    rows = [
        {
            "n": n,
            "seeds": int(loss.at[n, "seeds"]),
            "loss": f"{loss.at[n, 'mean']:.4f} ± {loss.at[n, 'std']:.4f}",
            "accuracy": f"{accuracy.at[n, 'mean']:.4f} ± {accuracy.at[n, 'std']:.4f}",
        }
        for n in loss.index
    ]
    facts = f"{curve.n_classes} classes, pool {curve.pool_size}, {curve.n_test} test examples"
    return {"name": curve.name, "facts": facts, "rows": rows}
