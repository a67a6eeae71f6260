"""A self-contained report of one run folder: HTML page, Markdown and LaTeX tables.

:func:`write_report` reads the run folder and writes, next to its results:

* ``report.html`` — one file with no external resources (inline CSS, figures as base64
  ``data:`` URIs), rendered from a Jinja2 template (``runs/templates/report.html.j2``, or one of
  your own: ``template=``): for loss-data curves the comparison in the layout of Whitney et al.,
  Table 1, representations best first, the loss and accuracy figures and a table per
  representation (means ± standard deviations over seeds, labelled as such); for the other
  methods their table and figure; for a layer sweep the layer figure, table and verdicts
  (``layers.json``); the experiment file as written (``experiment.toml``), timings, library
  versions; and a warning banner when a representation comes from the pipeline that produced
  the labels (:func:`probemeter.runs.config.pipeline_warnings`).
* ``table.md`` and ``table.tex`` — for curves, the comparison as :meth:`Comparison.to_markdown`
  and :meth:`Comparison.to_latex` render it (the other methods write theirs when they finish).

The template receives one context (every key present, None or empty when it does not apply):
``title``, ``created``, ``written``, ``warnings`` (lines), ``comparison`` (``caption``,
``header``: names, ``rows``: ``n``, ``label``, ``cells``, ``group``), ``method_table`` (text),
``figures`` (``id``, ``alt``, ``src``), ``figures_title``, ``figures_note``, ``layers``
(``figure``, ``alt``, ``table``: HTML, ``how``, ``verdicts``), ``representations`` (``name``,
``facts``, ``rows``: ``n``, ``seeds``, ``loss``, ``accuracy``), ``experiment`` (``source``,
``text``), ``timings`` (``unit``, ``seconds``, ``loaded``), ``versions`` (pairs).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from probemeter._io import read_json, write_text_atomic
from probemeter._method import RUN_NAME
from probemeter.curves.comparison import Comparison, compare
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.results import SCHEMA, load_curves
from probemeter.runs.config import pipeline_warnings
from probemeter.runs.layers import LayerAnalysis

__all__ = ["TEMPLATE", "ReportFiles", "ranked", "write_report"]

RESULTS_NAME = "results.json"
#: the layer analysis of a layer sweep (:func:`probemeter.runs.layers.write_layer_files`)
LAYERS_NAME = "layers.json"
#: the run folder's copy of the experiment file, as the user wrote it
EXPERIMENT_NAME = "experiment.toml"
#: the default template, a resource of this package
TEMPLATE = "report.html.j2"
_MIME = {".png": "image/png", ".svg": "image/svg+xml"}


@dataclass(frozen=True)
class ReportFiles:
    """The files :func:`write_report` wrote."""

    html: Path
    markdown: Path
    latex: Path

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every written file, HTML first."""
        return (self.html, self.markdown, self.latex)


def write_report(
    run_dir: str | Path, *, epsilon: float | None = None, template: str | Path | None = None
) -> ReportFiles:
    """Write ``report.html`` (and, for loss-data curves, ``table.md`` and ``table.tex``) into
    ``run_dir``, each file atomically.

    For curves (``results.json`` of schema ``probemeter.results/1``) the comparison is
    recomputed with the stored comparison's settings (sizes, metric, unit, rule); ``epsilon``
    replaces the stored ε (the layer analysis, made at the run's own ε, is then left out). Other
    methods' runs (``run.json``) show their own table and figure.

    Args:
        template: a Jinja2 template file of your own, rendered with the context the module
            docstring lists (default: the package's ``report.html.j2``).

    Raises:
        ValueError: ``results.json`` is missing or not a results file, it holds no comparison
            and no ``epsilon`` was given, ``epsilon`` for a run of another method, or the
            template is missing or not valid Jinja2 (naming the file).
    """
    run_dir = Path(run_dir)
    render = _template(template)
    files = ReportFiles(run_dir / "report.html", run_dir / "table.md", run_dir / "table.tex")
    if (run_dir / RUN_NAME).is_file():
        if epsilon is not None:
            raise ValueError("epsilon applies to loss-data curves, not to this method's run")
        context = _method_context(run_dir)
    else:
        context, comparison = _curve_context(run_dir, epsilon)
        write_text_atomic(files.markdown, comparison.to_markdown() + "\n")
        write_text_atomic(files.latex, comparison.to_latex() + "\n")
    write_text_atomic(files.html, render(context))
    return files


def _template(path: str | Path | None) -> Any:
    """The render function of ``path`` (a Jinja2 file) or of the package's template: HTML
    escaping on, and every name the template uses must be in the context."""
    import jinja2

    if path is None:
        text = resources.files("probemeter.runs").joinpath("templates", TEMPLATE).read_text()
        where = TEMPLATE
    else:
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"template {str(path)!r} does not exist")
        text, where = path.read_text(encoding="utf-8"), str(path)
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    try:
        compiled = environment.from_string(text)
    except jinja2.TemplateSyntaxError as error:
        raise ValueError(f"template {where!r} is not valid Jinja2: {error}") from None

    def render(context: dict[str, Any]) -> str:
        try:
            return compiled.render(**context)
        except jinja2.UndefinedError as error:
            raise ValueError(f"template {where!r}: {error} (see html_report's context)") from None

    return render


def _common(
    run_dir: Path, title: str, created: Any, experiment: Any, timings: Any, versions: Any
) -> dict[str, Any]:
    """The context every report shares (the keys of a method's own sections left empty)."""
    experiment = experiment if isinstance(experiment, dict) else None
    return {
        "title": title,
        "created": None if created is None else str(created),
        "written": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "warnings": pipeline_warnings(experiment) if experiment else [],
        "comparison": None,
        "method_table": None,
        "figures": [],
        "figures_title": "Figures",
        "figures_note": None,
        "layers": _layers(run_dir),
        "representations": [],
        "experiment": _experiment(run_dir, experiment),
        "timings": _timings(timings) if isinstance(timings, dict) else [],
        "versions": [(k, _text(v)) for k, v in (versions or {}).items()],
    }


def _curve_context(run_dir: Path, epsilon: float | None) -> tuple[dict[str, Any], Comparison]:
    """The context of a loss-data-curve run, and its (ranked) comparison."""
    path = run_dir / RESULTS_NAME
    curves = load_curves(path)
    payload = read_json(path, "results file")
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA:
        raise ValueError(f"{str(path)!r} is a single saved curve, not a {SCHEMA} file")
    comparison = ranked(_comparison(curves, payload.get("comparison"), epsilon, path))
    names = ", ".join(comparison.representations)
    context = _common(
        run_dir,
        f"probemeter report: {names}",
        payload.get("created", "unknown"),
        payload.get("experiment"),
        payload.get("timings"),
        payload.get("versions"),
    )
    if epsilon is not None:  # the layer analysis is at the run's own ε
        context["layers"] = None
    context.update(
        comparison=_comparison_table(comparison),
        figures=_curve_figures(curves, comparison),
        figures_title="Loss-data curves",
        figures_note="Lines: mean over seeds; bands: min–max over seeds; dashed line: ε.",
        representations=[_representation(curve) for curve in curves],
    )
    return context, comparison


def _method_context(run_dir: Path) -> dict[str, Any]:
    """The context of an ``mdl``, ``pareto`` or ``power`` run: its table (as
    :meth:`probemeter._method.Method.finish` wrote it) and its figure."""
    run = read_json(run_dir / RUN_NAME, "run file")
    experiment = run.get("experiment")
    context = _common(
        run_dir,
        f"probemeter {run['method']} report: {run_dir.name}",
        None,
        experiment,
        run.get("timings"),
        None,
    )
    figure = run.get("figure")
    shown = [] if figure is None else [_embedded(run_dir / figure, "method-figure", run["method"])]
    saved = run.get("figures", [])  # every format the figure was saved in
    context.update(
        method_table=(run_dir / "table.md").read_text(),
        figures=shown,
        figures_note=f"Figure files: {', '.join(saved)}." if saved else None,
    )
    return context


def _embedded(path: Path, element: str, alt: str) -> dict[str, str]:
    """A figure file as an ``<img>`` of the template: id, alt text and a ``data:`` URI."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return {
        "id": element,
        "alt": f"{alt} figure",
        "src": f"data:{_MIME[path.suffix]};base64,{data}",
    }


def _layers(run_dir: Path) -> dict[str, Any] | None:
    """The layer sweep of a run (:mod:`probemeter.runs.layers`): figure, table and verdicts."""
    import markupsafe

    if not (run_dir / LAYERS_NAME).is_file():
        return None
    analysis = LayerAnalysis.load(run_dir / LAYERS_NAME)
    figure = next(
        (run_dir / f"layers.{f}" for f in ("png", "svg") if (run_dir / f"layers.{f}").is_file()),
        None,
    )
    how, *verdicts = analysis.notes()
    return {
        "figure": "" if figure is None else _embedded(figure, "layers-figure", "")["src"],
        "alt": f"{analysis.method} measures against layer",
        "table": markupsafe.Markup(analysis.table("html")),  # rendered and escaped already
        "how": how,
        "verdicts": verdicts,
    }


def _experiment(run_dir: Path, experiment: dict[str, Any] | None) -> dict[str, str] | None:
    """The experiment as the user wrote it (the run folder's ``experiment.toml``); else the
    recorded configuration, without its unset (null) entries."""
    copy = run_dir / EXPERIMENT_NAME
    if copy.is_file():
        return {"source": f"{EXPERIMENT_NAME}, as written", "text": copy.read_text()}
    if experiment is None:
        return None
    return {
        "source": "the configuration as recorded (defaults filled in, unset values left out)",
        "text": json.dumps(_without_nulls(experiment), indent=2, default=str),
    }


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


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


def _timings(timings: dict[str, Any]) -> list[dict[str, str]]:
    """Seconds per unit of work; an entry is a number of seconds or a dictionary with
    ``"seconds"`` and ``"loaded"`` (read from the run's store rather than computed), as
    ``probemeter run`` writes them."""
    rows = []
    for name, entry in timings.items():
        details = entry if isinstance(entry, dict) else {"seconds": entry}
        loaded = {True: "yes", False: "no"}.get(details.get("loaded"), "")
        rows.append(
            {"unit": str(name), "seconds": _text(details.get("seconds", "")), "loaded": loaded}
        )
    return rows


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return value if isinstance(value, str) else json.dumps(value, default=str)
