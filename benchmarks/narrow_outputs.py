"""How fast are a stacked layer's products with few outputs, plain and transposed?

The engine's stacked layer computes ``bias + h @ W`` per probe (``baddbmm``, outputs (P, rows,
fan_out)) and the weight gradient ``hᵀ @ upstream`` (``bmm``, (P, fan_in, fan_out)). With few
outputs (a probe's output layer: 2 to 15 classes on most tasks) torch's CPU ``bmm`` runs far
below the machine's rate; :func:`probemeter.probes.stacked_mlp.transposed_layer` then computes
them transposed (Wᵀ · hᵀ, (P, fan_out, rows); upstreamᵀ · h, (P, fan_out, fan_in), copied into
the gradient). This script times both ways on one thread and prints which one the engine
picks, so the threshold can be checked on another machine. It then times whole fits on the
digits' pixels (10 classes) in this process, one thread, with the transposition switched off
(the baseline: ``NARROW_OUTPUT = 0``) and on: a loss-data curve of linear probes and one of
MLP 1×64 probes (20 sizes × 8 seeds) and the Pareto sweep's 50 nuclear-norm linear probes; and
4 structural distance probes of rank 4 (the product Bᵀh has 4 columns) on 600 random trees of 8
to 34 words with 384-d Gaussian features (the time depends on the sentences' lengths, not on
the values)::

    python benchmarks/narrow_outputs.py            # 84 shapes and the fits: about 6 minutes
    python benchmarks/narrow_outputs.py --quick    # a few shapes, shorter fits
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable

import numpy as np
import torch

from probemeter import Execution
from probemeter.curves.curve import default_sizes, loss_data_curve
from probemeter.datasets import digits_representations
from probemeter.pareto.linear_probes import fit_nuclear_norm_probes, nuclear_norm_penalties
from probemeter.probes import MLP, Linear, stacked_mlp
from probemeter.probes.stacked_mlp import transposed_layer
from probemeter.structural.training import ProbeSpec, StructuralTraining, fit_structural_probes
from probemeter.structural.trees import TreeData
from probemeter.training import TrainingConfig

PROBES = 8


def gflops(work: Callable[[], object], flops: float, seconds: float) -> float:
    """GFLOP/s of ``work`` (``flops`` each call), repeated for about ``seconds``."""
    work()
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        work()
        calls += 1
    return flops * calls / (time.perf_counter() - start) / 1e9


def measure(rows: int, fan_in: int, fan_out: int, seconds: float) -> dict[str, float]:
    """Forward and weight-gradient GFLOP/s of P = 8 stacked layers, both ways."""
    generator = torch.Generator().manual_seed(0)
    h = torch.randn(PROBES, rows, fan_in, generator=generator)
    weight = torch.randn(PROBES, fan_in, fan_out, generator=generator)
    bias = torch.randn(PROBES, 1, fan_out, generator=generator)
    upstream = torch.randn(PROBES, rows, fan_out, generator=generator)
    outputs = torch.empty(PROBES, rows, fan_out)
    outputs_t = torch.empty(PROBES, fan_out, rows)
    gradient = torch.empty(PROBES, fan_in, fan_out)
    gradient_t = torch.empty(PROBES, fan_out, fan_in)

    def transposed_gradient() -> None:
        torch.bmm(upstream.transpose(1, 2), h, out=gradient_t)
        gradient.copy_(gradient_t.transpose(1, 2))

    flops = 2.0 * PROBES * rows * fan_in * fan_out
    return {
        "forward": gflops(lambda: torch.baddbmm(bias, h, weight, out=outputs), flops, seconds),
        "forward_t": gflops(
            lambda: torch.baddbmm(
                bias.transpose(1, 2), weight.transpose(1, 2), h.transpose(1, 2), out=outputs_t
            ),
            flops,
            seconds,
        ),
        "gradient": gflops(
            lambda: torch.bmm(h.transpose(1, 2), upstream, out=gradient), flops, seconds
        ),
        "gradient_t": gflops(transposed_gradient, flops, seconds),
    }


def fits(quick: bool) -> dict[str, Callable[[], np.ndarray]]:
    """Whole fits, each returning its losses (the structural probes: their trained B)."""
    data = digits_representations()["pixels"]
    sizes = default_sizes(data.pool_size, 20)
    steps = 50 if quick else 1000
    config = TrainingConfig(steps=steps, lr=1e-3)

    def curve(probe: Linear | MLP) -> Callable[[], np.ndarray]:
        return lambda: (
            loss_data_curve(
                data,
                probe,
                sizes,
                8,
                config=config,
                execution=Execution(n_jobs=1),
                dev_fraction=0.0,
            )
            .to_frame()["loss"]
            .to_numpy()
        )

    def pareto() -> np.ndarray:
        arrays = (data.X_train, data.y_train, data.X_test, data.y_test, data.n_classes)
        penalties = nuclear_norm_penalties(50)
        config = TrainingConfig(steps=steps, lr=1e-2)
        return fit_nuclear_norm_probes(*arrays, penalties, config=config).loss

    def structural() -> np.ndarray:
        rng = np.random.default_rng(0)
        n_sentences = 200 if quick else 600
        lengths = rng.integers(8, 35, n_sentences)
        # word i (1-based) hangs from a word before it; word 1 is the root
        heads = [(0, *(int(rng.integers(1, i)) for i in range(2, n + 1))) for n in lengths]
        trees = TreeData(tuple(heads))
        features = rng.standard_normal((trees.n_words, 384)).astype(np.float32)
        specs = [ProbeSpec(4, seed, np.arange(n_sentences)) for seed in range(4)]
        config = StructuralTraining(epochs=1 if quick else 3)
        return np.stack(fit_structural_probes(features, trees, "distance", specs, config))

    return {
        "linear curve": curve(Linear()),
        "MLP 1x64 curve": curve(MLP((64,))),
        "pareto": pareto,
        "structural": structural,
    }


def time_fits(quick: bool) -> None:
    """CPU seconds of each fit with plain products and with narrow layers transposed, run
    alternately twice (the first call of a fit pays one-off costs), the best of each, and the
    largest change of a result between them relative to the largest result."""
    print(f"\nwhole fits, one thread ({'quick' if quick else 'full'})")
    print(f"{'fit':>16} | {'plain s':>8} {'transp. s':>9} | ratio | max change")
    for name, fit in fits(quick).items():
        default = stacked_mlp.NARROW_OUTPUT
        seconds, losses = [np.inf, np.inf], [np.empty(0), np.empty(0)]
        for _, variant in itertools.product(range(2), range(2)):  # alternately, best of two
            stacked_mlp.NARROW_OUTPUT = (0, default)[variant]  # 0: every product plain
            start = time.process_time()
            losses[variant] = fit()
            seconds[variant] = min(seconds[variant], time.process_time() - start)
        stacked_mlp.NARROW_OUTPUT = default
        change = float(np.max(np.abs(losses[1] - losses[0]) / np.abs(losses[0]).max()))
        print(
            f"{name:>16} | {seconds[0]:8.2f} {seconds[1]:9.2f} | "
            f"{seconds[0] / seconds[1]:4.2f}× | {change:.1e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few shapes, shorter timings")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows_list = (32, 256) if args.quick else (8, 32, 64, 256)
    fan_ins = (512,) if args.quick else (64, 512, 1024)
    fan_outs = (3, 10, 16) if args.quick else (2, 3, 10, 15, 16, 17, 45)
    seconds = 0.2 if args.quick else 0.5
    print(f"torch {torch.__version__}, one thread, P = {PROBES} stacked layers; GFLOP/s")
    print(
        f"{'rows':>5} {'in':>5} {'out':>4} | {'forward':>8} {'transp.':>8} | "
        f"{'gradient':>8} {'transp.':>8} | engine"
    )
    cpu = torch.device("cpu")
    for rows, fan_in, fan_out in itertools.product(rows_list, fan_ins, fan_outs):
        r = measure(rows, fan_in, fan_out, seconds)
        choice = "transposed" if transposed_layer(fan_out, rows, cpu) else "plain"
        print(
            f"{rows:5d} {fan_in:5d} {fan_out:4d} | {r['forward']:8.1f} {r['forward_t']:8.1f} | "
            f"{r['gradient']:8.1f} {r['gradient_t']:8.1f} | {choice}"
        )
    time_fits(args.quick)


if __name__ == "__main__":
    main()
