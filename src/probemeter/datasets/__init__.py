"""Datasets that return :class:`~probemeter.data.ProbeData`, ready to probe."""

from probemeter.datasets.conll import (
    NO_FEATURE,
    UPOS_TAGS,
    Treebank,
    annotate_text,
    label_vocabulary,
    probe_data,
    ptb_sentences,
    read_conllu,
    split_probe_data,
    task_labels,
    write_conllu,
)
from probemeter.datasets.digits import digits_representations
from probemeter.datasets.idx import fashion_mnist, fashion_mnist_heldout, read_idx
from probemeter.datasets.parity import parity_representations
from probemeter.datasets.treebank_splits import TreebankSplits, read_treebank_splits

__all__ = [
    "NO_FEATURE",
    "UPOS_TAGS",
    "Treebank",
    "TreebankSplits",
    "annotate_text",
    "digits_representations",
    "fashion_mnist",
    "fashion_mnist_heldout",
    "label_vocabulary",
    "parity_representations",
    "probe_data",
    "ptb_sentences",
    "read_conllu",
    "read_idx",
    "read_treebank_splits",
    "split_probe_data",
    "task_labels",
    "write_conllu",
]
