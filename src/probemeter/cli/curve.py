"""``probemeter demo|curve|measures|report``: loss-data curves and their measures (Whitney et
al.) from the bundled digits, your own feature files, or a saved ``results.json``.

The training flags are derived from :class:`~probemeter.curves.method.CurveMethod`, so
``probemeter curve`` and ``kind = "curve"`` in an experiment file share every default.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

from probemeter._io import writable_folder
from probemeter._validation import check_scalar
from probemeter.cli._options import (
    add_figure_options,
    add_labels_option,
    add_method_options,
    add_run_options,
    figure_options,
    method_from_args,
)
from probemeter.curves.method import CurveMethod

__all__ = ["add_curve_commands"]

#: ``demo --quick``: a small probe, fewer and faster updates, two seeds
QUICK = {"probe": (64,), "steps": 300, "seeds": 2, "lr": 1e-3}


def add_curve_commands(commands: Any) -> None:
    """Register ``demo``, ``curve``, ``measures`` and ``report``."""
    demo = commands.add_parser("demo", help="run the bundled digits comparison")
    _training_options(demo)
    _measure_options(demo, epsilon=0.1)
    demo.add_argument("--out", type=Path, default=Path("probemeter-results"))
    add_figure_options(demo)
    quick = ", ".join(f"{key} {value}" for key, value in QUICK.items())
    demo.add_argument("--quick", action="store_true", help=f"a small, fast run ({quick})")
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
    curve.add_argument(
        "--test-size", type=float, default=0.2, help="test fraction when splitting (default: 0.2)"
    )
    curve.add_argument("--no-standardize", action="store_true", help="keep features as given")
    add_labels_option(curve)
    _training_options(curve)
    _measure_options(curve, epsilon=None)
    curve.add_argument("--out", type=Path, default=Path("probemeter-results"))
    add_figure_options(curve)
    curve.set_defaults(handler=_run_curve)

    measures = commands.add_parser("measures", help="recompute measures from a results file")
    measures.add_argument(
        "results", type=Path, help="a results.json written by demo/curve, or its folder"
    )
    _measure_options(measures, epsilon=None, required=True)
    measures.add_argument(
        "--format", choices=("text", "markdown", "latex"), default="text", help="table format"
    )
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


def _training_options(parser: argparse.ArgumentParser) -> None:
    add_method_options(parser, CurveMethod, skip=("epsilon", "unit"), title="probe training")
    add_run_options(parser, memory=True)


def _measure_options(
    parser: argparse.ArgumentParser, epsilon: float | None, required: bool = False
) -> None:
    group = parser.add_argument_group("measures")
    unit = CurveMethod.option_named("unit")
    group.add_argument(
        "--epsilon",
        type=float,
        default=epsilon,
        required=required,
        help="loss tolerance ε of SDL and εSC, in --unit",
    )
    group.add_argument("--unit", choices=unit.check.choices, default=unit.default, help=unit.help)
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
            device=args.device,
            n_jobs=args.n_jobs,
            max_memory=args.max_memory,
            progress=not args.no_progress,
        )
        curves.append(LossDataCurve.from_dict(result))
        print(f"{name}: {len(curves[-1].points)} probes in {time.perf_counter() - started:.1f} s")
    return curves


def _check_before_training(datasets: dict[str, Any], args: argparse.Namespace) -> None:
    """Everything that could fail after training, checked before it: ε, the --at sizes
    against every pool, and that --out can be written."""
    if args.epsilon is not None:
        check_scalar(args.epsilon, "--epsilon", float, min_val=0, include_boundaries="neither")
    if args.at is not None:
        for data in datasets.values():
            data.check_sizes(args.at, "--at")
    figure_options(args)  # bad figure flags fail now, not after training
    writable_folder(args.out, "--out")


def _report(curves: list[Any], args: argparse.Namespace, out: Path) -> None:
    """Save the curves first (a failure after training loses nothing), then compare them at ε
    and save again with the comparison, and plot."""
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
        save_results(out / "results.json", curves, comparison)
    epsilon = None  # the figure draws losses in nats
    if args.epsilon is not None and args.metric == "loss":
        epsilon = args.epsilon * (math.log(2) if args.unit == "bits" else 1.0)
    figures = plot_curves(curves, epsilon, out / "curves", figure_options(args))
    print(f"\nwrote {out / 'results.json'} and {', '.join(path.name for path in figures)}")


def _run_demo(args: argparse.Namespace) -> int:
    from probemeter.datasets import digits_representations

    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)
    datasets = digits_representations(random_state=args.random_state)
    _check_before_training(datasets, args)
    first = next(iter(datasets.values()))
    print(
        f"digits (scikit-learn): pool {first.pool_size}, test {len(first.y_test)}; probe "
        f"MLP{tuple(args.probe)}, {args.steps} Adam steps (lr {args.lr}, batch "
        f"{args.batch_size}), {args.seeds} seeds"
    )
    curves = _train_curves(datasets, args)
    _report(curves, args, args.out)
    return 0


def _run_curve(args: argparse.Namespace) -> int:
    from probemeter.data import ProbeData
    from probemeter.feature_files import load_features

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
        datasets[name] = ProbeData.from_arrays(
            X,
            y,
            *test,
            test_size=args.test_size,
            standardize=not args.no_standardize,
            name=name,
            random_state=args.random_state,
            labels=args.labels,
        )
    _check_before_training(datasets, args)
    curves = _train_curves(datasets, args)
    _report(curves, args, args.out)
    return 0


def _run_measures(args: argparse.Namespace) -> int:
    from probemeter.curves.comparison import compare
    from probemeter.curves.results import load_curves

    path = args.results / "results.json" if args.results.is_dir() else args.results
    curves = load_curves(path)
    unit = None if args.metric == "error" else args.unit
    comparison = compare(curves, args.epsilon, args.at, metric=args.metric, unit=unit)
    rendered = {
        "text": str(comparison),
        "markdown": comparison.to_markdown(),
        "latex": comparison.to_latex(),
    }
    print(rendered[args.format])
    return 0


def _run_report(args: argparse.Namespace) -> int:
    from probemeter.runs.html_report import write_report

    files = write_report(args.run_dir, epsilon=args.epsilon, template=args.template)
    print("wrote " + ", ".join(str(path) for path in files.paths))
    return 0
