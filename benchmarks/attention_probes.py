"""Attention probes over each text's tokens against pooling "all" with a linear probe, on the
same texts file: the planted one-keyword texts of :func:`probemeter.encoders.tiny.keyword_texts`
read by a tiny decoder built from a config, layer 1, a linear probe (``probe = []``) trained
by the curve method at the full pool.

Each pooling runs ``probemeter run`` in a child process of its own (so that its peak resident
memory, ``VmHWM``, is its own) and prints the run's wall and CPU seconds, texts per second
(texts of the file / wall), the rows the probes read (texts, or every token with ``"all"``),
the peak resident memory and the test accuracy at the full pool (for ``"all"``: of its
tokens, each labelled with its text's label), then each pooling's ratios to ``"all"``.

    .venv/bin/python benchmarks/attention_probes.py            # 2,000 texts of 200 characters
    .venv/bin/python benchmarks/attention_probes.py --quick    # 300 texts of 100 characters
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POOLINGS = ("all", "attention", "max")


def experiment(folder: Path, pooling: str, steps: int) -> Path:
    """The experiment file of one pooling."""
    path = folder / f"{pooling}.toml"
    path.write_text(
        '[task]\ndataset = "texts"\npath = "texts.csv"\n\n'
        '[[representations]]\nname = "tiny"\nkind = "transformer"\nmodel = "model"\n'
        f'layer = 1\npooling = "{pooling}"\n\n'
        '[method]\nkind = "curve"\nepsilon = 0.1\nprobe = []\nlr = 0.01\nseeds = 1\n'
        f"steps = {steps}\nsizes = [{{size}}]\n"
    )
    return path


def child(folder: Path, pooling: str, steps: int) -> dict:
    """Run one pooling in this process; its figures."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _proc_memory import memory_mib

    from probemeter.curves.results import load_curves
    from probemeter.runs.config import load_experiment
    from probemeter.runs.runner import run_experiment

    path = experiment(folder, pooling, steps)
    n_texts = sum(1 for _ in open(folder / "texts.csv")) - 1
    pool = int(0.8 * n_texts * 0.9)  # the texts task's test split, then the curve's dev split
    path.write_text(path.read_text().replace("{size}", str(pool)))
    start, cpu = time.perf_counter(), os.times()
    run_experiment(load_experiment(path), folder / f"runs-{pooling}", progress=False)
    wall = time.perf_counter() - start
    used = os.times()
    (curve,) = load_curves(next((folder / f"runs-{pooling}").glob("*/results.json")))
    points = curve.points
    return {
        "pooling": pooling,
        "wall_s": wall,
        "cpu_s": used.user + used.system - cpu.user - cpu.system,
        "texts_per_s": n_texts / wall,
        "rows": int(curve.pool_size + curve.n_test),
        "peak_rss_mib": memory_mib("VmHWM"),
        "accuracy": float(points.loc[points["n"].idxmax(), "accuracy"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 texts of 100 characters")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--child", nargs=3, metavar=("FOLDER", "POOLING", "STEPS"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.child:
        folder, pooling, steps = args.child
        print(json.dumps(child(Path(folder), pooling, int(steps))))
        return
    from probemeter.encoders.tiny import keyword_texts, tiny_decoder

    n, length, steps = (300, 100, 100) if args.quick else (2000, 200, 300)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        tiny_decoder(folder / "model", positions=length + 56)
        keyword_texts(folder / "texts.csv", n=n, length=length)
        print(f"{n} texts of about {length} tokens, tiny decoder layer 1, linear probe, {steps} "
              "steps, the full pool, one seed")  # fmt: skip
        results = []
        for pooling in POOLINGS:
            command = [sys.executable, __file__, "--child", str(folder), pooling, str(steps)]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results.append(json.loads(output.strip().splitlines()[-1]))
    base = results[0]
    print(f"{'pooling':<10} {'rows':>8} {'wall s':>7} {'CPU s':>7} {'texts/s':>8} "
          f"{'peak MiB':>9} {'accuracy':>8}  wall / all  peak / all")  # fmt: skip
    for row in results:
        print(
            f"{row['pooling']:<10} {row['rows']:>8} {row['wall_s']:>7.1f} {row['cpu_s']:>7.1f} "
            f"{row['texts_per_s']:>8.1f} {row['peak_rss_mib']:>9.0f} {row['accuracy']:>8.3f}  "
            f"{row['wall_s'] / base['wall_s']:>10.2f}  "
            f"{row['peak_rss_mib'] / base['peak_rss_mib']:>10.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
