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
from probemeter.datasets.senteval import TASK_FILES, SentEvalData, read_senteval, write_senteval
from probemeter.datasets.senteval_generate import Recipe, generate_tasks, read_sentences
from probemeter.datasets.treebank_splits import TreebankSplits, read_treebank_splits

__all__ = [
    "NO_FEATURE",
    "TASK_FILES",
    "UPOS_TAGS",
    "Recipe",
    "SentEvalData",
    "Treebank",
    "TreebankSplits",
    "annotate_text",
    "digits_representations",
    "fashion_mnist",
    "fashion_mnist_heldout",
    "generate_tasks",
    "label_vocabulary",
    "parity_representations",
    "probe_data",
    "ptb_sentences",
    "read_conllu",
    "read_idx",
    "read_sentences",
    "read_senteval",
    "read_treebank_splits",
    "split_probe_data",
    "task_labels",
    "write_conllu",
    "write_senteval",
]
