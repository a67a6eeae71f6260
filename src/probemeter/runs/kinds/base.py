"""What every representation kind shares: the record of a representation (its unit key), how
it is built, the kind declaration's base, and layer sweeps (``layer``, ``combine``)."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from probemeter import _validation as valid
from probemeter._declared import Declared, Option, option
from probemeter.data import ProbeData
from probemeter.encoders import FeatureCache
from probemeter.erasure import eraser_settings
from probemeter.runs.tasks import WORDS, Task, TaskInputs
from probemeter.training.directions import DIRECTION_FAMILIES, families_problem

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
    #: where it is declared when no ``[[representations]]`` entry is (a surface floor:
    #: ``task.controls``), where its problems are then reported; not in any key
    declared_at: str | None = None

    @property
    def kind_class(self) -> type[RepresentationKind]:
        return kind_class(self.kind)

    @cached_property
    def declared(self) -> RepresentationKind:
        """Its kind's declaration with these options (as :attr:`Task.declared
        <probemeter.runs.tasks.Task.declared>`): what building reads, typed, its defaults the
        declaration's own."""
        record = {key: value for key, value in self.to_dict().items() if key in _RECORD_FIELDS}
        return self.kind_class.from_written({**record, **self.options})

    @property
    def location(self) -> str:
        """Where its problems are reported: its ``[[representations]]`` entry, and, for one
        layer of a sweep, its name (a representation no entry declares: where it is
        declared, and its name)."""
        if self.declared_at is not None:
            return f"{self.declared_at} ({self.name!r})"
        where = f"representations[{self.entry}]"
        return f"{where} ({self.name!r})" if self.sweep is not None else where

    @property
    def described(self) -> str:
        """Its entry and name, e.g. ``representations[0], 'pca-8'``."""
        where = self.declared_at or f"representations[{self.entry}]"
        return f"{where}, {self.name!r}"

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
        if self.options.get("erase") is None:
            return {**entry, **self.options}
        # an erased twin: its eraser, in results and in its unit key
        return {**entry, **self.options, "erasure": eraser_settings()}


@dataclass(frozen=True)
class Build:
    """How representations are built: the run's seed, the feature cache (None: no cache), the
    device of encoders, whether they show progress, whether head selection is laid out for a
    method that reads trees (:func:`~probemeter.runs.tasks.tree_arguments`), and whether the
    method needs dense features."""

    random_state: int
    cache: FeatureCache | None
    device: str
    progress: bool
    trees: bool = False
    #: whether the method trains on dense features only (sparse ones are densified where
    #: small: surface floors, :mod:`probemeter.runs.kinds.surface`)
    dense: bool = False


@dataclass(frozen=True, kw_only=True)
class RepresentationKind(Declared, ABC):
    """Base of the kind declarations: subclasses are ``@dataclass(frozen=True, kw_only=True)``,
    their fields the entry's own keys (``view``, ``n_components``, ``train`` and ``test`` among
    them are kept at the top of :class:`Representation`, the rest in its ``options``).

    ``erase`` and ``directions``, the options every kind takes, are declared here: with
    them an entry's every representation NAME has an erased twin ``NAME-erased``
    (:mod:`probemeter.runs.erasure`) and direction twins ``NAME-FAMILY``
    (:mod:`probemeter.runs.directions`)."""

    erase: str | None = option(
        None,
        check=valid.text(),
        help="also NAME-erased: NAME with a concept erased by LEACE fitted on the pool "
        '(Belrose et al. 2023): "label" (the task\'s own label), or another label of the '
        "task's rows (a conllu word label, a texts column)",
        key_omits=None,
    )
    directions: tuple[str, ...] = option(
        (),
        check=valid.Check(families_problem),
        help="also NAME-FAMILY for each direction family listed ("
        + ", ".join(f'"{name}"' for name in DIRECTION_FAMILIES)
        + "): NAME's data measured by closed-form direction probes (one temperature fitted "
        "per probe), beside its trained probes in the same tables and layer figures",
        key_omits=[],
    )

    #: the name in experiment files (``kind = ...``)
    kind: ClassVar[str]
    #: one line: what the representation is
    summary: ClassVar[str]
    #: what it reads: :data:`NUMERIC`, :data:`~probemeter.runs.tasks.WORDS` or :data:`FILES`
    reads: ClassVar[str]
    #: the spaCy pipeline its features come from, if any (a task labelled by the same
    #: pipeline is then probed through its own input: ``runs.config.pipeline_warnings``)
    pipeline: ClassVar[str | None] = None

    @classmethod
    def options(cls) -> tuple[Option, ...]:
        """The kind's own options in declaration order, then ``erase`` and ``directions``
        (which, declared on this base, dataclasses would list first)."""
        found = super().options()
        return tuple(sorted(found, key=lambda opt: opt.name in ("erase", "directions")))

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

    @classmethod
    def from_written(cls, values: dict[str, Any]) -> RepresentationKind:
        """The declaration from checked values as written in a file (no checks); an option
        not among them takes its default, a name that is no option is left out."""
        return cls(
            **{opt.name: opt.parse(values[opt.name]) for opt in cls.options() if opt.name in values}
        )

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


#: every representation kind of ``[[representations]] kind``, by name, in the order the docs
#: list them: the registry, filled by :mod:`probemeter.runs.kinds` (its ``KINDS``), held here
#: so that a representation and a kind find a kind's declaration without importing it
KINDS: dict[str, type[RepresentationKind]] = {}


def kind_class(kind: str) -> type[RepresentationKind]:
    """The class of ``kind``; a ValueError naming the known kinds otherwise."""
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})") from None


def encoder_default(encoder: Callable[..., Any], name: str) -> Any:
    """The default of ``encoder``'s parameter ``name`` (a class: its constructor's): a kind's
    option that its encoder takes as it is has the encoder's default, written there once."""
    return inspect.signature(encoder).parameters[name].default


def mixes_layers(rep: Representation) -> bool:
    """Whether a representation's probes mix its layers (``combine = "scalar-mix"``)."""
    return getattr(rep.declared, "combine", None) == "scalar-mix"


def mix_layers(rep: Representation) -> tuple[int, ...] | None:
    """The layers a representation's probes mix (``combine = "scalar-mix"``), or None."""
    return tuple(rep.declared.layer) if mixes_layers(rep) else None


def check_layers(value: Any) -> str | None:
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


LAYER_HELP = (
    'a layer (0 = embeddings), a list of them, or "all": every layer, named NAME-0, NAME-1, '
    "... (a layer sweep)"
)
COMBINE_HELP = (
    '"concat": the listed layers side by side as one representation NAME; "scalar-mix": the '
    "same features, which the probes mix with learned layer weights (Peters et al. 2018 eq. "
    "1; curve and mdl methods, online code only)"
)


def layer_representations(
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
    combine = rep.declared.combine
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
