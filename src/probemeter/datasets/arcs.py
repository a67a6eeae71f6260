"""Head selection (unlabelled dependency parsing) data: each word's head among its sentence.

The task ``label = "arcs"`` of the ``conllu`` and ``ptb`` tasks: for every word, which word of
its sentence is its head, or the ROOT slot for the sentence's root — the parsing probe of
Pimentel et al. (2020), §7.2 and App. B, scored by the unlabelled attachment score (UAS).
:func:`head_probe_data` lays the words out as a :class:`~probemeter.data.ProbeData` whose
labels are the CoNLL-U heads (1-based positions within the sentence, 0 = ROOT), with each
word's sentence id (``sentences_train``/``sentences_test``: the biaffine probe scores every
candidate head of a sentence at once) and word type (``groups``, for the control task).

The control task of head selection is Hewitt & Liang's dependency control
(:func:`control_heads`, from :func:`~probemeter.datasets.dependency_control.dependency_control`):
every word type attaches to itself, to the first or to the last word of its sentence.
"""

from __future__ import annotations

import numpy as np

from probemeter._validation import check_scalar, one_of
from probemeter.data import ProbeData
from probemeter.datasets.conll import Treebank
from probemeter.datasets.dependency_control import dependency_control

__all__ = ["ARC_HEADS", "control_heads", "head_probe_data"]

#: the head-selection label of the ``conllu`` and ``ptb`` tasks (Pimentel et al. §7.2)
ARC_HEADS = "arcs"


def head_probe_data(
    treebank: Treebank,
    features: object,
    test_mask: object,
    *,
    name: str | None = None,
    standardize: bool = True,
    groups: str = "types",
) -> ProbeData:
    """Per-word ``features`` of ``treebank`` labelled with each word's head, split by
    sentence: the words of ``test_mask`` (whole sentences) are the test set.

    Labels are the treebank's heads, 1-based within the sentence and 0 for the root (the
    ROOT slot of the biaffine probe); ``n_classes`` is the longest sentence's length + 1 (the
    candidate positions); ``sentences_train``/``sentences_test`` hold each word's sentence id
    and ``groups_train``/``groups_test`` its word type (:attr:`Treebank.word_type_ids`, the
    groups of the control task), or with ``groups="upos"`` its UPOS tag's index in
    :data:`~probemeter.datasets.conll.UPOS_TAGS` (:attr:`Treebank.upos_ids`: structural
    probes leave punctuation out of UUAS). Features are standardised with the pool's
    statistics (``standardize``).

    Raises:
        ValueError: ``features`` not (n_words, d), ``test_mask`` not (n_words,) bool of whole
            sentences or leaving no pool or no test sentence, a head outside its sentence,
            ``groups`` neither ``"types"`` nor ``"upos"``.
    """
    one_of("types", "upos")(groups, "groups")
    X = np.asarray(features, dtype=np.float32)
    test = np.asarray(test_mask)
    if X.ndim != 2 or X.shape[0] != treebank.n_words:
        raise ValueError(f"features must be (n_words={treebank.n_words}, d); got {X.shape}")
    if test.shape != (treebank.n_words,) or test.dtype != bool:
        raise ValueError(f"test_mask must be ({treebank.n_words},) bool; got {test.shape}")
    sentences = treebank.sentence_ids
    lengths = np.bincount(sentences)
    if np.any(np.bincount(sentences, weights=test) % lengths):
        raise ValueError("test_mask must select whole sentences")
    if test.all() or not test.any():
        raise ValueError("test_mask must leave sentences for both the pool and the test set")
    heads = np.array([head for sentence in treebank.heads for head in sentence], np.int64)
    outside = np.flatnonzero((heads < 0) | (heads > lengths[sentences]))
    if outside.size:
        word = int(outside[0])
        raise ValueError(
            f"{treebank.source}: word {word} has head {heads[word]}, outside its sentence of "
            f"{lengths[sentences[word]]} words"
        )
    if standardize:
        mean = X[~test].mean(axis=0, dtype=np.float64)
        std = X[~test].std(axis=0, dtype=np.float64)
        X = ((X - mean) / np.where(std > 0, std, 1.0)).astype(np.float32)
    types = treebank.word_type_ids if groups == "types" else treebank.upos_ids
    return ProbeData(
        X_train=np.ascontiguousarray(X[~test]),
        y_train=heads[~test],
        X_test=np.ascontiguousarray(X[test]),
        y_test=heads[test],
        n_classes=int(lengths.max()) + 1,
        name=name or "representation",
        groups_train=types[~test],
        groups_test=types[test],
        sentences_train=sentences[~test],
        sentences_test=sentences[test],
        clusters_train=sentences[~test],
        clusters_test=sentences[test],
    )


def control_heads(groups: object, sentence_ids: object, *, random_state: int = 0) -> np.ndarray:
    """Hewitt & Liang's dependency control heads of words given by type id and sentence id:
    :func:`~probemeter.datasets.dependency_control.dependency_control` with each type id
    as the word form (one behaviour per type: self, first or last word of the sentence).

    The biaffine probe never lets a word head itself (its candidates are the other words and
    the ROOT slot), so an attachment to itself — behaviour *self*, or *first* (*last*) on the
    sentence's first (last) word — is given as 0, the ROOT slot: each type still has one
    deterministic rule, and a sentence may have no word or several words on the ROOT slot.

    Args:
        groups: (n_words,) word type id of each word.
        sentence_ids: (n_words,) sentence id of each word, each sentence's words contiguous.

    Raises:
        ValueError: arrays of other lengths or not 1-D, a sentence id that reappears later.
    """
    check_scalar(random_state, "random_state", int, min_val=0)
    types, ids = np.asarray(groups), np.asarray(sentence_ids)
    if types.ndim != 1 or types.shape != ids.shape or types.size == 0:
        raise ValueError(
            f"groups and sentence_ids must be non-empty 1-D arrays of one length; got "
            f"{types.shape} and {ids.shape}"
        )
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    if len(np.unique(ids[starts])) != len(starts):
        raise ValueError("sentence_ids must group each sentence's words contiguously")
    words = [str(t) for t in types.tolist()]
    ends = [*starts[1:].tolist(), ids.size]
    sentences = [words[start:end] for start, end in zip(starts.tolist(), ends)]
    heads = dependency_control(sentences, random_state=random_state).heads
    position = np.concatenate([np.arange(1, end - start + 1) for start, end in zip(starts, ends)])
    return np.where(heads == position, 0, heads).astype(np.int64)
