"""Peak memory of ``probemeter run`` on sparse feature files (issue 17: sparse-autoencoder
features in experiment files).

Writes the pool of ``benchmarks/sparse_inputs.py`` (default 50 000 × 100 000 at 0.1 %: 5 million
stored values, 18.6 GiB if dense) as ``scipy.sparse.save_npz`` files — the first 80 % of the
rows as the training file, the rest as the test file, labels in ``<stem>.labels.npy`` — and an
experiment file (a loss-data curve of linear probes, ``n_jobs=1``), then runs
``probemeter run`` on it in a fresh process and prints that process's peak resident memory
(VmHWM, Linux, torch included) and CPU seconds. Exits with status 1 above ``--limit-gib``
(default 2 GB, the issue's bound).

    .venv/bin/python benchmarks/sparse_files.py            # the issue's case: a few minutes
    .venv/bin/python benchmarks/sparse_files.py --quick    # 10 000 × 20 000
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sparse_inputs import curve_sizes, planted_sparse_pool, pool_arguments

_CHILD = """
import resource, sys
from probemeter.cli.main import main
code = main(["run", sys.argv[1], "--out", sys.argv[2], "--no-progress", "--n-jobs", "1"])
usage = resource.getrusage(resource.RUSAGE_SELF)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(code, int(status["VmHWM"].split()[0]) / 1024, usage.ru_utime + usage.ru_stime)
"""

_EXPERIMENT = """
[run]
name = "sparse-files"

[[representations]]
name = "codes"
kind = "npz"
train = "pool.npz"
test = "test.npz"

[method]
kind = "curve"
probe = []
seeds = 1
steps = {steps}
lr = 0.001
epsilon = 0.5
sizes = {sizes}
"""


def main() -> int:
    args = pool_arguments(__doc__.splitlines()[0])
    X, y = planted_sparse_pool(args.rows, args.features, args.density, args.classes)
    pool = args.rows * 4 // 5
    sizes = curve_sizes(pool)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for stem, rows in (("pool", slice(0, pool)), ("test", slice(pool, None))):
            sp.save_npz(folder / f"{stem}.npz", X[rows], compressed=False)
            np.save(folder / f"{stem}.labels.npy", y[rows])
        size_mb = sum(path.stat().st_size for path in folder.iterdir()) / 1e6
        path = folder / "sparse_files.toml"
        path.write_text(_EXPERIMENT.format(steps=args.steps, sizes=sizes))
        del X
        completed = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_CHILD), str(path), str(folder / "runs")],
            capture_output=True,
            text=True,
            check=True,
        )
        code, peak_mib, cpu = completed.stdout.split()[-3:]
    dense_gib = args.rows * args.features * 4 / 2**30
    print(
        f"files: pool {pool} + test {args.rows - pool} rows × {args.features} features at "
        f"density {args.density:.2%}, {size_mb:.0f} MB; dense float32 would take "
        f"{dense_gib:.1f} GiB"
    )
    print(f"probemeter run (curve, sizes {sizes}, {args.steps} steps): exit {code}")
    print(f"peak resident (VmHWM) {float(peak_mib):.0f} MiB, CPU {float(cpu):.1f} s")
    if int(code) != 0 or float(peak_mib) / 1024 > args.limit_gib:
        print(completed.stderr[-2000:])
        print(f"FAIL: exit {code} or peak above {args.limit_gib:.2f} GiB")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
