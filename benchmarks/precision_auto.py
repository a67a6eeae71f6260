"""What does ``precision = "auto"`` choose on this machine, on what measurements, and what does
it save? (issue 44, item 3)

All in ONE process, one after another, so the ratios are fair on a loaded machine:

(a) **the choice**: :func:`probemeter.training.precision.auto_precision` as a run makes it
    (native bf16? the timed f32 and bf16 ``bmm`` of the engine's shapes, GFLOP/s), with the
    seconds it took (what "auto" adds to a run's start), then ``--repeats`` fresh measurements
    (the process's cache bypassed) to show how stable the rates and the choice are under the
    current load.
(b) **the reference protocol** (digits pixels, MLP 512×512, Adam 1e-4, batch 256, 10 sizes ×
    4 seeds; ``--steps`` updates, 1000 in the protocol) trained with ``precision="f32"`` and
    with ``precision="auto"``: the wall seconds and the CPU seconds of the whole process tree
    (the engine's worker processes included, ``_proc_tree.TreeMonitor``), their ratios, and
    the largest difference of the per-size mean test loss (nats) between the two curves.

Usage::

    python benchmarks/precision_auto.py                 # the choice, and the protocol at 250 steps
    python benchmarks/precision_auto.py --steps 1000    # the full protocol
    python benchmarks/precision_auto.py --no-curves     # the choice only (a second)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from _proc_tree import TreeMonitor, load_average
from curve_speed import cpu_model

from probemeter import Execution
from probemeter._device import resolve_device
from probemeter.curves.curve import default_sizes, loss_data_curve
from probemeter.datasets import digits_representations
from probemeter.probes import MLP
from probemeter.training import TrainingConfig, precision
from probemeter.training.engine import warm_workers
from probemeter.training.precision import auto_precision


def the_choice(device: str, repeats: int) -> dict:
    """(a): the cached choice a run makes, its cost, and ``repeats`` fresh measurements."""
    began = time.perf_counter()
    choice = auto_precision(device)
    seconds = time.perf_counter() - began
    fresh = [precision._auto_precision.__wrapped__(choice.device) for _ in range(repeats)]
    return {
        "choice": choice.to_dict(),
        "seconds": seconds,
        "fresh": [
            {"chosen": c.chosen, "f32_gflops": c.f32_gflops, "bf16_gflops": c.bf16_gflops}
            for c in fresh
        ],
    }


def the_protocol(device: str, steps: int, n_jobs: int) -> dict:
    """(b): the reference protocol in f32 and with "auto", one after the other."""
    data = digits_representations()["pixels"]
    sizes = default_sizes(data.pool_size, 10)
    execution = Execution(device=device, n_jobs=n_jobs)
    warming = warm_workers(n_jobs) if device == "cpu" else None
    if warming is not None:  # the workers' start-up is charged to neither precision
        warming.join()
    found, curves = {}, {}
    for name in ("f32", "auto"):
        config = TrainingConfig(steps=steps, batch_size=256, lr=1e-4, precision=name)
        with TreeMonitor() as monitor:
            began = time.perf_counter()
            curve = loss_data_curve(
                data, MLP((512, 512)), sizes, 4, config=config, execution=execution,
                dev_fraction=0.0,
            )  # fmt: skip
            wall = time.perf_counter() - began
        curves[name] = curve
        found[name] = {
            "wall_s": wall,
            "tree_cpu_s": monitor.figures()["cpu_s"],
            "trained_as": curve.metadata["training"]["precision"],
        }
    difference = np.abs(curves["auto"].mean("loss") - curves["f32"].mean("loss"))
    found["max_mean_loss_difference_nats"] = float(difference.max())
    found["cpu_ratio_f32_over_auto"] = found["f32"]["tree_cpu_s"] / found["auto"]["tree_cpu_s"]
    found["wall_ratio_f32_over_auto"] = found["f32"]["wall_s"] / found["auto"]["wall_s"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5, help="fresh measurements of (a)")
    parser.add_argument("--steps", type=int, default=250, help="Adam updates per probe in (b)")
    parser.add_argument("--n-jobs", type=int, default=-1, help="the engine's worker processes")
    parser.add_argument("--no-curves", action="store_true", help="(a) only")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    device = str(resolve_device(args.device))
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "device": device,
        "load_average_before": [round(x, 2) for x in load_average()],
    }
    result["auto"] = the_choice(device, args.repeats)
    choice = result["auto"]["choice"]
    print(f"{result['date']}  {result['cpu']}  torch {result['torch']}  device {device}")
    print(f"load average {result['load_average_before']}")
    print(f"precision='auto' chooses {choice['chosen']}: {choice['reason']}")
    print(f"  native bf16: {choice['native_bf16']} ({choice['hardware']}); measured in "
          f"{result['auto']['seconds'] * 1e3:.0f} ms: {choice['measured']}")  # fmt: skip
    for i, fresh in enumerate(result["auto"]["fresh"], 1):
        ratio = fresh["bf16_gflops"] / fresh["f32_gflops"]
        print(f"  fresh {i}: f32 {fresh['f32_gflops']:.0f}, bf16 {fresh['bf16_gflops']:.0f} "
              f"GFLOP/s ({ratio:.2f}x) -> {fresh['chosen']}")  # fmt: skip
    if not args.no_curves:
        protocol = the_protocol(device, args.steps, args.n_jobs)
        result["protocol"] = {"steps": args.steps, **protocol}
        print(f"reference protocol, {args.steps} steps, 10 sizes x 4 seeds, MLP 512x512:")
        for name in ("f32", "auto"):
            row = protocol[name]
            print(f"  {name:>4} (trained as {row['trained_as']}): {row['wall_s']:.1f} s wall, "
                  f"{row['tree_cpu_s']:.1f} CPU-s")  # fmt: skip
        print(f"  f32 / auto: {protocol['wall_ratio_f32_over_auto']:.2f}x wall, "
              f"{protocol['cpu_ratio_f32_over_auto']:.2f}x CPU; per-size mean losses within "
              f"{protocol['max_mean_loss_difference_nats']:.1e} nats")  # fmt: skip
    result["load_average_after"] = [round(x, 2) for x in load_average()]
    print(f"load average after {result['load_average_after']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
