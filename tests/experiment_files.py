"""Experiment files of the run tests, written once (importable from any test: pytest puts
``tests/`` on ``sys.path``): digits experiments with a given method and representations, the
``probemeter run`` of one, and the tiny edge-probing task on a tiny BERT."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from probemeter.cli.main import main

#: the raw pixels of the digits
PIXELS = '[[representations]]\nname = "pixels"\nkind = "raw"\n'


def pca(k: int) -> str:
    """The ``[[representations]]`` table of the digits' PCA to ``k`` dimensions, ``pca-<k>``."""
    return f'[[representations]]\nname = "pca-{k}"\nkind = "pca"\nn_components = {k}\n'


def digits_experiment(
    method: str, name: str = "exp", representations: Sequence[str] = (PIXELS, pca(8)), run: str = ""
) -> str:
    """An experiment file on the digits: run ``name`` (with the extra ``[run]`` keys
    ``run``), the ``representations`` tables and ``method``, the body of ``[method]``."""
    tables = "\n".join(representations)
    return (
        f'[run]\nname = "{name}"\n{run}\n[task]\ndataset = "digits"\n\n{tables}\n'
        f"[method]\n{method}\n"
    )


def run_file(folder: Path, text: str, name: str, *extra: str) -> Path:
    """``probemeter run`` of the experiment ``text`` (written to ``folder/<name>.toml``) into
    ``folder/runs`` with one worker and no progress bars; its run folder."""
    path = folder / f"{name}.toml"
    path.write_text(text)
    out = folder / "runs"
    args = ["run", str(path), "--out", str(out), "--no-progress", "--n-jobs", "1", *extra]
    assert main(args) == 0
    return out / name


#: the words of the generated CoNLL-U treebanks (:func:`conllu_sentences`)
TREE_WORDS = ["the", "cat", "sat", "dogs", "bark", "loud", "birds", "sing", "a", "song"]


def conllu_sentences(
    n: int, offset: int, lengths: range, *, tag: str = "X", chain: bool = False,
    full_stop: bool = False,
) -> str:  # fmt: skip
    """``n`` CoNLL-U sentences, sentence i of ``lengths[(i + offset) % len(lengths)]`` words
    from :data:`TREE_WORDS` tagged ``tag``: word 2 is the root and the others attach to it,
    or with ``chain`` only words 1 and 3 do and later words attach to the word before them;
    with ``full_stop`` the last word is a full stop (PUNCT) on the root."""
    blocks = []
    for i in range(n):
        length = lengths[(i + offset) % len(lengths)]
        lines = []
        for position in range(1, length + 1):
            word = TREE_WORDS[(i * 3 + position + offset) % len(TREE_WORDS)]
            head = 0 if position == 2 else 2 if position in (1, 3) or not chain else position - 1
            upos = tag
            if full_stop and position == length:
                word, head, upos = ".", 2, "PUNCT"
            relation = "root" if head == 0 else "dep"
            lines.append(f"{position}\t{word}\t{word}\t{upos}\tX\t_\t{head}\t{relation}\t_\t_")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks) + "\n"


#: the sentences of the tiny edge-probing task
EDGE_WORDS = [
    ("the", "cat", "sat", "on", "the", "mat"),
    ("dogs", "bark", "at", "night"),
    ("a", "quick", "fox", "jumps"),
    ("she", "reads", "old", "books"),
]

#: a quick online code of the tiny edge-probing task (three blocks, three epochs)
EDGE_MDL = 'kind = "mdl"\nprobe = [8]\nseeds = 1\ntimesteps = [0.25, 0.5, 1.0]\nmax_epochs = 3'


def write_edge_probing_files(
    folder: Path, targets: Callable[[Sequence[Sequence[str]]], object], test_copies: int
) -> Path:
    """``folder`` with ``train.json`` (the first three :data:`EDGE_WORDS` sentences four
    times over, as ``targets`` makes them), ``test.json`` (the last one ``test_copies``
    times) and ``tiny-bert``."""
    from tiny_models import make_tiny_bert

    from probemeter.datasets.edge_probing import write_edge_probing

    write_edge_probing(targets(EDGE_WORDS[:3] * 4), folder / "train.json")
    write_edge_probing(targets(EDGE_WORDS[3:] * test_copies), folder / "test.json")
    make_tiny_bert(folder / "tiny-bert")
    return folder


def edge_probing_experiment(
    folder: Path, task: str, method: str, layer: str = "[0, 2]", run: str = ""
) -> Path:
    """``folder/exp.toml``: the edge-probing task of ``folder``'s files (extra ``[task]``
    keys ``task``), the tiny BERT's layers ``layer`` and ``method``; ``run``: text before
    ``[task]`` (a ``[run]`` table)."""
    path = folder / "exp.toml"
    path.write_text(
        f'{run}[task]\ndataset = "edge-probing"\ntrain = "train.json"\ntest = "test.json"\n'
        f'{task}\n[[representations]]\nname = "bert"\nkind = "transformer"\n'
        f'model = "tiny-bert"\nlayer = {layer}\n\n[method]\n{method}\n'
    )
    return path
