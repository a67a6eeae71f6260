"""Pareto analysis of probes: frontiers, dominant representations and the Pareto hypervolume.

Pimentel et al. (2020), §3: a probe is Pareto optimal within a family when no other probe is
at least as simple *and* at least as accurate (and strictly better in one of the two); the
Pareto optimal probes form the **frontier**. A representation is **Pareto dominant** within a
set when at least one of its probes lies on the frontier of all the representations' probes
pooled. The **Pareto hypervolume** (PH; Auger et al., 2012) summarises one frontier: the area
of the (complexity, accuracy) region it dominates, with complexity restricted to a bounded
interval [0, cap] so the area is finite (§3), divided by the cap (App. D, Table 3 caption).

Conventions (all functions of this module):

* lower complexity is better, higher accuracy is better;
* complexity ≥ 0 (nuclear norm, rank, or a memorisation accuracy in [0, 1]);
* the reference point of the hypervolume is (cap, 0): the region counted is
  {(x, y): 0 ≤ x ≤ cap, 0 ≤ y ≤ a_i for some probe i with c_i ≤ x}.

**The cap that reproduces the paper's tables** (checked against the authors' own per-probe
rows in ``tests/test_pareto_reference.py``): for each task and complexity measure, cap = the
*largest complexity of any probe of any representation compared* on that task — the largest
nuclear norm (reached by the λ = 0 probes), the largest rank (min(K, d)), the largest
label-shuffled (or fully shuffled) training accuracy — and every representation's PH is
divided by that same cap ("dividing the volume by their maximum complexity", Table 3 caption).
Complexity is the probe's own value (no clipping), accuracy is test accuracy (UAS for
parsing), λ = 0 probes are included, and the frontier is the step function (no
interpolation). With this rule all 146 cells of Table 3 come out within 0.005 of the paper,
and 19 of the 22 cells of Table 2 (the other three within 0.02). The caption's "we limited
[nuclear norms] to 400" is the x-range of Figs. 2–3 (700 for parsing, Figs. 7–8), not the
hypervolume's interval: capping at 400 and dividing by 400 gives 0.79 for BERT on English
POSL where the paper prints 0.91 (the shared-maximum rule gives 0.907).
:class:`ParetoFrontiers` applies this rule unless a cap is given.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Auger, A., Bader, J., Brockhoff, D. & Zitzler, E. (2012). Hypervolume-based multiobjective
    optimization: theoretical foundations and practical implications. *Theoretical Computer Science*
    425, 75–103. doi:10.1016/j.tcs.2011.03.012
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from probemeter._figures import representation_colours, shared_legend
from probemeter._io import JsonResult
from probemeter._validation import check_scalar, one_of
from probemeter.pareto.table import HypervolumeTable

__all__ = [
    "FULLY_SHUFFLED",
    "LABEL_SHUFFLED",
    "NUCLEAR_NORM",
    "POINT_COLUMNS",
    "RANK",
    "HypervolumeTable",
    "ParetoFrontiers",
    "memorisation_points",
    "pareto_dominant",
    "pareto_frontier",
    "pareto_hypervolume",
]

#: names of the paper's complexity measures (§4–5); any other string works as well
NUCLEAR_NORM = "nuclear norm"
RANK = "rank"
LABEL_SHUFFLED = "label-shuffled"
FULLY_SHUFFLED = "fully shuffled"

#: required columns of :attr:`ParetoFrontiers.points`
POINT_COLUMNS = ("task", "measure", "representation", "complexity", "accuracy")

SCHEMA = "probemeter.pareto/1"

#: what a measure's complexity is, for the x-axis of a frontier (Pimentel et al. §4–5)
COMPLEXITY_AXES = {
    NUCLEAR_NORM: "nuclear norm ‖W‖* of the probe (parametric complexity)",
    RANK: "maximum rank of W (parametric complexity)",
    LABEL_SHUFFLED: "training accuracy on label-shuffled data (memorisation complexity)",
    FULLY_SHUFFLED: "training accuracy on fully shuffled data (memorisation complexity)",
}


def pareto_frontier(
    complexity: Sequence[float] | np.ndarray, accuracy: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Indices of the Pareto-optimal points, ordered by increasing complexity.

    Point i is dominated when some point j has c_j ≤ c_i and a_j ≥ a_i with at least one of
    the two strict (Pimentel et al., §3). The remaining points, sorted by complexity, have
    strictly increasing complexity *and* strictly increasing accuracy.

    Ties: several points with the same complexity keep only the most accurate; several
    identical points (same complexity and accuracy) keep only the one with the smallest
    index, so every frontier point is distinct.

    Examples:
        Probe 2 is dominated by probe 1 (as simple, more accurate), probe 3 by probe 1
        (simpler and more accurate):

        >>> from probemeter.pareto import pareto_frontier
        >>> pareto_frontier([1, 2, 2, 3, 4], [0.5, 0.7, 0.6, 0.65, 0.9]).tolist()
        [0, 1, 4]

    Raises:
        ValueError: empty inputs, lengths that differ, or a non-finite/negative value (the
            message names the argument).
    """
    c, a = _points(complexity, accuracy)
    # ascending complexity; among equal complexity most accurate first; then smallest index
    order = np.lexsort((np.arange(c.size), -a, c))
    ranked = a[order]
    best_before = np.concatenate(([-np.inf], np.maximum.accumulate(ranked)[:-1]))
    return order[ranked > best_before].astype(np.int64)


def pareto_hypervolume(
    complexity: Sequence[float] | np.ndarray,
    accuracy: Sequence[float] | np.ndarray,
    cap: float,
    *,
    normalise: bool = True,
) -> float:
    """Pareto hypervolume of one set of probes, with complexity restricted to [0, cap].

    PH = (1 / cap) ∫₀^cap f(x) dx,   f(x) = max({a_i : c_i ≤ x} ∪ {0}),

    i.e. the area of the region dominated by the frontier with reference point (cap, 0),
    divided by the cap (Pimentel et al., §3 and the caption of Table 3). ``f`` is the step
    function of the frontier: a probe of complexity c_i and accuracy a_i supports accuracy a_i
    for every complexity budget x ≥ c_i (no interpolation between frontier points). Probes
    with c_i ≥ cap contribute nothing; dominated probes contribute nothing. With accuracies in
    [0, 1] the normalised PH lies in [0, 1]; ``normalise=False`` returns the raw area.

    Examples:
        Three frontier probes under a cap of 5: the step function is 0 on [0, 1), 0.5 on
        [1, 2), 0.7 on [2, 4) and 0.9 on [4, 5], an area of 0.5 + 1.4 + 0.9 = 2.8.

        >>> from probemeter.pareto import pareto_hypervolume
        >>> round(pareto_hypervolume([1, 2, 4], [0.5, 0.7, 0.9], cap=5), 4)
        0.56
        >>> round(pareto_hypervolume([1, 2, 4], [0.5, 0.7, 0.9], cap=5, normalise=False), 4)
        2.8

    Raises:
        ValueError: cap ≤ 0 or not finite, empty inputs, lengths that differ, NaN/inf or
            negative complexities, NaN/inf accuracies or accuracies outside [0, 1].
    """
    cap = _cap(cap)
    c, a = _points(complexity, accuracy)
    frontier = pareto_frontier(c, a)
    edges = np.append(c[frontier], cap)
    heights = np.maximum(a[frontier], 0.0)
    widths = np.clip(edges[1:], None, cap) - np.clip(edges[:-1], None, cap)
    area = float(np.sum(widths * heights))
    return area / cap if normalise else area


def pareto_dominant(
    points: Mapping[str, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
) -> list[str]:
    """Names of the Pareto-dominant representations (Pimentel et al., §3).

    ``points`` maps each representation's name to its probes' ``(complexity, accuracy)``.
    The probes of all representations are pooled; a representation is dominant when at least
    one of its probes is on the pooled frontier. Identical points of two representations are
    credited to the one listed first. Names are returned in the mapping's order.

    Raises:
        ValueError: no representation, or bad points of one (named in the message).
    """
    if not points:
        raise ValueError("points must name at least one representation")
    names, complexities, accuracies = [], [], []
    for name, pair in points.items():
        try:
            complexity, accuracy = pair
            c, a = _points(complexity, accuracy)
        except ValueError as error:
            raise ValueError(f"representation {name!r}: {error}") from None
        names += [name] * c.size
        complexities.append(c)
        accuracies.append(a)
    frontier = pareto_frontier(np.concatenate(complexities), np.concatenate(accuracies))
    on_frontier = {names[index] for index in frontier}
    return [name for name in points if name in on_frontier]


def memorisation_points(
    true: pd.DataFrame,
    shuffled: pd.DataFrame,
    on: str | Sequence[str],
    *,
    accuracy: str = "accuracy",
    train_accuracy: str = "train_accuracy",
    missing: str = "raise",
) -> pd.DataFrame:
    """Points of the non-parametric (memorisation) complexity of Pimentel et al., §5.

    Each probe architecture is trained twice: on the true task, giving its test ``accuracy``,
    and on shuffled labels (label-shuffled; for fully shuffled, on shuffled inputs as well),
    giving the ``train_accuracy`` it reaches on its own training set — its complexity, the
    capacity to memorise (footnote 5: training, not test, accuracy). Rows of ``true`` and
    ``shuffled`` are paired on the key column(s) ``on`` (e.g. representation and an
    architecture id).

    Returns:
        the key columns, ``complexity`` (shuffled training accuracy) and ``accuracy`` (true
        test accuracy), in the order of ``true``.

    Raises:
        ValueError: a key column or value column is absent, a key repeats within one frame,
            or (``missing="raise"``) a true probe has no shuffled twin or a value is NaN.
            ``missing="drop"`` drops such probes instead.
    """
    keys = [on] if isinstance(on, str) else list(on)
    one_of("raise", "drop")(missing, "missing")
    for name, frame, column in (("true", true, accuracy), ("shuffled", shuffled, train_accuracy)):
        absent = [key for key in [*keys, column] if key not in frame.columns]
        if absent:
            raise ValueError(f"{name} lacks column(s) {absent}")
        if frame.duplicated(keys).any():
            raise ValueError(f"{name} holds a key {keys} more than once")
    left = true[keys].assign(accuracy=true[accuracy].to_numpy())
    right = shuffled[keys].assign(complexity=shuffled[train_accuracy].to_numpy())
    paired = left.merge(right, on=keys, how="left", sort=False)
    incomplete = paired[["complexity", "accuracy"]].isna().any(axis=1)
    if incomplete.any() and missing == "raise":
        first = paired.loc[incomplete, keys].iloc[0].tolist()
        raise ValueError(
            f"{int(incomplete.sum())} true probe(s) lack a shuffled twin or a value "
            f"(first: {dict(zip(keys, first))}); pass missing='drop' to leave them out"
        )
    return paired[~incomplete][[*keys, "complexity", "accuracy"]].reset_index(drop=True)


def _points(complexity: Any, accuracy: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validated 1-D float arrays of complexities and accuracies."""
    c = _vector(complexity, "complexity")
    a = _vector(accuracy, "accuracy")
    if c.size != a.size:
        raise ValueError(
            f"complexity and accuracy must have the same length; got {c.size} and {a.size}"
        )
    if np.any(c < 0):
        raise ValueError(f"complexity must be >= 0; got {c[c < 0][0]}")
    outside = (a < 0) | (a > 1)
    if np.any(outside):
        raise ValueError(f"accuracy must be in [0, 1] (a fraction); got {a[outside][0]}")
    return c, a


def _vector(values: Any, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty: a frontier needs at least one probe")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return array


def _cap(cap: Any) -> float:
    """The complexity cap of a hypervolume as a float > 0."""
    return float(check_scalar(cap, "cap", float, min_val=0, include_boundaries="neither"))


@dataclass(frozen=True)
class ParetoFrontiers(JsonResult):
    """Probes of several representations, tasks and complexity measures, with their Pareto
    frontiers and hypervolumes (Pimentel et al., §3, Figs. 2–5, Tables 2–3).

    Attributes:
        points: one row per trained probe, columns ``task, measure, representation,
            complexity, accuracy`` (see :data:`POINT_COLUMNS`); any further columns (λ, rank,
            hidden size, seed, …) are kept and returned by :meth:`to_frame`. ``measure`` names
            the complexity measure (:data:`NUCLEAR_NORM`, :data:`RANK`,
            :data:`LABEL_SHUFFLED`, :data:`FULLY_SHUFFLED` or any other name); ``accuracy`` is
            the probe's test accuracy (UAS for parsing). Tasks, measures and representations
            keep the order of their first appearance, which is the order of tables and plots.
        caps: per measure, the interval [0, cap] of the hypervolume. A measure not listed
            uses the largest complexity of any probe of that task and measure, shared by all
            representations — the rule that reproduces the paper's tables (module docstring).
        metadata: free JSON-ready information (source, settings, versions).
    """

    points: pd.DataFrame = field(repr=False)
    caps: Mapping[str, float] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.points, pd.DataFrame):
            raise ValueError("points must be a pandas DataFrame")
        missing = [column for column in POINT_COLUMNS if column not in self.points.columns]
        if missing:
            raise ValueError(f"points lacks column(s) {missing}")
        if self.points.empty:
            raise ValueError("points is empty: a Pareto analysis needs at least one probe")
        points = self.points.reset_index(drop=True).astype(
            {"task": str, "measure": str, "representation": str}
        )
        for (task, measure, name), group in _groups(points, ["task", "measure", "representation"]):
            try:
                _points(group["complexity"], group["accuracy"])
            except ValueError as error:
                raise ValueError(f"points of {name!r} on {task!r} ({measure}): {error}") from None
        points = points.astype({"complexity": np.float64, "accuracy": np.float64})
        caps = {str(measure): _cap(cap) for measure, cap in dict(self.caps).items()}
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "caps", caps)

    @property
    def tasks(self) -> tuple[str, ...]:
        """Task names, in order of first appearance."""
        return tuple(pd.unique(self.points["task"]))

    @property
    def measures(self) -> tuple[str, ...]:
        """Complexity measure names, in order of first appearance."""
        return tuple(pd.unique(self.points["measure"]))

    @property
    def representations(self) -> tuple[str, ...]:
        """Representation names, in order of first appearance."""
        return tuple(pd.unique(self.points["representation"]))

    def probes(self, task: str, measure: str, representation: str | None = None) -> pd.DataFrame:
        """The probes of one task and measure (of one representation, when given).

        Raises:
            KeyError: no probe has that task, measure (and representation).
        """
        mask = (self.points["task"] == task) & (self.points["measure"] == measure)
        if representation is not None:
            mask &= self.points["representation"] == representation
        selected = self.points[mask]
        if selected.empty:
            who = "" if representation is None else f" of {representation!r}"
            raise KeyError(f"no probe{who} on task {task!r} with measure {measure!r}")
        return selected

    def cap(self, task: str, measure: str) -> float:
        """The hypervolume's interval end for a task and measure: ``caps[measure]`` when set,
        else the largest complexity of any probe of that task and measure.

        Raises:
            KeyError: unknown task or measure.
            ValueError: every probe there has complexity 0 and no cap was given.
        """
        if measure in self.caps:
            self.probes(task, measure)  # the KeyError for unknown names
            return self.caps[measure]
        largest = float(self.probes(task, measure)["complexity"].max())
        if largest <= 0:
            raise ValueError(
                f"every probe on {task!r} has {measure} 0; pass caps={{{measure!r}: ...}}"
            )
        return largest

    def frontier(self, task: str, measure: str, representation: str) -> pd.DataFrame:
        """The Pareto-optimal probes of one representation, by increasing complexity
        (:func:`pareto_frontier`)."""
        probes = self.probes(task, measure, representation)
        indices = pareto_frontier(probes["complexity"], probes["accuracy"])
        return probes.iloc[indices]

    def hypervolume(
        self, task: str, measure: str, representation: str, *, cap: float | None = None
    ) -> float:
        """Normalised Pareto hypervolume of one representation (:func:`pareto_hypervolume`)
        on [0, cap], cap defaulting to :meth:`cap`."""
        probes = self.probes(task, measure, representation)
        cap = self.cap(task, measure) if cap is None else cap
        return pareto_hypervolume(probes["complexity"], probes["accuracy"], cap)

    def dominant(
        self, task: str, measure: str, *, max_complexity: float | None = None
    ) -> list[str]:
        """The Pareto-dominant representations of a task and measure
        (:func:`pareto_dominant`), among the probes of complexity ≤ ``max_complexity`` when
        given (the range a figure shows, e.g. nuclear norms up to 400 in Figs. 2–3).

        Raises:
            ValueError: no probe within ``max_complexity``.
        """
        probes = self.probes(task, measure)
        if max_complexity is not None:
            probes = probes[probes["complexity"] <= max_complexity]
            if probes.empty:
                raise ValueError(f"no probe on {task!r} has {measure} <= {max_complexity}")
        return pareto_dominant(
            {
                name: (group["complexity"], group["accuracy"])
                for name, group in _groups(probes, "representation")
            }
        )

    def frames(self) -> dict[str, pd.DataFrame]:
        """The tables of the analysis, by name: ``frontiers``, every probe with its frontier
        flags (:meth:`to_frame`), and ``hypervolume``, the hypervolume of each measure,
        representation and task (:meth:`HypervolumeTable.to_frame`, Tables 2–3)."""
        return {"frontiers": self.to_frame(), "hypervolume": self.hypervolume_table().to_frame()}

    def hypervolume_table(
        self, measures: Sequence[str] | None = None, tasks: Sequence[str] | None = None
    ) -> HypervolumeTable:
        """Pareto hypervolumes in the layout of the paper's Tables 2–3: rows measure ×
        representation, columns tasks; a representation without probes on a task is missing
        ("-")."""
        measures = self.measures if measures is None else tuple(measures)
        tasks = self.tasks if tasks is None else tuple(tasks)
        rows = []
        for measure in measures:
            for task in tasks:
                present = self.points[
                    (self.points["task"] == task) & (self.points["measure"] == measure)
                ]
                if present.empty:
                    continue
                cap = self.cap(task, measure)
                for name in pd.unique(present["representation"]):
                    rows.append(
                        {
                            "measure": measure,
                            "representation": name,
                            "task": task,
                            "hypervolume": self.hypervolume(task, measure, name, cap=cap),
                            "cap": cap,
                        }
                    )
        if not rows:
            raise ValueError(f"no probe for measures {list(measures)} on tasks {list(tasks)}")
        order = [
            name for name in self.representations if any(r["representation"] == name for r in rows)
        ]
        return HypervolumeTable(pd.DataFrame(rows), measures, tasks, tuple(order))

    def to_frame(self) -> pd.DataFrame:
        """Every probe, with ``on_frontier`` (on its representation's frontier) and
        ``dominant`` (on the frontier of all representations of its task and measure)."""
        frame = self.points.copy()
        frame["on_frontier"] = False
        frame["dominant"] = False
        for _, group in _groups(frame, ["task", "measure", "representation"]):
            chosen = pareto_frontier(group["complexity"], group["accuracy"])
            frame.loc[group.index[chosen], "on_frontier"] = True
        for _, group in _groups(frame, ["task", "measure"]):
            chosen = pareto_frontier(group["complexity"], group["accuracy"])
            frame.loc[group.index[chosen], "dominant"] = True
        return frame

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary; :meth:`from_dict` restores the analysis."""
        return {
            "schema": SCHEMA,
            "points": {column: self.points[column].tolist() for column in self.points.columns},
            "caps": dict(self.caps),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ParetoFrontiers:
        if payload.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} dictionary (schema {payload.get('schema')!r})")
        try:
            points = pd.DataFrame(payload["points"])
        except KeyError:
            raise ValueError("Pareto dictionary lacks the key 'points'") from None
        return cls(points, dict(payload.get("caps", {})), dict(payload.get("metadata", {})))

    def plot(
        self,
        task: str,
        measure: str,
        ax: Any = None,
        *,
        xmax: float | None = None,
        show_probes: bool = True,
        metric: str = "accuracy",
    ) -> Any:
        """Draw one step-line frontier per representation, as in the paper's Figs. 2–5.

        Each frontier is the step function f(x) of :func:`pareto_hypervolume`, drawn from its
        simplest probe to ``xmax`` (default: the hypervolume's cap; the paper's Figs. 2–3 show
        nuclear norms up to 400, parsing up to 700). With ``show_probes`` every probe is a
        faint dot. A representation keeps its colour
        (:func:`~probemeter._figures.representation_colours` of :attr:`representations`: a
        model's layers in sequential shades) in every panel. The panel is titled with the
        measure, its x-axis says what the complexity is, its y-axis names the task and the
        ``metric`` the accuracy column holds (``"UAS"`` for parsing). Returns the matplotlib
        axes.
        """
        if ax is None:
            from matplotlib.figure import Figure

            ax = Figure(figsize=(4.5, 3.4)).subplots()
        xmax = self.cap(task, measure) if xmax is None else _cap(xmax)
        colours = representation_colours(list(self.representations))
        for name, probes in _groups(self.probes(task, measure), "representation"):
            front = probes.iloc[pareto_frontier(probes["complexity"], probes["accuracy"])]
            inside = front[front["complexity"] <= xmax]
            if inside.empty:
                continue
            xs = np.append(inside["complexity"].to_numpy(), xmax)
            ys = np.append(inside["accuracy"].to_numpy(), inside["accuracy"].iloc[-1])
            colour = colours[name]  # the same colour in every panel
            ax.step(xs, ys, where="post", label=name, lw=1.6, color=colour)
            if show_probes:
                shown = probes[probes["complexity"] <= xmax]
                ax.scatter(shown["complexity"], shown["accuracy"], s=8, alpha=0.3, color=colour)
        ax.set_xlim(0, xmax)
        axis = COMPLEXITY_AXES.get(measure, f"complexity: {measure}")
        ax.set_xlabel(axis.replace("accuracy", metric), fontsize=9)
        ax.set_ylabel(f"{task}: test {metric}", fontsize=9)
        ax.set_title(f"Pareto frontier, {measure}", fontsize=10)
        return ax

    def figure(
        self,
        measures: Sequence[str] | None = None,
        tasks: Sequence[str] | None = None,
        *,
        xmax: Mapping[str, float] | None = None,
        metric: str = "accuracy",
    ) -> Any:
        """A grid of :meth:`plot` panels, one row per task and one column per measure (the
        layout of Fig. 2), with one legend below. ``xmax`` maps measures to their x-range;
        ``metric`` names what the accuracy column holds (``"UAS"`` for parsing).
        Returns a matplotlib ``Figure`` (save it with ``figure.savefig(path)`` or
        :meth:`probemeter._figures.FigureOptions.save`)."""
        from matplotlib.figure import Figure

        measures = self.measures if measures is None else tuple(measures)
        tasks = self.tasks if tasks is None else tuple(tasks)
        xmax = dict(xmax or {})
        figure = Figure(figsize=(4.2 * len(measures), 3.3 * len(tasks) + 0.6), layout="constrained")
        axes = np.atleast_2d(figure.subplots(len(tasks), len(measures), squeeze=False))
        for row, task in enumerate(tasks):
            for column, measure in enumerate(measures):
                ax = axes[row, column]
                try:
                    self.plot(task, measure, ax, xmax=xmax.get(measure), metric=metric)
                except KeyError:
                    ax.set_visible(False)
        shared_legend(figure, list(axes.flat), columns=min(len(self.representations), 5))
        figure.suptitle(
            f"test {metric} against probe complexity: Pareto frontiers (Pimentel et al. §3)",
            fontsize=10,
        )
        return figure


def _groups(frame: pd.DataFrame, by: str | list[str]) -> Iterable[tuple[Any, pd.DataFrame]]:
    """``frame.groupby(by)`` in order of first appearance."""
    return frame.groupby(by, sort=False)
