"""Does one chunk plan for a whole layer sweep save time over one engine call per layer?

A run trains the units of a layer sweep one after another: the ``curve`` method makes one
engine call (:func:`~probemeter.training.engine.fit_evaluate`) per representation, each with
its own chunk plan, each ending with a tail in which one worker finishes the last chunk while
the other idles. :func:`~probemeter.training.engine.fit_evaluate_many` plans each call's
chunks exactly as alone and runs the chunks of all calls through one pass of the workers,
costliest first (issue 34, item 4). This script times, in ONE process and alternately
``--repeats`` times,

(a) the sweep's engine calls one after another, as a run makes them today, and
(b) the same calls in one plan (``fit_evaluate_many``),

with wall seconds and the CPU seconds of the process tree (this process and its worker
processes, ``_proc_tree.TreeMonitor``), (a) first in odd repeats and (b) first in even ones,
after one untimed call that warms the workers up, and checks that every probe's numbers (every
field of every :class:`~probemeter.training.engine.ProbeEvaluation`) are bit-identical both
ways. Figures and the verdict (one plan saves nothing measurable on gold EWT, so the runner
does not use it): benchmarks/README.md.

The calls are exactly those the ``curve`` method makes: the method is read from
``examples/ewt-upos-curve.toml`` (MLP 128, 3 seeds, 300 Adam steps at lr 1e-3, batch 256,
default sizes, a 10 % development split) and each unit's function is run with the engine call
recorded instead of made.

Cases:

* full: gold UD English-EWT (``../shared/ud``: the dev file is the pool, the test file the test
  set, UPOS, 17 tags), per-word features of all 7 hidden states of MiniLM and of its
  random-init twin (``random_state`` 0, as the runner builds ``random_init``): 14
  representations, standardised, in shared memory as a run holds them. The encoded layers are
  cached in the system's temporary folder (``probemeter-benchmarks/``), so reruns skip the
  two minutes of encoding;
* ``--quick``: 6 representations of Gaussian random features (2,000 pool rows, 64-d, 5 classes,
  labels from a random linear map), the method's options with 100 steps and MLP 32; under a
  minute, for CI.

Usage::

    python benchmarks/sweep_planning.py                  # full: ~10 minutes on 2 cores
    python benchmarks/sweep_planning.py --repeats 1
    python benchmarks/sweep_planning.py --quick --json sweep.json   # ~15 s
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
from _proc_tree import TreeMonitor, load_average
from curve_speed import start_worker_pool

import probemeter.curves.curve as curve_module
from probemeter import Execution
from probemeter._method import RunContext
from probemeter.curves.method import CurveMethod
from probemeter.data import ProbeData
from probemeter.runs.toml_text import read_toml
from probemeter.training.engine import EngineCall, ProbeEvaluation, fit_evaluate, fit_evaluate_many
from probemeter.training.shared_memory import share_data

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "ewt-upos-curve.toml"
UD = ROOT.parent / "shared" / "ud"
CACHE = Path(tempfile.gettempdir()) / "probemeter-benchmarks"
#: the engine's settings of a run on this machine: worker processes on every core
ENGINE = {"execution": Execution(device="cpu", n_jobs=-1, max_memory=None, progress=False)}


def example_method(**overrides: Any) -> CurveMethod:
    """The ``curve`` method of ``examples/ewt-upos-curve.toml``, with ``overrides``."""
    values = read_toml(EXAMPLE)["method"]
    values = {key: value for key, value in values.items() if key != "kind"}
    method, problems = CurveMethod.from_values({**values, **overrides})
    if problems:
        raise ValueError(f"{EXAMPLE}: {problems}")
    return method


def _encoded(model: str, random_init: bool, sentences: list[list[str]]) -> np.ndarray:
    """Every hidden state of MiniLM (``random_init``: its random-init twin, seed 0) for the
    words of ``sentences``, (7, n_words, 384) float32, from the cache or encoded into it."""
    from probemeter.encoders.hf import TransformerEncoder

    words = sum(len(s) for s in sentences)
    path = CACHE / f"sweep_planning-ewt-minilm{'-random' if random_init else ''}-{words}.npy"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        encoder = TransformerEncoder(
            model, pooling="words", random_init=random_init, random_state=0, progress=False
        )
        shape = (encoder.n_layers, encoder.n_rows(sentences), encoder.dimension)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        layers = np.lib.format.open_memmap(partial, "w+", np.float32, shape)
        encoder.encode_layers_into(sentences, list(layers))
        layers.flush()
        del layers
        partial.rename(path)  # whole or not at all
    return np.load(path, mmap_mode="r")


def ewt_representations() -> dict[str, ProbeData] | str:
    """The 14 representations of the full case, by run name, or why they cannot be built."""
    dev, test = UD / "en_ewt-ud-dev.conllu", UD / "en_ewt-ud-test.conllu"
    if not dev.exists() or not test.exists():
        return f"gold EWT is not at {UD} (../shared/ud beside the repository)"
    try:
        from probemeter.datasets.conll import UPOS_TAGS, read_conllu
        from probemeter.encoders.hf import minilm_path

        model = str(minilm_path())
    except (ImportError, OSError, ValueError) as error:
        return f"MiniLM or the conllu reader is not available: {error}"
    banks = [read_conllu(dev), read_conllu(test)]
    sentences = [list(words) for bank in banks for words in bank.sentences]
    labels = np.array([UPOS_TAGS.index(t) for bank in banks for s in bank.upos for t in s])
    sentence_ids = np.repeat(np.arange(len(sentences)), [len(s) for s in sentences])
    n_pool = sum(len(s) for s in banks[0].sentences)
    started = time.perf_counter()
    datasets = {}
    for suffix, random_init in (("", False), ("-random", True)):
        layers = _encoded(model, random_init, sentences)
        for layer, features in enumerate(layers):
            data = ProbeData.from_arrays(
                features[:n_pool], labels[:n_pool], features[n_pool:], labels[n_pool:],
                n_classes=len(UPOS_TAGS), name=f"minilm{suffix}-{layer}",
            )  # fmt: skip
            data = replace(
                data, clusters_train=sentence_ids[:n_pool], clusters_test=sentence_ids[n_pool:]
            )
            datasets[data.name] = share_data(data)
    print(
        f"gold EWT: pool {n_pool} words, test {len(labels) - n_pool} words; {len(datasets)} "
        f"representations ready in {time.perf_counter() - started:.0f} s (not counted below)",
        flush=True,
    )
    return datasets


def quick_representations() -> dict[str, ProbeData]:
    """Six representations of Gaussian random features, 2,000 pool rows (sentences of ten)."""
    rng = np.random.default_rng(0)
    datasets = {}
    for layer in range(6):
        x = rng.normal(size=(2500, 64)).astype(np.float32)
        y = (x @ rng.normal(size=(64, 5)) + rng.normal(size=(2500, 5))).argmax(axis=1)
        data = ProbeData.from_arrays(x[:2000], y[:2000], x[2000:], y[2000:], name=f"random-{layer}")
        sentences = np.arange(2500) // 10
        data = replace(data, clusters_train=sentences[:2000], clusters_test=sentences[2000:])
        datasets[data.name] = share_data(data)
    return datasets


class _Recorded(Exception):
    """Raised in place of an engine call, carrying its arguments."""

    def __init__(self, call: EngineCall) -> None:
        super().__init__("engine call recorded")
        self.call = call


def _record(*args: Any, execution: Any, **options: Any):
    raise _Recorded(EngineCall(*args, **options))


def curve_calls(method: CurveMethod, datasets: dict[str, ProbeData]) -> list[EngineCall]:
    """The engine call of every unit of ``method`` on ``datasets``, in the runner's order: each
    unit's function run until it calls the engine (recorded, not made)."""
    execution = ENGINE["execution"]
    context = RunContext(0, execution.device, execution.n_jobs, None, False, "upos")
    calls = []
    for plan in method.units(datasets, context):
        with mock.patch.object(curve_module, "fit_evaluate", _record):
            try:
                plan.function(plan.payload, **plan.options)
            except _Recorded as recorded:
                calls.append(recorded.call)
                continue
        raise RuntimeError(f"unit {plan.label} made no engine call")
    return calls


def one_after_another(calls: Sequence[EngineCall]) -> list[ProbeEvaluation]:
    """(a): one :func:`fit_evaluate` per call, as the runner's units make them."""
    evaluations = []
    for c in calls:
        evaluation = fit_evaluate(
            c.X_train, c.y_train, c.X_eval, c.y_eval, c.n_classes, c.subsets, c.keys, c.probe,
            c.config, per_example=c.per_example, dev_set=c.dev_set,
            return_parameters=c.return_parameters, pool_rows=c.pool_rows, lr=c.lr,
            weight_decay=c.weight_decay, **ENGINE,
        )  # fmt: skip
        evaluations.append(evaluation)
    return evaluations


def one_plan(calls: Sequence[EngineCall]) -> list[ProbeEvaluation]:
    """(b): every call in one plan."""
    return fit_evaluate_many(calls, **ENGINE)


def differences(a: Sequence[ProbeEvaluation], b: Sequence[ProbeEvaluation]) -> list[str]:
    """The fields of any call whose values are not bit-identical both ways."""
    found = []
    for call, (x, y) in enumerate(zip(a, b)):
        for item in fields(ProbeEvaluation):
            u, v = getattr(x, item.name), getattr(y, item.name)
            same = (
                u is None and v is None
                if u is None or v is None
                else all(np.array_equal(p, q) for p, q in zip(u, v))
                if isinstance(u, tuple)
                else np.array_equal(u, v)
            )
            if not same:
                found.append(f"call {call}: {item.name}")
    return found


def measure(calls: Sequence[EngineCall], repeats: int) -> dict[str, Any]:
    """Time (a) and (b) ``repeats`` times, (a) first in odd repeats and (b) first in even
    ones (a machine's load drifts); every figure and the check."""
    runs = []
    for repeat in range(repeats):
        figures = {}
        results = {}
        ways = [("a", one_after_another), ("b", one_plan)]
        for name, way in ways if repeat % 2 == 0 else ways[::-1]:  # alternate against drift
            with TreeMonitor() as monitor:
                results[name] = way(calls)
            figures[name] = monitor.figures()
        different = differences(results["a"], results["b"])
        if different:
            raise AssertionError(f"(a) and (b) differ: {', '.join(different[:5])}")
        a, b = figures["a"], figures["b"]
        run = {
            "a": a,
            "b": b,
            "wall_ratio": a["wall_s"] / b["wall_s"],
            "cpu_ratio": a["cpu_s"] / b["cpu_s"],
            "wall_saved": 1 - b["wall_s"] / a["wall_s"],
            "bit_identical": True,
        }
        runs.append(run)
        print(
            f"  run {repeat + 1}: (a) one call per representation {a['wall_s']:.1f} s wall, "
            f"{a['cpu_s']:.1f} CPU-s; (b) one plan {b['wall_s']:.1f} s wall, "
            f"{b['cpu_s']:.1f} CPU-s; (a)/(b) wall {run['wall_ratio']:.3f}, CPU "
            f"{run['cpu_ratio']:.3f} (wall saved {run['wall_saved']:.1%}); bit-identical; "
            f"load {load_average()[0]:.2f}",
            flush=True,
        )
    return {"runs": runs}


def describe(calls: Sequence[EngineCall], method: CurveMethod) -> dict[str, Any]:
    """What is trained: representations, probes, chunks alone."""
    probes = sum(len(c.subsets) for c in calls)
    sizes = sorted({len(s) for s in calls[0].subsets})
    print(
        f"{len(calls)} representations × {len(calls[0].subsets)} probes ({probes} in all): "
        f"MLP {list(method.probe)}, {method.seeds} seeds × {len(sizes)} sizes "
        f"{sizes[0]}…{sizes[-1]}, {method.steps} steps, batch {method.batch_size}, lr "
        f"{method.lr:g}; pool {calls[0].X_train.shape[0]} × {calls[0].X_train.shape[1]}, "
        f"test {len(calls[0].y_eval)}",
        flush=True,
    )
    return {
        "representations": len(calls),
        "probes": probes,
        "sizes": sizes,
        "method": method.to_dict(),
        "pool": list(calls[0].X_train.shape),
        "n_test": len(calls[0].y_eval),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="random features, under a minute")
    parser.add_argument("--repeats", type=int, help="alternations (default 2; --quick 1)")
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 2)
    print(
        f"sweep planning{' (--quick)' if args.quick else ''}: {os.cpu_count()} cores, load "
        f"{load_average()[0]:.2f}",
        flush=True,
    )
    if args.quick:
        datasets = quick_representations()
        method = example_method(steps=100, probe=[32])
    else:
        datasets = ewt_representations()
        if isinstance(datasets, str):
            print(f"full case skipped: {datasets}")
            return 0
        method = example_method()
    start = start_worker_pool(ENGINE["execution"].n_jobs)
    print(f"worker pool started in {start:.1f} s (not counted below)", flush=True)
    calls = curve_calls(method, datasets)
    case = describe(calls, method)
    # untimed: the workers import the engine and warm up on one representation's call, so
    # that neither way pays for it
    with TreeMonitor() as monitor:
        one_after_another(calls[:1])
    print(f"warm-up: one call in {monitor.figures()['wall_s']:.1f} s (not counted)", flush=True)
    results = {"quick": args.quick, "case": case, **measure(calls, repeats)}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1, default=float))
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
