"""Peak memory of a layer sweep with and without memory-mapped features.

A PTB part-of-speech task (Penn Treebank training text tagged by spaCy) of about 50 000 words,
every hidden state of MiniLM (7 layers × 384), prepared as ``probemeter run`` prepares it
(:func:`probemeter.runs.runner.prepare_data`), then one small loss-data curve per layer trained
while every layer's data stay alive, as in a run. Each mode runs in a fresh process:

* ``mmap`` — with a feature cache: each layer written batch by batch into a ``.npy`` file of its
  own and each layer's split, standardised data saved there and read back memory-mapped;
* ``cached`` — the same again, everything read from the cache (no encoding);
* ``ram`` — without a cache: every layer encoded into memory at once and kept there.

Resident memory counts file pages that are mapped and have been read; the kernel can drop those
at any time, unlike anonymous memory. So besides the peak resident size (VmHWM) a thread samples
``RssAnon`` and ``RssFile`` every 20 ms and reports their peaks, and the growth of anonymous
memory above what the process held before preparing the data (torch, transformers, spaCy).

    .venv/bin/python benchmarks/layer_memory.py            # ~50k words: a few minutes
    .venv/bin/python benchmarks/layer_memory.py --quick    # ~10k words
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from probemeter import Execution

FIELDS = ("VmHWM", "RssAnon", "RssFile")


def _status() -> dict[str, float]:
    text = Path("/proc/self/status").read_text()
    return {
        field: int(re.search(rf"{field}:\s+(\d+) kB", text).group(1)) / 1024 for field in FIELDS
    }


class _Sampler(threading.Thread):
    """The peaks of RssAnon and RssFile, sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.interval, self.peaks, self.running = interval, dict.fromkeys(FIELDS, 0.0), True

    def run(self) -> None:
        while self.running:
            for field, value in _status().items():
                self.peaks[field] = max(self.peaks[field], value)
            time.sleep(self.interval)


def _experiment(folder: Path, sentences: int) -> Path:
    path = folder / "sweep.toml"
    path.write_text(
        f'[task]\ndataset = "ptb"\nn_sentences = {sentences}\nsplit = "train"\nlabel = "upos"\n'
        '[[representations]]\nname = "minilm"\nkind = "transformer"\nlayer = "all"\n'
        "[method]\nepsilon = 0.5\n"
    )
    return path


def _case(mode: str, sentences: int, cache: str) -> dict[str, float]:
    """One mode, in this (fresh) process."""
    os.environ["OMP_NUM_THREADS"] = "2"
    import torch

    from probemeter import MLP, TrainingConfig, loss_data_curve
    from probemeter.runs.config import load_experiment
    from probemeter.runs.runner import prepare_data

    torch.set_num_threads(2)
    experiment = load_experiment(_experiment(Path(cache).parent, sentences))
    before = _status()["RssAnon"]  # imports and libraries, before any data
    sampler = _Sampler()
    sampler.start()
    started, cpu = time.perf_counter(), time.process_time()
    datasets = prepare_data(experiment, None if mode == "ram" else cache, progress=False)
    prepared = time.perf_counter() - started
    for data in datasets.values():  # every layer's data alive, as in a run
        loss_data_curve(
            data,
            MLP((64,)),
            [1000, data.pool_size],
            1,
            config=TrainingConfig(steps=50),
            execution=Execution(n_jobs=1),
            dev_fraction=0.0,
        )
    sampler.running = False
    sampler.join()
    first = next(iter(datasets.values()))
    words = first.pool_size + len(first.y_test)
    return {
        "words": words,
        "layers": len(datasets),
        "features_mib": len(datasets) * words * first.n_features * 4 / 2**20,
        "prepare_s": prepared,
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu,
        "peak_rss_mib": _status()["VmHWM"],
        "anon_before_mib": before,
        "peak_anon_mib": sampler.peaks["RssAnon"],
        "peak_file_mib": sampler.peaks["RssFile"],
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about 10k words instead of 50k")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: run one mode
    parser.add_argument("--sentences", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(_case(args.case, args.sentences, args.cache)))
        return
    sentences = 600 if args.quick else 3000
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        cache = str(Path(folder) / "cache")
        for mode in ("mmap", "cached", "ram"):
            command = [sys.executable, __file__, "--case", mode, "--sentences", str(sentences)]
            output = subprocess.run(
                [*command, "--cache", cache], check=True, capture_output=True, text=True
            ).stdout
            rows[mode] = json.loads(output.strip().splitlines()[-1])
    first = rows["mmap"]
    print(
        f"PTB UPOS, {first['words']:,} words, MiniLM {first['layers']} layers x 384: "
        f"{first['features_mib']:.0f} MiB of float32 features"
    )
    print(
        f"{'mode':<8}{'prepare s':>11}{'wall s':>9}{'CPU s':>9}{'peak RSS':>11}"
        f"{'peak anon':>11}{'anon growth':>13}{'peak file':>11}  (MiB)"
    )
    for mode, row in rows.items():
        row["anon_growth_mib"] = row["peak_anon_mib"] - row["anon_before_mib"]
        print(
            f"{mode:<8}{row['prepare_s']:>11.1f}{row['wall_s']:>9.1f}{row['cpu_s']:>9.1f}"
            f"{row['peak_rss_mib']:>11.0f}{row['peak_anon_mib']:>11.0f}"
            f"{row['anon_growth_mib']:>13.0f}{row['peak_file_mib']:>11.0f}"
        )
    ratio = rows["ram"]["anon_growth_mib"] / rows["mmap"]["anon_growth_mib"]
    print(
        "anon growth: anonymous memory above what imports and libraries held before the data; "
        f"in RAM / memory-mapped: {ratio:.2f}x"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
