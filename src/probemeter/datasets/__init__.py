"""Datasets that return :class:`~probemeter.data.ProbeData`, ready to probe."""

from probemeter.datasets.conll import (
    UPOS_TAGS,
    Treebank,
    annotate_text,
    probe_data,
    ptb_sentences,
    read_conllu,
    task_labels,
    write_conllu,
)
from probemeter.datasets.digits import digits_representations
from probemeter.datasets.idx import fashion_mnist, fashion_mnist_heldout, read_idx
from probemeter.datasets.parity import parity_representations

__all__ = [
    "UPOS_TAGS",
    "Treebank",
    "annotate_text",
    "digits_representations",
    "fashion_mnist",
    "fashion_mnist_heldout",
    "parity_representations",
    "probe_data",
    "ptb_sentences",
    "read_conllu",
    "read_idx",
    "task_labels",
    "write_conllu",
]
