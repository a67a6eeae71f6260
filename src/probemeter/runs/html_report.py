"""A self-contained report of one run folder: HTML page, Markdown and LaTeX tables.

:func:`write_report` reads ``run_dir/results.json`` (schema ``probemeter.results/1``) and writes,
next to it:

* ``report.html`` — one file with no external resources (inline CSS, figures as base64 PNG
  ``data:`` URIs): the comparison in the layout of Whitney et al., Table 1, representations
  ordered best-first; figures of the loss-data and accuracy curves; for a layer sweep, the layer
  figure, table and verdicts (``layers.json``); a per-representation summary; the experiment
  configuration, timings, library versions and creation time of the run.
* ``table.md`` and ``table.tex`` — the same comparison as :meth:`Comparison.to_markdown` and
  :meth:`Comparison.to_latex` render it.
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
from html import escape
from pathlib import Path
from typing import Any

from probemeter._io import read_json, write_text_atomic
from probemeter._method import RUN_NAME
from probemeter.curves.comparison import Comparison, compare
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.results import SCHEMA, load_curves
from probemeter.runs.layers import LayerAnalysis

__all__ = ["ReportFiles", "ranked", "write_report"]

RESULTS_NAME = "results.json"
#: the layer analysis of a layer sweep (:func:`probemeter.runs.layers.write_layer_files`)
LAYERS_NAME = "layers.json"

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { padding: 0.25em 0.8em; text-align: right; border-bottom: 1px solid #ddd; }
th { border-bottom: 2px solid #444; }
td.label, th.label { text-align: left; }
tr.group td { border-top: 2px solid #444; }
img { max-width: 100%; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
.note { color: #555; font-size: 0.9em; }
caption { caption-side: bottom; text-align: left; padding-top: 0.4em; }
"""


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


def write_report(run_dir: str | Path, *, epsilon: float | None = None) -> ReportFiles:
    """Write ``report.html``, ``table.md`` and ``table.tex`` into ``run_dir`` from its
    ``results.json``.

    The comparison is recomputed from the curves with the stored comparison's settings (sizes,
    metric, unit, rule); ``epsilon`` replaces the stored ε. The optional keys ``"experiment"``
    (the parsed experiment configuration) and ``"timings"`` (seconds per unit) are shown when
    present. Every file is written atomically.

    Raises:
        ValueError: ``results.json`` is missing or not a results file, or it holds no comparison
            and no ``epsilon`` was given.
    """
    run_dir = Path(run_dir)
    if (run_dir / RUN_NAME).is_file():
        if epsilon is not None:
            raise ValueError("epsilon applies to loss-data curves, not to this method's run")
        return _method_report(run_dir)
    path = run_dir / RESULTS_NAME
    curves = load_curves(path)
    payload = read_json(path, "results file")
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA:
        raise ValueError(f"{str(path)!r} is a single saved curve, not a {SCHEMA} file")
    comparison = ranked(_comparison(curves, payload.get("comparison"), epsilon, path))
    files = ReportFiles(run_dir / "report.html", run_dir / "table.md", run_dir / "table.tex")
    # the layer analysis is at the run's own ε: left out when the report recomputes at another
    layers = run_dir if epsilon is None and (run_dir / LAYERS_NAME).is_file() else None
    write_text_atomic(files.html, _html(payload, curves, comparison, layers))
    write_text_atomic(files.markdown, comparison.to_markdown() + "\n")
    write_text_atomic(files.latex, comparison.to_latex() + "\n")
    return files


def _method_report(run_dir: Path) -> ReportFiles:
    """``report.html`` of an ``mdl``, ``pareto`` or ``power`` run: its table (as written by
    :meth:`probemeter._method.Method.finish`), its figure, the experiment and the timings."""
    run = read_json(run_dir / RUN_NAME, "run file")
    files = ReportFiles(run_dir / "report.html", run_dir / "table.md", run_dir / "table.tex")
    image = base64.b64encode((run_dir / run["figure"]).read_bytes()).decode("ascii")
    title = f"probemeter {run['method']} report: {run_dir.name}"
    sections = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="note">report written '
        f"{dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}</p>",
        "<h2>Results</h2>",
        f"<pre>{escape(files.markdown.read_text())}</pre>",
        f'<img id="method-figure" alt="{escape(run["method"])} figure" '
        f'src="data:image/png;base64,{image}">',
        *(_layer_section(run_dir) if (run_dir / LAYERS_NAME).is_file() else []),
        "<h2>Experiment</h2>",
        f"<pre>{escape(json.dumps(run.get('experiment'), indent=2, default=str))}</pre>",
        "<h2>Timings</h2>",
        _timings_table(run.get("timings", {})),
    ]
    write_text_atomic(files.html, _page(title, "\n".join(sections)))
    return files


def _layer_section(run_dir: Path) -> list[str]:
    """The layer sweep of a run (:mod:`probemeter.runs.layers`): figure, table and verdicts."""
    analysis = LayerAnalysis.load(run_dir / LAYERS_NAME)
    image = base64.b64encode((run_dir / "layers.png").read_bytes()).decode("ascii")
    how, *verdicts = analysis.notes()
    return [
        "<h2>By layer</h2>",
        f'<img id="layers-figure" alt="{escape(analysis.method)} measures against layer" '
        f'src="data:image/png;base64,{image}">',
        f'<div id="layers-table">{analysis.table("html")}</div>',
        f'<p class="note">{escape(how)}</p>',
        '<div id="layer-verdicts">',
        *(f"<p>{escape(verdict)}</p>" for verdict in verdicts),
        "</div>",
    ]


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


def _html(
    payload: dict[str, Any],
    curves: Sequence[LossDataCurve],
    comparison: Comparison,
    layers: Path | None = None,
) -> str:
    """The whole report page as one self-contained HTML document (with the layer section of
    a layer sweep when ``layers``, the run folder, is given)."""
    names = ", ".join(comparison.representations)
    sections = [
        f"<h1>probemeter report: {escape(names)}</h1>",
        f'<p class="note">run created {escape(str(payload.get("created", "unknown")))}; '
        f"report written {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}</p>",
        "<h2>Comparison</h2>",
        _comparison_table(comparison),
        "<h2>Loss-data curves</h2>",
        _figures(curves, comparison),
        "<h2>Per representation</h2>",
        *(_summary_table(curve) for curve in curves),
    ]
    if layers is not None:
        sections[6:6] = _layer_section(layers)  # after the loss-data curves
    if isinstance(payload.get("experiment"), dict):
        config = json.dumps(payload["experiment"], indent=2, default=str)
        sections += ["<h2>Experiment</h2>", f"<pre>{escape(config)}</pre>"]
    if isinstance(payload.get("timings"), dict):
        sections += ["<h2>Timings</h2>", _timings_table(payload["timings"])]
    sections += [
        "<h2>Library versions</h2>",
        _key_value_table(payload.get("versions", {}), ("library", "version")),
    ]
    return _page(f"probemeter report: {names}", "\n".join(sections))


def _page(title: str, body: str) -> str:
    """A self-contained HTML document."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def _comparison_table(comparison: Comparison) -> str:
    """The comparison in the layout of Whitney et al., Table 1, lower bounds as "> x"."""
    header = "".join(f"<th>{escape(name)}</th>" for name in comparison.representations)
    rows = []
    for row in comparison.table_rows():
        n, label, *cells = row
        group = ' class="group"' if n else ""
        values = "".join(f"<td>{escape(cell)}</td>" for cell in cells)
        rows.append(
            f'<tr{group}><td>{escape(n)}</td><td class="label">{escape(label)}</td>{values}</tr>'
        )
    caption = (
        f"metric {comparison.metric}, losses in {comparison.unit} (εSC in examples), "
        f"ε = {comparison.epsilon:g}, rule {comparison.rule!r}; representations best first by "
        'εSC then SDL at the largest n; "> x": a lower bound (the data ran out).'
    )
    if comparison.classes_line() is not None:
        caption += f" {comparison.classes_line()}"
    return (
        f'<table id="comparison">\n<caption class="note">{escape(caption)}</caption>\n'
        f'<tr><th>n</th><th class="label">measure</th>{header}</tr>\n'
        + "\n".join(rows)
        + "\n</table>"
    )


def _figures(curves: Sequence[LossDataCurve], comparison: Comparison) -> str:
    """The loss figure (with the ε line) and the accuracy figure as ``<img>`` elements."""
    epsilon = comparison.epsilon
    if comparison.metric == "error":
        loss_metric, loss_epsilon, accuracy_epsilon = "loss", None, 1.0 - epsilon
    else:
        loss_metric, accuracy_epsilon = comparison.metric, None
        loss_epsilon = epsilon * (math.log(2.0) if comparison.unit == "bits" else 1.0)
    loss = _figure(curves, loss_metric, loss_epsilon)
    accuracy = _figure(curves, "accuracy", accuracy_epsilon)
    return (
        f'<img id="loss-figure" alt="test loss against training examples" src="{loss}">\n'
        f'<img id="accuracy-figure" alt="test accuracy against training examples" src="{accuracy}">'
        '\n<p class="note">Mean over seeds with the min–max band; dashed line: ε.</p>'
    )


def _figure(curves: Sequence[LossDataCurve], metric: str, epsilon: float | None) -> str:
    """One figure of every curve's ``metric`` (drawn by :meth:`LossDataCurve.plot`) as a base64
    PNG ``data:`` URI."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.2), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for curve in curves:
        curve.plot(ax, metric=metric, epsilon=epsilon, shade_sdl=False)
    ax.legend(fontsize="small")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _summary_table(curve: LossDataCurve) -> str:
    """Per size n: seeds, mean ± std of the test loss (nats) and of the accuracy."""
    loss, accuracy = curve.summary("loss"), curve.summary("accuracy")
    rows = "\n".join(
        f"<tr><td>{n}</td><td>{int(loss.at[n, 'seeds'])}</td>"
        f"<td>{loss.at[n, 'mean']:.4f} ± {loss.at[n, 'std']:.4f}</td>"
        f"<td>{accuracy.at[n, 'mean']:.4f} ± {accuracy.at[n, 'std']:.4f}</td></tr>"
        for n in loss.index
    )
    facts = f"{curve.n_classes} classes, pool {curve.pool_size}, {curve.n_test} test examples"
    return (
        f'<h3>{escape(curve.name)}</h3>\n<p class="note">{facts}</p>\n<table>\n'
        "<tr><th>n</th><th>seeds</th><th>test loss (nats)</th><th>accuracy</th></tr>\n"
        f"{rows}\n</table>"
    )


def _timings_table(timings: dict[str, Any]) -> str:
    """Seconds per unit of work; an entry is a number of seconds or a dictionary with
    ``"seconds"`` and ``"loaded"`` (read from the run's store rather than computed), as
    ``probemeter run`` writes them."""
    rows = []
    for name, entry in timings.items():
        details = entry if isinstance(entry, dict) else {"seconds": entry}
        loaded = {True: "yes", False: "no"}.get(details.get("loaded"), "")
        rows.append(
            f'<tr><td class="label">{escape(str(name))}</td>'
            f"<td>{escape(_text(details.get('seconds', '')))}</td><td>{loaded}</td></tr>"
        )
    header = '<tr><th class="label">unit</th><th>seconds</th><th>loaded from store</th></tr>'
    return "<table>\n" + header + "\n" + "\n".join(rows) + "\n</table>"


def _key_value_table(values: dict[str, Any], header: tuple[str, str]) -> str:
    """A two-column table of a flat dictionary; numbers to 3 decimals, anything else as text."""
    rows = "\n".join(
        f'<tr><td class="label">{escape(str(key))}</td><td>{escape(_text(value))}</td></tr>'
        for key, value in values.items()
    )
    key, value = (escape(text) for text in header)
    return f'<table>\n<tr><th class="label">{key}</th><th>{value}</th></tr>\n{rows}\n</table>'


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return value if isinstance(value, str) else json.dumps(value, default=str)
