"""Tables of the package (the comparison of Whitney et al.'s Table 1, Voita & Titov's Table 2,
Pimentel et al.'s Table 3, Zhu et al.'s power report) rendered one way: a header and rows of
text cells as aligned plain text, Markdown, LaTeX (booktabs) or HTML."""

from __future__ import annotations

import html
from collections.abc import Collection, Iterable, Sequence
from typing import Any

__all__ = [
    "CLASSES_SHOWN",
    "TABLE_FORMATS",
    "classes_line",
    "latex_escape",
    "markdown_row",
    "render_table",
]

#: the formats of :func:`render_table`
TABLE_FORMATS = ("text", "markdown", "latex", "html")
#: class labels a :func:`classes_line` shows before an ellipsis
CLASSES_SHOWN = 20

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def markdown_row(cells: Sequence[str]) -> str:
    """One markdown table row (shared by every table of the package). ``|`` in cells is
    escaped, and so are ``&`` and ``<``: Markdown viewers render raw HTML, so a representation
    named ``<script>`` must reach them as text."""
    return "| " + " | ".join(_markdown_cell(cell) for cell in cells) + " |"


def _markdown_cell(cell: str) -> str:
    return cell.replace("&", "&amp;").replace("<", "&lt;").replace("|", r"\|")


def classes_line(mappings: Iterable[Sequence[Any] | None]) -> str | None:
    """The footer of a table of results that recorded the original labels of their class
    indices (each result's ``classes``; None where it recorded none).

    When every result has the same labels: ``classes: 0 = ADJ, 1 = ADP, … (K = 17)``, the
    first :data:`CLASSES_SHOWN` labels then an ellipsis; when they differ (or only some results
    have labels), a line saying so; None when no result has labels."""
    distinct = {None if labels is None else repr(tuple(labels)): labels for labels in mappings}
    if not distinct or list(distinct) == [None]:
        return None
    if len(distinct) > 1:
        return "classes: the results compared have different label mappings (see their classes)"
    (labels,) = distinct.values()
    items = [f"{index} = {_label(label)}" for index, label in enumerate(labels)]
    shown = items[:CLASSES_SHOWN] + (["…"] if len(items) > CLASSES_SHOWN else [])
    return f"classes: {', '.join(shown)} (K = {len(labels)})"


def _label(label: Any) -> str:
    text = str(label)
    return text if text.isprintable() else repr(label)


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIALS.get(char, char) for char in text)


def render_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    fmt: str = "markdown",
    *,
    align: str | None = None,
    breaks: Collection[int] = (),
    title: str | None = None,
    escape: bool = True,
    latex_head: Sequence[str] = (),
    footer: str | None = None,
) -> str:
    """The table of ``header`` and ``rows`` (text cells) in ``fmt``, one of
    :data:`TABLE_FORMATS`.

    Args:
        align: one letter per column, ``"l"`` (left) or ``"r"`` (right); default: the first
            column left, the others right.
        breaks: indices of the rows that start a new group: a blank line before them in
            ``"text"``, a ``\\midrule`` in ``"latex"``.
        title: the table's caption: a first line in ``"text"``, a ``Table: …`` paragraph
            before the table in ``"markdown"`` (Pandoc's caption syntax), the ``\\caption`` of
            a ``table`` float around the ``tabular`` in ``"latex"`` (escaped like the cells),
            a ``<caption>`` in ``"html"``.
        escape: escape LaTeX's special characters in the header and cells (off: the caller
            wrote them as LaTeX).
        latex_head: LaTeX lines between ``\\toprule`` and the header (a grouped header).
        footer: a last line of plain text (e.g. :func:`classes_line`), escaped for ``fmt``:
            after the table in ``"text"``, a paragraph after a blank line in ``"markdown"``, a
            full-width row under ``\\bottomrule`` in ``"latex"``, a ``<tfoot>`` in ``"html"``.
    """
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"fmt must be one of {list(TABLE_FORMATS)}; got {fmt!r}")
    align = align or "l" + "r" * (len(header) - 1)
    if fmt == "markdown":
        rule = [":---" if side == "l" else "---:" for side in align]
        table = "\n".join(markdown_row(row) for row in [header, rule, *rows])
        if title is not None:
            table = f"Table: {_markdown_cell(title)}\n\n{table}"
        return table if footer is None else f"{table}\n\n{_markdown_cell(footer)}"
    if fmt == "latex":
        tabular = _latex(header, rows, align, breaks, escape, latex_head, footer)
        if title is None:
            return tabular
        caption = latex_escape(title) if escape else title
        return "\n".join(
            [r"\begin{table}", r"\centering", rf"\caption{{{caption}}}", tabular, r"\end{table}"]
        )
    if fmt == "html":
        return _html(header, rows, align, title, footer)
    table = _text(header, rows, align, breaks, title)
    return table if footer is None else f"{table}\n{footer}"


def _text(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str,
    breaks: Collection[int],
    title: str | None,
) -> str:
    """Columns padded to their widest cell, two spaces apart, a dashed rule under the header."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(cells, widths, align, strict=True)
        ]
        return "  ".join(padded).rstrip()

    lines = [] if title is None else [title]
    lines += [line(header), line(["-" * width for width in widths])]
    for index, row in enumerate(rows):
        if index and index in breaks:
            lines.append("")
        lines.append(line(row))
    return "\n".join(lines)


def _latex(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str,
    breaks: Collection[int],
    escape: bool,
    head: Sequence[str],
    footer: str | None,
) -> str:
    """A booktabs ``tabular``: a ``\\midrule`` under the header and before each group; the
    footer as a row across all columns under the last rule."""

    def line(cells: Sequence[str]) -> str:
        return " & ".join(latex_escape(cell) if escape else cell for cell in cells) + r" \\"

    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule", *head, line(header)]
    for index, row in enumerate(rows):
        if index == 0 or index in breaks:
            lines.append(r"\midrule")
        lines.append(line(row))
    lines.append(r"\bottomrule")
    if footer is not None:
        note = latex_escape(footer).replace("…", r"\ldots{}")
        lines.append(rf"\multicolumn{{{len(header)}}}{{l}}{{{note}}} \\")
    lines.append(r"\end{tabular}")
    return "\n".join(lines)


def _html(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str,
    title: str | None,
    footer: str | None,
) -> str:
    """A ``<table>`` with a header row; right-aligned columns get ``text-align: right``."""
    styles = ["" if side == "l" else ' style="text-align: right"' for side in align]

    def line(cells: Sequence[str], tag: str) -> str:
        items = "".join(
            f"<{tag}{style}>{html.escape(cell)}</{tag}>" for cell, style in zip(cells, styles)
        )
        return f"<tr>{items}</tr>"

    caption = [] if title is None else [f"<caption>{html.escape(title)}</caption>"]
    body = [line(row, "td") for row in rows]
    if footer is not None:
        cell = f'<td colspan="{len(header)}">{html.escape(footer)}</td>'
        body.append(f"<tfoot><tr>{cell}</tr></tfoot>")
    return "\n".join(["<table>", *caption, line(header, "th"), *body, "</table>"])
