"""A self-contained report of one run folder: HTML page, Markdown and LaTeX tables.

:func:`write_report` reads the run folder and writes, next to its results:

* ``report.html`` — one file with no external resources (inline CSS, figures as base64
  ``data:`` URIs), rendered from a Jinja2 template (``runs/templates/report.html.j2``, or one of
  your own: ``template=``): the method's part (:meth:`probemeter._method.Method.report_part`:
  the curve method's comparison in the layout of Whitney et al., Table 1, its figures and a
  table per representation; by default the table and figure the method recorded when it
  finished, ``run.json``); for a layer sweep the layer figure, table and verdicts
  (``layers.json``); the experiment file as written (``experiment.toml``), timings, library
  versions; and a warning banner when a representation comes from the pipeline that produced
  the labels (:func:`probemeter.runs.config.pipeline_warnings`).
* ``table.md`` and ``table.tex`` — when the method's part recomputes them (the curve method's
  comparison, at the ``epsilon`` asked for); the methods write theirs when they finish.

The template receives one context (every key present, None or empty when it does not apply):
``title``, ``created``, ``written``, ``warnings`` (lines), ``comparison`` (``caption``,
``header``: names, ``rows``: ``n``, ``label``, ``cells``, ``group``), ``method_table`` (text),
``figures`` (``id``, ``alt``, ``src``), ``figures_title``, ``figures_note``, ``layers``
(``figure``, ``alt``, ``table``: HTML, ``how``, ``verdicts``), ``shift`` (shifted test sets,
:mod:`probemeter.runs.shift`: ``table``, ``monitor`` and ``tests`` as HTML, ``notes``),
``representations`` (``name``,
``facts``, ``rows``: ``n``, ``seeds``, ``loss``, ``accuracy``), ``experiment`` (``source``,
``text``), ``timings`` (``unit``, ``seconds``, ``loaded``), ``versions`` (pairs).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from probemeter._io import read_json, write_text_atomic
from probemeter._method import RUN_NAME, ReportPart
from probemeter.curves.report import ranked
from probemeter.runs.config import pipeline_warnings
from probemeter.runs.layers import LayerAnalysis
from probemeter.runs.methods import run_method
from probemeter.runs.shift import ShiftAnalysis

__all__ = ["TEMPLATE", "ReportFiles", "ranked", "write_report"]

#: the layer analysis of a layer sweep (:func:`probemeter.runs.layers.write_layer_files`)
LAYERS_NAME = "layers.json"
#: the shifted test sets' analysis (:func:`probemeter.runs.shift.write_shift_files`)
SHIFT_NAME = "shift.json"
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
    """Write ``report.html`` (and the tables the method's part recomputes, ``table.md`` and
    ``table.tex``) into ``run_dir``, each file atomically.

    The run's method (:func:`~probemeter.runs.methods.run_method`: the one ``run.json`` names,
    else the one whose folders hold ``results.json`` alone) gives its part of the report
    (:meth:`~probemeter._method.Method.report_part`); for curves the comparison is recomputed
    with the stored comparison's settings (sizes, metric, unit, rule), ``epsilon`` replacing
    the stored ε (the layer analysis, made at the run's own ε, is then left out). A method
    without a part of its own shows the table and figure of its ``run.json``.

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
    method = run_method(run_dir)
    part = None if method is None else method.report_part(run_dir, epsilon)
    if part is None:
        if epsilon is not None:
            raise ValueError("epsilon applies to loss-data curves, not to this method's run")
        part = _method_part(run_dir)
    recorded = part.recorded
    context = _common(
        run_dir,
        part.title,
        recorded.get("created"),
        recorded.get("experiment"),
        recorded.get("timings"),
        recorded.get("versions"),
    )
    if not part.layers:
        context["layers"] = None
    context.update(part.sections)
    if part.tables is not None:
        markdown, latex = part.tables
        write_text_atomic(files.markdown, markdown + "\n")
        write_text_atomic(files.latex, latex + "\n")
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
        "monitor": None,
        "figures": [],
        "figures_title": "Figures",
        "figures_note": None,
        "layers": _layers(run_dir),
        "shift": _shift(run_dir),
        "representations": [],
        "experiment": _experiment(run_dir, experiment),
        "timings": _timings(timings) if isinstance(timings, dict) else [],
        "versions": [(k, _text(v)) for k, v in (versions or {}).items()],
    }


def _method_part(run_dir: Path) -> ReportPart:
    """The report's part of a run whose method has none of its own: its table (as
    :func:`probemeter._method.write_run_files` wrote it) and its figure."""
    run = read_json(run_dir / RUN_NAME, "run file")
    figure = run.get("figure")
    shown = [] if figure is None else [_embedded(run_dir / figure, "method-figure", run["method"])]
    saved = run.get("figures", [])  # every format the figure was saved in
    sections = {
        "method_table": (run_dir / "table.md").read_text(),
        "figures": shown,
        "figures_note": f"Figure files: {', '.join(saved)}." if saved else None,
    }
    recorded = {"experiment": run.get("experiment"), "timings": run.get("timings")}
    return ReportPart(f"probemeter {run['method']} report: {run_dir.name}", recorded, sections)


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
        "sites": _sites(run_dir, analysis),
    }


def _shift(run_dir: Path) -> dict[str, Any] | None:
    """The shifted test sets of a run (``shift.json``, :mod:`probemeter.runs.shift`): the
    table of gaps, the monitor metrics, the paired tests and how to read them."""
    import markupsafe

    if not (run_dir / SHIFT_NAME).is_file():
        return None
    analysis = ShiftAnalysis.from_dict(read_json(run_dir / SHIFT_NAME, "shift file"))
    monitor = analysis.monitor_table("html")
    return {
        "table": markupsafe.Markup(analysis.table("html")),  # rendered and escaped already
        "monitor": markupsafe.Markup(monitor) if monitor else None,
        "tests": markupsafe.Markup(analysis.tests_table("html")) if analysis.tests else None,
        "notes": analysis.notes(),
    }


def _sites(run_dir: Path, analysis: LayerAnalysis) -> dict[str, Any] | None:
    """The verdicts across the sites and blocks of entries read at several sites: the
    figure (``sites.png``), how to read them, and per entry its ranking and verdict."""
    import markupsafe

    if not analysis.sites:
        return None
    figure = next(
        (run_dir / f"sites.{f}" for f in ("png", "svg") if (run_dir / f"sites.{f}").is_file()),
        None,
    )
    _, how, *parts = analysis.sites_section("html")
    return {
        "figure": "" if figure is None else _embedded(figure, "sites-figure", "")["src"],
        "how": how,
        "entries": [
            {"table": markupsafe.Markup(table), "verdict": verdict}
            for table, verdict in zip(parts[::2], parts[1::2])
        ],
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
