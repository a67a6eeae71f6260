"""Pareto hypervolume tables in the layout of Pimentel et al., Tables 2 and 3.

Rows are (complexity measure, representation), columns are tasks; a representation not run on
a task is shown as "-". Task names of the form ``"group/name"`` (e.g. ``"POSL/English"``) get
a two-level header in LaTeX, as in Table 3 (POSL and DAL over five languages).

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

import numpy as np
import pandas as pd

from probemeter._tables import latex_escape, render_table

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
        return self._render("markdown", ["measure", "representation"], self.tasks, digits)

    def to_latex(self, digits: int = 2) -> str:
        """A LaTeX ``tabular`` (booktabs), a rule between measures; tasks named
        ``"group/name"`` get a two-level header (``\\multicolumn`` per group)."""
        split = [task.split("/", 1) for task in self.tasks]
        if not all(len(parts) == 2 for parts in split):
            return self._render("latex", ["Metric", "Representation"], self.tasks, digits)
        groups = [(group, len(list(items))) for group, items in groupby(p[0] for p in split)]
        cells = [
            rf"\multicolumn{{{count}}}{{c}}{{{latex_escape(group)}}}" for group, count in groups
        ]
        head = [" & ".join(["", "", *cells]) + r" \\"]
        names = [parts[1] for parts in split]
        return self._render("latex", ["Metric", "Representation"], names, digits, latex_head=head)

    def __str__(self) -> str:
        title = "Pareto hypervolume (complexity in [0, cap], divided by cap)"
        return self._render("text", ["measure", "representation"], self.tasks, title=title)

    def _render(
        self,
        fmt: str,
        labels: list[str],
        tasks: Sequence[str],
        digits: int = 2,
        **options: Any,
    ) -> str:
        """Table 3's layout in ``fmt``: measure and representation columns, then one per
        task, a group of rows per measure."""
        rows = self.table_rows(digits)
        breaks = [i for i, row in enumerate(rows) if i and row[0] != rows[i - 1][0]]
        align = "ll" + "r" * len(tasks)
        return render_table([*labels, *tasks], rows, fmt, align=align, breaks=breaks, **options)
