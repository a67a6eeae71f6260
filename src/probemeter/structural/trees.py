"""Tree targets of the structural probe: path distances and depths of dependency trees.

Hewitt & Manning (2019), *A Structural Probe for Finding Syntax in Word Representations*
(NAACL), §2: the distance probe is trained towards d_T(w_i, w_j), the number of edges on the
path between words i and j of the parse tree T, and the depth probe towards ‖w_i‖, the number
of edges between word i and the root. :class:`TreeData` holds the heads of every sentence
(1-based, 0 for the root, as in CoNLL-U) with a punctuation mask, and gives both targets as
padded arrays for the batched trainer.

**Punctuation.** Hewitt & Manning leave out of UUAS and root accuracy the words whose Penn
Treebank (XPOS) tag is one of :data:`XPOS_PUNCTUATION_TAGS` (``'' , . : `` -LRB- -RRB-``: the
list in ``structural-probes/reporter.py`` of john-hewitt/structural-probes). Where a treebank
has PTB-style XPOS tags (English EWT, spaCy's English parses) :meth:`TreeData.from_treebank`
marks punctuation by that list; otherwise by the UPOS tag ``PUNCT``
(:data:`PUNCTUATION_TAGS`), which also covers ``HYPH`` and ``NFP`` and leaves out a symbol
tagged ``,``. :attr:`TreeData.punctuation_rule` records which.

**Sentence splits.** :func:`sentence_split` splits the sentences into a pool and a test set;
:func:`holdout_split` cuts an ordered set of sentences into a part a probe trains on and a
held-out part; :func:`development_split` holds a seeded share of the pool out as development
sentences, on which structural probes fit their codelength's Laplace scale and choose their
rank, never on the test sentences.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from probemeter._punctuation import PUNCTUATION_TAGS, XPOS_PUNCTUATION_TAGS, ptb_style
from probemeter._validation import check_scalar

__all__ = [
    "HOLDOUT",
    "PUNCTUATION_TAGS",
    "XPOS_PUNCTUATION_TAGS",
    "TreeData",
    "development_split",
    "holdout_split",
    "punctuation_rule",
    "punctuation_tags",
    "sentence_split",
    "tree_depths",
    "tree_distances",
]

#: h, the share of a set of sentences held out from a probe's training (:func:`holdout_split`)
HOLDOUT = 0.1


def punctuation_rule(tags: Sequence[str]) -> str:
    """Which tags mark punctuation, in words, for words tagged from the vocabulary ``tags``:
    Hewitt & Manning's XPOS list where ``tags`` holds one of its tags (PTB-style XPOS), else
    UPOS ``PUNCT``."""
    if ptb_style(tags):
        shown = " ".join(XPOS_PUNCTUATION_TAGS)
        return f"XPOS {shown} (Hewitt & Manning 2019)"
    return "UPOS PUNCT"


def punctuation_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """The tags that mark punctuation among the vocabulary ``tags`` (:func:`punctuation_rule`):
    :data:`XPOS_PUNCTUATION_TAGS` for PTB-style XPOS, else :data:`PUNCTUATION_TAGS`."""
    if ptb_style(tags):
        return XPOS_PUNCTUATION_TAGS
    return PUNCTUATION_TAGS


def _check_heads(heads: Sequence[int], where: str) -> np.ndarray:
    """``heads`` as an int64 array that forms one tree over its words (the datasets layer's
    one tree check, :func:`~probemeter.datasets.conll.tree_problem`); a ValueError naming
    ``where`` and the problem otherwise."""
    from probemeter.datasets.conll import tree_problem

    array = np.asarray(heads, dtype=np.int64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{where} must be a non-empty 1-D sequence of heads; got {heads!r}")
    problem = tree_problem(array.tolist())
    if problem is not None:
        raise ValueError(f"{where}: {problem.reason}: {array.tolist()}")
    return array


def _ancestors(heads: Sequence[int], where: str) -> np.ndarray:
    """(n, n) bool: ``[i, k]`` is True when word k lies on the path from word i to the root
    (both ends included); a ValueError naming ``where`` for heads that form no tree."""
    array = _check_heads(heads, where)
    n = array.size
    ancestors = np.zeros((n, n), dtype=bool)
    for i in range(n):
        node = i
        while True:  # the heads form a tree: every walk up ends at the root
            ancestors[i, node] = True
            if array[node] == 0:
                break
            node = int(array[node]) - 1
    return ancestors


def tree_depths(heads: Sequence[int], where: str = "heads") -> np.ndarray:
    """(n,) int64: the number of edges from each word to the root (the root has depth 0).

    Raises:
        ValueError: heads that do not form one tree (several roots, a cycle, a bad index).
    """
    return _ancestors(heads, where).sum(axis=1).astype(np.int64) - 1


def tree_distances(heads: Sequence[int], where: str = "heads") -> np.ndarray:
    """(n, n) int64: d_T(w_i, w_j), the number of edges on the tree path between words i, j.

    d(i, j) = depth(i) + depth(j) − 2·depth(lca(i, j)), where the words shared by the two root
    paths are the root path of the lowest common ancestor, so depth(lca) + 1 counts them.

    Raises:
        ValueError: heads that do not form one tree.
    """
    ancestors = _ancestors(heads, where).astype(np.int64)
    depth = ancestors.sum(axis=1) - 1
    lca_depth = ancestors @ ancestors.T - 1
    return depth[:, None] + depth[None, :] - 2 * lca_depth


@dataclass(frozen=True)
class TreeData:
    """Dependency trees of sentences, with the targets of the structural probes.

    Attributes:
        heads: one tuple of head indices per sentence: 1-based, 0 for the root.
        punctuation: one tuple of booleans per sentence, True for words that UUAS and root
            accuracy leave out; default none.
        source: where the trees came from (for results).
        silver: True when the trees are a parser's output, not gold annotation.
        punctuation_rule: which tags marked ``punctuation``, in words (:func:`punctuation_rule`;
            ``"none"`` when no mask was given, ``"given"`` for a mask from elsewhere).

    Raises:
        ValueError: no sentences, a sentence whose heads do not form one tree, or a
            punctuation mask whose length differs from its sentence.
    """

    heads: tuple[tuple[int, ...], ...]
    punctuation: tuple[tuple[bool, ...], ...] | None = None
    source: str = "<trees>"
    silver: bool = False
    punctuation_rule: str = ""

    def __post_init__(self) -> None:
        if len(self.heads) == 0:
            raise ValueError("heads is empty; give at least one sentence")
        heads = tuple(tuple(int(h) for h in sentence) for sentence in self.heads)
        for index, sentence in enumerate(heads):
            _check_heads(sentence, f"heads[{index}]")
        object.__setattr__(self, "heads", heads)
        if not self.punctuation_rule:
            rule = "none" if self.punctuation is None else "given"
            object.__setattr__(self, "punctuation_rule", rule)
        if self.punctuation is None:
            object.__setattr__(self, "punctuation", tuple((False,) * len(s) for s in heads))
        marks = tuple(tuple(bool(p) for p in sentence) for sentence in self.punctuation or ())
        if len(marks) != len(heads):
            raise ValueError(f"punctuation has {len(marks)} sentences but heads has {len(heads)}")
        for index, (mask, sentence) in enumerate(zip(marks, heads)):
            if len(mask) != len(sentence):
                raise ValueError(
                    f"punctuation[{index}] has {len(mask)} entries but sentence {index} has "
                    f"{len(sentence)} words"
                )
        object.__setattr__(self, "punctuation", marks)

    @classmethod
    def from_treebank(cls, treebank: Any, punctuation: str = "auto") -> TreeData:
        """The trees of a :class:`~probemeter.datasets.conll.Treebank` (from ``read_conllu``,
        or silver ones from ``annotate_text``) with their punctuation marked (module
        docstring): ``punctuation="xpos"`` by Hewitt & Manning's XPOS tags
        (:data:`XPOS_PUNCTUATION_TAGS`), ``"upos"`` by the UPOS tag ``PUNCT``, ``"auto"``
        (default) by XPOS where the treebank's XPOS column holds one of those tags (PTB-style),
        else by UPOS.

        Raises:
            ValueError: ``punctuation`` not one of ``"auto"``, ``"xpos"``, ``"upos"``, or
                ``"xpos"`` for a treebank without PTB-style XPOS tags.
        """
        if punctuation not in ("auto", "xpos", "upos"):
            raise ValueError(f'punctuation must be "auto", "xpos" or "upos"; got {punctuation!r}')
        xpos = getattr(treebank, "xpos", None)
        ptb = xpos is not None and any(
            set(sentence) & set(XPOS_PUNCTUATION_TAGS) for sentence in xpos
        )
        if punctuation == "xpos" and not ptb:
            found = (
                "no XPOS column" if xpos is None else "no tag " + " ".join(XPOS_PUNCTUATION_TAGS)
            )
            raise ValueError(
                f"punctuation='xpos' needs PTB XPOS tags; {treebank.source} has {found}"
            )
        use_xpos = ptb and punctuation != "upos"
        column, marks = (
            (xpos, XPOS_PUNCTUATION_TAGS) if use_xpos else (treebank.upos, PUNCTUATION_TAGS)
        )
        return cls(
            heads=treebank.heads,
            punctuation=tuple(tuple(tag in marks for tag in sentence) for sentence in column),
            source=treebank.source,
            silver=treebank.silver,
            punctuation_rule=punctuation_rule(marks),
        )

    @property
    def n_sentences(self) -> int:
        return len(self.heads)

    @cached_property
    def memo(self) -> dict[Any, Any]:
        """Values computed from these trees alone, kept for as long as the trees: per sentence
        its gold targets in float64, the gold edges over its kept words, the ranks of its gold
        targets, per set of sentences its coded targets (:mod:`probemeter.structural.scoring`
        fills it as it scores). Every probe scored on these trees — every rank, seed, layer
        and target of a sweep — then computes them once. It belongs to this object, so other
        trees never share it; it is not pickled (worker processes train, they do not score)."""
        return {}

    def __getstate__(self) -> dict[str, Any]:
        """The state pickled: everything but :attr:`memo`."""
        return {key: value for key, value in self.__dict__.items() if key != "memo"}

    @cached_property
    def lengths(self) -> np.ndarray:
        """(n_sentences,) int64 number of words of each sentence."""
        return np.array([len(sentence) for sentence in self.heads], dtype=np.int64)

    @property
    def n_words(self) -> int:
        return int(self.lengths.sum())

    @cached_property
    def offsets(self) -> np.ndarray:
        """(n_sentences + 1,) int64: sentence s holds words ``offsets[s]:offsets[s + 1]`` of
        the per-word feature rows."""
        return np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)

    @cached_property
    def _distances(self) -> tuple[np.ndarray, ...]:
        return tuple(tree_distances(h, f"heads[{s}]") for s, h in enumerate(self.heads))

    def distances(self, sentence: int) -> np.ndarray:
        """(n, n) int64 tree distances of one sentence (:func:`tree_distances`)."""
        return self._distances[sentence]

    def depths(self, sentence: int) -> np.ndarray:
        """(n,) int64 tree depths of one sentence (:func:`tree_depths`): its distances to the
        root."""
        return self._distances[sentence][self.heads[sentence].index(0)]

    def padded(self, target: str, sentences: np.ndarray | None = None) -> np.ndarray:
        """The target of every sentence (or of ``sentences``, indices in that order), padded
        with zeros to the longest of them: ``"distance"`` gives (n, L, L), ``"depth"``
        (n, L); float32."""
        index = np.arange(self.n_sentences) if sentences is None else np.asarray(sentences)
        lengths = self.lengths[index]
        longest = int(lengths.max())
        if target == "distance":
            out = np.zeros((index.size, longest, longest), dtype=np.float32)
            for row, (s, n) in enumerate(zip(index, lengths)):
                out[row, :n, :n] = self.distances(s)
            return out
        if target == "depth":
            out = np.zeros((index.size, longest), dtype=np.float32)
            for row, (s, n) in enumerate(zip(index, lengths)):
                out[row, :n] = self.depths(s)
            return out
        raise ValueError(f'target must be "distance" or "depth"; got {target!r}')

    def subset(self, sentences: Sequence[int] | np.ndarray) -> TreeData:
        """The trees of the given sentence indices, in that order."""
        index = [int(s) for s in np.asarray(sentences).reshape(-1)]
        return TreeData(
            heads=tuple(self.heads[s] for s in index),
            punctuation=tuple(self.punctuation[s] for s in index),  # type: ignore[index]
            source=self.source,
            silver=self.silver,
            punctuation_rule=self.punctuation_rule,
        )


def sentence_split(
    n_sentences: int, test_size: float = 0.2, random_state: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(pool, test) sentence indices: a seeded shuffle of the sentences, the first
    ⌈test_size · n_sentences⌉ of it the test set (whole sentences, so no sentence straddles the
    split); both sorted.

    Raises:
        ValueError: ``test_size`` outside (0, 1), or a split that leaves either side empty.
    """
    check_scalar(n_sentences, "n_sentences", int, min_val=2)
    check_scalar(test_size, "test_size", float, min_val=0, max_val=1, include_boundaries="neither")
    order = np.random.default_rng(random_state).permutation(n_sentences)
    n_test = int(np.ceil(test_size * n_sentences))
    if n_test >= n_sentences:
        raise ValueError(f"test_size={test_size} leaves no pool sentence of {n_sentences}")
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def holdout_split(
    sentences: Sequence[int] | np.ndarray, holdout: float = HOLDOUT
) -> tuple[np.ndarray, np.ndarray]:
    """(T, V): the ordered ``sentences`` S split into the first m − v, on which a probe trains,
    and the last v = min(max(⌈h·m⌉, 1), m − 1) held out (``holdout`` h, default
    :data:`HOLDOUT`; at least one held out and at least one left to train on). In the online
    code S is a transmitted prefix, so V is its most recently sent sentences.

    Raises:
        ValueError: ``holdout`` not in (0, 1), or fewer than 2 sentences.
    """
    check_scalar(holdout, "holdout", float, min_val=0, max_val=1, include_boundaries="neither")
    index = np.asarray(sentences, dtype=np.int64).reshape(-1)
    m = int(index.size)
    if m < 2:
        raise ValueError(
            f"a held-out share needs at least 2 sentences (1 to train on, 1 held out); got {m}"
        )
    held = min(max(math.ceil(holdout * m), 1), m - 1)
    return index[: m - held], index[m - held :]


def development_split(
    pool: Sequence[int] | np.ndarray, holdout: float = HOLDOUT, random_state: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(train, dev): the pool's sentences in a seeded order (``random_state``), cut by
    :func:`holdout_split`: the last v = min(max(⌈h·m⌉, 1), m − 1) of the m pool sentences in
    that order are the development sentences, the rest the training sentences; both sorted.
    The order depends on the pool and the seed only, so every representation of a run (every
    layer) gets the same development sentences.

    Raises:
        ValueError: ``holdout`` not in (0, 1), or a pool of fewer than 2 sentences.
    """
    index = np.asarray(pool, dtype=np.int64).reshape(-1)
    order = index[np.random.default_rng(random_state).permutation(index.size)]
    train, dev = holdout_split(order, holdout)
    return np.sort(train), np.sort(dev)
