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

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. doi:10.18653/v1/D19-1275 (arXiv:1909.03368)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from probemeter._punctuation import ptb_style
from probemeter._validation import check_scalar, one_of
from probemeter.data import ProbeData
from probemeter.datasets.conll import UPOS_TAGS, Treebank, tree_problem
from probemeter.datasets.dependency_control import dependency_control

__all__ = [
    "ARC_HEADS",
    "arc_label_data",
    "arc_relations",
    "check_trees",
    "control_heads",
    "head_probe_data",
]

#: the head-selection label of the ``conllu`` and ``ptb`` tasks (Pimentel et al. §7.2)
ARC_HEADS = "arcs"


def _checked_inputs(
    treebank: Treebank, features: object, test_mask: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The features as float32 (n_words, d), the test mask, each word's sentence id and each
    sentence's length, after checking that the heads form trees, the shapes fit the treebank
    and the mask selects whole sentences (a ValueError naming what does not)."""
    check_trees(treebank)
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
    return X, test, sentences, lengths


def _standardised(X: np.ndarray, test: np.ndarray) -> np.ndarray:
    """``X`` z-scored with the statistics of its pool rows (not ``test``), as float32."""
    mean = X[~test].mean(axis=0, dtype=np.float64)
    std = X[~test].std(axis=0, dtype=np.float64)
    return ((X - mean) / np.where(std > 0, std, 1.0)).astype(np.float32)


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
    groups of the control task), or its tag, whose names are then
    :attr:`~probemeter.data.ProbeData.group_names` (structural probes leave punctuation out of
    UUAS by them): with ``groups="upos"`` its UPOS tag (:attr:`Treebank.upos_ids`), with
    ``"tags"`` its XPOS tag where the treebank's XPOS are Penn Treebank tags (Hewitt &
    Manning mark punctuation by them, :data:`~probemeter._punctuation.XPOS_PUNCTUATION_TAGS`),
    else its UPOS tag. Features are standardised with the pool's statistics
    (``standardize``).

    Raises:
        ValueError: heads that form no tree (:func:`check_trees`), ``features`` not
            (n_words, d), ``test_mask`` not (n_words,) bool of whole sentences or leaving no
            pool or no test sentence, ``groups`` not ``"types"``, ``"upos"`` or ``"tags"``.
    """
    one_of("types", "upos", "tags")(groups, "groups")
    X, test, sentences, lengths = _checked_inputs(treebank, features, test_mask)
    if test.all() or not test.any():
        raise ValueError("test_mask must leave sentences for both the pool and the test set")
    heads = np.array([head for sentence in treebank.heads for head in sentence], np.int64)
    if standardize:
        X = _standardised(X, test)
    types, names = _word_groups(treebank, groups)
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
        group_names=names,
    )


def _word_groups(treebank: Treebank, groups: str) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """Each word's group id and the groups' names (None for word types): see
    :func:`head_probe_data`."""
    if groups == "types":
        return treebank.word_type_ids, None
    xpos = treebank.xpos
    if groups == "tags" and xpos is not None:
        vocabulary = tuple(sorted({tag for sentence in xpos for tag in sentence}))
        if ptb_style(vocabulary):
            index = {tag: i for i, tag in enumerate(vocabulary)}
            ids = [index[tag] for sentence in xpos for tag in sentence]
            return np.asarray(ids, dtype=np.int64), vocabulary
    return treebank.upos_ids, tuple(UPOS_TAGS)


def check_trees(treebank: Treebank) -> None:
    """Refuse a treebank in which some sentence's heads form no tree (:func:`tree_problem`:
    a head outside the sentence, no root or several, a word its own head, a cycle) — what
    every label that reads heads needs: head selection, arc labels, structural probes.

    Raises:
        ValueError: one line naming the treebank's source, the sentence (1-based), the word
            (1-based) and the problem.
    """
    for number, heads in enumerate(treebank.heads, start=1):
        problem = tree_problem(heads)
        if problem is not None:
            raise ValueError(
                f"{treebank.source!r} sentence {number}, word {problem.word}: its heads form no "
                f"tree: {problem.reason}"
            )


def arc_relations(treebanks: Sequence[Treebank]) -> tuple[str, ...]:
    """The classes of arc labelling (``deprel-arcs``): the sorted relations of the non-root
    arcs of all ``treebanks`` (e.g. a treebank's train, dev and test files).

    Root arcs are no rows of arc labelling (a root has no head word to pair with), so their
    relation (``root``) is no class unless some non-root arc carries it: K is the number of
    labels the rows can have, and the uniform code's log K counts no class that no row has.

    Raises:
        ValueError: no treebanks.
    """
    if not treebanks:
        raise ValueError("treebanks is empty; give at least one treebank")
    return tuple(
        sorted(
            {
                relation
                for treebank in treebanks
                for heads, relations in zip(treebank.heads, treebank.deprels)
                for head, relation in zip(heads, relations)
                if head != 0
            }
        )
    )


def arc_label_data(
    treebank: Treebank,
    features: object,
    test_mask: object,
    *,
    relations: Sequence[str] | None = None,
    name: str | None = None,
    standardize: bool = True,
) -> ProbeData:
    """Arc labelling data (``deprel-arcs``): one row per non-root arc, the pair
    ``[h_dependent; h_head]`` of its words' features side by side (2d columns), labelled with
    the dependent's relation — Pimentel et al. (2020) §6's dependency arc labelling (DAL),
    the dependency labels of Voita & Titov (2020) §4. Rows follow the dependents' word order;
    an arc is in the test set when its sentence is (``test_mask``, whole sentences).

    ``n_classes`` is the number of ``relations`` and :attr:`~probemeter.data.ProbeData.classes`
    the relations; groups are the dependents' word types (the control task's), clusters their
    sentences (the words of a sentence are no independent draws). Features are standardised
    with the pool words' statistics (``standardize``) before they are paired.

    Args:
        features: (n_words, d), one row per word of :attr:`Treebank.words`.
        test_mask: (n_words,) bool, True for the words of the test sentences.
        relations: the classes, in id order; default :func:`arc_relations` of this treebank.
            For a treebank's official split give those of all its files
            (:meth:`~probemeter.datasets.treebank_splits.TreebankSplits.vocabulary`).

    Raises:
        ValueError: heads that form no tree (:func:`check_trees`), ``features`` not
            (n_words, d), ``test_mask`` not (n_words,) bool of whole sentences or leaving no
            arc for the pool or the test set, a relation outside ``relations``.
    """
    X, test, sentences, lengths = _checked_inputs(treebank, features, test_mask)
    relations = arc_relations([treebank]) if relations is None else tuple(relations)
    heads = np.array([head for sentence in treebank.heads for head in sentence], np.int64)
    dependents = np.flatnonzero(heads > 0)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    head_words = starts[sentences[dependents]] + heads[dependents] - 1
    labels = [label for sentence in treebank.deprels for label in sentence]
    index = {relation: i for i, relation in enumerate(relations)}
    missing = sorted({labels[i] for i in dependents} - set(index))
    if missing:
        raise ValueError(
            f"{treebank.source!r} has arc relations {missing} outside the relations given"
        )
    y = np.array([index[labels[i]] for i in dependents], dtype=np.int64)
    on_test = test[dependents]
    if on_test.all() or not on_test.any():
        raise ValueError("test_mask must leave arcs for both the pool and the test set")
    if standardize:
        X = _standardised(X, test)
    pairs = np.concatenate([X[dependents], X[head_words]], axis=1)
    types = treebank.word_type_ids[dependents]
    data = ProbeData.from_arrays(
        pairs[~on_test],
        y[~on_test],
        pairs[on_test],
        y[on_test],
        n_classes=len(relations),
        standardize=False,
        name=name or "representation",
        groups=types[~on_test],
        groups_test=types[on_test],
    )
    clusters = sentences[dependents]
    return replace(
        data,
        classes=relations,
        clusters_train=clusters[~on_test],
        clusters_test=clusters[on_test],
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
