"""How fast are structural probes trained, all together against one family at a time and
against a plain one-probe loop?

All figures come from ONE process, one after another, so their ratios are fair on a small,
noisy machine (issue 34, item 1). The work is a structural run's training: distance and depth
probes (Hewitt & Manning 2019) of every layer, rank and seed, on a pool's sentences less a
development share (the ``structural`` method's 10 %):

(a) **joint**: :func:`~probemeter.structural.training.fit_structural_layers`, every (layer,
    probe kind, rank, seed) trained together, as ``structural_layers`` trains them;
(a') **joint in workers**: the same with ``n_jobs=-1`` (one single-threaded worker process
    per usable CPU sharing the (chunk of layers, rank) stacks, the layers in shared memory
    as a run holds them), whose B must be those of (a) bit for bit;
(b) **per family**: :func:`~probemeter.structural.training.fit_structural_probes` once per
    (layer, probe kind), each family's probes of one rank stacked: the call pattern of
    ``structural_layers`` and of the ``structural`` method before the joint trainer (with
    its step, so (a) against (b) is what training everything together adds);
(c) **plain loop**: :func:`~probemeter.structural.training.fit_one_probe` (sentence by
    sentence, autograd, ``torch.optim.Adam``: Hewitt & Manning's code) on one probe per
    (probe kind, rank) for one epoch over ``--loop-sentences`` sentences, on one thread as
    the others, after an untimed first probe (torch's first optimiser step imports
    ``torch._dynamo``), extrapolated to every probe and epoch by the training arithmetic (the
    output says so); its B are compared with the joint trainer's on the same probes.

Every sentence's tree distances are computed before any of them (the treebank's, once).
Each is timed in wall and CPU seconds of the process tree (:class:`_proc_tree.TreeMonitor`),
with GFLOP/s of the training arithmetic: per probe, epoch and training word, 4·d·r (U = HB and
the weight gradient Hᵀ·∂L/∂U), and per distance probe and training sentence of n words, 6·r·n²
(the Gram product UUᵀ, the gradient's S·U and their backward products). Then the largest
difference of B between (a) and (b), and the scores of both — UUAS, DSpr., root accuracy,
NSpr. on the test sentences at each layer's rank chosen on the development sentences — side by
side with their largest difference (scoring is not timed).

Cases: ``ewt`` (the issue's protocol: gold EWT dev as the pool, test as the test sentences,
``../shared/ud``; MiniLM's 7 hidden states; ranks 16 and 64, 2 seeds, 20 epochs; skipped with
the reason when the files or the model are absent) and ``--quick`` (random trees of EWT's
lengths with Gaussian 384-d features of 2 layers, 2 epochs: under a minute).

``--sweep`` (issue 44, item 4) times a layer sweep's whole structural work instead, training
and scoring, on gold EWT's trees (dev the pool, test the test set) with Gaussian 384-d
features of ``--sweep-layers`` layers, in one process on one thread (torch and numpy's BLAS),
each way on trees of its own (nothing computed from them carried over): (s1) the
``structural`` method's units of the sweep
(:func:`~probemeter.structural.method.structural_units`, ranks 16 and 64, 2 seeds);
(s2) the online code (1 seed, the default blocks) and the loss-data curve (2 seeds, the
default sizes) of every layer and probe kind one at a time (``structural_online_code``,
``structural_curve``: the call pattern before), rank 16; (s3) the same codes and curves of
every layer and kind in one stacked call each (``structural_online_codes``,
``structural_curves``), asserted bit for bit (s2)'s. Each prints a digest of its numbers, so a
run of an older commit (``PYTHONPATH=<old>/src``; (s3) is skipped where it is absent) is
compared with this one's: the same digests, the same numbers.

Usage::

    python benchmarks/structural_speed.py --quick               # CI: under a minute
    python benchmarks/structural_speed.py                       # gold EWT: many minutes
    python benchmarks/structural_speed.py --epochs 5 --json s.json   # a shorter EWT run
    python benchmarks/structural_speed.py --sweep               # a sweep's training and scoring

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _proc_tree import TreeMonitor

from probemeter._device import single_threaded
from probemeter.structural.scoring import predict_sentences, score
from probemeter.structural.training import (
    ProbeSpec,
    StructuralTraining,
    fit_one_probe,
    fit_structural_layers,
    fit_structural_probes,
)
from probemeter.structural.trees import TreeData, development_split
from probemeter.training.engine import warm_workers
from probemeter.training.shared_memory import share_array
from probemeter.training.workers import worker_count

UD = Path(__file__).resolve().parents[1] / ".." / "shared" / "ud"
TARGETS = ("distance", "depth")


@dataclass(frozen=True)
class Case:
    """A structural run's training: layers' features of every word, trees, split, protocol."""

    name: str
    layers: list[np.ndarray]
    trees: TreeData
    pool: np.ndarray
    test: np.ndarray
    ranks: tuple[int, ...]
    seeds: int
    config: StructuralTraining

    @property
    def train(self) -> np.ndarray:
        return development_split(self.pool, 0.1, self.config.random_state)[0]

    def specs(self) -> list[ProbeSpec]:
        return [ProbeSpec(r, seed, self.train) for r in self.ranks for seed in range(self.seeds)]

    def flops_per_epoch(self, target: str, rank: int, sentences: np.ndarray | None = None) -> float:
        """One probe's training arithmetic in one epoch over ``sentences`` (default: the
        training sentences; module docstring)."""
        sentences = self.train if sentences is None else sentences
        lengths = self.trees.lengths[sentences].astype(float)
        dimension = self.layers[0].shape[1]
        flops = 4.0 * dimension * rank * lengths.sum()
        if target == "distance":
            flops += 6.0 * rank * (lengths**2).sum()
        return flops

    def training_flops(self) -> float:
        """Every probe of every layer, all epochs."""
        per_layer = sum(
            self.flops_per_epoch(target, rank) * self.seeds
            for target in TARGETS
            for rank in self.ranks
        )
        return per_layer * len(self.layers) * self.config.epochs


def ewt_case(epochs: int) -> Case | str:
    """The issue's protocol on gold EWT, or why it cannot run here."""
    dev, test = UD / "en_ewt-ud-dev.conllu", UD / "en_ewt-ud-test.conllu"
    if not dev.exists() or not test.exists():
        return f"gold EWT is not at {UD} (../shared/ud beside the repository)"
    try:
        from probemeter.datasets.conll import read_conllu
        from probemeter.encoders.hf import TransformerEncoder, minilm_path

        path = minilm_path()
    except (ImportError, OSError, ValueError) as error:
        return f"MiniLM or the conllu reader is not available: {error}"
    banks = [read_conllu(dev), read_conllu(test)]
    sentences = [list(words) for bank in banks for words in bank.sentences]
    trees = TreeData(
        tuple(heads for bank in banks for heads in TreeData.from_treebank(bank).heads),
        tuple(marks for bank in banks for marks in TreeData.from_treebank(bank).punctuation),
        source="gold EWT dev + test",
    )
    started = time.perf_counter()
    encoder = TransformerEncoder(path, pooling="words", progress=False)
    layers = list(encoder.encode_all_layers(sentences).astype(np.float32))
    print(
        f"encoded {len(sentences)} sentences, {trees.n_words} words, {len(layers)} MiniLM "
        f"layers in {time.perf_counter() - started:.0f} s (not counted below)",
        flush=True,
    )
    n_dev = len(banks[0].sentences)
    return Case(
        "ewt",
        layers,
        trees,
        np.arange(n_dev),
        np.arange(n_dev, trees.n_sentences),
        (16, 64),
        2,
        StructuralTraining(epochs=epochs, batch_size=20, lr=1e-3),
    )


def quick_case() -> Case:
    """Random trees of EWT's lengths (1-75 words, mean about 12), Gaussian 384-d features of
    two layers: the time depends on the lengths, not on the values."""
    rng = np.random.default_rng(0)
    heads = []
    for n in np.minimum(rng.geometric(1 / 12, size=400), 75):
        # each word after the first hangs from an earlier one; the first is the root
        sentence = [0] + [int(rng.integers(1, i + 1)) for i in range(1, int(n))]
        heads.append(tuple(sentence))
    trees = TreeData(tuple(heads), source="random trees")
    layers = [rng.normal(size=(trees.n_words, 384)).astype(np.float32) for _ in range(2)]
    return Case(
        "quick",
        layers,
        trees,
        np.arange(320),
        np.arange(320, 400),
        (16, 64),
        2,
        StructuralTraining(epochs=2, batch_size=20, lr=1e-3),
    )


def trained_scores(
    case: Case, trained: list[dict[str, list[np.ndarray]]], specs: list[ProbeSpec]
) -> list[dict[str, float]]:
    """Per layer, UUAS, DSpr., root accuracy and NSpr. on the test sentences: the mean over
    seeds at the rank of the highest mean development headline (the families' rule)."""
    train = case.train
    dev = np.setdiff1d(case.pool, train)
    found = []
    for features, layer in zip(case.layers, trained):
        scores = {}
        for target, (headline, spearman) in (
            ("distance", ("uuas", "dspr")),
            ("depth", ("root_accuracy", "nspr")),
        ):
            on_dev: dict[int, list[float]] = {}
            for spec, projection in zip(specs, layer[target]):
                predicted = predict_sentences(projection, features, case.trees, target, dev)
                on_dev.setdefault(spec.rank, []).append(
                    getattr(score(predicted, case.trees, target), headline)
                )
            rank = max(on_dev, key=lambda r: (np.mean(on_dev[r]), -r))
            tested = [
                score(
                    predict_sentences(projection, features, case.trees, target, case.test),
                    case.trees,
                    target,
                )
                for spec, projection in zip(specs, layer[target])
                if spec.rank == rank
            ]
            scores[headline] = float(np.mean([getattr(t, headline) for t in tested]))
            scores[spearman] = float(np.mean([t.spearman for t in tested]))
        found.append(scores)
    return found


def run_joint(
    case: Case, n_jobs: int = 1
) -> tuple[dict[str, float], list[dict[str, list[np.ndarray]]]]:
    """Every probe of the run trained together, in this process or in ``n_jobs`` workers
    (the layers then in shared memory, as a run holds them, and the workers started first)."""
    layers = case.layers if n_jobs == 1 else [share_array(layer) for layer in case.layers]
    if n_jobs != 1:
        warm_workers(n_jobs).join()
    with TreeMonitor() as monitor:
        trained = fit_structural_layers(
            layers, case.trees, TARGETS, case.specs(), case.config, n_jobs=n_jobs
        )
    return monitor.figures(), trained


def run_per_family(case: Case) -> tuple[dict[str, float], list[dict[str, list[np.ndarray]]]]:
    """One family (layer, probe kind) at a time."""
    with TreeMonitor() as monitor:
        trained = [
            {
                target: fit_structural_probes(
                    features, case.trees, target, case.specs(), case.config
                )
                for target in TARGETS
            }
            for features in case.layers
        ]
    return monitor.figures(), trained


def run_loop(case: Case, sentences: int) -> dict[str, Any]:
    """The plain loop on one probe per (probe kind, rank) of the first layer, one epoch over
    ``sentences`` training sentences, extrapolated by arithmetic; its B against the joint
    trainer's on the same probes."""
    one_epoch = StructuralTraining(1, case.config.batch_size, case.config.lr)
    features = case.layers[0]
    subset = case.train[:sentences]
    probes = [(target, ProbeSpec(rank, 0, subset)) for target in TARGETS for rank in case.ranks]
    joint = fit_structural_layers(
        [features], case.trees, TARGETS, [spec for _, spec in probes], one_epoch
    )
    deviation, timed_flops = 0.0, 0.0
    # untimed: autograd's and torch.optim.Adam's first use in a process (its first step
    # imports torch._dynamo: about 2 s) belongs to no probe
    warm_up = ProbeSpec(case.ranks[0], 0, subset[: case.config.batch_size])
    fit_one_probe(features, case.trees, TARGETS[0], warm_up, one_epoch)
    with TreeMonitor() as monitor, single_threaded(True):
        for number, (target, spec) in enumerate(probes):
            projection = fit_one_probe(features, case.trees, target, spec, one_epoch)
            deviation = max(deviation, float(np.abs(projection - joint[0][target][number]).max()))
            timed_flops += case.flops_per_epoch(target, spec.rank, subset)
    figures = monitor.figures()
    scale = case.training_flops() / timed_flops
    return {
        "loop_probes_timed": len(probes),
        "loop_sentences_timed": int(subset.size),
        "loop_measured_s": figures["wall_s"],
        "loop_measured_cpu_s": figures["cpu_s"],
        "wall_s": figures["wall_s"] * scale,
        "cpu_s": figures["cpu_s"] * scale,
        "load_before": figures["load_before"],
        "load_after": figures["load_after"],
        "max_abs_deviation_of_b": deviation,
    }


def largest_difference(a: list[dict[str, float]], b: list[dict[str, float]]) -> float:
    return max(abs(x[key] - y[key]) for x, y in zip(a, b) for key in x)


def _digest(value: Any) -> str:
    """SHA-256 (first 16 hex digits) of ``value`` as canonical JSON, floats exact (hex)."""
    import hashlib

    def exact(item: Any) -> Any:
        if isinstance(item, float):
            return item.hex()
        if isinstance(item, dict):
            return {str(k): exact(v) for k, v in item.items() if k not in ("seconds", "versions")}
        if isinstance(item, (list, tuple)):
            return [exact(v) for v in item]
        if isinstance(item, np.ndarray):
            return exact(item.tolist())
        return item

    text = json.dumps(exact(value), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_sweep(layers: int, epochs: int) -> dict[str, Any] | str:
    """(s1)-(s3) of the module docstring, or why they cannot run here."""
    from probemeter.datasets.arcs import head_probe_data
    from probemeter.datasets.treebank_splits import read_treebank_splits
    from probemeter.structural import codes
    from probemeter.structural.method import StructuralMethod, probe_trees, structural_units

    dev, test = UD / "en_ewt-ud-dev.conllu", UD / "en_ewt-ud-test.conllu"
    if not dev.exists() or not test.exists():
        return f"gold EWT is not at {UD} (../shared/ud beside the repository)"
    splits = read_treebank_splits(dev, test)
    bank = splits.combined
    rng = np.random.default_rng(0)
    datasets = [
        head_probe_data(
            bank,
            rng.normal(size=(bank.n_words, 384)).astype(np.float32),
            splits.test_mask,
            name=f"layer {number}",
            groups="tags",
            standardize=False,
        )
        for number in range(layers)
    ]
    method = StructuralMethod(ranks=(16, 64), seeds=2, epochs=epochs)
    config = method.training(0)
    print(
        f"== sweep: gold EWT trees ({bank.n_words} words), {layers} layers of Gaussian 384-d "
        f"features, {epochs} epochs, one thread",
        flush=True,
    )
    rows: dict[str, Any] = {}
    with single_threaded(True), TreeMonitor() as monitor:
        units = structural_units(datasets, method=method, random_state=0)
    rows["s1_method_units"] = {**monitor.figures(), "digest": _digest(units)}

    def fresh() -> tuple[TreeData, list[np.ndarray], np.ndarray, np.ndarray]:
        """The trees (a new object: nothing computed from them yet), features and split."""
        _, trees, pool, test = probe_trees(datasets[0])
        features = [probe_trees(data)[0] for data in datasets]
        return trees, features, pool, test

    options = {"rank": 16, "config": config}
    numbers: dict[str, Any] = {}
    trees, features, pool, test_sentences = fresh()
    with single_threaded(True), TreeMonitor() as monitor:
        for number, array in enumerate(features):
            for target in TARGETS:
                online = codes.structural_online_code(
                    array, trees, target, seeds=1, sentences=pool, **options
                )
                curve = codes.structural_curve(
                    array, trees, target, seeds=2, split=(pool, test_sentences), **options
                )
                numbers[f"{number}/{target}"] = [
                    online.blocks[["codelength", "scale"]].to_dict("list"),
                    curve.curve.points[["loss", "loss_truncated", "accuracy"]].to_dict("list"),
                ]
    rows["s2_codes_one_at_a_time"] = {**monitor.figures(), "digest": _digest(numbers)}
    if hasattr(codes, "structural_online_codes"):
        trees, features, pool, test_sentences = fresh()
        joint: dict[str, Any] = {}
        with single_threaded(True), TreeMonitor() as monitor:
            onlines = codes.structural_online_codes(
                features, trees, TARGETS, seeds=1, sentences=pool, **options
            )
            curves = codes.structural_curves(
                features, trees, TARGETS, seeds=2, split=(pool, test_sentences), **options
            )
        for number, (online, curve) in enumerate(zip(onlines, curves)):
            for target in TARGETS:
                joint[f"{number}/{target}"] = [
                    online[target].blocks[["codelength", "scale"]].to_dict("list"),
                    curve[target]
                    .curve.points[["loss", "loss_truncated", "accuracy"]]
                    .to_dict("list"),
                ]
        rows["s3_codes_joint"] = {**monitor.figures(), "digest": _digest(joint)}
        assert _digest(joint) == _digest(numbers), "the joint codes differ from one at a time"
    for name, row in rows.items():
        print(
            f"   {name:<24}: {row['wall_s']:7.1f} s wall, {row['cpu_s']:7.1f} s CPU; load "
            f"{row['load_before']:.2f} → {row['load_after']:.2f}; digest {row['digest']}",
            flush=True,
        )
    if "s3_codes_joint" in rows:
        one, both = rows["s2_codes_one_at_a_time"], rows["s3_codes_joint"]
        print(
            f"   codes and curves, joint vs one at a time: {one['cpu_s'] / both['cpu_s']:.2f}× "
            "less CPU, the same numbers bit for bit"
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="random trees, 2 layers: < 1 min")
    parser.add_argument(
        "--sweep", action="store_true", help="a sweep's training and scoring (issue 44, item 4)"
    )
    parser.add_argument("--sweep-layers", type=int, default=3, help="layers of --sweep")
    parser.add_argument("--sweep-epochs", type=int, default=5, help="epochs of --sweep")
    parser.add_argument("--epochs", type=int, default=20, help="epochs of the EWT case")
    parser.add_argument(
        "--loop-sentences",
        type=int,
        default=300,
        help="training sentences of the plain loop's timed epoch (extrapolated from them)",
    )
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    load = os.getloadavg()
    print(
        f"structural probes benchmark{' (--quick)' if args.quick else ''}: torch "
        f"{torch.__version__}, {os.cpu_count()} cores, load average {load[0]:.2f}",
        flush=True,
    )
    if args.sweep:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # numpy's BLAS on one thread too, as torch
            sweep = run_sweep(args.sweep_layers, args.sweep_epochs)
        if isinstance(sweep, str):
            print(f"skipped: {sweep}")
            return 0
        print(f"benchmark took {time.perf_counter() - started:.1f} s")
        if args.json:
            args.json.write_text(json.dumps(sweep, indent=1, default=float))
        return 0
    case = quick_case() if args.quick else ewt_case(args.epochs)
    if isinstance(case, str):
        print(f"skipped: {case}")
        return 0
    probes = len(case.layers) * len(TARGETS) * len(case.ranks) * case.seeds
    arithmetic = case.training_flops()
    print(
        f"== {case.name}: {len(case.layers)} layers × {len(TARGETS)} probe kinds × ranks "
        f"{list(case.ranks)} × {case.seeds} seeds = {probes} probes, d = "
        f"{case.layers[0].shape[1]}, {case.train.size} training sentences "
        f"({int(case.trees.lengths[case.train].sum())} words), {case.test.size} test "
        f"sentences, {case.config.epochs} epochs, batch {case.config.batch_size}; training "
        f"arithmetic {arithmetic / 1e9:.1f} GFLOP",
        flush=True,
    )
    # every sentence's tree distances, computed once per treebank before any training
    case.trees.distances(0)
    rows: dict[str, Any] = {}
    rows["joint"], joint = run_joint(case)
    workers = worker_count(-1)
    if workers > 1:
        rows[f"joint_{workers}_workers"], in_workers = run_joint(case, -1)
        same = all(
            np.array_equal(a, b)
            for x, y in zip(joint, in_workers)
            for target in TARGETS
            for a, b in zip(x[target], y[target])
        )
    rows["per_family"], per_family = run_per_family(case)
    rows["loop"] = run_loop(case, args.loop_sentences)
    for name, row in rows.items():
        row["gflops"] = arithmetic / row["wall_s"] / 1e9
        print(
            f"   {name:<16}: {row['wall_s']:8.1f} s wall, {row['cpu_s']:8.1f} s CPU (process "
            f"tree), {row['gflops']:6.2f} GFLOP/s; load {row['load_before']:.2f} → "
            f"{row['load_after']:.2f}",
            flush=True,
        )
    loop = rows["loop"]
    print(
        f"   plain loop extrapolated from {loop['loop_probes_timed']} probes × 1 epoch over "
        f"{loop['loop_sentences_timed']} sentences ({loop['loop_measured_s']:.1f} s, "
        f"{loop['loop_measured_cpu_s']:.1f} s CPU measured); its B within "
        f"{loop['max_abs_deviation_of_b']:.2e} of the joint trainer's on the same probes"
    )
    if workers > 1:
        parallel = rows[f"joint_{workers}_workers"]
        print(
            f"   joint in {workers} workers vs one process: "
            f"{rows['joint']['wall_s'] / parallel['wall_s']:.2f}× less wall, "
            f"{rows['joint']['cpu_s'] / parallel['cpu_s']:.2f}× less CPU"
        )
    for base in ("per_family", "loop"):
        print(
            f"   joint vs {base}: {rows[base]['wall_s'] / rows['joint']['wall_s']:.2f}× less "
            f"wall, {rows[base]['cpu_s'] / rows['joint']['cpu_s']:.2f}× less CPU"
        )
    deviation = max(
        float(np.abs(a - b).max())
        for x, y in zip(joint, per_family)
        for target in TARGETS
        for a, b in zip(x[target], y[target])
    )
    print(f"   largest |ΔB|, joint vs per family: {deviation:.2e}")
    if workers > 1:
        print(f"   joint in {workers} workers: B bit for bit those of one process: {same}")
    specs = case.specs()
    joint_scores = trained_scores(case, joint, specs)
    family_scores = trained_scores(case, per_family, specs)
    difference = largest_difference(joint_scores, family_scores)
    print("   layer  UUAS (joint|per family)  DSpr.  root acc.  NSpr.")
    keys = ("uuas", "dspr", "root_accuracy", "nspr")
    for number, (a, b) in enumerate(zip(joint_scores, family_scores)):
        print(f"   {number:>5}  " + "  ".join(f"{a[key]:.3f}|{b[key]:.3f}" for key in keys))
    print(f"   largest score difference, joint vs per family: {difference:.2e}")
    results = {
        "case": case.name,
        "probes": probes,
        "epochs": case.config.epochs,
        "training_gflop": arithmetic / 1e9,
        "figures": rows,
        "scores": {"joint": joint_scores, "per_family": family_scores},
        "largest_score_difference": difference,
        "largest_b_deviation": deviation,
        "total_s": time.perf_counter() - started,
    }
    print(f"benchmark took {results['total_s']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
