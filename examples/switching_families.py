"""A switching code over probe families (fixed share, Herbster & Warmuth 1998, with switching
rate 1/t) on digits, Fashion-MNIST and MiniLM layers.

For every representation, the online code (Voita & Titov 2020, eq. 4) with each probe family
(default: linear, MLP-1 and MLP-2 of width 64) over the same blocks and data orders, and the
switching code mixing them example by example (:func:`probemeter.mdl.switching_codelength`):
it is never more than B_0 = log2 K_f + log2 n bits longer than the best family in hindsight (K_f
families, n labels), and can be shorter than every family when the best one changes with the
amount of data (a small probe early, a larger one late).

    python examples/switching_families.py digits
    python examples/switching_families.py digits-embeddings
    python examples/switching_families.py fashion --n-train 6000
    python examples/switching_families.py minilm --tokens 12000 --layers 0 2 4 6

MiniLM: **silver** UPOS tags of Penn Treebank words (spaCy ``en_core_web_sm``'s, not gold
annotations), the word-averaged
hidden states of each layer (as in ``examples/mdl_minilm_pos.py``). Writes
``switching_<dataset>.json`` (every code), ``.md`` (the table) and ``.png`` (each
representation's cumulative codelengths against the switching code's, and the posterior over
families after each block) to ``--out``.

Recorded runs (defaults: 2 data orders, batch 64, at most 100 epochs; a 2-core machine shared
with other jobs at load 10-30, so wall times are several times the unloaded ones; kbits of 1024
bits; "over best" is switching − best family in hindsight, bits, mean over seeds; the bound
B_0 = log2 3 + log2 n):

digits (n = 1167 sent, bound 11.8 bits; 192 s wall, 48 s CPU)::

    representation  linear  mlp-64  mlp-64x64  mixture  switching  best       over best
    pixels          0.731   0.454   0.480      0.456    0.451      mlp-64     -3.3
    pca-8           1.914   0.697   0.631      0.633    0.634      mlp-64x64  +2.1
    random-proj-8   2.556   1.703   1.740      1.698    1.695      mlp-64     -0.8

Fashion-MNIST, ``--n-train 3000`` (n = 2700 sent, bound 13.0 bits; 598 s wall, 72 s CPU)::

    representation  linear  mlp-64  mlp-64x64  mixture  switching  best       over best
    pixels          2.533   2.423   2.465      2.425    2.388      mlp-64     -36.0
    pca-16          3.669   2.715   2.681      2.682    2.660      mlp-64x64  -21.0
    random-proj-16  4.511   3.896   3.923      3.891    3.868      mlp-64     -21.6

The best family changes with the representation (MLP-1 for pixels, MLP-2 for PCA) and with
the amount of data (the posterior leans to the linear probe over the first few dozen labels,
up to ~170 for Fashion pixels, then to an MLP): the switching code follows it, within its
bound of the best family everywhere and shorter than every family in 5 of 6 cases. The
Bayesian mixture stays within log2 3 = 1.6 bits of each seed's best family but never below it.
MiniLM, ``--tokens 10000 --layers 0 1 2 3 4 5 6`` (10,020 words, n = 7213 sent per layer,
bound 14.4 bits; features cached beforehand; 4375 s wall at load 20-30, 225 s CPU of this
process and the waited-for workers)::

    layer  linear  mlp-64  mlp-64x64  mixture  switching  best    over best
    0      5.196   4.867   5.085      4.869    4.848      mlp-64  -19.6
    1      4.339   4.118   4.264      4.120    4.090      mlp-64  -28.8
    2      3.786   3.622   3.781      3.624    3.597      mlp-64  -26.5
    3      4.121   3.881   4.155      3.883    3.868      mlp-64  -13.6
    4      4.680   4.432   4.694      4.434    4.418      mlp-64  -14.9
    5      6.089   5.440   5.898      5.442    5.430      mlp-64  -10.8
    6      8.274   7.417   8.029      7.418    7.398      mlp-64  -19.3

The switching code is shorter than every family at every layer; the families order each other
differently by layer (linear beats MLP-2 at layers 3 and 4, MLP-2 beats linear elsewhere) but
rank the layers alike (2 < 3 < 1 < 4 < 0 < 5 < 6), as they rank the representations of digits
and Fashion-MNIST alike (only the gaps differ: a linear probe makes pixels 2.6x shorter than
pca-8 on digits, MLP-2 1.3x).

Families that disagree: ``digits-embeddings`` sets a linear reduction of the digits against
nonlinear ones of the same size or smaller, all fitted without labels: pixels (64-d), PCA to 8
and to 2 dimensions (fitted on the pool), Isomap to 2 (10 neighbours, fitted on the pool, test
images by its out-of-sample map) and t-SNE to 2 (perplexity 30, of pool and test images
together: it has no out-of-sample map). The t-SNE plane holds the ten digits as separated
clusters that a linear softmax separates poorly (3086 of the uniform code's 3877 bits),
while PCA-8 keeps the directions of largest variance, which a linear probe reads. Same split
as ``digits`` (n = 1167 sent, bound 11.8 bits; 62 s wall, 64 s CPU; kbits, mean over 2 seeds,
rank among the five representations in brackets)::

    representation  linear     mlp-64     mlp-64x64  mixture    switching  best       over best
    pixels          0.731 (1)  0.454 (1)  0.480 (1)  0.456 (1)  0.451 (1)  mlp-64     -3.3
    pca-8           1.914 (2)  0.697 (2)  0.631 (3)  0.633 (3)  0.634 (3)  mlp-64x64  +2.1
    pca-2           3.099 (5)  1.803 (5)  1.718 (5)  1.719 (5)  1.722 (5)  mlp-64x64  +4.6
    isomap-2        3.079 (4)  1.632 (4)  1.504 (4)  1.506 (4)  1.507 (4)  mlp-64x64  +3.1
    tsne-2          3.014 (3)  0.758 (3)  0.498 (2)  0.499 (2)  0.502 (2)  mlp-64x64  +4.4

The families rank pca-8 and tsne-2 in opposite orders: the linear probe makes pca-8 1.6x
shorter (1960 against 3086 bits) and MLP-1 8 % shorter (714 against 776 bits), while MLP-2
makes tsne-2 21 % shorter (510 against 646 bits); every seed agrees with its mean on each of
the three. The switching code ranks them as its best family, MLP-2, does (tsne-2 first), and
stays within its bound of the best family on every representation (at most 4.6 bits over it
on average and 5.4 in any seed, of 11.8): one code gives one ranking where the choice of
family would otherwise decide it, and it is the ranking of the family that codes best.

With ``--seeds 3`` (398 s wall at load 6-10, 110 s CPU) the ranks are the same in every column
and so is the disagreement (linear 1943 against 3072 bits, MLP-1 738 against 787, MLP-2 681
against 519 for pca-8 against tsne-2, each of the three data orders agreeing); the switching
code is at most 5.4 bits over the best family in any seed (bound 11.8).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from probemeter import Execution
from probemeter._figures import FigureOptions
from probemeter._io import write_json_atomic, write_text_atomic
from probemeter.data import ProbeData
from probemeter.datasets import digits_representations, fashion_mnist
from probemeter.datasets.projections import project
from probemeter.mdl import PAPER_TIMESTEPS, SwitchingCode, paper_training, switching_codelength
from probemeter.probes import MLP

#: a geometric schedule from 1 %, for pools too small for the paper's 0.1 % first block
SMALL_TIMESTEPS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", choices=["digits", "digits-embeddings", "fashion", "minilm"])
    parser.add_argument(
        "--families",
        nargs="+",
        default=["linear", "64", "64x64"],
        help="probe families: 'linear' or hidden widths such as 64 or 64x64",
    )
    parser.add_argument("--seeds", type=int, default=2, help="data orders of the online codes")
    parser.add_argument("--n-train", type=int, default=6000, help="Fashion-MNIST pool")
    parser.add_argument("--tokens", type=int, default=12_000, help="MiniLM: about this many words")
    parser.add_argument("--layers", type=int, nargs="+", default=[0, 2, 4, 6])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=Path("switching-results"))
    parser.add_argument("--cache", type=Path, default=Path(".probemeter-cache"))
    return parser.parse_args()


def _family(spec: str) -> MLP:
    return MLP(()) if spec == "linear" else MLP(tuple(int(w) for w in spec.split("x")))


def _representations(args: argparse.Namespace) -> tuple[dict[str, ProbeData], str]:
    """The representations to compare and a note on the data."""
    if args.dataset == "digits":
        return digits_representations(), "scikit-learn digits (8x8 images, 10 classes)"
    if args.dataset == "digits-embeddings":
        return _digits_embeddings(), (
            "scikit-learn digits (10 classes): pixels, their PCA to 8 and 2 dimensions, and 2-d "
            "nonlinear embeddings of the images (Isomap, t-SNE) fitted without labels"
        )
    if args.dataset == "fashion":
        pixels = fashion_mnist(n_train=args.n_train, n_test=2000, name="pixels")
        views = {"pixels": pixels}
        for kind, name in (("pca", "pca-16"), ("random-projection", "random-proj-16")):
            pool, test = project(kind, 16, pixels.X_train, pixels.X_test)
            views[name] = ProbeData.from_arrays(
                pool, pixels.y_train, test, pixels.y_test, name=name, n_classes=10
            )
        return views, f"Fashion-MNIST, {args.n_train} training images, 10 classes"
    return _minilm(args)


def _digits_embeddings() -> dict[str, ProbeData]:
    """Digits pixels (64-d), their PCA to 8 and to 2 dimensions (fitted on the pool, as in
    :func:`digits_representations`) and two 2-d nonlinear embeddings of the same images, fitted
    without labels: Isomap (10 neighbours) fitted on the pool, the test images mapped by its
    out-of-sample transform; t-SNE (perplexity 30) of pool and test images together, which
    has no out-of-sample map (transductive, as a representation of the inputs the receiver
    already holds). Same pool/test split as :func:`digits_representations`."""
    from sklearn.datasets import load_digits
    from sklearn.manifold import TSNE, Isomap

    from probemeter.datasets.digits import digits_split

    images, labels = load_digits(return_X_y=True)
    train, test = digits_split()
    isomap = Isomap(n_neighbors=10, n_components=2).fit(images[train])
    tsne = TSNE(2, perplexity=30.0, init="pca", random_state=0).fit_transform(images)
    views = {
        "pixels": (images[train], images[test]),
        "pca-8": project("pca", 8, images[train], images[test]),
        "pca-2": project("pca", 2, images[train], images[test]),
        "isomap-2": (isomap.transform(images[train]), isomap.transform(images[test])),
        "tsne-2": (tsne[train], tsne[test]),
    }
    return {
        name: ProbeData.from_arrays(pool, labels[train], held, labels[test], name=name)
        for name, (pool, held) in views.items()
    }


def _minilm(args: argparse.Namespace) -> tuple[dict[str, ProbeData], str]:
    from probemeter.datasets.conll import annotate_text, probe_data, ptb_sentences
    from probemeter.encoders import FeatureCache, TransformerEncoder, minilm_path

    candidates = ptb_sentences(max(50, args.tokens // 10), split="train")
    lengths = np.cumsum([len(s) for s in candidates])
    treebank = annotate_text(candidates[: int(np.searchsorted(lengths, args.tokens)) + 1])
    encoder = TransformerEncoder(minilm_path(), 0, pooling="words", device=args.device)
    key = {**encoder.cache_key, "layer": "all"}
    features = FeatureCache(args.cache).features(
        key, [list(s) for s in treebank.sentences], encoder.encode_all_layers
    )
    views = {
        f"layer {layer}": probe_data(treebank, features[layer], name=f"layer {layer}")
        for layer in args.layers
    }
    note = (
        f"all-MiniLM-L6-v2 layers, {treebank.n_words} Penn Treebank words; POS labels are "
        "SILVER (spaCy en_core_web_sm), not gold"
    )
    return views, note


def _table(codes: dict[str, SwitchingCode]) -> str:
    """Markdown: per representation, each family's online code, the mixture and the switching
    code (kbits), the overhead over the best family against its bound B_0 (bits), and the
    rank of the representation under each code (1 = shortest)."""
    families = next(iter(codes.values())).families
    totals = {name: code.summary_table()["bits"] for name, code in codes.items()}
    columns = [*families, "mixture (no switching)", "switching"]
    ranks = {
        column: {
            name: rank
            for rank, name in enumerate(sorted(codes, key=lambda n: totals[n][column]), start=1)
        }
        for column in columns
    }
    header = (
        "| representation | "
        + " | ".join(f"{c} kbits (rank)" for c in columns)
        + " | best family | switching − best, bits | bound B_0 | best 1-switch + B_1 − switching |"
    )
    lines = [header, "|" + "---|" * (len(columns) + 5)]
    for name, code in codes.items():
        one_switch = code.hindsight[code.hindsight["switches"] == 1]
        cells = [f"{totals[name][c] / 1024:.3f} ({ranks[c][name]})" for c in columns]
        best = code.seeds["best_family"].mode().iloc[0]
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {best} | {code.mean('overhead_bits'):.1f} | {code.mean('bound_bits'):.1f} | "
            f"{one_switch['slack_bits'].mean():.1f} |"
        )
    return "\n".join(lines)


def _verb(families: list[str]) -> str:
    return f"{', '.join(families)} prefer{'s' if len(families) == 1 else ''}"


def _disagreements(codes: dict[str, SwitchingCode]) -> str:
    """Markdown lines: every pair of representations that two families rank in opposite
    orders (by mean online codelength), and the order of the switching code."""
    families = next(iter(codes.values())).families
    totals = {name: code.summary_table()["bits"] for name, code in codes.items()}
    lines = []
    names = list(codes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            prefer_a = [f for f in families if totals[a][f] < totals[b][f]]
            prefer_b = [f for f in families if totals[b][f] < totals[a][f]]
            if prefer_a and prefer_b:
                switching = a if totals[a]["switching"] < totals[b]["switching"] else b
                lines.append(
                    f"- {a} vs {b}: {_verb(prefer_a)} {a}; {_verb(prefer_b)} {b}; "
                    f"the switching code prefers {switching}"
                )
    if not lines:
        return "No two families rank any pair of representations in opposite orders."
    return "Families that rank representations in opposite orders:\n\n" + "\n".join(lines)


def main() -> None:
    args = _arguments()
    started, cpu_started = time.perf_counter(), time.process_time()
    views, note = _representations(args)
    print(f"{note}: {', '.join(views)} ({time.perf_counter() - started:.0f} s)", flush=True)
    families = [_family(spec) for spec in args.families]
    config = paper_training(batch_size=args.batch_size, max_epochs=args.max_epochs)
    codes = {}
    for name, data in views.items():
        n = data.pool_size
        timesteps = PAPER_TIMESTEPS if n * PAPER_TIMESTEPS[0] * 0.9 >= 2 else SMALL_TIMESTEPS
        tick = time.perf_counter()
        codes[name] = switching_codelength(
            data,
            families,
            timesteps,
            seeds=args.seeds,
            config=config,
            execution=Execution(device=args.device, n_jobs=args.n_jobs),
        )
        print(f"{codes[name]}\n({time.perf_counter() - tick:.0f} s)\n", flush=True)
    seconds = time.perf_counter() - started
    header = (
        f"# Switching code over probe families: {args.dataset}\n\n{note}. Families: "
        f"{', '.join(f.name for f in families)}; online codes over {args.seeds} data orders, "
        "early stopping on a held-out development set (Voita & Titov sec. 3.1, batch "
        f"{args.batch_size}, at most {args.max_epochs} epochs); switching code: fixed share, "
        "alpha_t = 1/t, per example. Means over seeds. Run time "
        f"{seconds:.0f} s wall (this process's CPU {time.process_time() - cpu_started:.0f} s, "
        "engine workers not included).\n\n"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"switching_{args.dataset}"
    report = f"{header}{_table(codes)}\n\n{_disagreements(codes)}\n"
    write_text_atomic(stem.with_suffix(".md"), report)
    write_json_atomic(
        stem.with_suffix(".json"),
        {
            "arguments": {k: str(v) for k, v in vars(args).items()},
            "seconds": round(seconds, 1),
            "codes": {name: code.to_dict() for name, code in codes.items()},
        },
    )
    FigureOptions().save(_figure(codes), stem)
    print(report)


def _figure(codes: dict[str, SwitchingCode]) -> object:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(codes), 2, figsize=(10, 3.2 * len(codes)), squeeze=False)
    for row, code in zip(axes, codes.values(), strict=True):
        code.plot(row)
    figure.tight_layout()
    return figure


if __name__ == "__main__":
    main()
