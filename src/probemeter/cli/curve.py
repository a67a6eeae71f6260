"""``probemeter demo|curve|measures|report``: loss-data curves and their measures (Whitney et
al.) from the bundled digits, your own feature files, or a saved ``results.json``.

The training flags are derived from :class:`~probemeter.curves.method.CurveMethod`, so
``probemeter curve`` and ``kind = "curve"`` in an experiment file share every default.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from pathlib import Path
from typing import Any

from probemeter._io import writable_folder
from probemeter._validation import check_scalar
from probemeter.cli._options import (
    add_export_option,
    add_figure_options,
    add_labels_option,
    add_method_options,
    add_run_options,
    execution_from_args,
    export_option,
    figure_options,
    method_from_args,
)
from probemeter.curves.method import CurveMethod

__all__ = ["add_curve_commands"]

#: ``demo --quick``: a small probe, fewer and faster updates, two seeds
QUICK = {"probe": (64,), "steps": 300, "seeds": 2, "lr": 1e-3}
#: ε of ``demo`` (nats): the full runs' pixels and PCA probes reach it (Whitney et al. Fig. 1)
DEMO_EPSILON = 0.1
#: ε of ``demo --quick`` (nats): its small probes reach 0.15-0.36 nats on the full pool of 1297
#: digits, never 0.1; at 0.4 the pixels and PCA curves end below ε (tight SDL and εSC) and the
#: random projection's does not (a lower bound), so the table ranks all three
QUICK_EPSILON = 0.4

_log = logging.getLogger(__name__)


def add_curve_commands(commands: Any) -> None:
    """Register ``demo``, ``curve``, ``measures`` and ``report``."""
    demo = commands.add_parser("demo", help="run the bundled digits comparison")
    _training_options(demo)
    _measure_options(demo, f"(default: {DEMO_EPSILON}; {QUICK_EPSILON} with --quick)")
    _out_options(demo)
    quick = ", ".join(
        f"{CurveMethod.option_named(key).flag} {_shown(value)}" for key, value in QUICK.items()
    )
    demo.add_argument(
        "--quick",
        action="store_true",
        help=f"a small, fast run ({quick}, --epsilon {QUICK_EPSILON}; a flag given another "
        "value than its default keeps it)",
    )
    demo.set_defaults(handler=_run_demo)

    curve = commands.add_parser("curve", help="loss-data curves of your own features")
    curve.add_argument(
        "--train",
        action="append",
        required=True,
        type=Path,
        help="features X and labels y (.npz, .pt, .safetensors, .parquet, or X.npy beside "
        "X.labels.npy); repeat per representation",
    )
    curve.add_argument(
        "--test",
        action="append",
        type=Path,
        help="test features, one per --train; without it each --train is shuffled and split",
    )
    curve.add_argument("--name", action="append", help="representation names, one per --train")
    curve.add_argument("--test-size", type=float, default=0.2, help="test fraction when splitting")
    curve.add_argument("--no-standardize", action="store_true", help="keep features as given")
    add_labels_option(curve)
    _training_options(curve)
    _measure_options(curve, "(default: none, the curves only)")
    _out_options(curve)
    curve.set_defaults(handler=_run_curve)

    measures = commands.add_parser("measures", help="recompute measures from a results file")
    measures.add_argument(
        "results",
        type=Path,
        help="a results.json written by demo, curve or run, or its folder",
    )
    _measure_options(
        measures, "(default: the ε of the results' comparison)", unit_help="(default: the unit "
        "of the results' comparison, else nats)"
    )  # fmt: skip
    measures.add_argument(
        "--format", choices=("text", "markdown", "latex"), default="text", help="table format"
    )
    add_export_option(measures, "the results' folder")
    measures.set_defaults(handler=_run_measures)

    report = commands.add_parser("report", help="write the HTML report and tables of a run")
    report.add_argument("run_dir", type=Path, help="a folder holding results.json")
    report.add_argument("--epsilon", type=float, help="recompute the measures at this ε")
    report.add_argument(
        "--template",
        type=Path,
        help="your own Jinja2 template of report.html (context: probemeter.runs.html_report)",
    )
    report.set_defaults(handler=_run_report)


def _shown(value: Any) -> str:
    """A flag's value as typed: sequences space-separated."""
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _training_options(parser: argparse.ArgumentParser) -> None:
    # choose_by and positive are of a run's layer verdict and monitor metrics (experiment files)
    skip = ("epsilon", "unit", "choose_by", "positive")
    add_method_options(parser, CurveMethod, skip=skip, title="probe training")
    add_run_options(parser, memory=True)


def _out_options(parser: argparse.ArgumentParser) -> None:
    """Where results go: ``--out``, ``--export``, figure formats."""
    parser.add_argument(
        "--out", type=Path, default=Path("probemeter-results"), help="folder of the results"
    )
    add_export_option(parser)
    add_figure_options(parser)


def _measure_options(
    parser: argparse.ArgumentParser, epsilon_help: str, unit_help: str | None = None
) -> None:
    """``--epsilon`` (its default in words: ``epsilon_help``), ``--unit`` (default: the
    method's, or in words ``unit_help``, then None), ``--metric``, ``--at``."""
    group = parser.add_argument_group("measures")
    unit = CurveMethod.option_named("unit")
    group.add_argument(
        "--epsilon", type=float, help=f"loss tolerance ε of SDL and εSC, in --unit {epsilon_help}"
    )
    group.add_argument(
        "--unit",
        choices=unit.check.choices,
        default=unit.default if unit_help is None else None,
        help=unit.help if unit_help is None else f"{unit.help} {unit_help}",
    )
    group.add_argument(
        "--metric",
        choices=("loss", "loss_truncated", "error"),
        default="loss",
        help="loss read from the curves (error = 1 - accuracy; its unit is errors)",
    )
    group.add_argument(
        "--at", type=int, nargs="+", help="data sizes n of the table rows (default: small, full)"
    )


def _train_curves(datasets: dict[str, Any], args: argparse.Namespace) -> list[Any]:
    from probemeter.curves.curve import LossDataCurve
    from probemeter.curves.method import curve_unit

    # ε matters only for the comparison after training: without --epsilon any valid one will do
    epsilon = 1.0 if args.epsilon is None else args.epsilon
    method = method_from_args(CurveMethod, args, fixed={"epsilon": epsilon})
    curves = []
    for name, data in datasets.items():
        started = time.perf_counter()
        result = curve_unit(
            data,
            method=method,
            sizes=args.sizes,
            random_state=args.random_state,
            execution=execution_from_args(args),
        )
        curves.append(LossDataCurve.from_dict(result))
        seconds = time.perf_counter() - started
        _log.info("%s: %d probes in %.1f s", name, len(curves[-1].points), seconds)
    return curves


def _check_before_training(datasets: dict[str, Any], args: argparse.Namespace) -> None:
    """Everything that could fail after training, checked before it: ε, the --at sizes
    against every pool, and that --out can be written."""
    if args.epsilon is not None:
        check_scalar(args.epsilon, "--epsilon", float, min_val=0, include_boundaries="neither")
    if args.at is not None:
        for data in datasets.values():
            data.check_sizes(args.at, "--at")
    figure_options(args)  # bad figure and export flags fail now, not after training
    export_option(args)
    writable_folder(args.out, "--out")


def _report(curves: list[Any], args: argparse.Namespace, out: Path) -> None:
    """Save the curves first (a failure after training loses nothing), then compare them at ε
    and save again with the comparison (and export its tables), and plot."""
    from probemeter.curves.comparison import compare
    from probemeter.curves.plotting import plot_curves
    from probemeter.curves.results import save_results

    save_results(out / "results.json", curves, None)
    comparison = None
    if args.epsilon is not None:
        unit = None if args.metric == "error" else args.unit
        comparison = compare(curves, args.epsilon, args.at, metric=args.metric, unit=unit)
        print()
        print(comparison)
    exported = save_results(out / "results.json", curves, comparison, export=export_option(args))
    epsilon = None  # the figure draws losses in nats
    if args.epsilon is not None and args.metric == "loss":
        epsilon = args.epsilon * (math.log(2) if args.unit == "bits" else 1.0)
    figures = plot_curves(curves, epsilon, out / "curves", figure_options(args))
    if args.pvi:
        from probemeter.curves.method import write_pvi

        figures += write_pvi(curves, out, figure_options(args))
    names = ", ".join(path.name for path in (*exported, *figures))
    _log.info("wrote %s and %s", out / "results.json", names)


def _run_demo(args: argparse.Namespace) -> int:
    from probemeter.datasets import digits_representations

    if args.quick:  # the quick settings, but for flags given on the command line
        for name, value in QUICK.items():
            if getattr(args, name) == CurveMethod.option_named(name).default:
                setattr(args, name, value)
    if args.epsilon is None:
        args.epsilon = QUICK_EPSILON if args.quick else DEMO_EPSILON
    datasets = digits_representations(random_state=args.random_state)
    _check_before_training(datasets, args)
    first = next(iter(datasets.values()))
    _log.info(
        "digits (scikit-learn): pool %d, test %d; probe MLP%s, %d Adam steps (lr %s, batch %d), "
        "%d seeds",
        first.pool_size, len(first.y_test), tuple(args.probe), args.steps, args.lr,
        args.batch_size, args.seeds,
    )  # fmt: skip
    curves = _train_curves(datasets, args)
    _report(curves, args, args.out)
    return 0


def _run_curve(args: argparse.Namespace) -> int:
    from probemeter.data import ProbeData
    from probemeter.feature_files import load_features
    from probemeter.training.shared_memory import share_for_workers

    tests = args.test or []
    names = args.name or [path.stem for path in args.train]
    if tests and len(tests) != len(args.train):
        raise ValueError(f"give one --test per --train ({len(args.train)}); got {len(tests)}")
    if len(names) != len(args.train):
        raise ValueError(f"give one --name per --train ({len(args.train)}); got {len(names)}")
    if len(set(names)) != len(names):
        raise ValueError(f"representation names must be distinct; got {names}")
    datasets = {}
    for index, (name, path) in enumerate(zip(names, args.train)):
        X, y = load_features(path)
        test = load_features(tests[index]) if tests else (None, None)
        try:
            data = ProbeData.from_arrays(
                X,
                y,
                *test,
                test_size=args.test_size,
                standardize=not args.no_standardize,
                name=name,
                random_state=args.random_state,
                labels=args.labels,
            )
        except ValueError as error:  # named by array (X, y_test, ...): say from which file
            files = f"--train {str(path)!r}" + (
                f" (X, y) and --test {str(tests[index])!r} (X_test, y_test)" if tests else ""
            )
            raise ValueError(f"{files}: {error}") from None
        del X, y, test  # the files' arrays go before the features are copied to shared memory
        datasets[name] = share_for_workers(data, args.n_jobs)
    _check_before_training(datasets, args)
    curves = _train_curves(datasets, args)
    _report(curves, args, args.out)
    return 0


def _run_measures(args: argparse.Namespace) -> int:
    from probemeter._exports import export_frames
    from probemeter.curves.comparison import compare
    from probemeter.curves.results import load_curves, result_frames

    path = _curve_results(args.results, "measures")
    formats = export_option(args)
    curves = load_curves(path)
    epsilon, unit = _measures_epsilon(path, args)
    comparison = compare(curves, epsilon, args.at, metric=args.metric, unit=unit)
    rendered = {
        "text": str(comparison),
        "markdown": comparison.to_markdown(),
        "latex": comparison.to_latex(),
    }
    print(rendered[args.format])
    if formats:
        frames = result_frames(curves, comparison)
        written = export_frames(frames, path.parent, formats)
        _log.info("wrote %s", ", ".join(str(file) for file in written))
    return 0


def _measures_epsilon(path: Path, args: argparse.Namespace) -> tuple[float, str | None]:
    """ε and the loss unit of ``probemeter measures``: the flags, or else the results'
    comparison's (ε converted when ``--unit`` differs from its unit: 1 bit = ln 2 nats);
    the unit is None for ``--metric error``."""
    from probemeter.curves.results import stored_comparison

    stored = None if args.epsilon is not None and args.unit else stored_comparison(path)
    if args.metric == "error":
        unit = None
    else:
        unit = args.unit or (stored["unit"] if stored and stored["metric"] != "error" else "nats")
    if args.epsilon is not None:
        return args.epsilon, unit
    if stored is None:
        raise ValueError(
            f"--epsilon not given and {str(path)!r} holds no comparison to take it from (its "
            "curves were saved without ε); give --epsilon"
        )
    if (stored["metric"] == "error") != (args.metric == "error"):
        raise ValueError(
            f"--epsilon not given, and the ε {stored['epsilon']} of {str(path)!r} is for "
            f"--metric {stored['metric']}, not {args.metric}; give --epsilon"
        )
    epsilon = float(stored["epsilon"])
    if unit is not None and unit != stored["unit"]:  # nats <-> bits
        epsilon = epsilon / math.log(2) if unit == "bits" else epsilon * math.log(2)
    _log.info("ε = %g %s, from %s", epsilon, unit or stored["unit"], path)
    return epsilon, unit


def _curve_results(target: Path, command: str) -> Path:
    """The ``results.json`` of loss-data curves that ``target`` (the file, or its folder)
    names for ``probemeter measures``; a folder of another method's results is refused,
    naming what it is and which command reads it.

    Raises:
        ValueError: ``target`` is the folder (or ``results.json``) of a run of another method
            (its ``run.json`` says which), or the folder of ``probemeter mdl`` (``mdl.json``).
    """
    from probemeter._method import RUN_NAME
    from probemeter.runs.methods import run_method

    folder = target if target.is_dir() else target.parent
    if target.is_dir() or target.name == "results.json":
        method = run_method(folder)
        if method is not None and not method.writes_results_alone:
            raise ValueError(
                f"{str(folder)!r} is the folder of a run of method {method.kind!r} (its {RUN_NAME} "
                f"says so), not of loss-data curves: `probemeter {command}` reads the curves of "
                f"demo, curve and runs of kind 'curve'; `probemeter report {folder}` writes this "
                "run's report, and its table is in table.md"
            )
    if target.is_dir() and not (target / "results.json").exists():
        if (target / "mdl.json").is_file():
            reads = {
                "measures": "the results.json of demo, curve and runs of kind 'curve'",
                "report": "the run folders of probemeter run, demo and curve",
            }[command]
            raise ValueError(
                f"{str(target)!r} is the folder of `probemeter mdl` (mdl.json), which "
                f"`probemeter {command}` does not read (it reads {reads}): the codes' table is "
                "in its mdl.md, and probemeter.mdl.load_mdl_results reads its mdl.json"
            )
    return target / "results.json" if target.is_dir() else target


def _run_report(args: argparse.Namespace) -> int:
    from probemeter.runs.html_report import write_report

    if args.run_dir.is_dir() and not (args.run_dir / "results.json").exists():
        _curve_results(args.run_dir, "report")  # a folder of `probemeter mdl` is named as such
    files = write_report(args.run_dir, epsilon=args.epsilon, template=args.template)
    _log.info("wrote %s", ", ".join(str(path) for path in files.paths))
    return 0
