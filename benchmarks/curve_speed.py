"""How fast is a loss-data curve, against the machine's peak and against a plain PyTorch loop?

All figures come from ONE process, one after another, so their ratios are fair on a small, noisy
machine (the project's performance target):

(a) **peak**: the measured matmul throughput (GFLOP/s) of one large square ``torch.mm``, best of
    repeats over a second or two, in f32 and — where the hardware does bf16 natively (CPU flags
    ``avx512_bf16``/``amx_bf16``, or a CUDA device with bf16) — in bf16, at this process's
    thread count; on CPU also the sum of one single-threaded process per core, all multiplying
    at once (how the engine runs with ``n_jobs=-1``).
(b) **cases**: for each, the wall time of :func:`probemeter.curves.curve.loss_data_curve`
(``n_jobs=-1``,
    no progress bar; optionally also ``n_jobs=1``, in this process), the achieved GFLOP/s of its
    *actual* training arithmetic, 3 × forward FLOPs × Σ_probes min(n, batch) × steps (forward +
    backward ≈ 3 forwards; evaluation is not counted), the *nominal* arithmetic that counts every
    probe at the full batch (the issue's ≈18.4 TFLOP for the reference protocol), the percentage
    of the measured peak, and the time of a plain one-probe-at-a-time PyTorch loop doing the same
    work (``nn.Sequential`` of ``nn.Linear``/``nn.ReLU``, autograd, ``torch.optim.Adam``, same
    subsets, steps, batch and learning rate, minibatches without replacement, then evaluation on
    the test set; bf16 through ``torch.autocast``; this process's torch threads unless
    ``--loop-threads``). When only k of the P probes of the loop are timed (stratified over the
    sizes), the loop time is extrapolated by the training arithmetic and the output says so.
(c) **profile** (``--profile``, CPU only): the engine once more per case and precision, in this
    process on ONE thread (``n_jobs=1``) for ``--profile-steps`` steps (default 100; the output
    says the figures are of that many steps), under ``torch.profiler`` (CPU activity): the time
    by operator group — matmuls (``bmm``/``baddbmm``/``mm``/``addmm``), Adam (``_fused_adam_``
    and ``_foreach_*``), activation (``clamp_min``/``threshold_backward``/``relu``), copies and
    gathers (``copy_``/``index_select``/``index``), loss (softmax, log-softmax, nll, ``sum``…),
    other operators and time outside any operator — and by phase: training of small-n chunks
    (minibatch rows < batch), of full-batch chunks, evaluation, the rest; the phases come from
    ``record_function`` labels this benchmark wraps around the engine's ``_train_chunk`` and
    ``StackedMLP.evaluate`` while it profiles (the library holds no profiling code). Also the
    GFLOP/s of the training matmuls (actual arithmetic of the profiled steps / their seconds)
    against the one-thread f32 peak (``f32_1thread``, measured with the other peaks).

Cases: ``reference`` (digits pixels, MLP 512×512, Adam 1e-4, batch 256, 1000 steps, 10 sizes ×
4 seeds, in f32 and bf16, with the bf16 speed-up and the largest relative change of the per-size
mean loss), ``small-linear`` and ``small-mlp64`` (20 sizes × 8 seeds, lr 1e-3) and
``fashion-mnist`` (784-d pixels, 10 sizes × 4 seeds; only when Debian's ``dataset-fashion-mnist``
IDX files are installed).

Usage::

    python benchmarks/curve_speed.py                  # full run: many minutes, machine quiet
    python benchmarks/curve_speed.py --quick          # reduced run, under a minute
    python benchmarks/curve_speed.py --cases reference --json results.json
    python benchmarks/curve_speed.py --cases reference --precisions f32 --profile \
        --loop-probes 1 --no-in-process          # where the engine's time goes
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _proc_tree import TreeMonitor
from joblib import Parallel, delayed
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

from probemeter import Execution
from probemeter._device import resolve_device
from probemeter.curves.curve import LossDataCurve, default_sizes, loss_data_curve
from probemeter.data import ProbeData, nested_subset
from probemeter.datasets import digits_representations, fashion_mnist
from probemeter.probes import MLP, Linear
from probemeter.probes.stacked_mlp import StackedMLP
from probemeter.training import TrainingConfig, engine
from probemeter.training.memory import estimate_memory, memory_budget, probes_per_chunk
from probemeter.training.precision import bf16_native
from probemeter.training.workers import worker_count

CASE_NAMES = ("reference", "small-linear", "small-mlp64", "fashion-mnist")
BF16_TARGET = 0.02  # every per-size mean loss of the bf16 curve within 2 % of the f32 curve


# ----------------------------------------------------------------------------------------------
# machine
# ----------------------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (or what the platform module knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": worker_count(-1),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "device": str(device),
        "bf16_native": bf16_native(device)[0],
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


# ----------------------------------------------------------------------------------------------
# (a) matmul peak
# ----------------------------------------------------------------------------------------------


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_gflops(size: int, dtype: torch.dtype, seconds: float, device: torch.device) -> float:
    """GFLOP/s of the fastest ``size``×``size`` matmul, repeated for about ``seconds`` (at least
    3 times) after one warm-up."""
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)
    torch.mm(a, b, out=out)
    _synchronize(device)
    best, repeats, began = math.inf, 0, time.perf_counter()
    while repeats < 3 or time.perf_counter() - began < seconds:
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        _synchronize(device)
        best = min(best, time.perf_counter() - start)
        repeats += 1
    return 2.0 * size**3 / best / 1e9


def _single_thread_matmul(size: int, dtype_name: str, seconds: float, start_at: float) -> float:
    """GFLOP/s of one single-threaded worker multiplying for about ``seconds``, starting at the
    wall-clock time ``start_at`` so that all workers multiply at the same time."""
    torch.set_num_threads(1)
    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    out = torch.mm(a, b)
    time.sleep(max(0.0, start_at - time.time()))
    repeats, start = 0, time.perf_counter()
    while repeats < 2 or time.perf_counter() - start < seconds:
        torch.mm(a, b, out=out)
        repeats += 1
    return 2.0 * size**3 * repeats / (time.perf_counter() - start) / 1e9


def parallel_matmul_gflops(processes: int, size: int, dtype: torch.dtype, seconds: float) -> float:
    """Summed GFLOP/s of ``processes`` single-threaded worker processes multiplying at once (the
    engine's layout with ``n_jobs=-1``); uses the same joblib/loky worker pool as the engine."""
    dtype_name = str(dtype).removeprefix("torch.")
    start_at = time.time() + 1.0
    rates = Parallel(n_jobs=processes, backend="loky")(
        delayed(_single_thread_matmul)(size, dtype_name, seconds, start_at)
        for _ in range(processes)
    )
    return float(sum(rates))


def parallel_key(precision: str) -> str:
    """Key in the peaks of one single-threaded process per usable CPU, e.g. ``f32_2x1proc``."""
    return f"{precision}_{worker_count(-1)}x1proc"


def measure_peaks(
    device: torch.device, quick: bool, parallel: bool, single_thread: bool = False
) -> dict[str, float | None]:
    """Matmul peaks: f32 and (where native) bf16 at this process's threads, on CPU the sum of
    one single-threaded process per core, and with ``single_thread`` the f32 peak of one
    thread in this process (``f32_1thread``, what the profile's matmuls are measured against)."""
    size = 8192 if device.type == "cuda" else 2048
    seconds = 0.5 if quick else 2.0
    native = bf16_native(device)[0]
    peaks: dict[str, float | None] = {
        "f32": matmul_gflops(size, torch.float32, seconds, device),
        "bf16": matmul_gflops(size, torch.bfloat16, seconds, device) if native else None,
    }
    cores = worker_count(-1)  # the engine's workers with n_jobs=-1
    if parallel and device.type == "cpu" and cores > 1:
        for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            if name == "f32" or native:
                rate = parallel_matmul_gflops(cores, size, dtype, seconds)
                peaks[parallel_key(name)] = rate
    if single_thread:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            peaks["f32_1thread"] = matmul_gflops(size, torch.float32, seconds, device)
        finally:
            torch.set_num_threads(threads)
    return peaks


# ----------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------


def digits_pixels() -> ProbeData:
    """sklearn's digits, raw pixels, shuffled 1297 pool / 500 test split, standardised."""
    return digits_representations()["pixels"]


def fashion_mnist_pixels() -> ProbeData | str:
    """Fashion-MNIST 784-d pixels (60 000 pool / 10 000 test), or why it is unavailable."""
    try:
        return fashion_mnist()
    except ValueError as error:  # files absent (Debian package dataset-fashion-mnist) or bad
        return str(error)


# ----------------------------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One benchmarked curve: data, probe, grid and optimisation settings."""

    name: str
    data: ProbeData
    probe: MLP
    sizes: np.ndarray
    seeds: int
    steps: int
    lr: float
    precisions: tuple[str, ...] = ("f32",)
    batch_size: int = 256
    loop_probes: int | None = None  # probes the plain loop times (None: all of them)

    @property
    def grid(self) -> list[tuple[int, int]]:
        """(n, seed) of every probe, in the order loss_data_curve trains them."""
        return [(int(n), seed) for seed in range(self.seeds) for n in self.sizes]

    def forward_flops(self) -> int:
        return self.probe.forward_flops(self.data.n_features, self.data.n_classes)

    def training_flops(self, grid: Sequence[tuple[int, int]] | None = None) -> float:
        """Actual arithmetic: 3 × forward × Σ min(n, batch) × steps."""
        grid = self.grid if grid is None else grid
        examples = sum(min(n, self.batch_size) for n, _ in grid)
        return 3.0 * self.forward_flops() * examples * self.steps

    def nominal_flops(self) -> float:
        """Every probe counted at the full batch: 3 × forward × P × batch × steps."""
        return 3.0 * self.forward_flops() * len(self.grid) * self.batch_size * self.steps


def build_cases(names: Sequence[str], quick: bool) -> tuple[list[Case], list[str]]:
    """The selected cases (reduced with ``quick``) and notes about the ones skipped."""
    digits = digits_pixels() if {"reference", "small-linear", "small-mlp64"} & set(names) else None
    steps = 100 if quick else 1000
    loop_quick = 2 if quick else None
    cases, notes = [], []
    for name in names:
        if name == "reference":
            sizes = default_sizes(digits.pool_size, 5 if quick else 10)
            cases.append(
                Case(
                    name,
                    digits,
                    MLP((512, 512)),
                    sizes,
                    seeds=2 if quick else 4,
                    steps=steps,
                    lr=1e-4,
                    precisions=("f32", "bf16"),
                    loop_probes=loop_quick or len(sizes),  # one probe per size
                )
            )
        elif name in ("small-linear", "small-mlp64"):
            probe = Linear() if name == "small-linear" else MLP((64,))
            sizes = default_sizes(digits.pool_size, 10 if quick else 20)
            seeds = 2 if quick else 8
            cases.append(
                Case(name, digits, probe, sizes, seeds, steps, lr=1e-3, loop_probes=loop_quick)
            )
        elif name == "fashion-mnist":
            data = fashion_mnist_pixels()
            if isinstance(data, str):
                notes.append(f"fashion-mnist skipped: {data}")
                continue
            sizes = default_sizes(data.pool_size, 5 if quick else 10)
            cases.append(
                Case(
                    name,
                    data,
                    MLP((512, 512)),
                    sizes,
                    seeds=2 if quick else 4,
                    steps=steps,
                    lr=1e-4,
                    loop_probes=loop_quick or len(sizes),
                )
            )
    return cases, notes


# ----------------------------------------------------------------------------------------------
# (b) the engine and the plain loop
# ----------------------------------------------------------------------------------------------


def chunk_plan(case: Case, precision: str, device: torch.device) -> tuple[float, int]:
    """The engine's default budget of one chunk on ``device`` (GiB, sized to its free memory
    on a GPU) and how many of the case's probes, at the full batch, fit in one chunk."""
    budget = memory_budget(None, device)
    config = TrainingConfig(
        steps=case.steps, batch_size=case.batch_size, lr=case.lr, precision=precision
    )
    estimate = estimate_memory(
        case.probe, case.data.n_features, case.data.n_classes, config, n_eval=len(case.data.y_test)
    )
    return budget, min(len(case.grid), probes_per_chunk(estimate, budget))


def run_engine(
    case: Case, precision: str, device: torch.device, n_jobs: int | None
) -> tuple[float, LossDataCurve]:
    """Figures of one loss_data_curve call (wall and CPU seconds of the process tree, its peak
    memory: :class:`TreeMonitor`), and the curve. With worker processes on CPU, joblib's worker
    pool is started first (see :func:`start_worker_pool`)."""
    if device.type == "cpu" and n_jobs != 1:
        start_worker_pool(n_jobs)
    reset_gpu_peak(device)
    with TreeMonitor() as monitor:
        curve = loss_data_curve(
            case.data,
            case.probe,
            case.sizes,
            case.seeds,
            config=TrainingConfig(case.steps, case.batch_size, case.lr, precision),
            execution=Execution(device=str(device), n_jobs=n_jobs),
            dev_fraction=0.0,
        )
    return {**monitor.figures(), "gpu_peak_mib": gpu_peak_mib(device)}, curve


def reset_gpu_peak(device: torch.device) -> None:
    """Start a new peak of the memory allocated on a CUDA ``device`` (nothing on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)


def gpu_peak_mib(device: torch.device) -> float | None:
    """MiB allocated at most on a CUDA ``device`` since :func:`reset_gpu_peak` (None on CPU)."""
    if device.type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device) / 2**20


def warm_up(case: Case, precision: str, device: torch.device, loop_threads: int) -> None:
    """Run the engine and the plain loop for 2 steps on two probes, untimed, so that one-off
    costs (lazy kernel and allocator initialisation) fall outside the timings."""
    tiny = replace(case, sizes=case.sizes[[0, -1]], seeds=1, steps=2, loop_probes=2)
    run_engine(tiny, precision, device, n_jobs=1)
    run_plain_loop(tiny, precision, device, 2, loop_threads)


def start_worker_pool(n_jobs: int) -> float:
    """Start joblib's reusable loky workers (importing torch there) before a timed engine call,
    so that no case pays for it (they exit after minutes idle, e.g. during a long plain loop);
    returns the seconds it took: ~0 when they are already running."""
    workers = worker_count(n_jobs)
    start = time.perf_counter()
    Parallel(n_jobs=workers, backend="loky")(delayed(resolve_device)("cpu") for _ in range(workers))
    return time.perf_counter() - start


def plain_probe(probe: MLP, n_features: int, n_classes: int) -> nn.Sequential:
    """The probe as an ordinary PyTorch module."""
    layers: list[nn.Module] = []
    for index, (fan_in, fan_out) in enumerate(probe.layer_shapes(n_features, n_classes)):
        if index:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


def train_plain_probe(
    case: Case, n: int, seed: int, precision: str, device: torch.device, tensors: dict
) -> float:
    """Train and evaluate one probe the ordinary way; returns its test loss (nats)."""
    seed_value = int(np.random.SeedSequence([0, seed, n]).generate_state(1)[0])
    torch.manual_seed(seed_value)
    generator = torch.Generator().manual_seed(seed_value)
    model = plain_probe(case.probe, case.data.n_features, case.data.n_classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=case.lr)
    subset = torch.from_numpy(nested_subset(case.data.pool_size, n, 0, seed))
    batch = min(n, case.batch_size)
    # epochs over the probe's own subset, each a fresh permutation (without replacement)
    epochs = -(-case.steps * batch // n)
    order = torch.cat([subset[torch.randperm(n, generator=generator)] for _ in range(epochs)])
    order = order[: case.steps * batch].view(case.steps, batch).to(device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    model.train()
    for step in range(case.steps):
        index = order[step]
        with autocast:
            loss = nn.functional.cross_entropy(model(tensors["x"][index]), tensors["y"][index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        return nn.functional.cross_entropy(model(tensors["x_test"]), tensors["y_test"]).item()


def stratified_probes(grid: Sequence[tuple[int, int]], k: int | None) -> list[tuple[int, int]]:
    """``k`` probes spread evenly over the grid sorted by (n, seed): smallest and largest n
    always included; all probes when ``k`` is None or at least the grid's size."""
    ordered = sorted(grid)
    if k is None or k >= len(ordered):
        return ordered
    positions = np.unique(np.round(np.linspace(0, len(ordered) - 1, max(k, 1))).astype(int))
    return [ordered[i] for i in positions]


def run_plain_loop(
    case: Case, precision: str, device: torch.device, k: int | None, threads: int
) -> dict[str, Any]:
    """Time the one-probe-at-a-time loop, with ``threads`` torch threads, on ``k`` stratified
    probes; extrapolate to all probes by the training arithmetic when ``k`` < P."""
    tensors = {
        "x": torch.as_tensor(case.data.X_train, device=device),
        "y": torch.as_tensor(case.data.y_train, device=device),
        "x_test": torch.as_tensor(case.data.X_test, device=device),
        "y_test": torch.as_tensor(case.data.y_test, device=device),
    }
    timed = stratified_probes(case.grid, k)
    own_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        start = time.perf_counter()
        losses = [train_plain_probe(case, n, seed, precision, device, tensors) for n, seed in timed]
        measured = time.perf_counter() - start
    finally:
        torch.set_num_threads(own_threads)
    scale = case.training_flops() / case.training_flops(timed)
    return {
        "loop_s": measured * scale,
        "loop_measured_s": measured,
        "loop_probes_timed": len(timed),
        "loop_extrapolated": len(timed) < len(case.grid),
        "loop_threads": threads,
        "loop_losses": dict(zip(timed, losses)),
    }


def max_relative_loss_change(reference: LossDataCurve, other: LossDataCurve) -> float:
    """max over n of |mean loss(other, n) − mean loss(reference, n)| / mean loss(reference, n)."""
    base, changed = reference.mean("loss"), other.mean("loss")
    return float(((changed - base).abs() / base).max())


def compare_bf16(
    f32_row: dict[str, Any],
    bf16_row: dict[str, Any],
    curves: dict[str, LossDataCurve],
    say: Callable[[str], None],
) -> None:
    """Add the bf16 speed-up over f32 and the largest relative change of the per-size mean loss
    to ``bf16_row`` (target: every point within 2 %)."""
    change = max_relative_loss_change(curves["f32"], curves["bf16"])
    bf16_row["bf16_speedup"] = f32_row["engine_s"] / bf16_row["engine_s"]
    bf16_row["bf16_max_rel_loss_diff"] = change
    bf16_row["bf16_within_target"] = change <= BF16_TARGET
    say(
        f"   bf16 vs f32: {bf16_row['bf16_speedup']:.2f}× faster; largest relative change of "
        f"the per-size mean loss {100 * change:.2f} % (target ≤ {100 * BF16_TARGET:.0f} %: "
        f"{'met' if change <= BF16_TARGET else 'NOT met'})"
    )


# ----------------------------------------------------------------------------------------------
# (c) profile of the engine on one thread
# ----------------------------------------------------------------------------------------------

#: operator groups of the profile, by aten operator name; an operator's own time goes to the
#: group of the first of it and its calling operators that has one (``aten::resolve_conj``
#: inside ``aten::bmm`` counts as matmul), else to "other ops"
OPERATOR_GROUPS: dict[str, tuple[str, ...]] = {
    "matmuls": ("aten::bmm", "aten::baddbmm", "aten::mm", "aten::addmm", "aten::matmul"),
    "adam": ("aten::_fused_adam", "aten::_foreach_"),
    "activation": ("aten::clamp_min", "aten::threshold_backward", "aten::relu", "aten::threshold"),
    "copies/gathers": ("aten::copy_", "aten::index_select", "aten::index", "aten::_to_copy"),
    "loss": (
        "aten::softmax",
        "aten::_softmax",
        "aten::log_softmax",
        "aten::_log_softmax",
        "aten::nll_loss",
        "aten::gather",
        "aten::scatter_add_",
        "aten::sum",
        "aten::argmax",
    ),
}
#: the remaining time: operators of no group, and time inside no operator (the Python of the
#: training loop and the engine, and the profiler's own overhead per operator)
OTHER_GROUPS = ("other ops", "outside operators")
PROFILE_GROUPS = (*OPERATOR_GROUPS, *OTHER_GROUPS)
#: record_function labels the benchmark wraps around the engine's functions
_LABEL = "curve_speed::"
PHASES = ("train small-n", "train full-batch", "evaluation", "outside train/evaluation")


def operator_group(name: str) -> str | None:
    """The group of the aten operator ``name`` (an exact name, or a prefix ending in ``_``
    such as ``aten::_foreach_``), or None."""
    for group, names in OPERATOR_GROUPS.items():
        for known in names:
            exact = name == known or name.removesuffix("_") == known
            if exact or (known.endswith("_") and name.startswith(known)):
                return group
    return None


@contextmanager
def labelled_engine(batch_size: int, chunks: list[dict[str, int]]) -> Iterator[None]:
    """Within the block, :func:`probemeter.training.engine._train_chunk` and
    :meth:`StackedMLP.evaluate` run inside ``torch.profiler.record_function`` labels, the
    training one naming the chunk's minibatch rows (small-n when fewer than ``batch_size``);
    each trained chunk's probes, rows and steps are appended to ``chunks``. The library has no
    profiling code: the wrappers are put in place here and taken out at the end."""
    train, evaluate = engine._train_chunk, StackedMLP.evaluate
    signature = inspect.signature(train)

    def labelled_train(*args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs).arguments
        probes, rows = bound["row_weights"].shape
        chunks.append({"probes": probes, "rows": rows, "steps": bound["config"].steps})
        kind = "small-n" if rows < batch_size else "full-batch"
        with record_function(f"{_LABEL}train {kind} rows={rows} probes={probes}"):
            return train(*args, **kwargs)

    def labelled_evaluate(self: StackedMLP, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        with record_function(f"{_LABEL}evaluation"):
            return evaluate(self, *args, **kwargs)

    engine._train_chunk, StackedMLP.evaluate = labelled_train, labelled_evaluate
    try:
        yield
    finally:
        engine._train_chunk, StackedMLP.evaluate = train, evaluate


def _phase(label: str | None) -> str:
    """The phase of the innermost benchmark label ``label`` (None: outside all of them)."""
    if label is None or label == f"{_LABEL}profile":
        return PHASES[-1]
    if label.startswith(f"{_LABEL}train "):
        return " ".join(label.removeprefix(_LABEL).split()[:2])
    return "evaluation"


def attribute_times(events: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Seconds of every (phase, group) over the profiled ``events``: each event's own (self)
    time, so that nothing is counted twice; a label's own time is "outside operators"."""
    times = {phase: dict.fromkeys(PROFILE_GROUPS, 0.0) for phase in PHASES}
    for event in events:
        group, label, caller = None, None, event
        while caller is not None:
            if caller.is_user_annotation:
                if label is None and caller.name.startswith(_LABEL):
                    label = caller.name
            elif group is None:
                group = operator_group(caller.name)
            caller = caller.cpu_parent
        if event.is_user_annotation:
            group = "outside operators"
        times[_phase(label)][group or "other ops"] += event.self_cpu_time_total / 1e6
    return times


def profile_engine(
    case: Case,
    precision: str,
    steps: int,
    single_thread_peak: float,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Profile one ``loss_data_curve`` call of ``case`` at ``steps`` steps, in this process
    (``n_jobs=1``) on one thread, under ``torch.profiler`` (CPU): the time by operator group
    and by phase (training of small-n and of full-batch chunks, evaluation, the rest), and the
    GFLOP/s of the training matmuls against ``single_thread_peak``."""
    profiled = replace(case, steps=steps)
    chunks: list[dict[str, int]] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with (
            labelled_engine(case.batch_size, chunks),
            profile(activities=[ProfilerActivity.CPU]) as profiler,
        ):
            with record_function(f"{_LABEL}profile"):
                start = time.perf_counter()
                loss_data_curve(
                    profiled.data,
                    profiled.probe,
                    profiled.sizes,
                    profiled.seeds,
                    config=TrainingConfig(steps, case.batch_size, case.lr, precision),
                    execution=Execution(device="cpu", n_jobs=1),
                    dev_fraction=0.0,
                )
                wall = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    times = attribute_times(profiler.events())
    total = sum(sum(groups.values()) for groups in times.values())
    by_group = {g: sum(times[phase][g] for phase in PHASES) for g in PROFILE_GROUPS}
    by_phase = {phase: sum(times[phase].values()) for phase in PHASES}
    train_matmul = sum(times[phase]["matmuls"] for phase in PHASES[:2])
    actual = profiled.training_flops()
    executed = sum(
        3.0 * case.forward_flops() * c["probes"] * c["rows"] * c["steps"] for c in chunks
    )
    gflops = actual / train_matmul / 1e9 if train_matmul else None
    # training grows with the steps, evaluation and setup do not: their share of a full run
    scale = case.steps / steps
    full = {p: s * (scale if p in PHASES[:2] else 1.0) for p, s in by_phase.items()}
    result = {
        "steps": steps,
        "threads": 1,
        "wall_s": wall,
        "profiled_s": total,
        "groups_s": by_group,
        "groups_percent": {g: 100 * s / total for g, s in by_group.items()},
        "phases_s": by_phase,
        "phases_percent": {p: 100 * s / total for p, s in by_phase.items()},
        "phase_groups_s": times,
        "phases_percent_at_full_steps": {p: 100 * s / sum(full.values()) for p, s in full.items()},
        "chunks": chunks,
        "actual_tflop": actual / 1e12,
        "executed_tflop": executed / 1e12,
        "train_matmul_s": train_matmul,
        "matmul_gflops": gflops,
        "matmul_executed_gflops": executed / train_matmul / 1e9 if train_matmul else None,
        "f32_1thread_peak_gflops": single_thread_peak,
        "matmul_percent_of_1thread_peak": 100 * gflops / single_thread_peak if gflops else None,
    }
    say(
        f"   profile (torch.profiler, CPU; n_jobs=1, 1 thread; figures of {steps} of the "
        f"{case.steps} steps): {wall:.2f} s wall, {total:.2f} s profiled, "
        f"{len(chunks)} chunk{'s' * (len(chunks) != 1)} (rows×probes: "
        + ", ".join(f"{c['rows']}×{c['probes']}" for c in chunks)
        + ")"
    )
    say("     by operator group:")
    for group in PROFILE_GROUPS:
        say(
            f"       {group:<18} {by_group[group]:>8.3f} s "
            f"{result['groups_percent'][group]:>6.1f} %"
        )
    say(
        f"     by phase (% at all {case.steps} steps: training scaled by {scale:g}, "
        "evaluation and setup as measured):"
    )
    for phase in PHASES:
        shares = [
            f"{group} {100 * seconds / by_phase[phase]:.0f} %"
            for group, seconds in times[phase].items()
            if seconds and seconds >= 0.01 * by_phase[phase]
        ]
        say(
            f"       {phase:<26} {by_phase[phase]:>8.3f} s "
            f"{result['phases_percent'][phase]:>6.1f} % "
            f"({result['phases_percent_at_full_steps'][phase]:.1f} % at {case.steps} steps)"
            + (f"; {', '.join(shares)}" if shares else "")
        )
    say(
        f"     training matmuls: {train_matmul:.3f} s for {actual / 1e12:.4f} TFLOP actual "
        f"(Σ min(n, batch); {executed / 1e12:.4f} executed with padding rows): "
        + (
            f"{gflops:.1f} GFLOP/s ({result['matmul_executed_gflops']:.1f} executed), "
            f"{result['matmul_percent_of_1thread_peak']:.1f} % of the 1-thread f32 peak "
            f"{single_thread_peak:.1f}"
            if gflops
            else "no matmul time"
        )
    )
    return result


@dataclass(frozen=True)
class Settings:
    """Run-wide choices from the command line."""

    device: torch.device
    in_process: bool  # also time the engine with n_jobs=1
    loop_probes: int | None  # overrides Case.loop_probes; 0 means all probes
    loop_threads: int  # torch threads of the plain loop
    profile_steps: int | None = None  # profile the engine for this many steps (None: no profile)


def benchmark_case(
    case: Case,
    precision: str,
    peaks: dict[str, float | None],
    settings: Settings,
    say: Callable[[str], None],
) -> tuple[dict[str, Any], LossDataCurve]:
    """Every figure of one (case, precision); returns them and the engine's curve."""
    device = settings.device
    probes = len(case.grid)
    actual, nominal = case.training_flops(), case.nominal_flops()
    say(
        f"\n== {case.name} [{precision}]: {case.probe.name} on {case.data.name} "
        f"(d={case.data.n_features}, K={case.data.n_classes}, pool={case.data.pool_size}, "
        f"test={len(case.data.y_test)}), {len(case.sizes)} sizes × {case.seeds} seeds = "
        f"{probes} probes, {case.steps} steps, batch {case.batch_size}, lr {case.lr:g}"
    )
    say(
        f"   arithmetic: actual {actual / 1e12:.3f} TFLOP (Σ min(n, batch)), nominal "
        f"{nominal / 1e12:.3f} TFLOP (every probe at batch {case.batch_size})"
    )
    budget, per_chunk = chunk_plan(case, precision, device)
    say(
        f"   default budget on {device.type}: {budget:.1f} GiB per chunk, "
        f"{per_chunk} probes per chunk"
    )
    warm_up(case, precision, device, settings.loop_threads)
    figures, curve = run_engine(case, precision, device, n_jobs=-1)
    engine_s = figures["wall_s"]
    peak, parallel_peak = peaks.get(precision), peaks.get(parallel_key(precision))
    gflops = actual / engine_s / 1e9
    row: dict[str, Any] = {
        "name": case.name,
        "precision": precision,
        "probe": case.probe.name,
        "representation": case.data.name,
        "n_features": case.data.n_features,
        "probes": probes,
        "sizes": [int(n) for n in case.sizes],
        "seeds": case.seeds,
        "steps": case.steps,
        "batch_size": case.batch_size,
        "lr": case.lr,
        "actual_tflop": actual / 1e12,
        "nominal_tflop": nominal / 1e12,
        "engine_s": engine_s,
        "engine_cpu_s": figures["cpu_s"],
        "engine_peak_tree_pss_mib": figures["peak_tree_pss_mib"],
        "engine_peak_tree_rss_mib": figures["peak_tree_rss_mib"],
        "engine_gpu_peak_mib": figures["gpu_peak_mib"],
        "load_before": figures["load_before"],
        "load_after": figures["load_after"],
        "engine_train_seconds": curve.metadata["train_seconds"],
        "gflops": gflops,
        "nominal_gflops": nominal / engine_s / 1e9,
        "percent_of_peak": 100 * gflops / peak if peak else None,
        "percent_of_f32_peak": 100 * gflops / peaks["f32"],
        "percent_of_parallel_peak": 100 * gflops / parallel_peak if parallel_peak else None,
        "engine_mean_loss": {str(n): float(v) for n, v in curve.mean("loss").items()},
        "budget_gib": budget,
        "probes_per_chunk": per_chunk,
    }
    say(
        f"   engine (n_jobs=-1): {engine_s:.2f} s, {gflops:.1f} GFLOP/s actual "
        f"({row['nominal_gflops']:.1f} nominal), "
        + (f"{row['percent_of_peak']:.1f} % of the {precision} peak" if peak else "no peak")
        + (f", {row['percent_of_f32_peak']:.1f} % of the f32 peak" if precision != "f32" else "")
        + (
            f", {row['percent_of_parallel_peak']:.1f} % of the {parallel_key(precision)} peak"
            if row["percent_of_parallel_peak"] is not None
            else ""
        )
    )
    say(
        f"   process tree: CPU {figures['cpu_s']:.1f} s, peak memory "
        f"{figures['peak_tree_pss_mib']:.0f} MiB PSS ({figures['peak_tree_rss_mib']:.0f} MiB RSS "
        f"summed); load average {figures['load_before']:.2f} → {figures['load_after']:.2f}"
        + (
            f"; GPU peak allocated {figures['gpu_peak_mib']:.0f} MiB"
            if figures["gpu_peak_mib"] is not None
            else ""
        )
    )
    if settings.in_process:
        in_process, _ = run_engine(case, precision, device, n_jobs=1)
        row["engine_in_process_s"] = in_process["wall_s"]
        say(
            f"   engine (n_jobs=1, {torch.get_num_threads()} threads in this process): "
            f"{row['engine_in_process_s']:.2f} s"
        )
    loop_probes = case.loop_probes
    if settings.loop_probes is not None:
        loop_probes = settings.loop_probes or None
    loop = run_plain_loop(case, precision, device, loop_probes, settings.loop_threads)
    timed_losses = loop.pop("loop_losses")
    engine_losses = curve.points.set_index(["n", "seed"])["loss"]
    row.update(loop)
    row["loop_losses"] = {f"n={n},seed={seed}": loss for (n, seed), loss in timed_losses.items()}
    row["loop_mean_loss_timed"] = float(np.mean(list(timed_losses.values())))
    row["engine_mean_loss_timed"] = float(np.mean([engine_losses[key] for key in timed_losses]))
    row["loop_gflops"] = actual / loop["loop_s"] / 1e9
    row["speedup_vs_loop"] = loop["loop_s"] / engine_s
    how = (
        f"extrapolated from {loop['loop_probes_timed']} of {probes} probes "
        f"({loop['loop_measured_s']:.2f} s measured, scaled by training arithmetic)"
        if loop["loop_extrapolated"]
        else f"all {probes} probes timed"
    )
    say(
        f"   plain loop ({settings.loop_threads} threads): loop_s {loop['loop_s']:.2f} s "
        f"{how}, {row['loop_gflops']:.1f} GFLOP/s"
    )
    say(
        f"   mean test loss of the loop's {loop['loop_probes_timed']} timed probes: loop "
        f"{row['loop_mean_loss_timed']:.4f}, engine {row['engine_mean_loss_timed']:.4f} nats "
        "(same subsets, different random streams)"
    )
    say(f"   engine is {row['speedup_vs_loop']:.2f}× the speed of the plain loop")
    if settings.profile_steps:
        steps = min(settings.profile_steps, case.steps)
        row["profile"] = profile_engine(case, precision, steps, peaks["f32_1thread"], say)
    return row, curve


# ----------------------------------------------------------------------------------------------
# output
# ----------------------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def summary_table(rows: Sequence[dict[str, Any]]) -> str:
    header = (
        f"{'case':<14} {'prec':<5} {'P':>4} {'TFLOP':>7} {'nominal':>8} {'engine s':>9} "
        f"{'GFLOP/s':>8} {'% peak':>7} {'n_jobs=1 s':>10} {'loop s':>9} {'loop GF/s':>9} "
        f"{'speed-up':>8}  note"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        note = (
            f"loop_s extrapolated from {row['loop_probes_timed']} of {row['probes']} probes"
            if row["loop_extrapolated"]
            else ""
        )
        if "bf16_speedup" in row:
            note += (
                f"{'; ' if note else ''}bf16 {row['bf16_speedup']:.2f}× f32, "
                f"max Δloss {100 * row['bf16_max_rel_loss_diff']:.2f} %"
            )
        lines.append(
            f"{row['name']:<14} {row['precision']:<5} {row['probes']:>4} "
            f"{row['actual_tflop']:>7.3f} {row['nominal_tflop']:>8.3f} {row['engine_s']:>9.2f} "
            f"{row['gflops']:>8.1f} {_fmt(row['percent_of_peak'], '.1f'):>7} "
            f"{_fmt(row.get('engine_in_process_s'), '.2f'):>10} {row['loop_s']:>9.2f} "
            f"{row['loop_gflops']:>9.1f} {row['speedup_vs_loop']:>7.2f}×  {note}"
        )
    return "\n".join(lines)


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="reduced run, under a minute")
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=CASE_NAMES,
        default=list(CASE_NAMES),
        help="cases to run (default: all)",
    )
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=("f32", "bf16"),
        default=["f32", "bf16"],
        help="precisions to time, of those each case has (bf16 is slow where not native)",
    )
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda")
    parser.add_argument(
        "--threads", type=int, help="torch threads of this process (default: torch's own)"
    )
    parser.add_argument(
        "--loop-threads",
        type=int,
        help="torch threads of the plain loop (default: this process's threads)",
    )
    parser.add_argument(
        "--loop-probes",
        type=int,
        help="probes the plain loop times per case (0: all; default: per case, 2 with --quick)",
    )
    parser.add_argument(
        "--in-process",
        action=argparse.BooleanOptionalAction,
        help="also time the engine with n_jobs=1 (default: on, off with --quick)",
    )
    parser.add_argument(
        "--parallel-peak",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure the peak of one single-threaded process per core (CPU)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile the engine per case and precision (n_jobs=1, one thread, CPU)",
    )
    parser.add_argument(
        "--profile-steps",
        type=int,
        default=100,
        help="steps of the profiled engine call (default 100; at most the case's steps)",
    )
    args = parser.parse_args(argv)
    if args.profile_steps < 1:
        parser.error(f"--profile-steps must be at least 1, got {args.profile_steps}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    started = time.perf_counter()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    settings = Settings(
        device=device,
        in_process=(not args.quick) if args.in_process is None else args.in_process,
        loop_probes=args.loop_probes,
        loop_threads=args.loop_threads or torch.get_num_threads(),
        profile_steps=args.profile_steps if args.profile else None,
    )
    if args.profile and device.type != "cpu":
        raise SystemExit(f"--profile profiles the engine on the CPU, not on {device}")

    def say(line: str) -> None:
        print(line, flush=True)

    machine = machine_info(device)
    say(
        f"probemeter curve benchmark{' (--quick)' if args.quick else ''}: torch "
        f"{machine['torch']}, numpy {machine['numpy']}, python {machine['python']}"
    )
    say(
        f"CPU: {machine['cpu']}, {machine['cores']} cores ({machine['usable_cores']} usable), "
        f"torch threads {machine['torch_threads']}, capability {machine['cpu_capability']}, "
        f"device {machine['device']}" + (f" ({machine['gpu']})" if "gpu" in machine else "")
    )
    say(f"bf16 native: {machine['bf16_native']}")

    results: dict[str, Any] = {"machine": machine, "quick": args.quick}
    if device.type == "cpu":
        results["worker_start_s"] = start_worker_pool(-1)
        say(f"worker pool started in {results['worker_start_s']:.2f} s (not counted below)")
    peaks = measure_peaks(device, args.quick, args.parallel_peak, single_thread=args.profile)
    results["peak_gflops"] = peaks
    say(
        f"matmul peak GFLOP/s (f32, bf16: best square mm, {torch.get_num_threads()} threads; "
        "Nx1proc: N single-threaded processes at once, summed): "
        + ", ".join(f"{key} {_fmt(value, '.1f')}" for key, value in peaks.items())
    )
    if peaks["bf16"] is None:
        say("   bf16 peak not measured: no native bf16 on this device")

    cases, notes = build_cases(args.cases, args.quick)
    for note in notes:
        say(note)

    rows = []
    for case in cases:
        curves = {}
        for precision in (p for p in case.precisions if p in args.precisions):
            row, curves[precision] = benchmark_case(case, precision, peaks, settings, say)
            rows.append(row)
        if {"f32", "bf16"} <= curves.keys():
            by_precision = {row["precision"]: row for row in rows if row["name"] == case.name}
            compare_bf16(by_precision["f32"], by_precision["bf16"], curves, say)

    results["cases"] = rows
    results["notes"] = notes
    say("\n" + summary_table(rows))
    say(
        f"\n% peak: of the {machine['torch_threads']}-thread matmul peak of the same precision "
        "(JSON also has percent_of_f32_peak and percent_of_parallel_peak); TFLOP: actual "
        "training arithmetic 3 × forward × Σ min(n, batch) × steps; nominal: every probe at the "
        "full batch; speed-up: loop s / engine s"
    )
    results["total_s"] = time.perf_counter() - started
    say(f"benchmark took {results['total_s']:.1f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1, default=float))
        say(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
