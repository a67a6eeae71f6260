"""Do narrow chunks of probes train faster on a GPU when merged into one wide chunk?

The engine groups probes by their minibatch width min(n, batch) and merges neighbouring groups
while padding the narrower probes with zero-weight rows costs less arithmetic than another
chunk's fixed per-step cost saves (``probemeter.training.engine._STEP_COSTS``). On a 2-core CPU
a step's fixed cost is small (0.4 ms) against the arithmetic of padding, so the reference
protocol trains in 7 chunks; on a GPU a chunk step costs about half a millisecond of kernel
launches whatever its width, while the padding's arithmetic is nearly free, so every probe goes
into one chunk. This script needs a CUDA device. For each case it prints the chunk plans under
the CPU's cost model (the baseline: what the engine did on a GPU before the costs depended on
the device) and the GPU's (as shipped), then times the engine on the GPU with each, alternately
``--repeats`` times, in this one process: wall seconds, achieved GFLOP/s against the f32 matmul
peak measured here, the GPU's peak allocated memory, the ratio of the best runs and the largest
relative change of a probe's loss (chunking changes speed only). Cases (f32):

* ``reference``: digits' pixels, MLP 512×512, 10 sizes × 4 seeds, 1000 steps, batch 256, Adam
  1e-4 (``curve_speed.py``'s reference protocol);
* ``fashion-mnist``: the same on Fashion-MNIST's 784-d pixels (Debian ``dataset-fashion-mnist``);
* ``converged``: ``paper_scale.py``'s converged curve, Fashion-MNIST's full pool, 20 sizes × 4
  seeds, early stopping on each probe's 10 % development split.

Usage::

    python benchmarks/gpu_chunks.py                # all cases, 2 repeats: about a minute
    python benchmarks/gpu_chunks.py --cases reference --repeats 3
    python benchmarks/gpu_chunks.py --quick --repeats 1     # the cases reduced, seconds
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
from curve_speed import (
    Case,
    build_cases,
    gpu_peak_mib,
    measure_peaks,
    reset_gpu_peak,
    run_engine,
)
from paper_scale import curve_case, run_curve

import probemeter.training.engine as engine
from probemeter.curves.curve import default_sizes
from probemeter.data import nested_subset
from probemeter.probes import MLP
from probemeter.training import TrainingConfig
from probemeter.training.memory import memory_budget

CASE_NAMES = ("reference", "fashion-mnist", "converged")
#: where the cases train (a CUDA device; the CPU only to try the script's steps)
DEVICE = torch.device("cuda")

#: a timed run: (wall seconds, every probe's loss, peak allocated MiB on the GPU or None)
Run = Callable[[], tuple[float, np.ndarray, float | None]]


@contextmanager
def cost_model(device_type: str) -> Iterator[None]:
    """Plan :data:`DEVICE`'s chunks with ``device_type``'s costs ("cpu": the baseline)."""
    shipped = engine._STEP_COSTS[DEVICE.type]
    engine._STEP_COSTS[DEVICE.type] = engine._STEP_COSTS[device_type]
    try:
        yield
    finally:
        engine._STEP_COSTS[DEVICE.type] = shipped


def describe_plan(
    subsets: list[np.ndarray],
    probe: MLP,
    dims: tuple[int, int],
    config: TrainingConfig,
    n_eval: int,
) -> Callable[[str], str]:
    """``rows×probes`` of every chunk the engine plans on :data:`DEVICE` (one process, the
    default budget) under ``device_type``'s cost model."""
    budget = memory_budget(None, DEVICE)

    def plan(device_type: str) -> str:
        chunks = engine._plan_chunks(
            subsets, probe, dims, config, budget, 1, n_eval=n_eval, device_type=device_type
        )
        return " ".join(f"{rows}×{members.size}" for members, rows in chunks)

    return plan


def fixed_step_case(case: Case) -> tuple[Run, Callable[[str], str], float]:
    """A ``curve_speed`` case: its timed run, its plans and its training arithmetic."""
    subsets = [np.arange(n) for _ in range(case.seeds) for n in case.sizes]
    config = TrainingConfig(steps=case.steps, batch_size=case.batch_size, lr=case.lr)
    dims = (case.data.n_features, case.data.n_classes)
    plan = describe_plan(subsets, case.probe, dims, config, len(case.data.y_test))

    def run() -> tuple[float, np.ndarray, float | None]:
        figures, curve = run_engine(case, "f32", DEVICE, n_jobs=1)
        return figures["wall_s"], curve.points["loss"].to_numpy(), figures["gpu_peak_mib"]

    return run, plan, case.training_flops()


def converged_case(quick: bool) -> tuple[Run, Callable[[str], str], None] | str:
    """``paper_scale``'s converged curve: its timed run and its plans (its arithmetic depends
    on the epochs early stopping chooses), or why it cannot run."""
    case = curve_case(quick, False, DEVICE)
    if isinstance(case, str):
        return case
    sizes = default_sizes(case.data.pool_size, 5 if quick else 20)
    seeds = 2 if quick else 4
    subsets = [nested_subset(case.data.pool_size, n, 0, s) for s in range(seeds) for n in sizes]
    dims = (case.data.n_features, case.data.n_classes)
    plan = describe_plan(subsets, case.probe, dims, case.config, len(case.data.y_test))

    def run() -> tuple[float, np.ndarray, float | None]:
        reset_gpu_peak(DEVICE)
        start = time.perf_counter()
        summary, _ = run_curve(case, "f32", 1)
        seconds = time.perf_counter() - start
        return seconds, np.asarray(summary["quality"]), gpu_peak_mib(DEVICE)

    return run, plan, None


def compare(
    name: str, run: Run, plan: Callable[[str], str], flops: float | None, peak: float, repeats: int
) -> None:
    """Time the case under both cost models, alternately, and print the figures."""
    print(f"\n{name}")
    for model in ("cpu", "cuda"):
        print(f"  plan with the {model} cost model: {plan(model)}")
    walls: dict[str, list[float]] = {"cpu": [], "cuda": []}
    losses: dict[str, np.ndarray] = {}
    with cost_model("cuda"):
        run()  # warm-up: kernels loaded, allocator and cuBLAS handles made
    for repeat in range(repeats):
        for model in ("cpu", "cuda"):
            with cost_model(model):
                seconds, losses[model], gpu_mib = run()
            walls[model].append(seconds)
            rate = flops / seconds / 1e9 if flops else None
            print(
                f"  run {repeat + 1}, {model} cost model: {seconds:.2f} s"
                + (
                    f", {rate:.0f} GFLOP/s ({100 * rate / peak:.1f} % of the f32 peak)"
                    if rate
                    else ""
                )
                + (f", GPU peak allocated {gpu_mib:.0f} MiB" if gpu_mib is not None else ""),
                flush=True,
            )
    before, after = min(walls["cpu"]), min(walls["cuda"])
    print(f"  best: {before:.2f} s → {after:.2f} s, {before / after:.2f}× faster")
    change = np.max(np.abs(losses["cuda"] - losses["cpu"]) / losses["cpu"])
    print(f"  largest relative change of a loss: {change:.1e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=CASE_NAMES, default=list(CASE_NAMES))
    parser.add_argument("--repeats", type=int, default=2, help="alternations (default 2)")
    parser.add_argument(
        "--quick", action="store_true", help="the cases reduced as curve_speed/paper_scale do"
    )
    args = parser.parse_args(argv)
    if DEVICE.type == "cuda" and not torch.cuda.is_available():
        print("gpu_chunks.py needs a CUDA device; this machine has none", file=sys.stderr)
        return 2
    peak = measure_peaks(DEVICE, quick=True, parallel=False)["f32"]
    name = torch.cuda.get_device_name(DEVICE) if DEVICE.type == "cuda" else "CPU"
    print(
        f"{name}, torch {torch.__version__}: f32 matmul peak {peak:.0f} GFLOP/s; step costs "
        f"(s, FLOP/s) cpu {engine._STEP_COSTS['cpu']}, cuda {engine._STEP_COSTS['cuda']}"
    )
    fixed = [name for name in args.cases if name != "converged"]
    cases, notes = build_cases(fixed, quick=args.quick) if fixed else ([], [])
    for note in notes:
        print(note)
    for case in cases:
        compare(case.name, *fixed_step_case(case), peak, args.repeats)
    if "converged" in args.cases:
        converged = converged_case(args.quick)
        if isinstance(converged, str):
            print(converged)
        else:
            compare("converged (early stopping)", *converged, peak, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
