"""Peak memory and time of probing a large sparse pool (issue 17: sparse-autoencoder features).

Builds a CSR pool of ``--rows`` × ``--features`` at ``--density`` (default 50 000 × 100 000 at
0.1 %: 5 million stored values, where the dense matrix would take 18.6 GiB), with labels from a
planted linear rule on the features, then trains a short loss-data curve of linear probes on it
(``--hidden`` for an MLP) with ``n_jobs=1``, and prints the peak resident memory of the process
(VmHWM, Linux, torch included), wall and CPU seconds, and the curve. The issue's bound is 2 GB
resident; the script exits with status 1 above ``--limit-gib``.

    .venv/bin/python benchmarks/sparse_inputs.py            # the issue's case: about a minute
    .venv/bin/python benchmarks/sparse_inputs.py --quick    # 10 000 × 20 000
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from probemeter import Execution

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _proc_memory import memory_mib

from probemeter import ProbeData
from probemeter.curves import loss_data_curve
from probemeter.probes import MLP
from probemeter.training import TrainingConfig


def planted_sparse_pool(
    rows: int, features: int, density: float, classes: int, seed: int = 0
) -> tuple[sp.csr_matrix, np.ndarray]:
    """A CSR matrix with ``round(density · features)`` non-zeros per row at uniform random
    columns (values |N(0, 1)|, like ReLU codes) and labels argmax(X W) of a random W, built
    row-block by row-block without a dense matrix."""
    rng = np.random.default_rng(seed)
    per_row = max(1, round(density * features))
    columns = rng.integers(0, features, size=(rows, per_row))
    values = np.abs(rng.standard_normal((rows, per_row))).astype(np.float32)
    indptr = np.arange(0, rows * per_row + 1, per_row, dtype=np.int64)
    X = sp.csr_matrix((values.ravel(), columns.ravel(), indptr), shape=(rows, features))
    X.sum_duplicates()
    W = rng.standard_normal((features, classes)).astype(np.float32)
    return X, np.asarray(X @ W).argmax(axis=1)


def pool_arguments(description: str, hidden: bool = False) -> argparse.Namespace:
    """The command line of the sparse benchmarks: the planted pool's shape, density and
    classes, the training steps, the memory limit and ``--quick`` (applied here); with
    ``hidden``, the probe's hidden widths too."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--features", type=int, default=100_000)
    parser.add_argument("--density", type=float, default=0.001)
    parser.add_argument("--classes", type=int, default=10)
    if hidden:
        parser.add_argument("--hidden", type=int, nargs="*", default=[])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--limit-gib", type=float, default=2 * 10**9 / 2**30)
    parser.add_argument("--quick", action="store_true", help="10 000 × 20 000, 100 steps")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.features, args.steps = 10_000, 20_000, 100
    return args


def curve_sizes(pool: int) -> list[int]:
    """The curve's sizes on a pool of ``pool`` rows: 100, 1 000, 10 000 and the whole pool."""
    return sorted({min(pool, n) for n in (100, 1000, 10_000, pool)})


def main() -> int:
    args = pool_arguments(__doc__.splitlines()[0], hidden=True)
    start_mib = memory_mib("VmRSS")
    X, y = planted_sparse_pool(args.rows, args.features, args.density, args.classes)
    data = ProbeData.from_arrays(X, y, test_size=0.2, name="sparse")
    del X
    ready_mib = memory_mib("VmRSS")
    pool = data.pool_size
    sizes = curve_sizes(pool)
    wall, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
    curve = loss_data_curve(
        data,
        MLP(tuple(args.hidden)),
        sizes=sizes,
        seeds=1,
        config=TrainingConfig(steps=args.steps),
        execution=Execution(n_jobs=1),
        dev_fraction=0.0,
    )
    wall = time.perf_counter() - wall
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu
    peak_mib = memory_mib("VmHWM")
    stored = data.X_train.nnz + data.X_test.nnz
    dense_gib = args.rows * args.features * 4 / 2**30
    print(
        f"pool {pool} + test {data.X_test.shape[0]} rows × {args.features} features, "
        f"{stored:,} stored values (density {stored / args.rows / args.features:.4%}); "
        f"dense float32 would take {dense_gib:.1f} GiB"
    )
    print(f"probe {MLP(tuple(args.hidden)).name}, {args.classes} classes, {args.steps} steps")
    print(f"resident before data {start_mib:.0f} MiB, with data {ready_mib:.0f} MiB")
    print(f"peak resident (VmHWM) {peak_mib:.0f} MiB = {peak_mib * 2**20 / 1e9:.2f} GB")
    print(f"curve: wall {wall:.1f} s, CPU {cpu:.1f} s")
    print(curve.points[["n", "loss", "accuracy"]].to_string(index=False))
    if peak_mib / 1024 > args.limit_gib:
        print(f"FAIL: peak above {args.limit_gib:.2f} GiB")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
