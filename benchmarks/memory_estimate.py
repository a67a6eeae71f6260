"""Is the engine's memory estimate honest? Estimate against measured peak, case by case.

:func:`probemeter.training.memory.estimate_memory` predicts, from the architecture alone, the
bytes a chunk of stacked probes allocates (parameters, gradients, Adam moments, bf16 shadows,
minibatch activations, the minibatch index stream, early-stopping copies, the evaluation
block); ``fit_evaluate`` splits probes into chunks that fit ``max_memory`` by it and refuses a
probe that cannot fit alone. This script checks the prediction against the real peak.

Each case runs :func:`~probemeter.training.engine.fit_evaluate` on synthetic Gaussian features
in a **fresh subprocess** with one torch thread and ``n_jobs=1`` (in-process training, all
probes in one chunk), after a small warm-up fit, so that what it measures is its own: the peak
resident memory above what the process held just before training (VmHWM from
``/proc/self/status``, reset through ``/proc/self/clear_refs``; Linux only), with a fixed glibc
mmap threshold so that freed tensors go back to the system at once. The data are allocated
before the measurement starts (the budget does not count them). The figure of merit is
``measured / estimated``: at most 1 means the budget holds; the task's bound is 1.5.

Usage::

    python benchmarks/memory_estimate.py --quick     # under 2 minutes on a 2-core machine
    python benchmarks/memory_estimate.py             # + larger cases: a few minutes, ~8 GB RAM
    python benchmarks/memory_estimate.py --json memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _proc_memory import memory_mib

_MEASURE = "--measure"  # the hidden flag of the subprocess that measures one case


@dataclass(frozen=True)
class Case:
    """One call of fit_evaluate: ``probes`` probes of MLP(``hidden``) on ``dim``-d features,
    each trained on ``n_train`` pool examples and evaluated on ``n_eval`` examples."""

    label: str
    hidden: tuple[int, ...]
    batch_size: int
    dim: int
    probes: int = 4
    steps: int = 20
    n_classes: int = 10
    n_train: int = 2048
    n_eval: int = 4096
    precision: str = "f32"
    dropout: float = 0.0
    early_stopping: bool = False
    per_example: bool = False
    shared_dev: int = 0  # with early stopping: rows of one development set shared by all probes

    def config(self) -> Any:
        """The case's :class:`~probemeter.training.config.TrainingConfig`."""
        from probemeter.training.config import TrainingConfig

        settings: dict[str, Any] = {"batch_size": self.batch_size, "lr": 1e-3}
        if self.early_stopping:  # a few epochs: enough to reach every phase of the loop
            settings.update(early_stopping=True, max_epochs=3, patience=1)
        else:
            settings.update(steps=self.steps, precision=self.precision)
        return TrainingConfig(**settings)

    def estimate(self) -> Any:
        """The engine's :class:`~probemeter.training.memory.MemoryEstimate` of one probe."""
        from probemeter.probes import MLP
        from probemeter.training.memory import estimate_memory

        return estimate_memory(
            MLP(self.hidden, dropout=self.dropout),
            self.dim,
            self.n_classes,
            self.config(),
            rows=min(self.batch_size, self.n_train),
            n_train=self.n_train,
            n_eval=self.n_eval,
            per_example=self.per_example,
            shared_dev_rows=self.shared_dev or None,
        )


def measure(case: Case) -> dict[str, Any]:
    """Peak memory of training and evaluating ``case`` in this process, above its start."""
    import torch

    from probemeter import Execution
    from probemeter.probes import MLP
    from probemeter.training.config import TrainingConfig
    from probemeter.training.engine import fit_evaluate

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    n_pool = max(case.n_train + case.shared_dev, 64)
    X = rng.standard_normal((n_pool, case.dim), dtype=np.float32)
    y = rng.integers(0, case.n_classes, n_pool)
    X_eval = rng.standard_normal((case.n_eval, case.dim), dtype=np.float32)
    y_eval = rng.integers(0, case.n_classes, case.n_eval)
    subsets = [rng.permutation(case.n_train) for _ in range(case.probes)]
    shared = {"dev_set": np.arange(case.n_train, n_pool)} if case.shared_dev else {}
    keys = [(0, probe) for probe in range(case.probes)]
    probe = MLP(case.hidden, dropout=case.dropout)
    arguments = (X, y, X_eval, y_eval, case.n_classes)
    # every probe in one chunk, trained in this process
    settings = {"execution": Execution(device="cpu", n_jobs=1, max_memory=1024.0)}
    fit_evaluate(*arguments, subsets[:1], keys[:1], MLP((8,)), TrainingConfig(2, 8), **settings)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current size
    before = memory_mib("VmRSS")
    fit_evaluate(
        *arguments,
        subsets,
        keys,
        probe,
        case.config(),
        per_example=case.per_example,
        **shared,
        **settings,
    )
    return {"measured_mib": memory_mib("VmHWM") - before, "before_mib": before}


def run_case(case: Case) -> dict[str, Any]:
    """:func:`measure` ``case`` in a fresh Python process; the case with estimate and peak."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "131072"}
    command = [sys.executable, __file__, _MEASURE, json.dumps(asdict(case))]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {case} failed:\n{done.stderr}")
    memory = case.estimate()
    estimated = memory.chunk_bytes(case.probes) / 2**20
    measured = json.loads(done.stdout.splitlines()[-1])
    return {
        **asdict(case),
        "estimated_mib": estimated,
        "training_mib_per_probe": memory.training / 2**20,
        "evaluating_mib_per_probe": memory.evaluating / 2**20,
        **measured,
        "ratio": measured["measured_mib"] / estimated,
    }


def cases(quick: bool) -> list[Case]:
    """The architectures measured: parameter-bound, activation-bound and evaluation-bound
    probes, bf16, dropout, early stopping and per-example evaluation."""
    chosen = [
        Case("linear, ELMo-sized input", (), 256, 1024, probes=8, n_classes=45),
        Case("MLP 512x512 (Whitney et al.)", (512, 512), 256, 64, probes=8),
        Case("MLP 2048x2048", (2048, 2048), 256, 768),
        Case("MLP 4096, small batch", (4096,), 32, 1024, probes=2),
        Case("MLP 1024x1024 bf16", (1024, 1024), 256, 1024, precision="bf16"),
        Case("MLP 1024x1024 dropout", (1024, 1024), 128, 512, dropout=0.3),
        Case("MLP 1024x1024 early stopping", (1024, 1024), 64, 256, early_stopping=True),
        Case(
            "MLP 512 early stop, shared dev 8k",
            (512,),
            64,
            768,
            early_stopping=True,
            shared_dev=8192,
        ),
        Case("MLP 256, per-example, 60k eval", (256,), 64, 256, n_eval=60_000, per_example=True),
    ]
    if not quick:
        chosen += [
            Case("MLP 2048x2048, 1000 steps", (2048, 2048), 256, 768, probes=2, steps=1000),
            Case("MLP 6000x6000", (6000, 6000), 64, 256, probes=2, steps=5, n_eval=1024),
            Case("MLP 20000x20000 (issue 13)", (20000, 20000), 8, 64, 1, 2, n_eval=256),
        ]
    return chosen


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small cases only, under 2 minutes")
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    print("memory estimate vs measured peak: 1 thread, n_jobs=1, one chunk, fresh process each")
    header = f"{'case':<34} {'probes':>6} {'estimate MiB':>12} {'measured MiB':>12} {'ratio':>6}"
    print(f"{header} {'baseline MiB':>12}")
    rows = []
    for case in cases(args.quick):
        row = run_case(case)
        rows.append(row)
        print(
            f"{case.label:<34} {case.probes:>6} {row['estimated_mib']:>12.1f} "
            f"{row['measured_mib']:>12.1f} {row['ratio']:>6.2f} {row['before_mib']:>12.1f}",
            flush=True,
        )
    worst = max(row["ratio"] for row in rows)
    print(f"\nlargest measured/estimated: {worst:.2f} (the budget holds when it is at most 1)")
    if args.json:
        args.json.write_text(json.dumps({"quick": args.quick, "rows": rows}, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == _MEASURE:
        fields = json.loads(sys.argv[2])
        print(json.dumps(measure(Case(**{**fields, "hidden": tuple(fields["hidden"])}))))
    else:
        raise SystemExit(main())
