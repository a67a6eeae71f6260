"""Pareto hypervolume tables in the layout of Pimentel et al., Tables 2 and 3.

Rows are (complexity measure, representation), columns are tasks; a representation not run on
a task is shown as "-". Task names of the form ``"group/name"`` (e.g. ``"POSL/English"``) get
a two-level header in LaTeX, as in Table 3 (POSL and DAL over five languages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

import numpy as np
import pandas as pd

from probemeter._tables import latex_escape, markdown_row

__all__ = ["HypervolumeTable"]


@dataclass(frozen=True)
class HypervolumeTable:
    """Normalised Pareto hypervolumes of representations × complexity measures × tasks.

    Attributes:
        values: tidy table, one row per (measure, representation, task), columns
            ``measure, representation, task, hypervolume, cap`` (the interval [0, cap] the
            hypervolume was computed on and divided by).
        measures: row groups, in table order.
        tasks: columns, in table order.
        representations: rows within a group, in table order.
    """

    values: pd.DataFrame = field(repr=False)
    measures: tuple[str, ...]
    tasks: tuple[str, ...]
    representations: tuple[str, ...]

    def value(self, measure: str, representation: str, task: str) -> float | None:
        """The hypervolume of one cell, or ``None`` when that representation has no probes
        there."""
        cell = self.values[
            (self.values["measure"] == measure)
            & (self.values["representation"] == representation)
            & (self.values["task"] == task)
        ]
        return None if cell.empty else float(cell["hypervolume"].iloc[0])

    def to_frame(self) -> pd.DataFrame:
        """The tidy table (a copy of :attr:`values`)."""
        return self.values.copy()

    def wide(self) -> pd.DataFrame:
        """Rows (measure, representation), columns tasks, NaN where missing."""
        table = self.values.pivot(
            index=["measure", "representation"], columns="task", values="hypervolume"
        )
        index = pd.MultiIndex.from_tuples(self.row_keys(), names=["measure", "representation"])
        return table.reindex(index=index, columns=list(self.tasks))

    def row_keys(self) -> list[tuple[str, str]]:
        """The (measure, representation) rows that hold at least one value, in table order."""
        present = set(zip(self.values["measure"], self.values["representation"]))
        return [
            (measure, name)
            for measure in self.measures
            for name in self.representations
            if (measure, name) in present
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary of the layout and every cell."""
        return {
            "measures": list(self.measures),
            "tasks": list(self.tasks),
            "representations": list(self.representations),
            "values": self.values.to_dict(orient="records"),
        }

    def table_rows(self, digits: int = 2) -> list[list[str]]:
        """Text cells ``[measure, representation, value per task]``, "-" where missing."""
        wide = self.wide()
        rows = []
        for measure, name in self.row_keys():
            cells = [
                "-" if np.isnan(value) else f"{value:.{digits}f}"
                for value in wide.loc[(measure, name)]
            ]
            rows.append([measure, name, *cells])
        return rows

    def to_markdown(self, digits: int = 2) -> str:
        """A GitHub-flavoured Markdown table."""
        lines = [
            markdown_row(["measure", "representation", *self.tasks]),
            markdown_row([":---", ":---"] + ["---:"] * len(self.tasks)),
        ]
        lines += [markdown_row(row) for row in self.table_rows(digits)]
        return "\n".join(lines)

    def to_latex(self, digits: int = 2) -> str:
        """A LaTeX ``tabular`` (booktabs), a rule between measures; tasks named
        ``"group/name"`` get a two-level header (``\\multicolumn`` per group)."""
        lines = [rf"\begin{{tabular}}{{ll{'r' * len(self.tasks)}}}", r"\toprule"]
        split = [task.split("/", 1) for task in self.tasks]
        if all(len(parts) == 2 for parts in split):
            groups = [(group, len(list(items))) for group, items in groupby(p[0] for p in split)]
            cells = [
                rf"\multicolumn{{{count}}}{{c}}{{{latex_escape(group)}}}" for group, count in groups
            ]
            lines.append(" & ".join(["", "", *cells]) + r" \\")
            names = [parts[1] for parts in split]
        else:
            names = list(self.tasks)
        header = ["Metric", "Representation", *(latex_escape(name) for name in names)]
        lines.append(" & ".join(header) + r" \\")
        previous = None
        for row in self.table_rows(digits):
            if row[0] != previous:
                lines.append(r"\midrule")
                previous = row[0]
            lines.append(" & ".join(latex_escape(cell) for cell in row) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines)

    def __str__(self) -> str:
        header = ["measure", "representation", *self.tasks]
        rows = self.table_rows()
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        lines = ["Pareto hypervolume (complexity in [0, cap], divided by cap)"]
        lines.append(_text_row(header, widths))
        lines.append(_text_row(["-" * width for width in widths], widths))
        previous = None
        for row in rows:
            if previous is not None and row[0] != previous:
                lines.append("")
            previous = row[0]
            lines.append(_text_row(row, widths))
        return "\n".join(lines)


def _text_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    labels = [cell.ljust(width) for cell, width in zip(cells[:2], widths[:2])]
    values = [cell.rjust(width) for cell, width in zip(cells[2:], widths[2:])]
    return "  ".join(labels + values).rstrip()
