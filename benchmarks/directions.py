"""How much faster is a loss-data curve of direction baselines than a trained linear probe's?

``Direction("diff-means")`` and ``Direction("lda")`` fit each probe in closed form
(:mod:`probemeter.training.directions`: class sums, for LDA the d × d covariance and its
Ledoit–Wolf shrinkage, one temperature by Newton's method) instead of Adam steps (issue 42,
item 2). This script times, in ONE process, the same curve (sizes × seeds, the curve's own
nested subsets) of each family and of a linear probe trained with the curve method's default
protocol on the same data, alternately ``--repeats`` times: wall seconds of the best run of
each, the linear probe's over the direction's, and every curve's mean test loss at the full
pool (the data: two Gaussian classes with anisotropic, rotated noise, on which whitening pays).

Cases: ``d768``: a pool of 20,000 rows of 768 features (a small language model's width),
10 sizes × 4 seeds, the linear probe 1,000 Adam steps of batch 256 (the curve method's
default protocol, ``curves.defaults.CURVE_TRAINING``, with ``probe = []``).

Usage::

    python benchmarks/directions.py                 # d768, 2 repeats
    python benchmarks/directions.py --n-jobs 1      # in this process, one thread
    python benchmarks/directions.py --quick         # 3,000 rows of 64 features, 6 sizes × 2
                                                    # seeds, 200 steps, once: seconds
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from _proc_tree import load_average

from probemeter import Execution
from probemeter.curves.curve import loss_data_curve
from probemeter.curves.defaults import CURVE_TRAINING
from probemeter.data import ProbeData
from probemeter.probes import Direction, Linear


def planted(pool: int, features: int, seed: int = 0) -> ProbeData:
    """Two classes with a shared, anisotropic and rotated noise covariance: ``pool`` rows and
    as many test rows, standardised on the pool."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.normal(size=(features, features)))
    scales = np.geomspace(0.1, 4.0, features)
    shift = rotation @ (0.1 * np.ones(features) + 0.45 * (scales > 2)) / np.sqrt(features / 16)
    y = rng.integers(2, size=2 * pool)
    noise = (rng.normal(size=(2 * pool, features)) * scales) @ rotation.T
    x = ((y[:, None] - 0.5) * shift + noise).astype(np.float32)
    return ProbeData.from_arrays(x[:pool], y[:pool], x[pool:], y[pool:])


def timed(data: ProbeData, probe, sizes, seeds: int, steps: int, execution: Execution):
    """Seconds of one curve and its mean test loss at the largest size."""
    config = replace(CURVE_TRAINING, steps=steps)
    start = time.perf_counter()
    curve = loss_data_curve(
        data, probe, sizes, seeds, config=config, execution=execution, dev_fraction=0
    )
    seconds = time.perf_counter() - start
    points = curve.points
    return seconds, float(points[points["n"] == points["n"].max()]["loss"].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small case, once (seconds)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    if args.quick:
        pool, features, n_sizes, seeds, steps, repeats = 3000, 64, 6, 2, 200, 1
    else:
        pool, features, n_sizes, seeds, steps, repeats = 20000, 768, 10, 4, 1000, args.repeats
    data = planted(pool, features)
    sizes = np.unique(np.geomspace(20, pool, n_sizes).astype(int))
    execution = Execution(device=args.device, n_jobs=args.n_jobs)
    probes = {"linear": Linear(), "diff-means": Direction("diff-means"), "lda": Direction("lda")}
    print(
        f"pool {pool} × {features} features, {len(sizes)} sizes × {seeds} seeds "
        f"({len(sizes) * seeds} probes per curve); linear: {steps} Adam steps, batch "
        f"{CURVE_TRAINING.batch_size}; device {args.device}, n_jobs {args.n_jobs}"
    )
    times: dict[str, list[float]] = {name: [] for name in probes}
    losses: dict[str, float] = {}
    for repeat in range(repeats):
        for name, probe in probes.items():
            seconds, losses[name] = timed(data, probe, sizes, seeds, steps, execution)
            times[name].append(seconds)
        line = ", ".join(f"{name} {times[name][-1]:.2f} s" for name in probes)
        print(f"  run {repeat + 1}: {line} (load {load_average()[0]:.2f})", flush=True)
    best = {name: min(values) for name, values in times.items()}
    for name in ("diff-means", "lda"):
        print(
            f"  {name}: {best[name]:.2f} s, {best['linear'] / best[name]:.0f}× faster than the "
            f"linear probe's {best['linear']:.2f} s"
        )
    print(
        "  test loss at the full pool (nats): "
        + ", ".join(f"{name} {loss:.4f}" for name, loss in losses.items())
    )


if __name__ == "__main__":
    main()
