"""Conditional probing: what a representation tells of the task beyond a baseline.

Hewitt, Ethayarajh, Liang & Manning (2021) measure the information of representation X about
the task Y *beyond* a baseline B as the difference of two V-entropies,

    I_V(X → Y | B) = H_V(Y | B) − H_V(Y | B, X),

each estimated by a probe: one on B alone, one on B and X side by side ([B; X]). A layer that
merely repeats what the embeddings already give scores zero, however well a probe decodes the
task from it. probemeter takes the same difference of every headline measure of a method
(``[run] baseline = "<representation>"``): the online codelength of Y given B against given
[B; X] (bits saved beyond the baseline), SDL and εSC of the two loss-data curves, and the test
accuracy of the best probes ([B; X] minus B).

**Bounds carried through.** A measure the data ran out before reaching is only a lower bound
(true value ≥ L; Whitney et al. 2021, §4). For a measure where lower is better, the difference
d = m(B) − m(B, X) is then

* exact when both are;
* a lower bound (d ≥ L_B − m(B, X)) when only m(B) is a lower bound;
* an upper bound (d ≤ m(B) − L_BX) when only m(B, X) is;
* unknown when both are (the bounds give nothing), reported as such, never as a number.

**Seed ranges.** The range of the difference over seeds is the interval difference of the two
ranges, [low_B − high_BX, high_B − low_BX]: it contains every seed's difference whichever seeds
pair, so it is conservative. Each end carries its own status by the same rule, from the two
seed values it subtracts: ``80 [70, > 120]`` minus ``11 [10, 12]`` is ``69 [58, ≥ 110]``, since
the seed of 120 is only a lower bound (an end is taken as a bound wherever its measure's
value is, the conservative reading when seeds carry no flags of their own).

References:
    Hewitt, J., Ethayarajh, K., Liang, P. & Manning, C. D. (2021). Conditional probing:
    measuring usable information beyond a baseline. EMNLP 2021. arXiv:2109.09234

    Xu, Y., Zhao, S., Song, J., Stewart, R. & Ermon, S. (2020). A theory of usable information
    under computational constraints. ICLR 2020. arXiv:2002.10689
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from probemeter._figures import FigureOptions, shared_legend
from probemeter._io import JsonResult, write_text_atomic
from probemeter._method import Method
from probemeter._summary import Estimate, Headline, measured_headlines
from probemeter._tables import render_table
from probemeter.data import ProbeData, ShiftedSet
from probemeter.runs.kinds import Representation

__all__ = [
    "SCHEMA",
    "STATUSES",
    "Beyond",
    "ConditionalAnalysis",
    "analyse_conditional",
    "beyond",
    "conditional_data",
    "conditional_name",
    "conditional_representation",
    "write_conditional_files",
]

#: ``conditional.json``'s schema
SCHEMA = "probemeter.conditional/1"
#: what a difference is: a value, a bound either way, or nothing
STATUSES = ("exact", "lower bound", "upper bound", "unknown")
#: accuracy's column name among the measures
ACCURACY = "accuracy"


def conditional_name(name: str, baseline: str) -> str:
    """The name of ``name``'s data beside the baseline's: ``"minilm-6|minilm-0"``."""
    return f"{name}|{baseline}"


def conditional_data(baseline: ProbeData, data: ProbeData, name: str) -> ProbeData:
    """[B; X]: the baseline's features then ``data``'s, side by side, with their shared labels;
    their shifted test sets (:attr:`~probemeter.data.ProbeData.shifted`, one task's) likewise.

    Raises:
        ValueError: the two do not hold the same rows (labels, test labels, or the sentences
            rows were sampled in differ), or either mixes layers (``combine = "scalar-mix"``).
    """
    for held in (baseline, data):
        if held.mix_layers is not None:
            raise ValueError(
                f"{held.name!r} mixes layers (scalar-mix): its features are a layer stack, not "
                "one representation to put beside another"
            )
    same = (
        np.array_equal(baseline.y_train, data.y_train)
        and np.array_equal(baseline.y_test, data.y_test)
        and _same(baseline.clusters_train, data.clusters_train)
        and _same(baseline.clusters_test, data.clusters_test)
    )
    if not same:
        raise ValueError(
            f"{data.name!r} and the baseline {baseline.name!r} do not hold the same rows (their "
            "labels or sentences differ): conditional probing needs both of one task's rows"
        )

    def beside(left: Any, right: Any) -> Any:
        if sp.issparse(left) or sp.issparse(right):
            return sp.hstack([sp.csr_matrix(left), sp.csr_matrix(right)], format="csr")
        return np.ascontiguousarray(np.hstack([left, right]), dtype=np.float32)

    return replace(
        data,
        X_train=beside(baseline.X_train, data.X_train),
        X_test=beside(baseline.X_test, data.X_test),
        name=name,
        shifted=tuple(
            ShiftedSet(mine.name, beside(theirs.X, mine.X), mine.y)
            for theirs, mine in zip(baseline.shifted, data.shifted, strict=True)
        ),
    )


def conditional_representation(rep: Representation, baseline: Representation) -> Representation:
    """The record of ``rep`` beside ``baseline`` (its unit key holds both), named
    :func:`conditional_name`, in no layer sweep."""
    name = conditional_name(rep.name, baseline.name)
    return replace(
        rep, name=name, options={**rep.options, "beyond": baseline.key_dict()}, sweep=None
    )


def _same(left: np.ndarray | None, right: np.ndarray | None) -> bool:
    return (left is None) == (right is None) and (left is None or np.array_equal(left, right))


@dataclass(frozen=True)
class Beyond:
    """A measure's value beyond the baseline, with the range over seeds.

    Attributes:
        value: ``m(B) − m(B, X)`` for a measure where lower is better (bits or nats saved,
            examples saved), ``m(B, X) − m(B)`` where higher is better (accuracy gained); NaN
            when :attr:`status` is ``"unknown"``.
        low, high: the conservative range over seeds (module docstring); None with one seed
            or an unknown value.
        status: ``"exact"``, ``"lower bound"`` (the true difference is at least ``value``),
            ``"upper bound"`` (at most ``value``) or ``"unknown"``.
        low_status, high_status: the same for each end of the range, from the two seed values
            that end subtracts (an end ``"unknown"`` when both are lower bounds).
    """

    value: float
    low: float | None = None
    high: float | None = None
    status: str = "exact"
    low_status: str = "exact"
    high_status: str = "exact"

    def format(self) -> str:
        """``"v [low, high]"``, each number written ``"≥ x"`` or ``"≤ x"`` when it is a bound
        and ``"unknown"`` when nothing is known of it; ``"unknown (both bounds)"``.

        Examples:
            >>> Beyond(69.0, 58.0, 110.0, high_status="lower bound").format()
            '69 [58, ≥ 110]'
        """
        if self.status == "unknown":
            return "unknown (both bounds)"
        shown = _bounded(self.value, self.status)
        if self.low is None or self.high is None:
            return shown
        low, high = _bounded(self.low, self.low_status), _bounded(self.high, self.high_status)
        return f"{shown} [{low}, {high}]"

    def to_dict(self) -> dict[str, Any]:
        value = None if math.isnan(self.value) else self.value
        return {
            "value": value,
            "low": self.low,
            "high": self.high,
            "status": self.status,
            "low_status": self.low_status,
            "high_status": self.high_status,
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> Beyond:
        """Also reads files written before each end had its status: their ends take the
        value's status, as those files' tables showed them."""
        value = payload["value"]
        status = payload["status"]
        return cls(
            math.nan if value is None else float(value),
            payload["low"],
            payload["high"],
            status,
            payload.get("low_status", status),
            payload.get("high_status", status),
        )


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _bounded(value: float, status: str) -> str:
    if status == "unknown":
        return "unknown"
    return {"exact": "", "lower bound": "≥ ", "upper bound": "≤ "}[status] + _number(value)


def _difference_status(first_bound: bool, second_bound: bool) -> str:
    """The status of ``first − second`` when each may be only a lower bound of its true value:
    a lower bound when only ``first`` is, an upper bound when only ``second`` is, unknown
    when both are."""
    if first_bound and second_bound:
        return "unknown"
    return "lower bound" if first_bound else "upper bound" if second_bound else "exact"


def beyond(given_baseline: Estimate, given_both: Estimate, better: str) -> Beyond:
    """The difference of a measure given B and given [B; X] (module docstring): its value,
    conservative seed range and bound status.

    Examples:
        >>> beyond(Estimate(10.0), Estimate(7.0), "lower").format()
        '3'
        >>> beyond(Estimate(10.0, lower_bound=True), Estimate(7.0), "lower").status
        'lower bound'
        >>> round(beyond(Estimate(0.8), Estimate(0.9), "higher").value, 6)
        0.1
        >>> given_b = Estimate(80.0, 70.0, 120.0, high_bound=True)  # 80 [70, > 120]
        >>> beyond(given_b, Estimate(11.0, 10.0, 12.0), "lower").format()
        '69 [58, ≥ 110]'
    """
    first, second = (
        (given_baseline, given_both) if better == "lower" else (given_both, given_baseline)
    )
    status = _difference_status(first.lower_bound, second.lower_bound)
    if status == "unknown":
        return Beyond(math.nan, status="unknown")
    value = first.value - second.value
    if None in (first.low, first.high, second.low, second.high):
        return Beyond(value, status=status)
    low = first.low - second.high  # type: ignore[operator]
    high = first.high - second.low  # type: ignore[operator]
    return Beyond(
        value,
        low,
        high,
        status,
        _difference_status(
            first.lower_bound or first.low_bound, second.lower_bound or second.high_bound
        ),
        _difference_status(
            first.lower_bound or first.high_bound, second.lower_bound or second.low_bound
        ),
    )


@dataclass(frozen=True)
class ConditionalAnalysis(JsonResult):
    """Every representation's measures beyond the baseline (:func:`analyse_conditional`).

    Attributes:
        baseline: the baseline representation's name.
        headlines: the method's headline measures (accuracy follows them in :attr:`rows`).
        rows: per representation (in run order): measure name → :class:`Beyond`.
        sweeps: layer sweeps among them (the baseline left out), entry name → ``(layer,
            name)`` pairs, for the figure.
        method: the method's kind.
    """

    baseline: str
    headlines: tuple[Headline, ...]
    rows: Mapping[str, Mapping[str, Beyond]]
    sweeps: Mapping[str, Sequence[tuple[int, str]]]
    method: str

    def to_frame(self) -> pd.DataFrame:
        """One row per representation and measure: value, range, status."""
        records = [
            {"representation": name, "baseline": self.baseline, "measure": measure, **b.to_dict()}
            for name, measures in self.rows.items()
            for measure, b in measures.items()
        ]
        return pd.DataFrame.from_records(records)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "method": self.method,
            "baseline": self.baseline,
            "headlines": [asdict(headline) for headline in self.headlines],
            "rows": {
                name: {measure: b.to_dict() for measure, b in measures.items()}
                for name, measures in self.rows.items()
            },
            "sweeps": {
                sweep: [list(pair) for pair in pairs] for sweep, pairs in self.sweeps.items()
            },
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ConditionalAnalysis:
        if payload.get("schema") != SCHEMA:
            raise ValueError(f"schema {payload.get('schema')!r} is not {SCHEMA!r}")
        return cls(
            baseline=payload["baseline"],
            headlines=tuple(Headline(**h) for h in payload["headlines"]),
            rows={
                name: {measure: Beyond.from_dict(b) for measure, b in measures.items()}
                for name, measures in payload["rows"].items()
            },
            sweeps={
                s: [(int(a), str(b)) for a, b in pairs] for s, pairs in payload["sweeps"].items()
            },
            method=payload["method"],
        )

    def _columns(self) -> list[tuple[str, str]]:
        return [(h.name, f"{h.label} beyond") for h in self.headlines] + [
            (ACCURACY, "accuracy gained")
        ]

    def table(self, fmt: str = "markdown") -> str:
        """Representations as rows, each measure beyond the baseline as a column."""
        columns = self._columns()
        header = ["representation", *(label for _, label in columns)]
        body = [
            [name, *(measures[key].format() for key, _ in columns)]
            for name, measures in self.rows.items()
        ]
        return render_table(header, body, fmt)

    def notes(self) -> list[str]:
        """What the table's numbers are, in words."""
        return [
            f"Beyond the baseline {self.baseline!r} (Hewitt et al. 2021, arXiv:2109.09234): each "
            "measure of a probe on the baseline and the representation side by side, against "
            "the baseline alone (lower-is-better measures: baseline minus both, i.e. what the "
            "representation saves; accuracy: both minus baseline). Ranges [low, high] are the "
            "interval difference of the two seed ranges (conservative). ≥ / ≤: a bound, where "
            "one of the two values it subtracts (a seed's, for an end of the range) is a lower "
            "bound; unknown: both are.",
        ]

    def __str__(self) -> str:
        return "\n\n".join([self.table("text"), *self.notes()])

    def plot(self) -> Any:
        """One panel per measure: the value beyond the baseline against layer for each sweep
        (against the representations, in order, where there is none), zero dashed, bars
        spanning the seeds, bounds as open triangles pointing the way the true value lies,
        one legend below. Returns the matplotlib figure."""
        from matplotlib.figure import Figure

        columns = self._columns()
        figure = Figure(figsize=(4.2 * len(columns), 4.0), layout="constrained")
        axes = figure.subplots(1, len(columns), squeeze=False)
        lines = {s: pairs for s, pairs in self.sweeps.items() if pairs}
        if not lines:
            lines = {name: [(i, name)] for i, name in enumerate(self.rows)}
        for ax, (key, label) in zip(axes[0], columns):
            for sweep, pairs in lines.items():
                pairs = [(layer, name) for layer, name in pairs if name in self.rows]
                xs = [layer for layer, _ in pairs]
                values = [self.rows[name][key] for _, name in pairs]
                (line,) = ax.plot(xs, [b.value for b in values], marker="o", label=sweep)
                for x, b in zip(xs, values):
                    if b.low is not None and b.high is not None:
                        ax.vlines(x, b.low, b.high, color=line.get_color(), alpha=0.4)
                    if b.status in ("lower bound", "upper bound"):
                        marker = "^" if b.status == "lower bound" else "v"
                        ax.plot(x, b.value, marker, mfc="none", color=line.get_color(), ms=10)
            ax.axhline(0.0, color="grey", lw=0.8, ls="--")
            ax.set_title(label, fontsize=9)
            ax.set_xlabel("layer (0 = embeddings)" if self.sweeps else "representation")
        shared_legend(figure, list(axes[0]), columns=4)
        figure.suptitle(
            f"{self.method} method: beyond {self.baseline} (bars: range over seeds; open "
            "triangles: bounds)",
            fontsize=10,
        )
        return figure


def analyse_conditional(
    method: Method,
    results: Sequence[Mapping[str, Any]],
    baseline: str,
    names: Sequence[str],
    sweeps: Mapping[str, Sequence[tuple[int, str]]] | None = None,
) -> ConditionalAnalysis:
    """Each of ``names``' headline measures and accuracy beyond ``baseline``, from the method's
    summaries of the baseline and of each ``conditional_name(name, baseline)``.

    Raises:
        ValueError: the results hold no summary of the baseline or of a conditional pair.
    """
    summaries = method.summaries(results)
    missing = [
        n for n in [baseline, *(conditional_name(n, baseline) for n in names)] if n not in summaries
    ]
    if missing:
        raise ValueError(f"no result for {missing}")
    given = summaries[baseline]
    headlines = measured_headlines(method.headlines(), summaries.values())
    rows = {}
    for name in names:
        both = summaries[conditional_name(name, baseline)]
        measures = {
            h.name: beyond(given.estimates[h.name], both.estimates[h.name], h.better)
            for h in headlines
        }
        measures[ACCURACY] = beyond(given.accuracy, both.accuracy, "higher")
        rows[name] = measures
    return ConditionalAnalysis(
        baseline=baseline,
        headlines=headlines,
        rows=rows,
        sweeps=dict(sweeps or {}),
        method=method.kind,
    )


def write_conditional_files(
    analysis: ConditionalAnalysis, run_dir: str | Path, figures: FigureOptions | None = None
) -> tuple[Path, ...]:
    """``conditional.png``/``.pdf`` (or the formats of ``figures``), ``conditional.json``,
    ``conditional.md`` and ``conditional.tex`` into ``run_dir``, each atomically; the paths,
    the figures first."""
    run_dir = Path(run_dir)
    figure_files = (figures or FigureOptions()).save(analysis.plot(), run_dir / "conditional")
    files = {name: run_dir / f"conditional.{name}" for name in ("json", "md", "tex")}
    analysis.save(files["json"])
    notes = analysis.notes()
    write_text_atomic(files["md"], "\n\n".join([analysis.table("markdown"), *notes]) + "\n")
    latex = "\n".join([analysis.table("latex"), *(f"% {note}" for note in notes)])
    write_text_atomic(files["tex"], latex + "\n")
    return (*figure_files, *files.values())
