"""The ``probemeter`` command line.

* ``probemeter demo`` — three representations of scikit-learn's digits, their loss-data
  curves and the Table-1-style comparison (Whitney et al., Table 1);
* ``probemeter curve`` — the same for your own ``.npz``/``.npy`` features;
* ``probemeter measures`` — recompute measures from a saved ``results.json`` without training;
* ``probemeter run`` — a whole study described by an experiment file
  (:mod:`probemeter.runs.config`), resumable (:mod:`probemeter.runs.runner`), in this process or
  on a Ray cluster (``--backend ray``, :mod:`probemeter.runs.ray_backend`).
* ``probemeter mdl`` — online/variational codes with control tasks (:mod:`probemeter.cli.mdl`).
* ``probemeter power`` / ``probemeter recommend`` — statistical power and data requirements of
  a comparison problem (Zhu et al.; :mod:`probemeter.cli.power`).
* ``probemeter pareto sweep|table`` — Pareto probing (:mod:`probemeter.cli.pareto`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from probemeter.cli.mdl import add_mdl_command
from probemeter.cli.pareto import add_pareto_parser
from probemeter.cli.power import add_power_commands
from probemeter.curves.comparison import compare
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.plotting import plot_curves
from probemeter.curves.results import load_curves, save_results
from probemeter.data import ProbeData, load_features
from probemeter.datasets import digits_representations
from probemeter.probes import MLP
from probemeter.runs.config import load_experiment
from probemeter.runs.html_report import write_report
from probemeter.runs.ray_backend import RayOptions, import_ray
from probemeter.runs.runner import run_experiment

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except ValueError as error:  # bad input: one clear line, no stack trace
        print(f"probemeter: error: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probemeter",
        description="Evaluate representations by probing: loss-data curves, VA, MI, MDL, "
        "SDL and epsilon sample complexity.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="run the bundled digits comparison")
    _training_options(demo, steps=1000)
    _measure_options(demo, epsilon=0.1)
    demo.add_argument("--out", type=Path, default=Path("probemeter-results"))
    demo.add_argument(
        "--quick",
        action="store_true",
        help="a small, fast run (1x64 MLP, 300 steps at lr 1e-3, 2 seeds)",
    )
    demo.set_defaults(handler=_run_demo)

    curve = commands.add_parser("curve", help="loss-data curves of your own features")
    curve.add_argument(
        "--train",
        action="append",
        required=True,
        type=Path,
        help=".npz with arrays X, y (or X.npy beside X.labels.npy); repeat per representation",
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
    curve.add_argument("--sizes", type=int, nargs="+", help="training-set sizes n")
    _training_options(curve, steps=1000)
    _measure_options(curve, epsilon=None)
    curve.add_argument("--out", type=Path, default=Path("probemeter-results"))
    curve.set_defaults(handler=_run_curve)

    measures = commands.add_parser("measures", help="recompute measures from a results file")
    measures.add_argument("results", type=Path, help="a results.json written by demo/curve")
    _measure_options(measures, epsilon=None, required=True)
    measures.add_argument(
        "--format", choices=("text", "markdown", "latex"), default="text", help="table format"
    )
    measures.set_defaults(handler=_run_measures)

    run = commands.add_parser("run", help="run an experiment file (TOML), resuming a stopped run")
    run.add_argument("experiment", type=Path, help="the experiment file (see README)")
    run.add_argument(
        "--out", type=Path, default=Path("runs"), help="runs go to OUT/<run.name> (default: runs)"
    )
    run.add_argument("--fresh", action="store_true", help="recompute units already stored")
    run.add_argument("--check", action="store_true", help="only validate the file, then exit")
    run.add_argument(
        "--n-jobs", type=int, help="CPU worker processes, --backend local (default -1: all)"
    )
    run.add_argument(
        "--max-memory",
        type=float,
        default=2.0,
        metavar="GIB",
        help="GiB for one chunk of stacked probes, per worker process (default: 2)",
    )
    run.add_argument("--no-progress", action="store_true", help="hide progress bars")
    _ray_options(run)
    run.set_defaults(handler=_run_experiment)

    report = commands.add_parser("report", help="write the HTML report and tables of a run")
    report.add_argument("run_dir", type=Path, help="a folder holding results.json")
    report.add_argument("--epsilon", type=float, help="recompute the measures at this ε")
    report.set_defaults(handler=_run_report)
    add_power_commands(commands)

    add_pareto_parser(commands)
    add_mdl_command(commands)
    return parser


#: the options of `probemeter run` that only the Ray backend takes (fields of RayOptions)
_RAY_ONLY = ("address", "cpus_per_unit", "gpus_per_unit", "max_retries")


def _ray_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("backend")
    group.add_argument(
        "--backend",
        default="local",
        metavar="{local,ray}",
        help="local (this process, the default) or ray (one Ray task per unit)",
    )
    group.add_argument(
        "--address", help="Ray cluster: auto or HOST:PORT (default: a new one for this run)"
    )
    group.add_argument(
        "--cpus-per-unit",
        type=int,
        metavar="N",
        help="CPUs (and worker processes) per Ray task (default 1)",
    )
    group.add_argument(
        "--gpus-per-unit", type=float, metavar="G", help="GPUs per Ray task (default 0)"
    )
    group.add_argument(
        "--max-retries",
        type=int,
        metavar="N",
        help="Ray re-runs of a task whose worker died (default 3)",
    )


def _ray_settings(args: argparse.Namespace) -> RayOptions | None:
    """The Ray options of `probemeter run` (None for --backend local), checked."""
    if args.backend not in ("local", "ray"):
        raise ValueError(f"--backend must be 'local' or 'ray'; got {args.backend!r}")
    if not (math.isfinite(args.max_memory) and args.max_memory > 0):
        raise ValueError(f"--max-memory must be a positive number of GiB; got {args.max_memory}")
    if args.backend == "local":
        for name in _RAY_ONLY:
            if getattr(args, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} needs --backend ray (the backend is local)")
        return None
    if args.n_jobs is not None:
        raise ValueError("--n-jobs is for --backend local; on Ray use --cpus-per-unit")
    import_ray()
    given = {name: getattr(args, name) for name in _RAY_ONLY if getattr(args, name) is not None}
    try:
        return RayOptions(**given)
    except ValueError as error:  # name the flag, not the field
        message = str(error)
        for name in _RAY_ONLY:
            message = message.replace(name, "--" + name.replace("_", "-"), 1)
        raise ValueError(message) from None


def _training_options(parser: argparse.ArgumentParser, steps: int) -> None:
    group = parser.add_argument_group("probe training")
    group.add_argument(
        "--hidden",
        type=int,
        nargs="*",
        default=[512, 512],
        help="hidden widths of the MLP probe; none for a linear probe (default: 512 512)",
    )
    group.add_argument("--seeds", type=int, default=4, help="seeds per size (default: 4)")
    group.add_argument("--steps", type=int, default=steps, help="Adam updates per probe")
    group.add_argument("--batch-size", type=int, default=256)
    group.add_argument("--lr", type=float, default=1e-4)
    group.add_argument("--precision", choices=("f32", "bf16"), default="f32")
    group.add_argument("--device", default="auto", help="auto, cpu or cuda")
    group.add_argument("--n-jobs", type=int, default=-1, help="CPU worker processes (-1: all)")
    group.add_argument("--random-state", type=int, default=0)
    group.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _measure_options(
    parser: argparse.ArgumentParser, epsilon: float | None, required: bool = False
) -> None:
    group = parser.add_argument_group("measures")
    group.add_argument(
        "--epsilon",
        type=float,
        default=epsilon,
        required=required,
        help="loss tolerance ε of SDL and εSC, in --unit",
    )
    group.add_argument("--unit", choices=("nats", "bits"), default="nats")
    group.add_argument(
        "--metric",
        choices=("loss", "loss_truncated", "error"),
        default="loss",
        help="loss read from the curves (error = 1 - accuracy; its unit is errors)",
    )
    group.add_argument(
        "--at", type=int, nargs="+", help="data sizes n of the table rows (default: small, full)"
    )


def _train_curves(datasets: dict[str, ProbeData], args: argparse.Namespace, sizes=None):
    probe = MLP(hidden=tuple(args.hidden))
    curves = []
    for name, data in datasets.items():
        started = time.perf_counter()
        curves.append(
            loss_data_curve(
                data,
                probe,
                sizes=sizes,
                seeds=args.seeds,
                steps=args.steps,
                batch_size=args.batch_size,
                lr=args.lr,
                precision=args.precision,
                random_state=args.random_state,
                device=args.device,
                n_jobs=args.n_jobs,
                progress=not args.no_progress,
            )
        )
        print(f"{name}: {len(curves[-1].points)} probes in {time.perf_counter() - started:.1f} s")
    return curves


def _report(curves: list[LossDataCurve], args: argparse.Namespace, out: Path | None) -> None:
    comparison = None
    if args.epsilon is not None:
        unit = None if args.metric == "error" else args.unit
        comparison = compare(curves, args.epsilon, args.at, metric=args.metric, unit=unit)
        print()
        print(comparison)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        save_results(out / "results.json", curves, comparison)
        epsilon = args.epsilon if args.metric == "loss" and args.unit == "nats" else None
        plot_curves(curves, epsilon, out / "curves.png")
        print(f"\nwrote {out / 'results.json'} and {out / 'curves.png'}")


def _run_demo(args: argparse.Namespace) -> int:
    if args.quick:
        args.hidden, args.steps, args.seeds, args.lr = [64], 300, 2, 1e-3
    datasets = digits_representations(random_state=args.random_state)
    print(
        f"digits (scikit-learn): pool {next(iter(datasets.values())).pool_size}, "
        f"test {len(next(iter(datasets.values())).y_test)}; probe MLP{tuple(args.hidden)}, "
        f"{args.steps} Adam steps (lr {args.lr}, batch {args.batch_size}), {args.seeds} seeds"
    )
    curves = _train_curves(datasets, args)
    _report(curves, args, args.out)
    return 0


def _run_curve(args: argparse.Namespace) -> int:
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
        )
    curves = _train_curves(datasets, args, sizes=args.sizes)
    _report(curves, args, args.out)
    return 0


def _run_measures(args: argparse.Namespace) -> int:
    curves = load_curves(args.results)
    unit = None if args.metric == "error" else args.unit
    comparison = compare(curves, args.epsilon, args.at, metric=args.metric, unit=unit)
    rendered = {
        "text": str(comparison),
        "markdown": comparison.to_markdown(),
        "latex": comparison.to_latex(),
    }
    print(rendered[args.format])
    return 0


def _run_experiment(args: argparse.Namespace) -> int:
    ray = _ray_settings(args)
    experiment = load_experiment(args.experiment)
    names = ", ".join(rep.name for rep in experiment.representations)
    task = experiment.task.dataset if experiment.task else "npz features"
    settings = ", ".join(f"{key} {value}" for key, value in experiment.method.to_dict().items())
    print(f"{args.experiment}: {task}; representations {names}; method {settings}")
    if args.check:
        print("experiment file OK")
        return 0
    started = time.perf_counter()
    run = run_experiment(
        experiment,
        args.out,
        fresh=args.fresh,
        n_jobs=-1 if args.n_jobs is None else args.n_jobs,
        max_memory=args.max_memory,
        progress=not args.no_progress,
        ray=ray,
    )
    for name, timing in run.timings.items():
        how = "loaded (computed earlier in" if timing["loaded"] else "computed in"
        print(f"{name}: {how} {timing['seconds']:.1f} s" + (")" if timing["loaded"] else ""))
    print()
    print(run.table)
    files = write_report(run.run_dir)
    written = ", ".join(path.name for path in run.files)
    print(
        f"\nwrote {written}, experiment.toml and units/ to {run.run_dir} "
        f"in {time.perf_counter() - started:.1f} s; report: {files.html}"
    )
    return 0


def _run_report(args: argparse.Namespace) -> int:
    files = write_report(args.run_dir, epsilon=args.epsilon)
    print("wrote " + ", ".join(str(path) for path in files.paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
