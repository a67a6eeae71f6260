"""Encoding cost: every hidden state of MiniLM (all-MiniLM-L6-v2) for Penn Treebank sentences,
one row per word, as ``probemeter run`` encodes a word task.

Prints the padding that batching costs (padded token slots over real tokens, for batches in
input order and for the length-sorted batches the encoder forms), then, for float32 and
bfloat16, the wall and CPU seconds of encoding, the tokens (word pieces) per second and the
time that one million tokens would take at that rate, and the largest difference of the
bfloat16 features from the float32 ones relative to their scale.

Then (``--case sites``, or by default) the cost of reading three sites of every block
(``resid_post``, ``attn_out``, ``mlp_out``) in one forward pass per batch
(``TransformerEncoder.encode_sites_into``) against one site alone and against three passes,
one per site, side by side in this process, on a tiny random Llama-style decoder (texts,
pooling ``"mean"``) and on MiniLM (words): CPU and wall seconds (the least of ``--repeats``
interleaved runs), their ratios to one site, and whether each site's features are bit-identical
to that site encoded alone.

    .venv/bin/python benchmarks/encoding.py            # 2 000 sentences (sites, MiniLM: 500)
    .venv/bin/python benchmarks/encoding.py --quick    # 300 sentences (sites, MiniLM: 100)
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from probemeter.datasets.conll import ptb_sentences
from probemeter.encoders import TransformerEncoder, minilm_path
from probemeter.encoders.tiny import tiny_decoder

#: the sites of the one-pass comparison; the first is the one read alone
SITES = ("resid_post", "attn_out", "mlp_out")


def padding(tokenizer, sentences: list[list[str]], batch_size: int, order: np.ndarray) -> dict:
    """Real tokens and padded slots of batches of ``sentences`` taken in ``order``."""
    lengths = np.array(
        [len(ids) for ids in tokenizer(sentences, is_split_into_words=True)["input_ids"]]
    )[order]
    slots = sum(
        lengths[start : start + batch_size].max() * len(lengths[start : start + batch_size])
        for start in range(0, len(lengths), batch_size)
    )
    return {"tokens": int(lengths.sum()), "slots": int(slots)}


def encode(sentences: list[list[str]], dtype: str, batch_size: int) -> tuple[dict, np.ndarray]:
    """Seconds (wall, CPU) of encoding every layer of ``sentences`` in ``dtype``."""
    encoder = TransformerEncoder(
        minilm_path(), pooling="words", dtype=dtype, batch_size=batch_size, progress=False
    )
    outputs = [
        np.empty((encoder.n_rows(sentences), encoder.dimension), dtype=np.float32)
        for _ in range(encoder.n_layers)
    ]
    encoder.encode(sentences[:batch_size])  # warm-up: first-call costs left out
    wall, cpu = time.perf_counter(), time.process_time()
    encoder.encode_layers_into(sentences, outputs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall_s": wall, "cpu_s": cpu}, np.stack(outputs)


def _timed(run) -> tuple[float, float]:
    """(CPU, wall) seconds of ``run()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def _site_outputs(encoder: TransformerEncoder, inputs: list, sites: Sequence[str]) -> dict:
    """Empty float32 outputs of every layer of each site."""
    found = {}
    for site in sites:
        moved = encoder.at_site(site)
        shape = (moved.n_rows(inputs), moved.dimension)
        found[site] = [np.empty(shape, np.float32) for _ in range(moved.n_layers)]
    return found


def compare_sites(encoder: TransformerEncoder, inputs: list, repeats: int) -> dict:
    """CPU and wall seconds (least of ``repeats`` interleaved runs) of one site, of the three
    sites in one pass and of the three one pass each; whether each site's features from the
    one pass are bit-identical to that site alone."""
    encoder.encode(inputs[: encoder.batch_size])  # warm-up: first-call costs left out
    alone = {site: _site_outputs(encoder, inputs, [site])[site] for site in SITES}
    together = _site_outputs(encoder, inputs, SITES)
    runs = {
        "one site": lambda: encoder.at_site(SITES[0]).encode_layers_into(inputs, alone[SITES[0]]),
        "three sites, one pass": lambda: encoder.encode_sites_into(inputs, together),
        "three sites, a pass each": lambda: [
            encoder.at_site(site).encode_layers_into(inputs, alone[site]) for site in SITES
        ],
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for repeat in range(repeats):  # every other repeat in reverse: no variant always first
        for name in list(runs)[:: 1 if repeat % 2 == 0 else -1]:
            times[name].append(_timed(runs[name]))
    figures: dict = {
        name: {"cpu_s": min(t[0] for t in found), "wall_s": min(t[1] for t in found)}
        for name, found in times.items()
    }
    base = figures["one site"]
    for name in runs:
        figures[name]["cpu_ratio"] = figures[name]["cpu_s"] / base["cpu_s"]
        figures[name]["wall_ratio"] = figures[name]["wall_s"] / base["wall_s"]
    figures["bit_identical"] = all(
        np.array_equal(one.view(np.uint32), own.view(np.uint32))
        for site in SITES
        for one, own in zip(together[site], alone[site])
    )
    return figures


def sites_case(sentences: list[list[str]], n_minilm: int, repeats: int, batch_size: int) -> dict:
    """:func:`compare_sites` on the tiny decoder (every sentence as a text, mean) and MiniLM
    (the first ``n_minilm`` sentences' words), printed."""
    texts = [" ".join(words) for words in sentences]
    found = {}
    with tempfile.TemporaryDirectory() as folder:
        decoder = tiny_decoder(Path(folder) / "llama", "llama", texts[:200], positions=512)
        models = {
            f"tiny Llama (2 blocks × 32; {len(texts)} texts, mean)": (
                TransformerEncoder(decoder, pooling="mean", batch_size=batch_size, progress=False),
                texts,
            ),
            f"MiniLM (6 blocks × 384; {n_minilm} sentences, words)": (
                TransformerEncoder(
                    minilm_path(), pooling="words", batch_size=batch_size, progress=False
                ),
                sentences[:n_minilm],
            ),
        }
        print(
            f"Sites {', '.join(SITES)}: one pass for all against {SITES[0]} alone "
            f"(least of {repeats} runs, "
            f"{torch.get_num_threads()} torch threads; load average "
            f"{' '.join(f'{value:.2f}' for value in os.getloadavg())})"
        )
        for name, (encoder, inputs) in models.items():
            figures = compare_sites(encoder, inputs, repeats)
            found[name] = figures
            print(
                f"  {name}: features bit-identical to one site at a time: "
                f"{figures['bit_identical']}"
            )
            for run in ("one site", "three sites, one pass", "three sites, a pass each"):
                timing = figures[run]
                print(
                    f"    {run:<25} {timing['cpu_s']:6.2f} s CPU ({timing['cpu_ratio']:.2f}×) "
                    f"{timing['wall_s']:6.2f} s wall ({timing['wall_ratio']:.2f}×)"
                )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 sentences instead of 2000")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--case",
        choices=("all", "dtypes", "sites"),
        default="all",
        help="dtypes: float32 against bfloat16; sites: three sites in one pass against one",
    )
    parser.add_argument(
        "--repeats", type=int, help="runs per variant of sites (default 5, --quick 3)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of the sites case (1: CPU seconds count the work alone on a loaded "
        "machine, where waiting threads spin); the dtypes case keeps torch's own",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    sentences = [list(words) for words in ptb_sentences(300 if args.quick else 2000, "train")]
    figures: dict = {"sentences": len(sentences), "torch_threads": torch.get_num_threads()}
    if args.case != "dtypes":
        n_minilm = 100 if args.quick else 500
        repeats = args.repeats or (3 if args.quick else 5)
        threads = torch.get_num_threads()
        torch.set_num_threads(args.threads)
        figures["sites"] = sites_case(sentences, n_minilm, repeats, args.batch_size)
        torch.set_num_threads(threads)
    if args.case != "sites":
        figures |= dtypes_case(sentences, args.batch_size)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def dtypes_case(sentences: list[list[str]], batch_size: int) -> dict:
    """The padding of batches, and float32 against bfloat16 (every hidden state of MiniLM),
    printed."""
    encoder = TransformerEncoder(minilm_path(), pooling="words", progress=False)
    lengths = [sum(len(word) + 1 for word in words) for words in sentences]
    given = padding(encoder.tokenizer, sentences, batch_size, np.arange(len(sentences)))
    ordered = padding(encoder.tokenizer, sentences, batch_size, np.argsort(lengths, kind="stable"))
    figures: dict = {"padding": {}}
    figures["padding"] = {"input order": given, "length-sorted": ordered}
    print(
        f"MiniLM, all 7 hidden states, {len(sentences)} PTB sentences, {given['tokens']} tokens, "
        f"batch {batch_size}, {torch.get_num_threads()} torch threads"
    )
    for name, counts in figures["padding"].items():
        waste = counts["slots"] / counts["tokens"] - 1
        print(f"  padding, batches in {name}: {counts['slots']} slots, {100 * waste:.1f} % waste")
    features = {}
    for dtype in ("float32", "bfloat16"):
        timing, features[dtype] = encode(sentences, dtype, batch_size)
        rate = given["tokens"] / timing["wall_s"]
        timing |= {"tokens_per_s": rate, "million_tokens_s": 1e6 / rate}
        figures[dtype] = timing
        print(
            f"  {dtype}: {timing['wall_s']:.1f} s wall, {timing['cpu_s']:.1f} s CPU, "
            f"{rate:,.0f} tokens/s; 1M tokens in {timing['million_tokens_s'] / 60:.1f} min"
        )
    scale = np.abs(features["float32"]).max(axis=(1, 2))
    error = np.abs(features["bfloat16"] - features["float32"]).max(axis=(1, 2)) / scale
    figures["bfloat16_max_relative_error"] = float(error.max())
    print(f"  bfloat16 vs float32: largest difference {100 * error.max():.2f} % of a layer's scale")
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
