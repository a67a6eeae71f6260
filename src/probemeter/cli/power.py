"""``probemeter power`` and ``probemeter recommend``: data requirements of a comparison problem
(Zhu et al., 2022), registered on the main parser by :func:`add_power_commands`.

* ``probemeter power --a A.npz --b B.npz`` — train both configurations on stratified subsets
  of 2^k examples per class (4:1:1), print the Table-2-style table with the simulated power at
  each N_test, the collapse verdict of the 6-fold rotation (optional), and write
  ``power.json``, ``comparison.json``, ``power.png`` and ``bounds.png``;
* ``probemeter recommend --gap 0.05 --features 768`` — the recommended N_train from the bound
  alone, no training.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

from probemeter.cli._options import (
    add_export_option,
    add_figure_options,
    add_method_options,
    add_run_options,
    execution_from_args,
    export_option,
    figure_options,
    method_from_args,
)
from probemeter.power.bounds import COUNTINGS, VARIANTS
from probemeter.power.method import PowerMethod

__all__ = ["add_power_commands"]

_log = logging.getLogger(__name__)


def add_power_commands(commands: Any) -> None:
    """Add the ``power`` and ``recommend`` sub-commands to an argparse sub-parser set."""
    power = commands.add_parser(
        "power", help="power and data requirements of comparing two configurations"
    )
    power.add_argument("--a", required=True, type=Path, help="features (X, y) of configuration A")
    power.add_argument(
        "--b", type=Path, help="features (X, y) of configuration B, same examples (default: --a)"
    )
    power.add_argument("--name-a", default=None)
    power.add_argument("--name-b", default=None)
    probe = PowerMethod.option_named("probe")
    for side in ("a", "b"):
        power.add_argument(
            f"--hidden-{side}",
            type=int,
            nargs="*",
            default=list(probe.default),
            help=f"hidden widths of {side.upper()}'s probe (none: linear)",
        )
    # --a is the baseline; each configuration has its own probe (--hidden-a/--hidden-b)
    add_method_options(power, PowerMethod, skip=("baseline", "probe"))
    power.add_argument(
        "--simulations", type=int, default=1000, help="simulated test sets per power estimate"
    )
    _bound_options(power)
    power.add_argument(
        "--collapse",
        choices=("rotation", "none"),
        default="rotation",
        help="also run the 6-fold rotation and give a collapse verdict",
    )
    power.add_argument("--tolerance", type=float, default=0.01, help="collapse tolerance")
    add_run_options(power, progress=False)
    add_figure_options(power)
    power.add_argument(
        "--out", type=Path, default=Path("probemeter-power"), help="folder of the results"
    )
    add_export_option(power)
    power.set_defaults(handler=_run_power)

    recommend = commands.add_parser(
        "recommend", help="recommended training size from a pilot gap |R1 - R2| (no training)"
    )
    gap = recommend.add_mutually_exclusive_group(required=True)
    gap.add_argument("--gap", type=float, help="|R1 - R2| of the pilot study")
    gap.add_argument("--r", type=float, nargs=2, metavar=("R1", "R2"), help="the two results")
    recommend.add_argument("--parameters", type=int, help="parameters of the probe")
    recommend.add_argument("--features", type=int, help="D, to count a probe's parameters")
    recommend.add_argument(
        "--classes",
        type=int,
        help="K, to count parameters (default 2); a binary probe has one logit, so D + 1 "
        "parameters for logistic regression and (D + 1)H + H + 1 with one hidden layer "
        "(Zhu et al. §3.4, fn. 6); K > 2: K logits",
    )
    recommend.add_argument("--hidden", type=int, nargs="*", default=[], help="MLP widths")
    _bound_options(recommend)
    recommend.add_argument(
        "--variant", choices=VARIANTS, default="standard", help="the bound's variant"
    )
    recommend.add_argument("--C", type=float, default=1.0, help="Theorem 3's constant")
    recommend.add_argument(
        "--first-block-fraction", type=float, default=0.001, help="t1 / n of prequential MDL"
    )
    recommend.add_argument("--eta", type=float, default=4.0, help="train:dev:test = eta:1:1")
    recommend.set_defaults(handler=_run_recommend)


def _bound_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("generalisation bound")
    group.add_argument("--delta", type=float, default=1e-8, help="failure probability δ")
    group.add_argument("--factor", type=float, default=2.0, help="bound = |R1 - R2| / factor")
    group.add_argument("--bits", type=int, default=32, help="bits per parameter")
    group.add_argument(
        "--counting",
        choices=COUNTINGS,
        default="paper",
        help="|F| = 2^bits x parameters (paper) or (2^bits)^parameters (exact)",
    )


def _run_power(args: argparse.Namespace) -> int:
    import numpy as np

    from probemeter.feature_files import load_features
    from probemeter.power.collapse import collapse_verdict
    from probemeter.power.paired import run_configurations
    from probemeter.power.sampling import rotation_splits, stratified_splits
    from probemeter.power.table import power_report
    from probemeter.probes import MLP

    method = method_from_args(PowerMethod, args, fixed={"baseline": args.name_a or "a"})
    figures, formats = figure_options(args), export_option(args)
    X_a, y = load_features(args.a)
    X_b, y_b = load_features(args.b) if args.b else (X_a, y)
    y, y_b = np.asarray(y).astype(np.int64), np.asarray(y_b).astype(np.int64)
    if y.shape != y_b.shape or not np.array_equal(y, y_b):
        raise ValueError(
            f"--a and --b have different labels ({y.size} vs {y_b.size} examples): a comparison "
            "needs both configurations on the same examples (paired predictions)"
        )
    name_a = args.name_a or args.a.stem
    name_b = args.name_b or (args.b.stem if args.b else f"{name_a}-b")
    if name_a == name_b:
        name_b = f"{name_b}-b"
    probe_a, probe_b = MLP(tuple(args.hidden_a)), MLP(tuple(args.hidden_b))
    if args.b is None and probe_a == probe_b:
        raise ValueError(
            "--b not given and --hidden-a equals --hidden-b: the two configurations are "
            "identical (a collapsed comparison); give --b or different probes"
        )
    training = {
        "probes": {name_a: probe_a, name_b: probe_b},
        "config": method.training(),
        "execution": execution_from_args(args),
        "random_state": args.random_state,
    }
    features = {name_a: X_a, name_b: X_b}
    started = time.perf_counter()
    splits = stratified_splits(y, list(method.per_class), random_state=args.random_state)
    comparison = run_configurations(features, y, splits, method.seeds, **training).pair(
        name_a, name_b
    )
    report = power_report(
        [comparison],
        alpha=method.alpha,
        n_simulations=args.simulations,
        random_state=args.random_state,
        factor=args.factor,
        delta=args.delta,
        counting=args.counting,
        bits_per_parameter=args.bits,
    )
    print(report)
    verdict = None
    if args.collapse == "rotation":
        rotation = run_configurations(
            features, y, rotation_splits(y, 6, random_state=args.random_state), method.seeds,
            **training,
        ).pair(name_a, name_b)  # fmt: skip
        verdict = collapse_verdict(rotation, alpha=method.alpha, tolerance=args.tolerance)
        print(f"\ncollapse (6-fold rotation): {verdict}")
    _log.info("trained in %.1f s", time.perf_counter() - started)
    _write_power_outputs(args.out, report, comparison, verdict, figures, formats)
    return 0


def _write_power_outputs(
    out: Path, report: Any, comparison: Any, verdict: Any, figures: Any, formats: tuple[str, ...]
) -> None:
    from matplotlib.figure import Figure

    from probemeter._exports import export_frames
    from probemeter._figures import shared_legend
    from probemeter._io import write_json_atomic
    from probemeter.power.table import power_frames

    out.mkdir(parents=True, exist_ok=True)
    report.save(out / "power.json")
    comparison.save(out / "comparison.json")
    if verdict is not None:
        write_json_atomic(out / "collapse.json", verdict.to_dict())
    bounds = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax = comparison.plot_bounds(bounds.subplots())
    ax.get_legend().remove()  # one legend for the figure, below it
    ax.set_title("accuracy and the generalisation bound (Zhu et al. Fig. 2)", fontsize=10)
    shared_legend(bounds, [ax], columns=2)
    written = export_frames(power_frames(report, [comparison]), out, formats)
    written += figures.save(report.figure(), out / "power") + figures.save(bounds, out / "bounds")
    _log.info("wrote %s/power.json, comparison.json, %s", out, ", ".join(p.name for p in written))


def _run_recommend(args: argparse.Namespace) -> int:
    from probemeter.power.bounds import probe_parameter_count, recommend_train_size

    for value in args.r or ():
        if not 0 <= value <= 1:
            raise ValueError(f"--r takes two accuracies in [0, 1]; got {value}")
    for flag in ("parameters", "features", "classes"):
        value = getattr(args, flag)
        if value is not None and value < (2 if flag == "classes" else 1):
            least = 2 if flag == "classes" else 1
            raise ValueError(f"--{flag} must be an integer >= {least}; got {value}")
    gap = args.gap if args.gap is not None else abs(args.r[0] - args.r[1])
    if gap > 1:  # a zero or negative gap gets the bound's own message
        raise ValueError(f"--gap must be in (0, 1] (|R1 - R2| of two accuracies); got {gap}")
    if args.parameters is not None:
        n_parameters = args.parameters
    elif args.features is not None:
        # Zhu et al. §3.4 fn. 6: one logit for a binary task, D + 1 or (D + 1)H + H + 1
        n_parameters = probe_parameter_count(args.features, args.classes or 2, args.hidden)
    else:
        raise ValueError("give --parameters, or --features (with --classes/--hidden)")
    recommendation = recommend_train_size(
        gap,
        n_parameters,
        factor=args.factor,
        delta=args.delta,
        bits_per_parameter=args.bits,
        counting=args.counting,
        variant=args.variant,
        C=args.C,
        first_block_fraction=args.first_block_fraction,
        eta=args.eta,
    )
    print(recommendation)
    return 0
