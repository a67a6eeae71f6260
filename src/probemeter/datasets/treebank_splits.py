"""A gold treebank's official split: train, optional dev and test CoNLL-U files, never re-split.

Treebanks such as Universal Dependencies ship one file per split (``en_ewt-ud-train.conllu``,
``-dev``, ``-test``); probing results are comparable across papers only on those splits
(Pimentel et al. 2020, §6, use UD 2.5's). :func:`read_treebank_splits` reads them and
:class:`TreebankSplits` gives

* one **label vocabulary over all splits** (:meth:`TreebankSplits.vocabulary`), so a relation
  has the same id in every file whatever order the labels first occur in;
  (arc labels, :data:`ARC_LABELS`: the relations of the non-root arcs, the labels its rows
  can have, :func:`~probemeter.datasets.arcs.arc_relations`);
* the labels of dev and test that **never occur in train** (:meth:`TreebankSplits.unseen`):
  they keep their ids (nothing is renumbered or dropped) and are reported, since no probe can
  learn them from the training split;
* the train and test words as one :class:`~probemeter.datasets.conll.Treebank`
  (:attr:`TreebankSplits.combined`) with the official :attr:`~TreebankSplits.test_mask`, to
  encode once and to split with
  :func:`~probemeter.datasets.conll.split_probe_data` or, for arc labels,
  :func:`~probemeter.datasets.arcs.arc_label_data` (:meth:`TreebankSplits.probe_data`), or
  :func:`probemeter.pareto.treebank_tasks` (POSL, arc labelling and the parsing probe of
  Pimentel et al. §6–7 on the official split).

Words are CoNLL-U's syntactic words: a multiword token (``3-4 don't``) is read as its words
(``do``, ``n't``) and empty nodes (``5.1``) are skipped (:func:`read_conllu`). The dev split is
read and checked (vocabulary, unseen labels) but neither trained nor tested on: the methods
hold out their own early-stopping data from the training split.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from probemeter.data import ProbeData
from probemeter.datasets.arcs import ARC_HEADS, arc_label_data, arc_relations
from probemeter.datasets.conll import (
    Treebank,
    label_problem,
    label_vocabulary,
    read_conllu,
    split_probe_data,
    word_labels,
)

__all__ = ["ARC_LABELS", "SPLITS", "TreebankSplits", "read_treebank_splits", "split_label_problem"]

#: the official splits, in file order
SPLITS = ("train", "dev", "test")
#: the arc-labelling label of a ``conllu`` task: each dependency arc's relation, probed from the
#: pair ``[h_dependent; h_head]`` (Pimentel et al. §6 DAL; the dependency labels of Voita &
#: Titov §4), root arcs left out; its vocabulary is the relations of the non-root arcs
ARC_LABELS = "deprel-arcs"


def split_label_problem(label: object) -> str | None:
    """Why ``label`` is no label of a ``conllu`` task (a word label of
    :func:`~probemeter.datasets.conll.label_problem`, :data:`ARC_LABELS`, or
    :data:`~probemeter.datasets.arcs.ARC_HEADS`: each word's head), or None."""
    if label in (ARC_LABELS, ARC_HEADS):
        return None
    problem = label_problem(label)
    if problem is None:
        return None
    problem = problem.replace(' or "feats', ', "deprel-arcs" or "feats')
    return problem.replace("); got", f'), or "{ARC_HEADS}" (each word\'s head); got')


@dataclass(frozen=True)
class TreebankSplits:
    """The official train, dev (optional) and test splits of one treebank.

    Attributes:
        train, test: the training and test treebanks.
        dev: the development treebank, or None.
    """

    train: Treebank
    test: Treebank
    dev: Treebank | None = None

    @property
    def splits(self) -> dict[str, Treebank]:
        """The splits present, by name, in :data:`SPLITS` order."""
        found = {"train": self.train, "dev": self.dev, "test": self.test}
        return {name: treebank for name, treebank in found.items() if treebank is not None}

    @property
    def silver(self) -> bool:
        """True when any split's annotation is a parser's output, not gold."""
        return any(treebank.silver for treebank in self.splits.values())

    def vocabulary(self, label: str) -> tuple[str, ...]:
        """One vocabulary of ``label`` over every split
        (:func:`~probemeter.datasets.conll.label_vocabulary`): the fixed UPOS tags, or the
        sorted labels found in train, dev or test. For :data:`ARC_LABELS` the labels of its
        rows, the relations of the non-root arcs
        (:func:`~probemeter.datasets.arcs.arc_relations`): ``root`` labels no row."""
        if label == ARC_LABELS:
            return arc_relations(list(self.splits.values()))
        return label_vocabulary(list(self.splits.values()), label)

    def unseen(self, label: str) -> dict[str, dict[str, int]]:
        """Per split other than train, the labels of ``label`` it holds that train does not,
        with their counts of words (of arcs, for :data:`ARC_LABELS`; empty splits left out).
        They keep their vocabulary ids."""
        seen = set(_row_labels(self.train, label))
        found = {}
        for name, treebank in self.splits.items():
            if name == "train":
                continue
            counts = Counter(value for value in _row_labels(treebank, label) if value not in seen)
            if counts:
                found[name] = dict(sorted(counts.items()))
        return found

    def describe_unseen(self, label: str) -> str | None:
        """One line reporting :meth:`unseen` (``"test: 3 words with 2 deprel labels never
        seen in train (dep 2, vocative 1)"``; arcs for :data:`ARC_LABELS`), or None when every
        label occurs in train."""
        unit = "arc" if label == ARC_LABELS else "word"
        parts = []
        for name, counts in self.unseen(label).items():
            shown = ", ".join(f"{value} {count}" for value, count in counts.items())
            rows = sum(counts.values())
            parts.append(
                f"{name}: {rows} {unit}{'s' if rows > 1 else ''} with {len(counts)} {label} "
                f"label{'s' if len(counts) > 1 else ''} never seen in train ({shown})"
            )
        return "; ".join(parts) or None

    @cached_property
    def combined(self) -> Treebank:
        """The train sentences followed by the test sentences, as one treebank (the words to
        encode); :attr:`test_mask` tells the splits apart."""
        columns = ("sentences", "upos", "heads", "deprels", "xpos", "feats")
        values = {}
        for column in columns:
            parts = [getattr(self.train, column), getattr(self.test, column)]
            values[column] = None if None in parts else parts[0] + parts[1]
        return Treebank(
            **values,
            silver=self.silver,
            source=f"{self.train.source} + {self.test.source}",
        )

    @cached_property
    def test_mask(self) -> np.ndarray:
        """(n_words of :attr:`combined`,) bool: True for the words of the test split."""
        return np.repeat([False, True], [self.train.n_words, self.test.n_words])

    def probe_data(self, features: object, label: str, *, name: str | None = None) -> ProbeData:
        """Per-word ``features`` (rows in :attr:`combined` order) with the word label
        ``label``, or for :data:`ARC_LABELS` one row per non-root arc
        (:func:`~probemeter.datasets.arcs.arc_label_data`): the train split is the pool, the
        test split the test set, labelled with :meth:`vocabulary`.

        Raises:
            ValueError: features not (n_words of :attr:`combined`, d), a label that is no
                word label nor :data:`ARC_LABELS`.
        """
        if label == ARC_LABELS:
            return arc_label_data(
                self.combined,
                features,
                self.test_mask,
                relations=self.vocabulary(label),
                name=name,
            )
        return split_probe_data(
            self.combined,
            features,
            label,
            test_mask=self.test_mask,
            vocabulary=self.vocabulary(label),
            name=name,
        )


def _row_labels(treebank: Treebank, label: str) -> list[str]:
    """The label of each row of ``label``: each word's (:func:`word_labels`), or for
    :data:`ARC_LABELS` each non-root arc's relation."""
    if label != ARC_LABELS:
        return word_labels(treebank, label)
    return [
        relation
        for heads, relations in zip(treebank.heads, treebank.deprels)
        for head, relation in zip(heads, relations)
        if head != 0
    ]


def read_treebank_splits(
    train: str | Path, test: str | Path, dev: str | Path | None = None
) -> TreebankSplits:
    """Read a treebank's official split from its CoNLL-U files (any language).

    Raises:
        ValueError: naming the file, for a missing or malformed file (see
            :func:`~probemeter.datasets.conll.read_conllu`).
    """
    return TreebankSplits(
        train=read_conllu(Path(train)),
        test=read_conllu(Path(test)),
        dev=None if dev is None else read_conllu(Path(dev)),
    )
