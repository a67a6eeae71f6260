"""How much does training a grid of probe settings in one engine pass save over training the
settings one after another?

``loss_data_curve(..., settings={"weight_decay": [...], "lr": [...]})`` trains every setting's
probes (each (size, seed) once per setting) stacked in the same chunks of one engine call and
chooses a setting per size on the development split (issue 33, item 4). The alternative is one
curve per setting, then the choice. This script times, in ONE process and alternately
``--repeats`` times, a 3 × 3 grid (weight decay × learning rate) both ways on the digits'
pixels: wall seconds of the best run of each, the ratio, and the largest relative difference
between a setting's losses in the grid and trained alone (float rounding: a probe's stack
companions change the order of its sums, never what it computes).

Cases (``--device`` default: the engine's ``auto``; on the CPU the engine's worker processes,
``--n-jobs`` default -1: as many as cores; 1: this process, on one thread):

* ``mlp64``: MLP 64, 10 sizes × 4 seeds, 500 Adam steps per probe, batch 256;
* ``mlp512``: MLP 2 × 512 (the reference protocol's probe), 10 sizes × 4 seeds, 1000 steps
  (not in ``--quick``).

Usage::

    python benchmarks/settings_grid.py            # both cases, 2 repeats: many minutes
    python benchmarks/settings_grid.py --cases mlp64 --n-jobs 1
    python benchmarks/settings_grid.py --quick    # mlp64 at 6 sizes × 2 seeds, 150 steps, once
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch
from _proc_tree import load_average
from curve_speed import digits_pixels, start_worker_pool

from probemeter import Execution
from probemeter.curves.curve import LossDataCurve, default_sizes, loss_data_curve
from probemeter.curves.defaults import CURVE_DEV_FRACTION
from probemeter.data import ProbeData
from probemeter.probes import MLP
from probemeter.training import TrainingConfig
from probemeter.training.config import grid_settings
from probemeter.training.probe_runs import held_out_count

#: the grid: weight decay (λ of the L2 penalty) × Adam learning rate
GRID = {"weight_decay": [0.0, 1e-4, 1e-3], "lr": [1e-4, 3e-4, 1e-3]}
#: the full run's cases: probe and Adam steps (10 sizes × 4 seeds each)
CASES = {"mlp64": (MLP((64,)), 500), "mlp512": (MLP((512, 512)), 1000)}


def grid_pass(
    data: ProbeData, probe: MLP, sizes: np.ndarray, seeds: int, config: TrainingConfig, **engine
) -> tuple[float, LossDataCurve]:
    """Seconds of one curve over the whole grid (one engine call), and the curve."""
    start = time.perf_counter()
    curve = loss_data_curve(data, probe, sizes, seeds, config=config, settings=GRID, **engine)
    return time.perf_counter() - start, curve


def one_by_one(
    data: ProbeData, probe: MLP, sizes: np.ndarray, seeds: int, config: TrainingConfig, **engine
) -> tuple[float, list[LossDataCurve]]:
    """Seconds of one curve per setting of the grid, one after another, and the curves."""
    start = time.perf_counter()
    curves = [
        loss_data_curve(data, probe, sizes, seeds, config=setting, **engine)
        for setting in grid_settings(config, GRID)
    ]
    return time.perf_counter() - start, curves


def largest_difference(grid: LossDataCurve, alone: list[LossDataCurve]) -> float:
    """The largest relative difference of a setting's mean development loss at a size between
    the grid's record and its own curve."""
    record = grid.settings_frame()
    settings = [(c.weight_decay, c.lr) for c in grid_settings(TrainingConfig(), GRID)]
    worst = 0.0
    for (decay, lr), curve in zip(settings, alone):
        rows = record[(record["weight_decay"] == decay) & (record["lr"] == lr)].set_index("n")
        own = curve.development_curve().mean("loss")
        worst = max(worst, float(np.max(np.abs(rows["dev_loss"] - own) / own)))
    return worst


def compare(
    name: str,
    data: ProbeData,
    probe: MLP,
    sizes: np.ndarray,
    seeds: int,
    steps: int,
    repeats: int,
    engine: dict,
) -> None:
    """Time the grid both ways, alternately, and print the figures."""
    config = replace(TrainingConfig(), steps=steps)
    settings = len(grid_settings(config, GRID))
    print(
        f"\n{name}: {probe.name}, {len(sizes)} sizes × {seeds} seeds × {settings} settings "
        f"({len(sizes) * seeds * settings} probes), {steps} steps, batch {config.batch_size}"
    )
    times: dict[str, list[float]] = {"grid": [], "alone": []}
    for repeat in range(repeats):
        seconds, grid = grid_pass(data, probe, sizes, seeds, config, **engine)
        times["grid"].append(seconds)
        seconds, alone = one_by_one(data, probe, sizes, seeds, config, **engine)
        times["alone"].append(seconds)
        print(
            f"  run {repeat + 1}: one pass {times['grid'][-1]:.1f} s, {settings} one after "
            f"another {times['alone'][-1]:.1f} s (load {load_average()[0]:.2f})",
            flush=True,
        )
    best_grid, best_alone = min(times["grid"]), min(times["alone"])
    print(
        f"  best: one pass {best_grid:.1f} s, one after another {best_alone:.1f} s: "
        f"{best_alone / best_grid:.2f}× faster in one pass"
    )
    chosen = ", ".join(
        f"{row['n']}: λ {row['weight_decay']:g} lr {row['lr']:g}"
        for row in grid.metadata["settings"]["chosen"]
    )
    print(f"  chosen on dev (n: setting): {chosen}")
    difference = largest_difference(grid, alone)
    print(f"  largest relative difference of a dev loss, grid vs alone: {difference:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="mlp64, small, once")
    parser.add_argument("--repeats", type=int, default=None, help="alternations (default 2)")
    parser.add_argument("--device", default="auto", help="the engine's device (default auto)")
    parser.add_argument("--n-jobs", type=int, default=-1, help="CPU workers (default -1: all)")
    parser.add_argument(
        "--cases", nargs="+", choices=CASES, default=list(CASES), help="cases of the full run"
    )
    args = parser.parse_args()
    engine = {"execution": Execution(device=args.device, n_jobs=args.n_jobs)}
    if args.n_jobs == 1:  # both ways on one thread: the engine trains small work so anyway
        torch.set_num_threads(1)
    repeats = args.repeats or (1 if args.quick else 2)
    data = digits_pixels()
    left = data.pool_size - held_out_count(data.pool_size, CURVE_DEV_FRACTION)
    start_worker_pool(args.n_jobs)
    if args.quick:
        sizes = default_sizes(left, 6)
        compare("mlp64", data, MLP((64,)), sizes, 2, 150, repeats, engine)
        return
    for name in args.cases:
        probe, steps = CASES[name]
        compare(name, data, probe, default_sizes(left, 10), 4, steps, repeats, engine)


if __name__ == "__main__":
    main()
