"""How do time and memory grow with probes, steps, input dimension and test-set size, does the
memory budget hold, and what does the Ray backend cost over the local one?

Every engine measurement runs :func:`probemeter.training.engine.fit_evaluate` on synthetic Gaussian
features (45 classes, as in the ELMo part-of-speech setting of Whitney et al.) in a **fresh
subprocess** with one torch thread and ``n_jobs=1`` (in-process training), so that its peak
memory is its own: the peak resident memory above what the process held just before training
(features, torch, a warm-up fit), read from ``/proc/self/status`` (VmHWM, reset through
``/proc/self/clear_refs``; Linux only), with glibc returning freed blocks to the system.
Times are wall-clock and CPU seconds of the process (one thread: the CPU time is the work,
and is far less disturbed than the wall time by other programs competing for the cores); the
ratios are of CPU time. The tables, each at 1×, 2×, 4× and 8× of a base case:

* **probes × steps**: MLP(256) probes on 256-d features; probes grow at fixed steps, then steps
  at fixed probes; time should grow with probes × steps, memory with probes only;
* **input dimension**: MLP(512, 512) probes, d = 512 … 4096 (the 8× row is the ELMo setting);
* **test rows**: evaluation streams over blocks of 4096 rows, so the memory above the (growing)
  test set itself should stay flat while time grows linearly;
* **memory budget** (``max_memory``, GiB per chunk of stacked probes, per worker): 4096-d
  features, 45 classes, MLP(512, 512); the peak should stay under the budget as it halves;
* **Ray overhead**: the same small digits experiment (3 representations) through the local
  backend and through Ray on a local 1-CPU cluster, one unit at a time on both (start-up,
  first run with a cold worker, a second run with a warm one; "Σ unit s" is the time inside
  the units, the rest is data preparation, scheduling, transfers and writing results).

Usage::

    python benchmarks/scaling.py --quick         # a few minutes on a busy 2-core machine
    python benchmarks/scaling.py --json scaling.json
    python benchmarks/scaling.py --skip-ray      # engine tables only
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from _proc_memory import memory_mib

FACTORS = (1, 2, 4, 8)
_MEASURE = "--measure"  # the hidden flag of the subprocess that measures one case


@dataclass(frozen=True)
class Case:
    """One call of fit_evaluate: ``probes`` probes of ``hidden`` on ``dim``-d features."""

    probes: int
    steps: int
    dim: int
    hidden: tuple[int, ...]
    n_test: int
    n_classes: int = 45
    n_pool: int = 2048
    batch_size: int = 64
    max_memory: float = 2.0

    @property
    def parameters(self) -> int:
        widths = (self.dim, *self.hidden, self.n_classes)
        return sum((a + 1) * b for a, b in itertools.pairwise(widths))


# ----------------------------------------------------------------------------------------------
# one measurement, in its own process
# ----------------------------------------------------------------------------------------------


def measure(case: Case) -> dict[str, Any]:
    """Time and peak memory of training and evaluating ``case`` in this process."""
    import torch

    from probemeter.probes import MLP
    from probemeter.training.config import TrainingConfig
    from probemeter.training.engine import fit_evaluate

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((case.n_pool, case.dim), dtype=np.float32)
    y = rng.integers(0, case.n_classes, case.n_pool)
    X_test = rng.standard_normal((case.n_test, case.dim), dtype=np.float32)
    y_test = rng.integers(0, case.n_classes, case.n_test)
    subsets = [rng.permutation(case.n_pool)[: case.n_pool // 2] for _ in range(case.probes)]
    keys = [(0, probe) for probe in range(case.probes)]
    probe, config = MLP(case.hidden), TrainingConfig(case.steps, case.batch_size, lr=1e-3)
    arguments = (X, y, X_test, y_test, case.n_classes)
    settings = {"n_jobs": 1, "max_memory": case.max_memory}
    fit_evaluate(*arguments, subsets[:1], keys[:1], probe, TrainingConfig(1, 8), **settings)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current size
    before = memory_mib("VmRSS")
    started, cpu_started = time.perf_counter(), time.process_time()
    fit_evaluate(*arguments, subsets, keys, probe, config, **settings)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_mib": memory_mib("VmHWM") - before,
        "data_mib": (X.nbytes + X_test.nbytes + y.nbytes + y_test.nbytes) / 2**20,
    }


def run_case(case: Case) -> dict[str, Any]:
    """:func:`measure` ``case`` in a fresh Python process; the case's figures."""
    # a fixed mmap threshold makes glibc return freed tensors to the system at once, so the
    # resident size before training is what is live, not what the warm-up left in the heap
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "131072"}
    command = [sys.executable, __file__, _MEASURE, json.dumps(asdict(case))]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {case} failed:\n{done.stderr}")
    return {**asdict(case), **json.loads(done.stdout.splitlines()[-1])}


# ----------------------------------------------------------------------------------------------
# the tables
# ----------------------------------------------------------------------------------------------


def scaling_table(title: str, base: Case, axis: str, factors: Sequence[int]) -> list[dict]:
    """Measure ``base`` with ``axis`` multiplied by each factor; print and return the rows."""
    print(f"\n{title}")
    header = f"{'factor':>6} {axis:>8} {'wall s':>7} {'CPU s':>7} {'× CPU':>6}"
    print(f"{header} {'peak MiB':>9} {'× mem':>6} {'data MiB':>9}")
    rows = []
    for factor in factors:
        case = replace(base, **{axis: getattr(base, axis) * factor})
        row = {"table": title, "factor": factor, **run_case(case)}
        rows.append(row)
        first = rows[0]
        print(
            f"{factor:>5}× {getattr(case, axis):>8} {row['seconds']:>7.2f} "
            f"{row['cpu_seconds']:>7.2f} {row['cpu_seconds'] / first['cpu_seconds']:>5.2f}× "
            f"{row['peak_mib']:>9.1f} "
            f"{row['peak_mib'] / first['peak_mib']:>5.2f}× {row['data_mib']:>9.1f}",
            flush=True,
        )
    return rows


def budget_table(base: Case, budgets: Sequence[float]) -> list[dict]:
    """Peak memory against the ``max_memory`` budget, for each budget."""
    print(
        f"\nmemory budget: {base.probes} probes MLP{base.hidden} on {base.dim}-d features, "
        f"{base.n_classes} classes ({base.parameters / 1e6:.2f} M parameters each), "
        f"{base.steps} steps, {base.n_test} test rows"
    )
    print(f"{'budget MiB':>10} {'peak MiB':>9} {'peak/budget':>11} {'CPU s':>7}  within")
    rows = []
    for budget in budgets:
        row = {"table": "memory budget", **run_case(replace(base, max_memory=budget))}
        rows.append(row)
        budget_mib = budget * 1024
        print(
            f"{budget_mib:>10.0f} {row['peak_mib']:>9.1f} {row['peak_mib'] / budget_mib:>11.2f} "
            f"{row['cpu_seconds']:>7.2f}  {'yes' if row['peak_mib'] <= budget_mib else 'NO'}",
            flush=True,
        )
    return rows


RAY_EXPERIMENT = """
[run]
name = "bench"
[task]
dataset = "digits"
[[representations]]
name = "pixels"
kind = "raw"
[[representations]]
name = "pca-8"
kind = "pca"
n_components = 8
[[representations]]
name = "pca-16"
kind = "pca"
n_components = 16
[method]
epsilon = 0.3
probe = [16]
seeds = 2
steps = {steps}
lr = 1e-2
sizes = [20, 100, 400]
"""


def ray_overhead(steps: int) -> dict[str, Any]:
    """Wall time of one small experiment through the local backend and through Ray."""
    import ray

    from probemeter.runs.config import load_experiment
    from probemeter.runs.ray_backend import RayOptions
    from probemeter.runs.runner import run_experiment

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.toml"
        path.write_text(RAY_EXPERIMENT.format(steps=steps))
        experiment = load_experiment(path)

        def timed(out: str, **options: Any) -> tuple[float, float]:
            started = time.perf_counter()
            run = run_experiment(experiment, Path(folder) / out, progress=False, **options)
            units = sum(timing["seconds"] for timing in run.timings.values())
            return time.perf_counter() - started, units

        runs = {"local, first run": timed("local", n_jobs=1)}
        runs["local, again (--fresh)"] = timed("local", n_jobs=1, fresh=True)
        started = time.perf_counter()
        # one CPU: units run one after another, as locally, so the difference is overhead
        ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR")
        start_up = time.perf_counter() - started
        try:
            runs["ray, cold worker"] = timed("ray", ray=RayOptions())
            runs["ray, warm worker (--fresh)"] = timed("ray", ray=RayOptions(), fresh=True)
        finally:
            ray.shutdown()
    print(
        f"\nRay overhead: {len(experiment.representations)} units (digits, MLP(16), {steps} "
        "steps), one unit at a time on both backends (Ray: a 1-CPU local cluster)"
    )
    print(f"{'backend':<28} {'wall s':>7} {'Σ unit s':>9} {'× local':>8}")
    baseline = runs["local, again (--fresh)"][0]
    for label, (wall, units) in runs.items():
        print(f"{label:<28} {wall:>7.2f} {units:>9.2f} {wall / baseline:>7.2f}×")
    print(f"{'ray.init (once)':<28} {start_up:>7.2f}")
    figures = {label: {"wall_s": wall, "unit_s": units} for label, (wall, units) in runs.items()}
    return {"units": len(experiment.representations), "ray_init_s": start_up, **figures}


# ----------------------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller cases, a few minutes")
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    parser.add_argument("--skip-ray", action="store_true", help="leave out the Ray overhead")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    quick = args.quick
    probes_base = Case(probes=4, steps=200 if quick else 400, dim=256, hidden=(256,), n_test=2048)
    dim_base = Case(
        probes=4 if quick else 8,
        steps=20 if quick else 50,
        dim=512,
        hidden=(512, 512),
        n_test=1024 if quick else 4096,
    )
    test_base = Case(
        probes=4 if quick else 8,
        steps=20,
        dim=1024,
        hidden=(256,),
        n_test=4096 if quick else 8192,
    )
    budget_base = Case(
        probes=8 if quick else 24,
        steps=10,
        dim=4096,
        hidden=(512, 512),
        n_test=1024 if quick else 2048,
    )
    budgets = (0.0625, 0.125, 0.25, 0.5) if quick else (0.125, 0.25, 0.5, 1.0)
    print(f"scaling benchmark ({'quick' if quick else 'full'}): 1 thread, n_jobs=1, per case")
    rows = scaling_table("cost vs probes (steps fixed)", probes_base, "probes", FACTORS)
    rows += scaling_table("cost vs steps (probes fixed)", probes_base, "steps", FACTORS)
    rows += scaling_table("cost vs input dimension (45 classes)", dim_base, "dim", FACTORS)
    rows += scaling_table("cost vs test rows (streamed evaluation)", test_base, "n_test", FACTORS)
    rows += budget_table(budget_base, budgets)
    report: dict[str, Any] = {"quick": quick, "rows": rows}
    if not args.skip_ray:
        report["ray"] = ray_overhead(steps=100 if quick else 300)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == _MEASURE:
        fields = json.loads(sys.argv[2])
        print(json.dumps(measure(Case(**{**fields, "hidden": tuple(fields["hidden"])}))))
    else:
        raise SystemExit(main())
