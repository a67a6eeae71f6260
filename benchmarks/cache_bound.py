"""Do chunks of probes on few rows train faster when their state fits the CPU's cache?

On few minibatch rows a training step does little arithmetic per parameter but still reads and
writes every weight, gradient and Adam moment, so a chunk whose state overflows the last-level
cache waits on main memory. The engine caps such chunks (fewer than ``CACHE_BOUND_ROWS`` rows)
to :func:`probemeter.training.cache.cache_budget` bytes of state
(:mod:`probemeter.training.cache`). This script prints the machine's cache share and budget,
the chunk plans with and without the cap, and times loss-data curves in the engine's worker
processes (``n_jobs=-1``) with the cap off (the baseline: ``CACHE_BOUND_ROWS = 0``) and on,
alternately ``--repeats`` times, in this one process: wall and process-tree CPU seconds, the
tree's peak memory, the ratios of the best runs, and the largest change of a probe's loss
between the two (chunking changes speed only). Cases, on the digits' pixels with MLP 2 × 512
probes (the reference protocol of ``curve_speed.py``: Adam 1e-4, batch 256, 4 seeds):

* ``few-rows``: the protocol's sizes below 128 (10, 17, 29, 51, 87), the chunks the cap splits;
* ``reference``: all 10 sizes, 1000 steps (not in ``--quick``).

Usage::

    python benchmarks/cache_bound.py            # both cases, 3 repeats: about 15 minutes
    python benchmarks/cache_bound.py --quick    # few-rows at 300 steps, once: about 30 s
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from _proc_tree import TreeMonitor, load_average
from curve_speed import digits_pixels, start_worker_pool

import probemeter.training.engine as engine
from probemeter._method import MAX_MEMORY_GIB
from probemeter.curves.curve import LossDataCurve, default_sizes, loss_data_curve
from probemeter.data import ProbeData
from probemeter.probes import MLP
from probemeter.training import TrainingConfig
from probemeter.training.cache import cache_budget, last_level_cache_share
from probemeter.training.workers import worker_count

PROBE = MLP((512, 512))
SEEDS = 4
BATCH, LR = 256, 1e-4


@contextmanager
def cache_cap(on: bool) -> Iterator[None]:
    """The engine's cap on few-row chunks switched on (as shipped) or off (the baseline)."""
    default = engine.CACHE_BOUND_ROWS
    engine.CACHE_BOUND_ROWS = default if on else 0
    try:
        yield
    finally:
        engine.CACHE_BOUND_ROWS = default


def chunk_plan(data: ProbeData, sizes: np.ndarray, steps: int) -> str:
    """Probes per chunk by rows, as the engine plans them (``rows×probes`` per chunk)."""
    subsets = [np.arange(n) for n in sizes for _ in range(SEEDS)]
    config = TrainingConfig(steps=steps, batch_size=BATCH, lr=LR)
    chunks = engine._plan_chunks(
        subsets,
        PROBE,
        (data.n_features, data.n_classes),
        config,
        MAX_MEMORY_GIB,
        worker_count(-1),
        n_eval=len(data.y_test),
        cache_bytes=cache_budget(),
    )
    return " ".join(f"{rows}×{members.size}" for members, rows in chunks)


def run_curve(data: ProbeData, sizes: np.ndarray, steps: int) -> tuple[dict, LossDataCurve]:
    """One curve in the engine's worker processes, with the process tree's figures."""
    with TreeMonitor() as monitor:
        curve = loss_data_curve(
            data,
            PROBE,
            sizes,
            SEEDS,
            config=TrainingConfig(steps, BATCH, LR),
            dev_fraction=0.0,
        )
    return monitor.figures(), curve


def compare(name: str, data: ProbeData, sizes: np.ndarray, steps: int, repeats: int) -> None:
    """Time the case with the cap off and on, alternately, and print the figures."""
    print(f"\n{name}: sizes {sizes.tolist()}, {SEEDS} seeds, {steps} steps")
    for on in (False, True):
        with cache_cap(on):
            print(f"  plan, cap {'on ' if on else 'off'}: {chunk_plan(data, sizes, steps)}")
    figures: dict[bool, list[dict]] = {False: [], True: []}
    losses: dict[bool, np.ndarray] = {}
    for repeat in range(repeats):
        for on in (False, True):
            with cache_cap(on):
                measured, curve = run_curve(data, sizes, steps)
            figures[on].append(measured)
            losses[on] = curve.points["loss"].to_numpy()
            print(
                f"  run {repeat + 1} cap {'on ' if on else 'off'}: wall {measured['wall_s']:.1f} s,"
                f" CPU {measured['cpu_s']:.1f} s, tree peak PSS"
                f" {measured['peak_tree_pss_mib']:.0f} MiB, load {load_average()[0]:.2f}",
                flush=True,
            )
    for key, label in (("wall_s", "wall"), ("cpu_s", "process-tree CPU")):
        off = min(f[key] for f in figures[False])
        on = min(f[key] for f in figures[True])
        print(f"  best {label}: cap off {off:.1f} s, on {on:.1f} s: {off / on:.2f}× faster")
    change = np.max(np.abs(losses[True] - losses[False]) / losses[False])
    print(f"  largest relative change of a probe's loss: {change:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few-rows case, 300 steps, once")
    parser.add_argument("--repeats", type=int, default=None, help="alternations (default 3)")
    args = parser.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    share = last_level_cache_share()
    print(
        f"last-level cache per core: {share / 2**20:.1f} MiB (0: unknown); cache budget of a "
        f"chunk on fewer than {engine.CACHE_BOUND_ROWS} rows: {cache_budget() / 2**20:.1f} MiB"
    )
    data = digits_pixels()
    sizes = default_sizes(data.pool_size, 10)
    start_worker_pool(-1)
    compare("few-rows", data, sizes[sizes < 128], 300 if args.quick else 1000, repeats)
    if not args.quick:
        compare("reference", data, sizes, 1000, repeats)


if __name__ == "__main__":
    main()
