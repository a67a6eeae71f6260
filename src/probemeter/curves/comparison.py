"""Side-by-side comparison of representations, laid out like Whitney et al., Table 1.

For each data size n (rows grouped by n) and each representation (columns): VA, MDL, SDL at
tolerance ε and εSC at ε, each computed by :mod:`probemeter.curves.measures` from the data up to n.
Lower bounds keep their flag and are rendered "> x" only in the text, Markdown and LaTeX tables.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from probemeter._tables import classes_line, latex_escape, render_table
from probemeter._validation import one_of
from probemeter.curves.measures import (
    MeasureResult,
    description_length,
    sample_complexity,
    sdl,
    validation_performance,
)

if TYPE_CHECKING:
    from probemeter.curves.curve import LossDataCurve

__all__ = [
    "MEASURES",
    "Comparison",
    "compare",
    "default_comparison_sizes",
]

#: measures of a comparison, in table order
MEASURES = ("VA", "MDL", "SDL", "SC")


@dataclass(frozen=True)
class Comparison:
    """VA, MDL, SDL(ε) and εSC(ε) of several representations at several data sizes.

    Attributes:
        epsilon: the loss tolerance ε of SDL and εSC, in ``unit``.
        metric: the loss the measures were computed from.
        unit: unit of losses (VA, MDL, SDL, ε); εSC is in examples.
        rule: threshold rule of SDL and εSC (``"last"`` or ``"half"``).
        sizes: the data sizes n, ascending (one row group each).
        representations: names, in column order.
        results: every measure result; each result's ``n`` is its row group.
        classes: per representation, the original labels of its class indices (its curve's
            ``classes``; None where not recorded): the tables' footer line shows them once when
            all agree, and says so when they differ.
    """

    epsilon: float
    metric: str
    unit: str
    rule: str
    sizes: tuple[int, ...]
    representations: tuple[str, ...]
    results: tuple[MeasureResult, ...]
    classes: Mapping[str, tuple[Any, ...] | None] = field(
        default_factory=dict, repr=False, hash=False
    )

    def result(self, measure: str, n: int, representation: str) -> MeasureResult:
        """The result of ``measure`` (one of :data:`MEASURES`) for one representation at n."""
        for result in self.results:
            if (result.measure, result.n, result.representation) == (measure, n, representation):
                return result
        raise KeyError(f"no {measure} result for {representation!r} at n={n}")

    def ranking(self, measure: str, n: int | None = None) -> list[str]:
        """Representation names, best (lowest value) first, for ``measure`` at n (default: the
        largest size). Lower bounds rank after every tight value, ordered by their bound; their
        order among themselves is not established by the data."""
        n = self._size(n)
        one_of(*MEASURES)(measure, "measure")
        results = [self.result(measure, n, name) for name in self.representations]
        ordered = sorted(results, key=lambda result: (result.lower_bound, result.value))
        return [result.representation for result in ordered]

    def best(self, measure: str, n: int | None = None) -> str | None:
        """The best representation for ``measure`` at n, or ``None`` when the best value is
        only a lower bound, i.e. the data are not enough to decide."""
        name = self.ranking(measure, n)[0]
        return None if self.result(measure, self._size(n), name).lower_bound else name

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per (n, measure, representation), with value, lower-bound flag
        and unit."""
        rows = [
            {
                "n": result.n,
                "measure": result.measure,
                "representation": result.representation,
                "value": result.value,
                "lower_bound": result.lower_bound,
                "unit": result.unit,
            }
            for result in self.results
        ]
        return pd.DataFrame(
            rows, columns=["n", "measure", "representation", "value", "lower_bound", "unit"]
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary of the settings and every result."""
        return {
            "epsilon": self.epsilon,
            "metric": self.metric,
            "unit": self.unit,
            "rule": self.rule,
            "sizes": list(self.sizes),
            "representations": list(self.representations),
            "results": [result.to_dict() for result in self.results],
        }

    def table_rows(self, digits: int = 2) -> list[list[str]]:
        """Table 1 layout as text cells: ``[n, measure label, value per representation]``,
        n written on the first row of its group only, lower bounds as "> x"."""
        rows = []
        for n in self.sizes:
            for index, measure in enumerate(MEASURES):
                results = [self.result(measure, n, name) for name in self.representations]
                rows.append(
                    [str(n) if index == 0 else "", results[0].label]
                    + [result.format(digits) for result in results]
                )
        return rows

    def to_markdown(self, digits: int = 2) -> str:
        """A GitHub-flavoured Markdown table in the layout of Whitney et al., Table 1, under
        the caption line of :meth:`caption` (Pandoc's ``Table: …``), so a table in bits
        cannot pass for one in nats."""
        rows = self.table_rows(digits)
        return self._render("markdown", ["n", "measure"], rows, title=self.caption())

    def to_latex(self, digits: int = 2) -> str:
        """A LaTeX ``table`` float: the ``tabular`` (booktabs rules) in the layout of Whitney
        et al., Table 1, and :meth:`caption` as its ``\\caption``."""
        rows = [
            [n, re.sub(r"ε=(\S+)", r"$\\varepsilon=\1$", label)]
            + [cell.replace(">", "$>$") for cell in values]
            for n, label, *values in self.table_rows(digits)
        ]
        names = [latex_escape(name) for name in self.representations]
        caption = (
            latex_escape(self.caption()).replace("εSC", r"$\varepsilon$SC").replace("> x", "$>x$")
        )
        return self._render(
            "latex", ["$n$", "Measure"], rows, names=names, escape=False, title=caption
        )

    def caption(self) -> str:
        """The line every rendering of the table starts with: the metric, the unit of VA,
        MDL, SDL and ε (εSC counts examples), the threshold rule, and how lower bounds look;
        e.g. ``metric=loss, unit=bits (εSC in examples), rule=last; > x: lower bound``."""
        return (
            f"metric={self.metric}, unit={self.unit} (εSC in examples), rule={self.rule}; "
            "> x: lower bound"
        )

    def __str__(self) -> str:
        return self._render("text", ["n", "measure"], self.table_rows(), title=self.caption())

    def _render(
        self,
        fmt: str,
        labels: list[str],
        rows: list[list[str]],
        names: Sequence[str] | None = None,
        **options: Any,
    ) -> str:
        """Table 1's layout in ``fmt``: size and measure columns, then one per representation
        (``names``, default their names), a group of rows per size."""
        header = [*labels, *(self.representations if names is None else names)]
        breaks = range(0, len(rows), len(MEASURES))
        align = "rl" + "r" * len(self.representations)
        footer = self.classes_line()
        return render_table(header, rows, fmt, align=align, breaks=breaks, footer=footer, **options)

    def classes_line(self) -> str | None:
        """The tables' last line: the class labels the representations share, or that they
        differ (:func:`~probemeter._tables.classes_line`); None when none recorded them."""
        return classes_line(self.classes.get(name) for name in self.representations)

    def _size(self, n: int | None) -> int:
        if n is None:
            return self.sizes[-1]
        if n not in self.sizes:
            raise ValueError(f"n={n} is not one of the compared sizes {list(self.sizes)}")
        return int(n)


def compare(
    curves: Mapping[str, LossDataCurve] | Sequence[LossDataCurve],
    epsilon: float,
    sizes: Sequence[int] | None = None,
    *,
    metric: str = "loss",
    unit: str | None = None,
    rule: str = "last",
    first_block: str | float = "uniform",
) -> Comparison:
    """Compute VA, MDL, SDL(ε) and εSC(ε) of every curve at every size n (Whitney et al.,
    Table 1).

    Args:
        curves: loss-data curves of the representations of one task, named by the mapping's
            keys or by each curve's ``name``.
        epsilon: loss tolerance ε of SDL and εSC, in ``unit``.
        sizes: data sizes n; default :func:`default_comparison_sizes`.
        metric, unit, rule, first_block: passed to the measures of
        :mod:`probemeter.curves.measures`.

    Examples:
        Two representations of one binary task, as in the parity example (§3.1): ``noisy``
        learns fast but stalls at 0.33 nats, ``raw`` starts slow and reaches 0.02. VA prefers
        ``noisy`` at n = 100 and ``raw`` at n = 1000; at ε = 0.1 only ``raw`` reaches the
        tolerance, so its SDL is tight and ``noisy``'s a lower bound.

        >>> import pandas as pd
        >>> from probemeter.curves import LossDataCurve, compare
        >>> def curve(name, losses):
        ...     points = pd.DataFrame({"n": [10, 100, 1000], "seed": 0, "loss": losses,
        ...                            "loss_truncated": losses, "accuracy": 0.9})
        ...     return LossDataCurve(name, points, n_classes=2, pool_size=1000, n_test=500)
        >>> curves = [curve("noisy", [0.35, 0.33, 0.33]), curve("raw", [0.69, 0.4, 0.02])]
        >>> table = compare(curves, epsilon=0.1, sizes=[100, 1000])
        >>> table.best("VA", n=100), table.best("VA", n=1000)
        ('noisy', 'raw')
        >>> print(table.result("SDL", 1000, "noisy"))
        SDL, ε=0.1 of 'noisy' at n=1000 (loss): > 235.43 nats (lower bound)
        >>> table.best("SDL"), table.ranking("SC")
        ('raw', ['raw', 'noisy'])
    """
    named = _named_curves(curves)
    sizes = default_comparison_sizes(named.values()) if sizes is None else _sorted_sizes(sizes)
    results: list[MeasureResult] = []
    for n in sizes:
        per_curve = [
            _measures_at(_renamed(curve, name), n, epsilon, metric, unit, rule, first_block)
            for name, curve in named.items()
        ]
        results += [row[index] for index in range(len(MEASURES)) for row in per_curve]
    return Comparison(
        epsilon=float(epsilon),
        metric=metric,
        unit=results[0].unit,
        rule=rule,
        sizes=sizes,
        representations=tuple(named),
        results=tuple(results),
        classes={name: curve.classes for name, curve in named.items()},
    )


def default_comparison_sizes(curves: Iterable[LossDataCurve]) -> tuple[int, ...]:
    """The second-smallest and the largest size measured by every curve.

    At the smallest size every MDL is the same uniform code n_1·log K, so the second-smallest
    size is the first at which the representations differ (a "small data" row); the largest is
    the full data. With a single common size, that size alone.
    """
    common = reduce(np.intersect1d, (curve.sizes for curve in curves))
    if common.size == 0:
        raise ValueError("the curves share no measured size; pass sizes explicitly")
    chosen = {int(common[min(1, common.size - 1)]), int(common[-1])}
    return tuple(sorted(chosen))


def _measures_at(
    curve: LossDataCurve,
    n: int,
    epsilon: float,
    metric: str,
    unit: str | None,
    rule: str,
    first_block: str | float,
) -> list[MeasureResult]:
    """VA, MDL, SDL and εSC of one curve at n, in :data:`MEASURES` order."""
    return [
        validation_performance(curve, n, metric=metric, unit=unit),
        description_length(curve, n, first_block=first_block, metric=metric, unit=unit),
        sdl(curve, epsilon, n, rule=rule, first_block=first_block, metric=metric, unit=unit),
        sample_complexity(curve, epsilon, n, rule=rule, metric=metric, unit=unit),
    ]


def _named_curves(
    curves: Mapping[str, LossDataCurve] | Sequence[LossDataCurve],
) -> dict[str, LossDataCurve]:
    if isinstance(curves, Mapping):
        named = {str(name): curve for name, curve in curves.items()}
    else:
        named = {}
        for curve in curves:
            if curve.name in named:
                raise ValueError(f"two curves are named {curve.name!r}; pass a mapping of names")
            named[curve.name] = curve
    if not named:
        raise ValueError("compare needs at least one curve")
    classes = {curve.n_classes for curve in named.values()}
    if len(classes) > 1:
        raise ValueError(f"curves of one task must share n_classes; got {sorted(classes)}")
    return named


def _renamed(curve: LossDataCurve, name: str) -> LossDataCurve:
    return curve if curve.name == name else replace(curve, name=name)


def _sorted_sizes(sizes: Sequence[int]) -> tuple[int, ...]:
    values = list(sizes)
    if not values:
        raise ValueError("sizes must hold at least one size")
    if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) for n in values):
        raise ValueError(f"sizes must be integers; got {values!r}")
    return tuple(sorted({int(n) for n in values}))
