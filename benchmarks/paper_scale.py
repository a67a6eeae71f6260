"""Early-stopped probes at the papers' scale: time, arithmetic, memory, against a plain loop.

Two cases, each in this one process (so ratios are fair on a small, noisy machine):

(a) ``online``: the online code of Voita & Titov (2020), §3.1, at a million tokens: 45 classes,
    768-d features, MLP-2 with h = 1000, the paper's timesteps (0.1 % … 100 %), Adam lr 1e-3 with
    early stopping on a held-out development set (10 % of the pool, never transmitted), lr ×0.5
    after an epoch without a new dev minimum, stop after 4 such epochs; one seed (data order).
    :func:`probemeter.mdl.online_codelength` does the work. The features are synthetic (no
    encoder would produce a million tokens in the time of a benchmark: ~16 min for MiniLM on 2
    cores, ``encoding.py``): a Gaussian mixture, 45 part-of-speech-like classes with Zipfian
    frequencies, 4 "word types" per class at random centres, unit noise in every dimension
    (the per-dimension statistics of standardised encoder features: mean 0, variance ~1) and
    5 % of the labels redrawn, so that probes learn for several epochs and then overfit, as on
    real tags. ``--tokens`` scales it (the full case is 1 000 000).
(b) ``curve``: a converged loss-data curve on Fashion-MNIST's full pool (60 000 × 784, 10
    classes; Debian package ``dataset-fashion-mnist``), 20 sizes × 4 seeds, MLP 512×512 (Whitney
    et al., App. C.1), Adam lr 1e-3, early stopping on each probe's own 10 % development split
    (the same rule) instead of a fixed number of steps.

For each case (and precision) it prints wall and CPU seconds of the whole process tree (the
engine's worker processes included), the load average, the arithmetic actually done (training:
3 × forward FLOPs × examples of every epoch; development losses: forward × development rows
× epochs; final evaluation: forward × evaluation rows × probes), its GFLOP/s against the matmul
peak measured in this process (the sum of one single-threaded process per core, the engine's
layout), the peak memory of the whole process tree (sum of PSS: shared pages counted once; and
of RSS), and a plain PyTorch loop (``nn.Sequential``, autograd, ``torch.optim.Adam``, the same
early-stopping rule) on at least a tenth of the probes: its time, its GFLOP/s and its time for
all probes extrapolated by arithmetic.

``--device cuda`` runs the engine and the plain loop on a GPU (one process; the peak is then the
GPU's measured matmul rate at the case's precision, and the GPU's peak allocated memory is printed
beside the process tree's). ``--profile`` instead runs one case in this process on one thread
(``n_jobs=1``) under ``torch.profiler`` and prints the top operators by self CPU time (on a GPU
also by self device time). ``--pools shared copied``
runs each case with its pool in shared memory (``share_data``, the default) and then as an
ordinary array (joblib writes a copy for the workers at every engine call), data built afresh
for each so that one copy exists at a time.

Usage::

    python benchmarks/paper_scale.py --quick                     # CI: well under a minute
    python benchmarks/paper_scale.py                             # both cases, full scale
    python benchmarks/paper_scale.py --cases online --tokens 100000 --precisions f32 bf16
    python benchmarks/paper_scale.py --cases online --tokens 50000 --profile
    python benchmarks/paper_scale.py --cases online --no-loop --pools copied shared
    python benchmarks/paper_scale.py --device cuda --precisions f32 bf16     # on a GPU
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _proc_tree import TreeMonitor, load_average
from curve_speed import (
    gpu_peak_mib,
    machine_info,
    measure_peaks,
    parallel_key,
    reset_gpu_peak,
    start_worker_pool,
)
from torch import nn

import probemeter.mdl.online as online_module
from probemeter import Execution
from probemeter._device import resolve_device
from probemeter.curves.curve import default_sizes
from probemeter.data import ProbeData, nested_subset, subset_permutation
from probemeter.datasets import fashion_mnist
from probemeter.mdl import PAPER_TIMESTEPS, online_codelength
from probemeter.probes import MLP
from probemeter.training import TrainingConfig
from probemeter.training.early_stopping import IMPROVEMENT_NATS, dev_split
from probemeter.training.engine import fit_evaluate
from probemeter.training.probe_runs import seed_grid
from probemeter.training.shared_memory import share_data

CASE_NAMES = ("online", "curve")
FULL_TOKENS = 1_000_000
TARGET_MINUTES = {"online": 30, "curve": 10}

# ----------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------


def synthetic_tags(
    n_tokens: int, n_test: int, dim: int = 768, n_classes: int = 45, seed: int = 0
) -> ProbeData:
    """Token features for a 45-tag task: Gaussian mixture, Zipfian classes, 5 % label noise.

    Class k has frequency ∝ 1 / (k + 1); each token belongs to one of 4 "word types" of its
    class (a centre drawn N(0, 0.35² I)); its features are the centre plus N(0, I) noise, in
    float32, generated block by block (no float64 copy of the pool). 5 % of the labels are
    redrawn uniformly (tagging ambiguity), so no probe reaches zero loss.
    """
    rng = np.random.default_rng([seed, 0x7A6])
    prior = 1.0 / np.arange(1, n_classes + 1)
    prior /= prior.sum()
    centres = rng.normal(0.0, 0.35, (n_classes, 4, dim)).astype(np.float32)

    def draw(n: int, stream: int) -> tuple[np.ndarray, np.ndarray]:
        local = np.random.default_rng([seed, stream])
        labels = local.choice(n_classes, size=n, p=prior)
        types = local.integers(0, 4, size=n)
        features = np.empty((n, dim), dtype=np.float32)
        for start in range(0, n, 65536):
            stop = min(n, start + 65536)
            block = local.standard_normal((stop - start, dim), dtype=np.float32)
            block += centres[labels[start:stop], types[start:stop]]
            features[start:stop] = block
        noisy = local.random(n) < 0.05
        labels[noisy] = local.integers(0, n_classes, size=int(noisy.sum()))
        return features, labels

    X, y = draw(n_tokens, 1)
    X_test, y_test = draw(n_test, 2)
    return ProbeData.from_arrays(
        X, y, X_test, y_test, standardize=False, n_classes=n_classes, name="synthetic-tags"
    )


# ----------------------------------------------------------------------------------------------
# arithmetic
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineCall:
    """What one engine call trained: per probe, training rows, development rows and epochs."""

    train_rows: np.ndarray
    dev_rows: np.ndarray
    epochs: np.ndarray
    eval_rows: int  # rows of all probes' evaluations together

    def flops(self, forward: float) -> dict[str, float]:
        """FLOPs of training (3 × forward per example per epoch), of the development losses
        (forward per row per epoch) and of the final evaluation (forward per row scored)."""
        train = 3.0 * forward * float(np.sum(self.train_rows * self.epochs))
        dev = forward * float(np.sum(self.dev_rows * self.epochs))
        evaluation = forward * self.eval_rows
        return {"train": train, "dev": dev, "eval": evaluation, "total": train + dev + evaluation}


def _split_rows(
    subsets: Sequence[np.ndarray], dev_set: np.ndarray | None, dev_fraction: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per probe (training rows, development rows) under the engine's early-stopping rule."""
    sizes = np.array([len(s) for s in subsets])
    if dev_set is not None:
        return sizes, np.full(sizes.size, len(dev_set))
    dev = np.array([min(max(1, round(dev_fraction * n)), n - 1) for n in sizes])
    return sizes - dev, dev


# ----------------------------------------------------------------------------------------------
# the cases
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    data: ProbeData
    probe: MLP
    config: TrainingConfig
    describe: str
    loop_probes: int
    loop_max_rows: int  # the plain loop times probes with at most this many training rows
    device: torch.device


def online_case(tokens: int, quick: bool, shared: bool, device: torch.device) -> Case:
    n_test = max(1000, tokens // 20)
    data = synthetic_tags(tokens, n_test)
    data = share_data(data) if shared else data
    probe = MLP((256, 256)) if quick else MLP((1000, 1000))
    # minibatches of 256, as the figures in benchmarks/README.md were measured
    config = online_module.paper_training(batch_size=256, max_epochs=8 if quick else 100)
    return Case(
        "online",
        data,
        probe,
        config,
        f"online code (Voita & Titov §3.1), {tokens} tokens, 45 classes, 768-d synthetic, "
        f"{probe.name}, timesteps {PAPER_TIMESTEPS[0]:g}…1, 1 seed",
        loop_probes=1 if quick else 2,
        loop_max_rows=max(1000, tokens // 10),
        device=device,
    )


def curve_case(quick: bool, shared: bool, device: torch.device) -> Case | str:
    try:
        data = fashion_mnist(n_train=5000, n_test=1000) if quick else fashion_mnist()
    except ValueError as error:
        return f"curve skipped: {error}"
    data = share_data(data) if shared else data
    probe = MLP((128, 128)) if quick else MLP((512, 512))
    config = TrainingConfig(lr=1e-3, early_stopping=True, max_epochs=8 if quick else 100)
    return Case(
        "curve",
        data,
        probe,
        config,
        f"converged loss-data curve, Fashion-MNIST pool {data.pool_size}, "
        f"{'5 sizes × 2 seeds' if quick else '20 sizes × 4 seeds'}, {probe.name}, early "
        "stopping on a 10 % dev split per probe",
        loop_probes=1 if quick else 8,
        loop_max_rows=data.pool_size,
        device=device,
    )


def run_online(case: Case, precision: str, n_jobs: int | None) -> tuple[dict, EngineCall]:
    """The online code, capturing the engine call's per-probe epochs."""
    captured: dict[str, Any] = {}

    def recording_fit_evaluate(*args: Any, **kwargs: Any) -> Any:
        result = fit_evaluate(*args, **kwargs)
        captured.update(subsets=args[5], dev_set=kwargs.get("dev_set"), result=result)
        scored = kwargs.get("pool_rows") or ()  # each probe's own pool rows, then the test set
        captured["eval_rows"] = len(args[3]) * len(args[5]) + sum(len(r) for r in scored)
        return result

    config = _with_precision(case.config, precision)
    online_module.fit_evaluate = recording_fit_evaluate
    try:
        code = online_codelength(
            case.data,
            case.probe,
            seeds=[0],
            config=config,
            execution=Execution(device=str(case.device), n_jobs=n_jobs),
        )
    finally:
        online_module.fit_evaluate = fit_evaluate
    train_rows, dev_rows = _split_rows(captured["subsets"], captured["dev_set"], 0.1)
    call = EngineCall(train_rows, dev_rows, captured["result"].epochs, captured["eval_rows"])
    blocks = code.block_table()
    summary = {
        "online_kbits": code.codelength_bits / 1024,
        "uniform_kbits": code.uniform_bits / 1024,
        "compression": code.compression,
        "full_probe_accuracy": code.mean("accuracy"),
        "loss_per_block_bits": [float(v) for v in blocks["bits_per_label"]],
        "quality": code.codelength_bits,  # compared across precisions
    }
    return summary, call


def run_curve(case: Case, precision: str, n_jobs: int | None) -> tuple[dict, EngineCall]:
    """The converged curve: one engine call, probes (n, seed) on nested subsets."""
    quick = case.data.pool_size < 10000
    sizes = default_sizes(case.data.pool_size, 5 if quick else 20)
    _, grid, keys = seed_grid(2 if quick else 4, sizes, 0)
    subsets = [nested_subset(case.data.pool_size, n, 0, seed) for seed, n in grid]
    config = _with_precision(case.config, precision)
    result = fit_evaluate(
        case.data.X_train,
        case.data.y_train,
        case.data.X_test,
        case.data.y_test,
        case.data.n_classes,
        subsets,
        keys,
        case.probe,
        config,
        execution=Execution(device=case.device, n_jobs=n_jobs),
    )
    train_rows, dev_rows = _split_rows(subsets, None, config.dev_fraction)
    call = EngineCall(train_rows, dev_rows, result.epochs, len(case.data.y_test) * len(subsets))
    by_size = {
        int(n): float(np.mean([result.loss[i] for i, (_, m) in enumerate(grid) if m == n]))
        for n in sizes
    }
    summary = {
        "mean_loss_by_size": by_size,
        "largest_size_accuracy": float(
            np.mean([result.accuracy[i] for i, (_, m) in enumerate(grid) if m == sizes[-1]])
        ),
        "epochs_by_size": {
            int(n): float(np.mean([result.epochs[i] for i, (_, m) in enumerate(grid) if m == n]))
            for n in sizes
        },
        "quality": np.array(list(by_size.values())),
        "subsets": subsets,
    }
    return summary, call


def _with_precision(config: TrainingConfig, precision: str) -> TrainingConfig:
    settings = config.__dict__.copy()
    settings["precision"] = precision
    return TrainingConfig(**settings)


# ----------------------------------------------------------------------------------------------
# the plain loop
# ----------------------------------------------------------------------------------------------


def plain_early_stopped_probe(
    case: Case,
    train: np.ndarray,
    dev: np.ndarray,
    seed: int,
    precision: str,
    tensors: dict[str, torch.Tensor],
) -> tuple[float, int]:
    """Train one probe the ordinary way with the same rule (lr ×0.5 after an epoch without a
    new dev minimum by 1e-4 nats, stop after ``patience`` such epochs or ``max_epochs``, best
    dev parameters kept); evaluate it on the test set. ``tensors`` are the data on the case's
    device (:func:`device_tensors`). Returns (test loss, epochs)."""
    config = case.config
    data = case.data
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    for index, (fan_in, fan_out) in enumerate(
        case.probe.layer_shapes(data.n_features, data.n_classes)
    ):
        if index:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    device = case.device
    model = nn.Sequential(*layers).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    x, y = tensors["x"], tensors["y"]
    dev_x, dev_y = x[torch.as_tensor(dev, device=device)], y[torch.as_tensor(dev, device=device)]
    train_t = torch.from_numpy(train)
    generator = torch.Generator().manual_seed(seed)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    best, best_state, bad, epochs = math.inf, None, 0, 0
    while bad < config.patience and epochs < config.max_epochs:
        order = train_t[torch.randperm(train_t.numel(), generator=generator)].to(device)
        model.train()
        for start in range(0, order.numel(), config.batch_size):
            index = order[start : start + config.batch_size]
            with autocast:
                loss = nn.functional.cross_entropy(model(x[index]), y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        epochs += 1
        dev_loss = _plain_loss(model, dev_x, dev_y)
        if dev_loss < best - IMPROVEMENT_NATS:
            best, bad = dev_loss, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            for group in optimizer.param_groups:
                group["lr"] *= config.lr_decay
    model.load_state_dict(best_state)
    test_loss = _plain_loss(model, tensors["x_test"], tensors["y_test"])
    return test_loss, epochs


def device_tensors(data: ProbeData, device: torch.device) -> dict[str, torch.Tensor]:
    """The pool and the test set on ``device`` (on the CPU, views of the arrays), made once
    for all the plain loop's probes, before its timing starts."""
    arrays = {"x": data.X_train, "y": data.y_train, "x_test": data.X_test, "y_test": data.y_test}
    return {name: torch.as_tensor(array, device=device) for name, array in arrays.items()}


@torch.no_grad()
def _plain_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    total = 0.0
    for start in range(0, len(y), 8192):
        logits = model(x[start : start + 8192])
        total += nn.functional.cross_entropy(logits, y[start : start + 8192], reduction="sum")
    return float(total) / len(y)


def run_plain_loop(
    case: Case,
    call: EngineCall,
    subsets: Sequence[np.ndarray],
    dev_set: np.ndarray | None,
    precision: str,
) -> dict[str, Any]:
    """The plain loop on ``case.loop_probes`` probes spread evenly (by size, the largest first)
    over those with at most ``case.loop_max_rows`` training rows; their arithmetic is counted
    like the engine's (with the loop's own epochs), and the loop's time for all probes is
    extrapolated from it."""
    forward = case.probe.forward_flops(case.data.n_features, case.data.n_classes)
    order = sorted(range(len(subsets)), key=lambda i: len(subsets[i]))
    eligible = [i for i in order if call.train_rows[i] <= case.loop_max_rows]
    # evenly spaced by size, from the largest eligible down (one probe: the largest)
    spread = np.linspace(len(eligible) - 1, 0, case.loop_probes)
    picks = np.unique(np.round(spread).astype(int))
    chosen = [eligible[p] for p in picks]
    flops, losses, epochs = 0.0, [], []
    tensors = device_tensors(case.data, case.device)
    start = time.perf_counter()
    for position, i in enumerate(chosen):
        rng = np.random.default_rng([position, 0xB00])
        if dev_set is None:
            train, dev = dev_split(subsets[i], case.config.dev_fraction, rng)
        else:
            train, dev = np.asarray(subsets[i]), np.asarray(dev_set)
        loss, ran = plain_early_stopped_probe(case, train, dev, position, precision, tensors)
        losses.append(loss)
        epochs.append(ran)
        flops += ran * forward * (3.0 * len(train) + len(dev)) + forward * len(case.data.y_test)
    seconds = time.perf_counter() - start
    gflops = flops / seconds / 1e9
    total = call.flops(forward)["total"]
    return {
        "loop_probes": len(chosen),
        "loop_train_rows": [int(call.train_rows[i]) for i in chosen],
        "loop_epochs": epochs,
        "loop_engine_epochs": [int(call.epochs[i]) for i in chosen],
        "loop_test_loss": losses,
        "loop_measured_s": seconds,
        "loop_gflops": gflops,
        "loop_all_probes_s": total / gflops / 1e9,
    }


# ----------------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------------


def benchmark(
    case: Case,
    precision: str,
    peaks: dict[str, float | None],
    say: Callable[[str], None],
    loop: bool,
) -> dict[str, Any]:
    say(f"\n== {case.name} [{precision}]: {case.describe}")
    runner = run_online if case.name == "online" else run_curve
    if case.device.type == "cpu":
        start_worker_pool(-1)
    reset_gpu_peak(case.device)
    with TreeMonitor() as monitor:
        summary, call = runner(case, precision, -1)
    figures = {**monitor.figures(), "gpu_peak_mib": gpu_peak_mib(case.device)}
    forward = case.probe.forward_flops(case.data.n_features, case.data.n_classes)
    flops = call.flops(forward)
    # the engine's layout: on a CPU one single-threaded process per core (bf16 there only where
    # native), on a GPU the device itself at this precision
    peak = next(
        rate
        for rate in (
            peaks.get(parallel_key(precision)),
            peaks.get(precision),
            peaks.get(parallel_key("f32")),
            peaks["f32"],
        )
        if rate
    )
    gflops = flops["total"] / figures["wall_s"] / 1e9
    row: dict[str, Any] = {
        "case": case.name,
        "precision": precision,
        "probes": len(call.epochs),
        **figures,
        "tflop": {k: v / 1e12 for k, v in flops.items()},
        "gflops": gflops,
        "percent_of_peak": 100 * gflops / peak,
        "epochs": [int(e) for e in call.epochs],
        "target_minutes": TARGET_MINUTES[case.name],
        **{k: v for k, v in summary.items() if k not in ("quality", "subsets")},
    }
    say(
        f"   wall {figures['wall_s']:.1f} s, CPU {figures['cpu_s']:.1f} s (tree; this process "
        f"{figures['own_cpu_s']:.1f} s), load {figures['load_before']:.2f} → "
        f"{figures['load_after']:.2f}"
    )
    say(
        f"   arithmetic {flops['total'] / 1e12:.2f} TFLOP (training {flops['train'] / 1e12:.2f}, "
        f"dev losses {flops['dev'] / 1e12:.2f}, evaluation {flops['eval'] / 1e12:.2f}): "
        f"{gflops:.1f} GFLOP/s, {row['percent_of_peak']:.1f} % of the {peak:.1f} GFLOP/s peak"
    )
    say(
        f"   peak memory of the process tree: {figures['peak_tree_pss_mib']:.0f} MiB PSS "
        f"({figures['peak_tree_rss_mib']:.0f} MiB RSS summed), this process "
        f"{figures['own_peak_mib']:.0f} MiB (VmHWM)"
        + (
            f"; GPU peak allocated {figures['gpu_peak_mib']:.0f} MiB"
            if figures["gpu_peak_mib"] is not None
            else ""
        )
    )
    say(f"   epochs per probe: {row['epochs']}")
    for key in ("online_kbits", "compression", "full_probe_accuracy", "largest_size_accuracy"):
        if key in row:
            say(f"   {key}: {row[key]:.4g}")
    if "mean_loss_by_size" in row:
        say(
            "   mean test loss by size (nats): "
            + ", ".join(f"{n}: {v:.3f}" for n, v in row["mean_loss_by_size"].items())
        )
    if loop:
        if case.name == "online":
            transmitted, dev = online_module.development_split(case.data.pool_size, 0.1, 0)
            n = transmitted.size
            ends = online_module.block_ends(n)
            permuted = transmitted[subset_permutation(n, 0, 0)]
            subsets = [permuted[:t] for t in ends]
            dev_set: np.ndarray | None = dev
        else:
            subsets, dev_set = summary["subsets"], None
        plain = run_plain_loop(case, call, subsets, dev_set, precision)
        row.update(plain)
        row["speedup_vs_loop"] = plain["loop_all_probes_s"] / figures["wall_s"]
        say(
            f"   plain PyTorch loop ({_loop_where(case.device)}) on {plain['loop_probes']} "
            f"of {row['probes']} probes (training rows {plain['loop_train_rows']}, epochs "
            f"{plain['loop_epochs']}; engine's {plain['loop_engine_epochs']}): "
            f"{plain['loop_measured_s']:.1f} s, {plain['loop_gflops']:.1f} GFLOP/s; all probes "
            f"extrapolated by arithmetic: {plain['loop_all_probes_s']:.0f} s "
            f"(engine {row['speedup_vs_loop']:.2f}× faster)"
        )
    row["_quality"] = summary["quality"]
    return row


def _loop_where(device: torch.device) -> str:
    return f"{torch.get_num_threads()} threads" if device.type == "cpu" else str(device)


def profile_case(case: Case, precision: str, say: Callable[[str], None]) -> None:
    """The case in this process on one thread under torch.profiler: top ops by self CPU time
    (on a GPU also its kernels, by self device time)."""
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    runner = run_online if case.name == "online" else run_curve
    activities = [ProfilerActivity.CPU]
    if case.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        runner(case, precision, None)
        seconds = time.perf_counter() - start
    say(f"\n== profile of {case.name} [{precision}], n_jobs=1, 1 thread: {seconds:.1f} s")
    say(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18))
    if case.device.type == "cuda":
        say(prof.key_averages().table(sort_by="self_device_time_total", row_limit=18))


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="reduced run, well under a minute")
    parser.add_argument("--cases", nargs="+", choices=CASE_NAMES, default=list(CASE_NAMES))
    parser.add_argument(
        "--tokens", type=int, help=f"tokens of the online case (default {FULL_TOKENS}; quick 6000)"
    )
    parser.add_argument("--precisions", nargs="+", choices=("f32", "bf16"), default=["f32"])
    parser.add_argument(
        "--pools",
        nargs="+",
        choices=("shared", "copied"),
        default=["shared"],
        help="how the pool reaches the worker processes: 'shared' (in shared memory, mapped "
        "by all; the default) or 'copied' (an ordinary array that joblib writes to a file for "
        "the workers at every engine call, as before share_data)",
    )
    parser.add_argument(
        "--device", default="auto", help="auto (CUDA when present), cpu, cuda: engine and loop"
    )
    parser.add_argument("--no-loop", action="store_true", help="skip the plain PyTorch loop")
    parser.add_argument("--profile", action="store_true", help="profile instead (1 thread)")
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    started = time.perf_counter()

    def say(line: str) -> None:
        print(line, flush=True)

    device = resolve_device(args.device)
    machine = machine_info(device)
    say(
        f"probemeter paper-scale benchmark{' (--quick)' if args.quick else ''}: "
        f"{machine['cpu']}, {machine['cores']} cores, torch {machine['torch']}, "
        f"load average {load_average()[0]:.2f}, device {device}"
        + (f" ({machine['gpu']})" if "gpu" in machine else "")
    )
    tokens = args.tokens or (6000 if args.quick else FULL_TOKENS)
    peaks = {} if args.profile else measure_peaks(device, quick=True, parallel=True)
    if peaks:
        say(
            "matmul peak GFLOP/s: "
            + ", ".join(f"{k} {v:.1f}" for k, v in peaks.items() if v is not None)
        )
    rows = []
    for pool in args.pools:
        for name in args.cases:
            # built afresh for each pool, so that one copy of the data exists at a time
            shared = pool == "shared"
            case = (
                online_case(tokens, args.quick, shared, device)
                if name == "online"
                else curve_case(args.quick, shared, device)
            )
            if isinstance(case, str):
                say(case)
                continue
            if args.profile:
                for precision in args.precisions:
                    profile_case(case, precision, say)
                continue
            by_precision = {}
            for precision in args.precisions:
                row = benchmark(case, precision, peaks, say, loop=not args.no_loop)
                row["pool"] = pool
                by_precision[precision] = row.pop("_quality")
                rows.append(row)
            if {"f32", "bf16"} <= by_precision.keys():
                base, low = np.asarray(by_precision["f32"]), np.asarray(by_precision["bf16"])
                change = float(np.max(np.abs(low - base) / base))
                say(
                    f"   bf16 against f32: largest relative change of the loss {100 * change:.2f} %"
                )
                rows[-1]["bf16_max_rel_change"] = change
            del case
    if args.profile:
        return 0
    say("\n" + table(rows, tokens))
    total = time.perf_counter() - started
    say(f"benchmark took {total:.1f} s")
    if args.json:
        args.json.write_text(
            json.dumps({"machine": machine, "peaks": peaks, "rows": rows}, indent=1, default=float)
        )
    return 0


def table(rows: Sequence[dict[str, Any]], tokens: int) -> str:
    header = (
        f"{'case':<7} {'pool':<7} {'prec':<5} {'P':>3} {'wall s':>8} {'CPU s':>8} {'TFLOP':>7} "
        f"{'GFLOP/s':>8} {'% peak':>7} {'tree MiB':>9} {'loop s':>8} {'target':>7}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        scale = FULL_TOKENS / tokens if row["case"] == "online" else 1.0
        target = f"{row['target_minutes']} min"
        loop = row.get("loop_all_probes_s")
        lines.append(
            f"{row['case']:<7} {row['pool']:<7} {row['precision']:<5} {row['probes']:>3} "
            f"{row['wall_s']:>8.1f} "
            f"{row['cpu_s']:>8.1f} {row['tflop']['total']:>7.2f} {row['gflops']:>8.1f} "
            f"{row['percent_of_peak']:>7.1f} {row['peak_tree_pss_mib']:>9.0f} "
            f"{'—' if loop is None else format(loop, '.0f'):>8} {target:>7}"
            + (f"  (at {tokens} tokens: ×{scale:g} to 1M)" if scale != 1 else "")
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
