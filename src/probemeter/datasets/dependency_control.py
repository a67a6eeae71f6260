"""The dependency control task of Hewitt & Liang (2019) for dependency arcs.

Every word type gets one of three behaviours — attach to *itself*, to the *first* (leftmost)
word of its sentence, or to the *last* (rightmost) — and every token of the type takes its head
that way; for labelled arcs each type also gets one control relation, drawn from the
relations' empirical distribution. It is the second of the two control tasks Voita & Titov
(2020) §3.1 name, and the control of head selection (the parsing probe of Pimentel et al.
2020, §7.2). Re-exported by :mod:`probemeter.mdl.controls`, beside the word-label control task.

References:
    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. doi:10.18653/v1/D19-1275 (arXiv:1909.03368)

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from probemeter._validation import check_scalar

__all__ = ["CONTROL_BEHAVIOURS", "DependencyControl", "dependency_control"]


#: the attachment behaviours of the dependency control task, in the order of their ids
CONTROL_BEHAVIOURS = ("self", "first", "last")


def _type_uniform(word: str, stream: str, random_state: int) -> float:
    """A number in [0, 1) that depends on the word form, the stream name and the seed only
    (the first 8 bytes of a BLAKE2b hash), so it is the same in every corpus."""
    key = f"{random_state}\x00{stream}\x00{word}".encode()
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


@dataclass(frozen=True)
class DependencyControl:
    """The dependency control task of :func:`dependency_control`, one entry per word (the
    words of all sentences in order).

    Attributes:
        behaviours: each word's behaviour id in :data:`CONTROL_BEHAVIOURS`.
        heads: each word's control head, 1-based within its sentence as in CoNLL-U (a word
            attached to itself has its own position; there is no root, so the heads form no
            tree, as in Hewitt & Liang's control).
        labels: each word's control relation id in ``vocabulary`` (None without relations).
        vocabulary: the relation labels the ids index (empty without relations).
    """

    behaviours: np.ndarray
    heads: np.ndarray
    labels: np.ndarray | None = None
    vocabulary: tuple[str, ...] = ()


def dependency_control(
    sentences: Sequence[Sequence[str]],
    relations: Sequence[Sequence[str]] | None = None,
    *,
    vocabulary: Sequence[str] | None = None,
    random_state: int = 0,
) -> DependencyControl:
    """Hewitt & Liang's control task for dependency arcs (see the module docstring).

    Word type v gets behaviour ``b(v) = ⌊3·u₁(v)⌋`` of :data:`CONTROL_BEHAVIOURS`, uniformly
    at random, and, with ``relations``, the control relation ``F⁻¹(u₂(v))``, the inverse of
    the relations' empirical distribution function F; u₁, u₂ are uniform numbers hashed from
    the word form and ``random_state`` alone. Token i of a sentence of n words whose type has
    behaviour self / first / last gets head i / 1 / n.

    Args:
        sentences: the word forms of each sentence (e.g. ``Treebank.sentences``).
        relations: each sentence's relation labels (``Treebank.deprels``), whose distribution
            the control relations are drawn from; None: heads only.
        vocabulary: the relation labels in id order (default: the sorted labels found);
            give one vocabulary over all splits so ids agree.

    Raises:
        ValueError: no words, a sentence without words, relations not one per word, or a
            relation outside ``vocabulary``.
    """
    check_scalar(random_state, "random_state", int, min_val=0)
    if not sentences or any(len(words) == 0 for words in sentences):
        raise ValueError("sentences must be a non-empty list of non-empty word lists")
    words = [word for sentence in sentences for word in sentence]
    behaviours = np.array(
        [int(3 * _type_uniform(word, "behaviour", random_state)) for word in words], np.int64
    )
    lengths = np.array([len(sentence) for sentence in sentences], dtype=np.int64)
    position = np.concatenate([np.arange(1, n + 1) for n in lengths])  # "self"
    last = np.repeat(lengths, lengths)
    heads = np.select([behaviours == 1, behaviours == 2], [np.ones_like(position), last], position)
    if relations is None:
        return DependencyControl(behaviours, heads)
    flat = [label for labels in relations for label in labels]
    if [len(labels) for labels in relations] != lengths.tolist():
        raise ValueError("relations must hold one label per word of each sentence")
    vocabulary = tuple(sorted(set(flat))) if vocabulary is None else tuple(vocabulary)
    outside = sorted(set(flat) - set(vocabulary))
    if outside:
        raise ValueError(f"relations {outside} are outside the vocabulary given")
    counts = Counter(flat)
    cumulative = np.cumsum([counts[label] for label in vocabulary]) / len(flat)
    draws = [_type_uniform(word, "label", random_state) for word in words]
    labels = np.searchsorted(cumulative, draws, side="right").astype(np.int64)
    return DependencyControl(behaviours, heads, labels, vocabulary)
