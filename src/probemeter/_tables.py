"""Table cells shared by every table of the package: Markdown rows and LaTeX escaping."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["latex_escape", "markdown_row"]

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
    """One markdown table row, ``|`` in cells escaped (shared by every table of the package)."""
    return "| " + " | ".join(cell.replace("|", r"\|") for cell in cells) + " |"


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIALS.get(char, char) for char in text)
