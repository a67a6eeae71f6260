"""``probemeter pareto …``: Pareto probing from the command line (Pimentel et al., 2020).

* ``probemeter pareto sweep --train A.npz --train B.npz …`` — for each representation of one
  task, train the nuclear-norm and rank linear probes (§4.1) and a random MLP family for the
  label-shuffled complexity (§5); write ``points.csv``, ``pareto.json`` and ``frontiers.png``
  and print the hypervolume table (Tables 2–3);
* ``probemeter pareto table points.csv|pareto.json`` — the hypervolume table, dominant
  representations and frontier plots of points already computed (by ``sweep``, the example
  ``examples/pareto_english.py``, or your own CSV with columns ``task, measure,
  representation, complexity, accuracy``).
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from probemeter.pareto.method import ParetoMethod

__all__ = ["add_pareto_parser"]

#: --measures choices -> the measure names of the points (pareto.frontiers)
_MEASURES = {"nuclear-norm": "nuclear norm", "rank": "rank", "label-shuffled": "label-shuffled"}

_log = logging.getLogger(__name__)


def add_pareto_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``pareto sweep`` and ``pareto table`` under the main command's subparsers."""
    pareto = commands.add_parser("pareto", help="Pareto probing: complexity-accuracy frontiers")
    actions = pareto.add_subparsers(dest="pareto_command", required=True)

    sweep = actions.add_parser("sweep", help="train probe families on your features")
    sweep.add_argument(
        "--train", action="append", required=True, type=Path,
        help="features X and labels y (.npz, .pt, .safetensors, .parquet, or X.npy beside "
        "X.labels.npy); repeat per representation",
    )  # fmt: skip
    sweep.add_argument("--name", action="append", help="representation names, one per --train")
    sweep.add_argument("--task", default="task", help="task name for tables and plots")
    sweep.add_argument("--test-size", type=float, default=0.2, help="test fraction of each file")
    add_labels_option(sweep)
    sweep.add_argument(
        "--measures",
        nargs="+",
        choices=sorted(_MEASURES),
        default=sorted(_MEASURES),
        help="complexity measures to sweep",
    )
    add_method_options(
        sweep,
        ParetoMethod,
        skip=ParetoMethod.PARSER_OPTIONS,  # parsers need sentences: experiment files only
        title="linear probes (nuclear norm, rank)",
    )
    family = sweep.add_argument_group("random MLP family (label-shuffled complexity, App. A)")
    family.add_argument("--mlps", type=int, default=50, help="family size")
    family.add_argument("--mlp-steps", type=int, default=2000, help="Adam updates per MLP")
    family.add_argument("--mlp-lr", type=float, default=1e-3, help="Adam learning rate of the MLPs")
    add_run_options(sweep)
    add_figure_options(sweep)
    sweep.add_argument(
        "--out", type=Path, default=Path("probemeter-results"), help="folder of the results"
    )
    add_export_option(sweep)
    sweep.set_defaults(handler=_run_sweep)

    table = actions.add_parser("table", help="hypervolume table and plots of saved points")
    table.add_argument("points", type=Path, help="points.csv or pareto.json")
    table.add_argument(
        "--cap", action="append", default=[], metavar="MEASURE=VALUE",
        help="hypervolume interval [0, VALUE] for a measure (default: the shared maximum)",
    )  # fmt: skip
    table.add_argument(
        "--format", choices=("text", "markdown", "latex"), default="text", help="table format"
    )
    table.add_argument("--plot", type=Path, help="write the frontier plots to this image")
    table.set_defaults(handler=_run_table)


def _run_sweep(args: argparse.Namespace) -> int:
    from probemeter._exports import export_frames
    from probemeter._io import writable_folder
    from probemeter.data import ProbeData
    from probemeter.feature_files import load_features
    from probemeter.pareto.families import random_mlp_family
    from probemeter.pareto.frontiers import LABEL_SHUFFLED, NUCLEAR_NORM, RANK, ParetoFrontiers
    from probemeter.pareto.sweeps import linear_points, mlp_family_points
    from probemeter.training import TrainingConfig

    names = args.name or [path.stem for path in args.train]
    if len(names) != len(args.train):
        raise ValueError(f"got {len(names)} --name for {len(args.train)} --train")
    method = method_from_args(ParetoMethod, args)
    measures = {_MEASURES[m] for m in args.measures}
    penalties = method.penalty_values() if NUCLEAR_NORM in measures else ()
    ranks = RANK in measures and method.ranks
    if not (penalties or ranks or LABEL_SHUFFLED in measures):
        raise ValueError(
            f"--penalties {method.penalties} leaves no nuclear-norm probe and --measures "
            f"{' '.join(args.measures)} asks for no other family: nothing to train (add rank "
            "or label-shuffled to --measures)"
        )
    check_scalar(args.mlps, "--mlps", int, min_val=1)
    family = random_mlp_family(args.mlps, random_state=args.random_state)
    config = TrainingConfig(steps=args.mlp_steps, lr=args.mlp_lr)
    # every file is read and the output folder proven writable before any probe is trained
    datasets = {
        name: ProbeData.from_arrays(
            *load_features(path), test_size=args.test_size, name=name,
            random_state=args.random_state, labels=args.labels,
        )
        for name, path in zip(names, args.train)
    }  # fmt: skip
    figures = figure_options(args)
    formats = export_option(args)
    writable_folder(args.out, "--out")
    mlps = len(family) if LABEL_SHUFFLED in measures else 0
    plan = {
        name: _SweepPlan(len(penalties), min(data.n_classes, data.n_features) if ranks else 0, mlps)
        for name, data in datasets.items()
    }
    for line in _plan_lines(plan, method, args):
        _log.info("%s", line)
    frames = []
    for name, data in datasets.items():
        started = time.perf_counter()
        if plan[name].linear:
            frames.append(
                linear_points(
                    data, args.task, name, penalties=penalties, ranks=None if ranks else (),
                    config=method.training(), random_state=args.random_state,
                    # "auto" stays on the CPU (see pareto.method.pareto_unit)
                    device="cpu" if args.device == "auto" else args.device,
                )
            )  # fmt: skip
            seconds = time.perf_counter() - started
            _log.info("%s: %d linear probes in %.1f s", name, plan[name].linear, seconds)
        if mlps:
            trained = time.perf_counter()
            frames.append(
                mlp_family_points(
                    data, args.task, name, family, config, random_state=args.random_state,
                    execution=execution_from_args(args),
                )
            )  # fmt: skip
            seconds = time.perf_counter() - trained
            _log.info("%s: %d random MLPs, each trained twice, in %.1f s", name, mlps, seconds)
        _log.info("%s: %.1f s", name, time.perf_counter() - started)
    import pandas as pd

    points = pd.concat(frames, ignore_index=True)
    points.to_csv(args.out / "points.csv", index=False)
    analysis = ParetoFrontiers(points, metadata={"command": "probemeter pareto sweep"})
    analysis.save(args.out / "pareto.json")
    _print_analysis(analysis, "text")
    written = export_frames(analysis.frames(), args.out, formats)
    written += figures.save(analysis.figure(), args.out / "frontiers")
    names = ", ".join(path.name for path in written)
    _log.info("wrote %s, %s, %s", args.out / "points.csv", args.out / "pareto.json", names)
    return 0


@dataclass(frozen=True)
class _SweepPlan:
    """The probes ``pareto sweep`` trains on one representation: nuclear-norm probes (one per
    λ), rank probes (one per rank 1 … min(K, d)) and random MLPs (each trained twice, on the
    real and on the shuffled labels)."""

    penalties: int
    ranks: int
    mlps: int

    @property
    def linear(self) -> int:
        """The linear probes: nuclear-norm and rank."""
        return self.penalties + self.ranks


def _plan_lines(plan: dict[str, _SweepPlan], method: ParetoMethod, args: Any) -> list[str]:
    """What the sweep will train, said before it trains: the probes of each family per
    representation with their Adam updates and the flags that set them, and where most of
    the time goes (the MLPs, which ``--mlps`` and ``--measures`` reduce or leave out)."""
    nuclear = "nuclear-norm" in args.measures
    lines = []
    for name, probes in plan.items():
        penalties = (
            f"{probes.penalties} nuclear-norm probes (--penalties {method.penalties})"
            if probes.penalties
            else f"no nuclear-norm probe ({'--penalties 0' if nuclear else '--measures'})"
        )
        ranks = f"{probes.ranks} rank probes (ranks 1..{probes.ranks})" if probes.ranks else ""
        linear = f"{penalties}{', ' + ranks if ranks else ''}"
        if probes.linear:
            linear += f", {method.steps} Adam updates each (--steps)"
        mlps = (
            f"; {probes.mlps} random MLPs (--mlps), each trained twice (real and shuffled "
            f"labels), {args.mlp_steps} Adam updates each (--mlp-steps)"
            if probes.mlps
            else "; no random MLP (--measures)"
        )
        lines.append(f"{name}: will train {linear}{mlps}")
    if any(probes.mlps for probes in plan.values()):
        lines.append(
            "the random MLPs take most of the time: fewer with --mlps N, none with --measures "
            "nuclear-norm rank"
        )
    return lines


def _run_table(args: argparse.Namespace) -> int:
    import pandas as pd

    from probemeter.pareto.frontiers import ParetoFrontiers

    path: Path = args.points
    if not path.is_file():
        raise ValueError(f"points file {str(path)!r} does not exist")
    caps = {}
    for item in args.cap:
        measure, _, value = item.rpartition("=")
        try:
            caps[measure] = float(value)
        except ValueError:
            raise ValueError(f"--cap must be MEASURE=VALUE; got {item!r}") from None
    if path.suffix == ".json":
        loaded = ParetoFrontiers.load(path)
        analysis = ParetoFrontiers(loaded.points, {**loaded.caps, **caps}, loaded.metadata)
    elif path.suffix == ".csv":
        try:  # pandas' parse errors are ValueErrors that do not name the file
            analysis = ParetoFrontiers(pd.read_csv(path), caps)
        except (ValueError, UnicodeDecodeError) as error:
            raise ValueError(f"points file {str(path)!r}: {error}") from None
    else:
        raise ValueError(f"points file {str(path)!r} must be .csv or .json")
    _print_analysis(analysis, args.format)
    if args.plot:
        analysis.figure().savefig(args.plot, dpi=150, bbox_inches="tight")
        _log.info("wrote %s", args.plot)
    return 0


def _print_analysis(analysis: Any, fmt: str) -> None:
    table = analysis.hypervolume_table()
    print(
        {"text": str, "markdown": type(table).to_markdown, "latex": type(table).to_latex}[fmt](
            table
        )
    )
    for task in analysis.tasks:
        for measure in analysis.measures:
            if analysis.points[(analysis.points["task"] == task)
                               & (analysis.points["measure"] == measure)].empty:  # fmt: skip
                continue
            print(f"dominant on {task} ({measure}): {', '.join(analysis.dominant(task, measure))}")
