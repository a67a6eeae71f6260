"""The ``curve`` method: loss-data curves of every representation, compared at tolerance ε
(Whitney et al., §3–4 and Table 1).

One stored unit per representation (its whole curve); the run folder gets ``results.json``
(curves, the Table-1 comparison, the experiment and timings), ``curves.png``, and the files
every method writes (:func:`~probemeter._method.write_run_files`: ``table.md``/``table.tex``,
the comparison best first, and ``run.json``). With
``save_probes``, each unit also keeps its probes (one per size and seed). With ``pvi``, each unit
also stores the pointwise V-information of every test example under its largest size's probes
(Ethayarajh et al. 2022), which the run writes to ``pvi.csv`` and draws by label in ``pvi.png``.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from probemeter import _validation as valid
from probemeter._execution import Execution
from probemeter._figures import FigureOptions
from probemeter._method import (
    ENGINE_KEYWORDS,
    LANGUAGE_MODEL_PROBE,
    PROBES_ENTRY,
    EngineProbes,
    Method,
    MethodRun,
    Option,
    ReportPart,
    RunContext,
    UnitPlan,
    option,
    write_run_files,
)
from probemeter._summary import Estimate, Headline, LayerWeights, Summary
from probemeter.curves.defaults import (
    CURVE_DEV_FRACTION,
    CURVE_PROBE,
    CURVE_SEEDS,
    CURVE_TRAINING,
    LANGUAGE_MODEL_GRID,
)
from probemeter.data import ProbeData
from probemeter.monitor import MONITOR_METRICS
from probemeter.training.config import (
    AUTO_PRECISION,
    PRECISIONS,
    SOLVER_OPTIONS,
    TrainingConfig,
    newton_option_problem,
)

__all__ = [
    "CURVE_DEV_FRACTION",
    "CURVE_PROBE",
    "CURVE_SEEDS",
    "CURVE_TRAINING",
    "CurveMethod",
    "curve_unit",
    "resolved_precision",
    "write_pvi",
]


def _setting(low: str) -> valid.Check:
    """A training setting that may be a grid: a finite number (``low``: "> 0" or ">= 0"), or
    a non-empty list of distinct ones, the grid's values."""
    each = valid.number(0, closed="neither" if low == "> 0" else "left")

    def describe(value: Any) -> str | None:
        values = value if isinstance(value, (list, tuple)) else [value]
        if values and not any(each.problem(v) for v in values) and len(set(values)) == len(values):
            return None
        return (
            f"must be a number {low}, or a non-empty list of distinct ones (a grid, chosen on "
            f"the development split); got {value!r}"
        )

    return valid.Check(describe)


def _parse_setting(value: Any) -> float | tuple[float, ...]:
    """A number as a float; a list of several as a tuple of floats (a grid); a list of one as
    its value, so ``lr = [1e-3]`` and ``lr = 1e-3`` are one setting and one unit key."""
    if not isinstance(value, (list, tuple)):
        return float(value)
    return float(value[0]) if len(value) == 1 else tuple(float(v) for v in value)


def _grid_values(value: float | tuple[float, ...]) -> list[float]:
    """A setting's values: its grid's, or the one."""
    return list(value) if isinstance(value, tuple) else [value]


def _positive_label(value: Any) -> str | None:
    """A label: none (the second class), or a string, integer or boolean."""
    if value is None or isinstance(value, (str, int, bool)):
        return None
    return f"must be one of the task's labels (a string or integer); got {value!r}"


def _positive_index(name: str, data: ProbeData, label: Any) -> int:
    """The class index of the positive ``label`` in ``data`` (None: 1, the second class).

    Raises:
        ValueError: the data have not two classes, or no class is ``label``.
    """
    if label is None:
        return 1
    if data.multilabel or data.n_classes != 2:
        raise ValueError(
            f"method.positive: monitor metrics are of two-class tasks; {name!r} has "
            f"{data.n_classes} classes"
        )
    classes = list(range(2)) if data.classes is None else list(data.classes)
    found = [i for i, c in enumerate(classes) if c == label or str(c) == str(label)]
    if not found:
        shown = ", ".join(repr(c) for c in classes)
        raise ValueError(f"method.positive: {label!r} is no class of {name!r} ({shown})")
    return found[0]


def _sizes(value: Any) -> str | None:
    if value in ("default", None):
        return None
    return valid.integer_list(distinct=True).problem(value)


#: the options of every method that trains loss-data curves (``curve``, ``k-sparse``), declared
#: once here: name -> keyword arguments of :func:`~probemeter._declared.option`
_CURVE_OPTIONS: dict[str, dict[str, Any]] = {
    "seeds": {
        "default": CURVE_SEEDS,
        "check": valid.integer(1),
        "help": "probes (data orders) per size",
    },
    "steps": {
        "default": CURVE_TRAINING.steps,
        "check": valid.integer(1),
        "help": "Adam updates of every probe",
    },
    "batch_size": {
        "default": CURVE_TRAINING.batch_size,
        "check": valid.integer(1),
        "help": "minibatch size",
    },
    "precision": {
        "default": CURVE_TRAINING.precision,
        "check": valid.one_of(*PRECISIONS),
        "help": "matmul precision: f32 (the same numbers on every machine), bf16 (faster where "
        "the CPU or GPU has native bf16), or auto: bf16 where native and measured >= 1.3x "
        "faster at start-up, else f32, the choice recorded in the results",
    },
    **SOLVER_OPTIONS,
    "sizes": {
        "default": None,
        "check": valid.Check(_sizes),
        "help": 'training-set sizes n ("default": log-spaced up to the pool less dev_fraction)',
        "parse": lambda value: None if value in ("default", None) else tuple(value),
        "show": lambda value: "default" if value is None else list(value),
    },
}


def curve_option(name: str) -> Any:
    """The declaration of the loss-data-curve option ``name`` (one of ``seeds``, ``steps``,
    ``batch_size``, ``precision``, ``solver``, ``tol``, ``sizes``), shared by the methods that
    train curves.

    Raises:
        ValueError: ``name`` is not a curve option.
    """
    if name not in _CURVE_OPTIONS:
        raise ValueError(f"name must be a curve option ({', '.join(_CURVE_OPTIONS)}); got {name!r}")
    return option(**_CURVE_OPTIONS[name])


@dataclass(frozen=True)
class CurveMethod(Method):
    """``[method] kind = "curve"``: a loss-data curve per representation, measures at ε."""

    epsilon: float = option(
        check=valid.positive(),
        help="loss tolerance ε of SDL and εSC, in `unit` (required)",
    )
    unit: str = option("nats", check=valid.one_of("nats", "bits"), help="unit of ε and losses")
    probe: tuple[int, ...] = option(
        CURVE_PROBE,
        check=valid.integer_list(),
        help="hidden widths of the MLP probe; none for a linear probe",
        flag="--hidden",
    )
    seeds: int = curve_option("seeds")
    steps: int = curve_option("steps")
    lr: tuple[float, ...] | float = option(
        CURVE_TRAINING.lr,
        check=_setting("> 0"),
        parse=_parse_setting,
        help="Adam learning rate; a list: a grid with weight_decay, every setting trained "
        "side by side and the one of lowest development loss chosen per size",
    )
    weight_decay: tuple[float, ...] | float = option(
        CURVE_TRAINING.weight_decay,
        check=_setting(">= 0"),
        parse=_parse_setting,
        help="L2 penalty λ on the probes' weight matrices, (λ/2)·‖W‖² added to the mean loss "
        "(scikit-learn's LogisticRegression(C) on n examples: λ = 1/(C·n) for 3 or more "
        "classes, 2/(C·n) for two: probemeter.training.weight_decay_for_c); a list: a grid "
        "with lr, chosen per size on the development split",
        key_omits=CURVE_TRAINING.weight_decay,
    )
    batch_size: int = curve_option("batch_size")
    precision: str = curve_option("precision")
    solver: str = curve_option("solver")
    tol: float = curve_option("tol")
    sizes: tuple[int, ...] | None = curve_option("sizes")
    dev_fraction: float = option(
        CURVE_DEV_FRACTION,
        check=valid.number(0, 1, closed="left"),
        help="share of the pool (whole sentences for words) held out of training, on which "
        "the probes are also measured so that comparisons choose the best representation "
        "there and test it on the test set (0: none; no choice is then tested)",
    )
    pvi: bool = option(
        False,
        check=valid.boolean(),
        help="also the pointwise V-information of every test example under the largest size's "
        "probes (Ethayarajh et al. 2022): pvi.csv, and pvi.png by label",
        key_omits=False,
    )
    choose_by: str = option(
        "SDL",
        check=valid.one_of("SDL", "SC", *MONITOR_METRICS),
        help="the measure a layer sweep's verdict chooses the best layer by, on the development "
        "split (then tested on the test set): SDL, SC (εSC), or a monitor metric of two-class "
        "tasks (auroc, recall@1%fpr, recall@5%fpr with the threshold set on dev, brier, ece)",
        keyed=False,
    )
    positive: str | int | None = option(
        None,
        check=valid.Check(_positive_label),
        help="the positive class of the monitor metrics of two-class tasks, one of the task's "
        "labels as the data write them (default: the second class, index 1)",
        parse=lambda value: value,
        key_omits=None,
    )

    kind = "curve"
    language_model_defaults: ClassVar[dict[str, Any]] = {
        "probe": LANGUAGE_MODEL_PROBE,
        **LANGUAGE_MODEL_GRID,
    }
    mixes_layers = True
    pools_spans = True
    measures_label_sets = True
    fits_directions = True
    summary = "Whitney et al.: loss-data curves; VA, MI, MDL, SDL and εSC (Table 1)"
    keeps_probes = True
    evaluates_shifted = True
    writes_results_alone = True

    def check_pool(self, pool_size: int, n_classes: int | None = None) -> list[tuple[str, str]]:
        from probemeter.training.probe_runs import held_out_count

        if n_classes is not None and n_classes != 2 and self.choose_by in MONITOR_METRICS:
            return [("method.choose_by", self._monitor_refusal(n_classes))]
        left = pool_size
        if self.dev_fraction > 0 and pool_size > 1:
            left -= held_out_count(pool_size, self.dev_fraction)
        if self.sizes is not None and max(self.sizes) > left:
            message = (
                f"{max(self.sizes)} exceeds the {left} examples left for training of a pool "
                f"of {pool_size} (dev_fraction = {self.dev_fraction:g} is held out)"
            )
            return [("method.sizes", message)]
        return []

    def _monitor_refusal(self, n_classes: int | str) -> str:
        return (
            f"{self.choose_by!r} is a monitor metric of two-class tasks; the task has "
            f"{n_classes} classes (choose by SDL or SC)"
        )

    def _training_pool(self, name: str, data: ProbeData, random_state: int) -> int:
        """The pool examples the probes may train on: the pool less its development split
        (whole sentences where the data record them, so not exactly ``dev_fraction``).

        Raises:
            ValueError: explicit ``sizes`` beyond it, before anything is trained.
        """
        from probemeter.training.probe_runs import held_out_split

        left = data.pool_size
        if self.dev_fraction > 0:
            train, _ = held_out_split(
                data.pool_size, self.dev_fraction, random_state, data.clusters_train
            )
            left = train.size
        if self.sizes is not None and max(self.sizes) > left:
            raise ValueError(
                f"method.sizes: {max(self.sizes)} exceeds the {left} examples of {name!r} "
                f"left for training of its pool of {data.pool_size} (dev_fraction = "
                f"{self.dev_fraction:g} is held out)"
            )
        return left

    def engine_probes(self, pool_size: int) -> EngineProbes:
        """The curve's probes: one per size (default sizes up to the whole pool)."""
        from probemeter.curves.curve import default_sizes

        sizes = list(self.sizes or default_sizes(pool_size))
        return EngineProbes(self.probe, self.training(), sizes)

    def sparse_problems(self) -> list[tuple[str, str]]:
        """No problems: loss-data curves train on sparse rows."""
        return []

    def training(self) -> TrainingConfig:
        """The :class:`~probemeter.training.TrainingConfig` of every probe (with a grid of
        settings, its first: :meth:`settings_grid` gives the others)."""
        return TrainingConfig(
            self.steps,
            self.batch_size,
            _grid_values(self.lr)[0],
            self.precision,
            weight_decay=_grid_values(self.weight_decay)[0],
            solver=self.solver,
            tol=self.tol,
        )

    def settings_grid(self) -> dict[str, list[float]] | None:
        """The grid of ``weight_decay`` × ``lr`` to choose from on the development split
        (:func:`~probemeter.curves.curve.loss_data_curve`'s ``settings``); None when both are
        one value."""
        if not any(isinstance(v, tuple) for v in (self.weight_decay, self.lr)):
            return None
        return {"weight_decay": _grid_values(self.weight_decay), "lr": _grid_values(self.lr)}

    def settings_for(self, probe: Any) -> dict[str, list[float]] | None:
        """:meth:`settings_grid` for ``probe``'s curve: none for a direction twin's
        (:class:`~probemeter.probes.Direction`, fitted in closed form: no learning rate or
        weight decay changes it, so a grid would fit it once per setting for nothing)."""
        from probemeter.probes import Direction

        return None if isinstance(probe, Direction) else self.settings_grid()

    def check_options(self) -> list[tuple[Option, str]]:
        """A grid of settings needs a development split to be chosen on, and so does a layer
        choice by recall at a false-positive rate (its threshold is set there)."""
        if self.choose_by.startswith("recall@") and self.dev_fraction == 0:
            return [
                (
                    self.option_named("choose_by"),
                    "recall at a false-positive rate takes its threshold from the development "
                    "split: dev_fraction must be > 0",
                )
            ]
        newton = self._newton_refusal()
        if newton:
            return [newton]
        if self.settings_grid() is not None and self.dev_fraction == 0:
            name = "lr" if isinstance(self.lr, tuple) else "weight_decay"
            return [
                (
                    self.option_named(name),
                    "a list is a grid chosen on the development split: dev_fraction must be "
                    "> 0 (the test set is never used to choose)",
                )
            ]
        return []

    def _newton_refusal(self) -> tuple[Option, str] | None:
        """Where ``solver = "newton"`` cannot apply: a probe with hidden layers, no weight decay
        (or a grid including 0), a grid over lr (the solver has none)."""
        if self.solver != "newton":
            return None
        problem = newton_option_problem(
            self.probe,
            _grid_values(self.weight_decay),
            lr_grid=isinstance(self.lr, tuple),
            fitted="subset",
        )
        return None if problem is None else (self.option_named(problem[0]), problem[1])

    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        from probemeter.curves.curve import default_sizes
        from probemeter.probes import probe_for

        if self.choose_by in MONITOR_METRICS:  # refused before any probe trains
            for data in datasets.values():
                if data.multilabel or data.n_classes != 2:
                    classes = (
                        f"label sets of {data.n_classes}" if data.multilabel else data.n_classes
                    )
                    raise ValueError(f"method.choose_by: {self._monitor_refusal(classes)}")
        positives = {
            name: _positive_index(name, data, self.positive) for name, data in datasets.items()
        }  # refused before any probe trains, for every representation at once
        # "auto" decided here, before the keys: they and the units carry the precision used
        method, chosen = resolved_precision(self, context.device)
        plans = []
        for name, data in datasets.items():
            left = self._training_pool(name, data, context.random_state)
            sizes = [int(n) for n in (self.sizes or default_sizes(left))]
            probe = probe_for(data, self.probe)
            spec = {
                "probe": probe.to_dict(),
                "training": method.training().to_dict(),
                "sizes": sizes,
                "seeds": list(range(self.seeds)),
                "dev_fraction": self.dev_fraction,
                **self.key_values({"pvi": self.pvi, "positive": self.positive}),
            }
            grid = self.settings_for(probe)
            if grid is not None:  # one setting has no grid: its spec names no "settings"
                spec["settings"] = grid
            keywords = context.keywords(*ENGINE_KEYWORDS, "keep_probes")
            options = {"method": method, "sizes": sizes, "positive": positives[name], **keywords}
            options["precision_choice"] = chosen  # recorded in the result, not in the key
            plans.append(UnitPlan(name, (name,), spec, curve_unit, data, options))
        return plans

    def finish(
        self,
        results: Sequence[Mapping[str, Any]],
        run_dir: Path,
        extra: dict[str, Any],
        figures: FigureOptions,
    ) -> MethodRun:
        from probemeter.curves.comparison import compare
        from probemeter.curves.curve import LossDataCurve
        from probemeter.curves.plotting import plot_curves
        from probemeter.curves.report import RESULTS_NAME, ranked
        from probemeter.curves.results import (
            monitor_table,
            result_frames,
            save_results,
            settings_note,
        )

        curves = tuple(LossDataCurve.from_dict(result) for result in results)
        comparison = compare(curves, self.epsilon, unit=self.unit)
        save_results(run_dir / RESULTS_NAME, curves, comparison, **extra)
        nats = self.epsilon if self.unit == "nats" else self.epsilon * math.log(2)
        figure_files = plot_curves(curves, nats, run_dir / "curves", figures)
        files = (run_dir / RESULTS_NAME, *figure_files)
        frames = result_frames(curves, comparison)
        if self.pvi:
            files += write_pvi(curves, run_dir, figures)
            frames = {**frames, "pvi": _pvi_frame(curves)}
        notes = (settings_note(curves), monitor_table(curves, "text"))
        table = "\n\n".join(text for text in (str(comparison), *notes) if text)
        best_first = ranked(comparison)  # as the report writes its tables
        tables = (
            table,
            _joined(best_first.to_markdown(), monitor_table(curves, "markdown")),
            _joined(best_first.to_latex(), monitor_table(curves, "latex")),
        )
        return write_run_files(self, run_dir, tables, files, extra, frames)

    @classmethod
    def report_part(cls, run_dir: Path, epsilon: float | None) -> ReportPart:
        """The comparison (recomputed at ``epsilon``, default the run's ε) as Whitney et al.'s
        Table 1, the curves' figures and a table per representation
        (:func:`~probemeter.curves.report.curve_report`)."""
        from probemeter.curves.report import curve_report

        return curve_report(run_dir, epsilon)

    def headlines(self) -> tuple[Headline, ...]:
        """SDL(ε) and εSC(ε) at the full pool (Whitney et al., §4; Table 2 by layer), then the
        monitor metrics of two-class tasks (:mod:`probemeter.monitor`; a layer table shows
        those its representations have); ``choose_by``'s first, the one a layer verdict ranks
        by."""
        sdl = f"SDL at ε = {self.epsilon:g} ({self.unit})"
        sc = f"εSC at ε = {self.epsilon:g} (examples)"
        found = [Headline("SDL", sdl, "lower", sdl), Headline("SC", sc, "lower", sc)]
        found += [
            Headline(name, label, better, label)
            for name, (label, better) in MONITOR_METRICS.items()
        ]
        return tuple(sorted(found, key=lambda headline: headline.name != self.choose_by))

    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Per curve: SDL and εSC of the seed-averaged curve at the full pool, with their range
        over the curves of single seeds; the accuracy and test correctness of the probes
        trained on the full pool; and, when the probes were also measured on a development
        split held out of the pool, SDL and εSC there (the selection)."""
        from probemeter.curves.curve import LossDataCurve

        found = {}
        for result in results:
            curve = LossDataCurve.from_dict(result)
            final = curve.points[curve.points["n"] == curve.sizes[-1]]["accuracy"]
            mix = curve.metadata.get("scalar_mix")
            held_out = curve.metadata.get("development")
            found[curve.name] = Summary(
                self._checked({**self._estimates(curve), **_monitor_estimates(curve, "test")}),
                Estimate.over_seeds(final.tolist()),
                curve.final_correct,
                self.probe,
                curve.metadata.get("n_features"),
                curve.n_classes,
                None if mix is None else LayerWeights.from_dict(mix),
                selection={
                    **self._estimates(curve.development_curve()),
                    **_monitor_estimates(curve, "dev"),
                }
                if curve.has_development
                else None,
                selection_split=""
                if held_out is None
                else (
                    f"dev: {held_out['n_dev']:,} pool examples ({held_out['fraction']:.0%} of "
                    f"the pool's {held_out['groups']}) held out of training"
                ),
            )
        return found

    def _checked(self, estimates: dict[str, Estimate]) -> dict[str, Estimate]:
        """``estimates``, which must hold ``choose_by``'s: a layer verdict ranks by it.

        Raises:
            ValueError: a representation lacks it (a split with one class only).
        """
        if self.choose_by not in estimates:
            raise ValueError(
                f"method.choose_by: {self.choose_by!r} is undefined for a representation (its "
                "test set or development split holds one class only); choose by SDL or SC"
            )
        return estimates

    def _estimates(self, curve: Any) -> dict[str, Estimate]:
        """SDL and εSC of ``curve`` averaged over seeds, with their range over single seeds."""
        from probemeter.curves.measures import sample_complexity, sdl

        seeds = sorted(set(curve.points["seed"].tolist()))
        estimates = {}
        for name, measure in (("SDL", sdl), ("SC", sample_complexity)):
            overall = measure(curve, self.epsilon, unit=self.unit)
            single = [measure(curve.for_seed(s), self.epsilon, unit=self.unit) for s in seeds]
            estimates[name] = Estimate.over_seeds(
                [r.value for r in single],
                overall.value,
                lower_bound=overall.lower_bound,
                seed_bounds=[r.lower_bound for r in single],
            )
        return estimates


def _joined(*tables: str) -> str:
    """Tables one after the other, a blank line between (empty ones left out)."""
    return "\n\n".join(table for table in tables if table)


def _monitor_estimates(curve: Any, split: str) -> dict[str, Estimate]:
    """The monitor metrics of ``curve``'s largest probes on ``split`` (``"test"`` or
    ``"dev"``): the mean over seeds with the range over seeds (the test intervals of the
    cluster bootstrap are in ``results.json`` and the tables); none for more than two classes
    or without a development split's threshold."""
    if curve.monitor is None:
        return {}
    if split == "test":
        found = {name: m["per_seed"] for name, m in curve.monitor["metrics"].items()}
    else:
        found = curve.monitor["dev"]
    # a metric undefined on a split (one class there) has no estimate, so no column
    return {
        name: Estimate.over_seeds(values) for name, values in found.items() if None not in values
    }


def curve_unit(
    data: ProbeData,
    *,
    method: CurveMethod,
    sizes: list[int],
    random_state: int,
    execution: Execution,
    keep_probes: bool = False,
    positive: int = 1,
    precision_choice: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One unit: the loss-data curve of ``data``, as a JSON dictionary; with ``keep_probes``
    also its probes (:attr:`LossDataCurve.probes`) under :data:`PROBES_ENTRY`; ``positive``:
    the positive class's index of the monitor metrics (two classes); ``precision_choice``:
    what ``precision = "auto"`` chose when the units were planned (:func:`resolved_precision`),
    recorded in the curve's ``metadata["precision"]``."""
    from probemeter.curves.curve import loss_data_curve
    from probemeter.probes import probe_for

    probe = probe_for(data, method.probe)
    curve = loss_data_curve(
        data,
        probe,
        sizes,
        method.seeds,
        config=method.training(),
        random_state=random_state,
        execution=execution,
        keep_probes=keep_probes,
        dev_fraction=method.dev_fraction,
        pvi=method.pvi,
        settings=method.settings_for(probe),
        positive=positive,
    )
    if precision_choice is not None:
        curve.metadata["precision"] = precision_choice
    kept = {PROBES_ENTRY: curve.probes} if keep_probes else {}
    return {**curve.to_dict(), **kept}


def resolved_precision(method: Any, device: str) -> tuple[Any, dict[str, Any] | None]:
    """``method`` (a method with a ``precision`` option) with ``precision = "auto"`` replaced
    by the precision it chooses on ``device``
    (:func:`~probemeter.training.precision.auto_precision`), and the record of that choice;
    ``method`` itself and None for f32 or bf16. Run before a method's unit keys are made, so
    that an "auto" unit shares its key and stored result with one asking for that precision."""
    if method.precision != AUTO_PRECISION:
        return method, None
    from probemeter.training.precision import auto_precision

    choice = auto_precision(device)
    return replace(method, precision=choice.chosen), choice.to_dict()


def _pvi_frame(curves: Sequence[Any]) -> Any:
    """Every representation's per-example PVI table, one after the other
    (:meth:`~probemeter.pvi.PVIResult.to_frame`)."""
    import pandas as pd

    return pd.concat([curve.pvi.to_frame() for curve in curves], ignore_index=True)


def write_pvi(curves: Sequence[Any], folder: Path, figures: FigureOptions) -> tuple[Path, ...]:
    """``folder/pvi.csv`` (one row per test example per representation of ``curves``, which
    were measured with ``pvi``) and ``folder/pvi.<format>``, PVI by label
    (:func:`~probemeter.pvi.plot_pvi`: a box plot for one representation, a heat map of the
    label means for several, the layers of a sweep). Returns the paths."""
    from probemeter._exports import write_frame
    from probemeter.pvi import plot_pvi

    table = write_frame(folder / "pvi.csv", _pvi_frame(curves), "csv")
    return (table, *plot_pvi([curve.pvi for curve in curves], folder / "pvi", figures))
