"""Encoding cost: every hidden state of MiniLM (all-MiniLM-L6-v2) for Penn Treebank sentences,
one row per word, as ``probemeter run`` encodes a word task.

Prints the padding that batching costs (padded token slots over real tokens, for batches in
input order and for the length-sorted batches the encoder forms), then, for float32 and
bfloat16, the wall and CPU seconds of encoding, the tokens (word pieces) per second and the
time that one million tokens would take at that rate, and the largest difference of the
bfloat16 features from the float32 ones relative to their scale.

    .venv/bin/python benchmarks/encoding.py            # 2 000 sentences
    .venv/bin/python benchmarks/encoding.py --quick    # 300 sentences
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from probemeter.datasets.conll import ptb_sentences
from probemeter.encoders import TransformerEncoder, minilm_path


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 sentences instead of 2000")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    sentences = [list(words) for words in ptb_sentences(300 if args.quick else 2000, "train")]
    encoder = TransformerEncoder(minilm_path(), pooling="words", progress=False)
    lengths = [sum(len(word) + 1 for word in words) for words in sentences]
    given = padding(encoder.tokenizer, sentences, args.batch_size, np.arange(len(sentences)))
    ordered = padding(
        encoder.tokenizer, sentences, args.batch_size, np.argsort(lengths, kind="stable")
    )
    figures: dict = {"sentences": len(sentences), "torch_threads": torch.get_num_threads()}
    figures["padding"] = {"input order": given, "length-sorted": ordered}
    print(
        f"MiniLM, all 7 hidden states, {len(sentences)} PTB sentences, {given['tokens']} tokens, "
        f"batch {args.batch_size}, {torch.get_num_threads()} torch threads"
    )
    for name, counts in figures["padding"].items():
        waste = counts["slots"] / counts["tokens"] - 1
        print(f"  padding, batches in {name}: {counts['slots']} slots, {100 * waste:.1f} % waste")
    features = {}
    for dtype in ("float32", "bfloat16"):
        timing, features[dtype] = encode(sentences, dtype, args.batch_size)
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
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
