"""The method interface: one frozen dataclass per method, its options declared once.

A method (``curve``, ``mdl``, ``power``, ``pareto``, ``switching``, ``structural``) is a
:class:`~probemeter._declared.Declared` dataclass whose fields are its options, each declared
with :func:`~probemeter._declared.option` — default, check and help text — from which the
experiment-file reader (:mod:`probemeter.runs.config`), the command-line flags
(:mod:`probemeter.cli`) and the docs' experiment-file reference follow. A method also says what
it can measure (class variables such as :attr:`Method.keeps_probes`, and the ``*_problem``
hooks the reader asks), how it splits into stored units (:meth:`Method.units`) and how it
finishes a run folder (:meth:`Method.finish`). See ``docs/architecture.md``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from probemeter._declared import REQUIRED, Declared, Option, option, plain
from probemeter._execution import Execution
from probemeter._figures import FigureOptions
from probemeter._summary import Headline, Summary

if TYPE_CHECKING:
    from probemeter.data import ProbeData

__all__ = [
    "ENGINE_KEYWORDS",
    "GPU_MEMORY_FRACTION",
    "LANGUAGE_MODEL_PROBE",
    "MAX_MEMORY_GIB",
    "PROBES_ENTRY",
    "REQUIRED",
    "RUN_NAME",
    "EngineProbes",
    "Method",
    "MethodRun",
    "Option",
    "ReportPart",
    "RunContext",
    "TaskFacts",
    "UnitPlan",
    "option",
    "plain",
    "write_run_files",
]


#: the default GiB budget of one chunk of stacked probes per worker process on the CPU: the
#: engine's, experiment runs' and every command's (light to import, unlike the engine)
MAX_MEMORY_GIB = 2.0
#: on a GPU, the default budget of one chunk is this fraction of the device's free memory
#: when the chunks are planned (the rest is left to the data, the matmul workspace and other
#: processes); see :func:`probemeter.training.memory.memory_budget`
GPU_MEMORY_FRACTION = 0.5

#: the context fields a unit function that trains with the engine takes
ENGINE_KEYWORDS = ("random_state", "execution")


#: the entry of a unit's result that holds its kept probes (a :class:`~probemeter.probes.ProbeSet`,
#: not JSON): the run's store takes it out and writes it beside the unit
PROBES_ENTRY = "__probes__"


class TaskFacts(Protocol):
    """What a method may ask of a task's declaration (:class:`probemeter.runs.tasks.TaskType`)
    when it checks its setup."""

    #: the task's name in experiment files
    dataset: str
    #: whether its label can be each word's head in a dependency tree
    trees: bool
    #: whether its rows are words (or spans of them) whose types a control task relabels
    word_types: bool

    def selects_heads(self) -> bool:
        """Whether its label is each word's head."""
        ...

    def values(self) -> dict[str, Any]:
        """Its options as written in a file."""
        ...


@dataclass(frozen=True)
class RunContext:
    """Where and how units run: the run's seed, device, workers, memory budget, progress, the
    task's name (for tables and figures), and whether units keep their trained probes (only
    for methods whose :attr:`Method.keeps_probes`)."""

    random_state: int
    device: str
    n_jobs: int | None
    max_memory: float | None
    progress: bool
    task: str
    keep_probes: bool = False

    @property
    def execution(self) -> Execution:
        """Where and how the units' probes train."""
        return Execution(self.device, self.n_jobs, self.max_memory, self.progress)

    def keywords(self, *names: str) -> dict[str, Any]:
        """The fields ``names`` as keyword arguments of a unit function."""
        return {name: getattr(self, name) for name in names}


@dataclass(frozen=True)
class UnitPlan:
    """One stored unit of a method: ``function(payload, **options)`` returns its JSON result
    (with ``keep_probes`` in ``options``, also its probes under :data:`PROBES_ENTRY`).

    ``names`` are the representations it uses (one; for a paired comparison the baseline
    first); ``spec`` is the method's part of the unit's key (the runner adds what the data
    are). ``function`` is a module-level function, so it can run in a Ray task.
    """

    label: str
    names: tuple[str, ...]
    spec: dict[str, Any]
    function: Callable[..., Mapping[str, Any]]
    payload: Any
    options: dict[str, Any]


@dataclass(frozen=True)
class EngineProbes:
    """The probes one unit of a method trains in the engine, as ``probemeter run --check``
    counts their memory (:func:`~probemeter.training.memory.check_memory_budget`): the probe's
    hidden widths, the training config, the training-set sizes, and the development rows that
    every probe shares (None: none shared)."""

    probe: tuple[int, ...]
    config: Any
    sizes: list[int]
    shared_dev_rows: int | None = None


@dataclass(frozen=True)
class MethodRun:
    """What a method's ``finish`` wrote: the printable table and the files. ``frames`` are the
    method's tables as pandas DataFrames, by name (probe points, measures, …), which a run
    exports as CSV or Parquet on request (:mod:`probemeter._exports`)."""

    table: str
    files: tuple[Path, ...]
    frames: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class ReportPart:
    """A method's own part of its run's report (:func:`probemeter.runs.html_report.write_report`,
    whose module docstring lists the template's keys): the page's title; what the run
    recorded (``created``, ``experiment``, ``timings``, ``versions``); the template keys it
    fills (``sections``); the (Markdown, LaTeX) tables to write as ``table.md`` and
    ``table.tex``, when the report recomputes them; and whether the run's layer analysis
    applies (``layers``)."""

    title: str
    recorded: Mapping[str, Any]
    sections: Mapping[str, Any]
    tables: tuple[str, str] | None = None
    layers: bool = True


#: the probe of texts that language models read, where a method's papers train MLPs: a linear
#: probe (``probe = []``), the probe of today's language-model probing (the page "Probe a
#: language model": an MLP 512×512 took 10 min 31 s where a linear probe took 12 s, 2 cores)
LANGUAGE_MODEL_PROBE: list[int] = []


class Method(Declared, ABC):
    """Base of the method dataclasses (subclasses are ``@dataclass(frozen=True)``)."""

    #: the method's name in experiment files (``[method] kind``) and on the command line
    kind: ClassVar[str]
    #: whether its probes can learn a scalar mix of layers (``combine = "scalar-mix"``: the
    #: data's ``mix_layers``)
    mixes_layers: ClassVar[bool] = False
    #: whether its probes train in the engine from :func:`~probemeter.probes.probe_for`, so
    #: they can pool edge-probing spans with learned self-attention (the data's
    #: ``span_tokens``)
    pools_spans: ClassVar[bool] = False
    #: whether its probes train in the engine from :func:`~probemeter.probes.probe_for`, one
    #: probe per representation, so that a direction twin's data (``directions``,
    #: :mod:`probemeter.runs.directions`) make them direction probes fitted in closed form
    fits_directions: ClassVar[bool] = False
    #: whether it measures label sets (multi-label targets, ``ProbeData.multilabel``): its
    #: probes train in the engine with one sigmoid per label (edge probing's ``multilabel``)
    measures_label_sets: ClassVar[bool] = False
    #: one line: what the method computes and from which paper
    summary: ClassVar[str]
    #: whether its units can keep their trained probes (``save_probes``): then their functions
    #: take ``keep_probes`` and, when it is true, return a ProbeSet under :data:`PROBES_ENTRY`
    keeps_probes: ClassVar[bool] = False
    #: whether its units score their probes on the data's shifted test sets
    #: (:attr:`~probemeter.data.ProbeData.shifted`: a texts task's ``shifted``); a task with
    #: shifted sets is refused for a method without it
    evaluates_shifted: ClassVar[bool] = False
    #: whether it probes dependency trees (structural probes): it runs on head selection
    #: (task label ``"arcs"``) only, and its data carry each word's UPOS tag id in ``groups``
    #: (punctuation), not its word type, and the model's features unstandardised
    reads_trees: ClassVar[bool] = False
    #: whether an option of it parses head selection (a task labelled with each word's head),
    #: whose setup it then checks itself (``check_setup``): the pareto method's biaffine family
    parses_heads: ClassVar[bool] = False
    #: whether its units train in the engine's worker processes (they take ``n_jobs``): a run
    #: then starts the workers before loading the data and puts the features in shared
    #: memory for them; methods that train in the run's own process leave both out
    trains_in_workers: ClassVar[bool] = True
    #: whether a folder holding its ``results.json`` and no ``run.json`` is one of its runs:
    #: ``probemeter demo`` and ``curve`` write such folders, which the report and
    #: ``probemeter measures`` read
    writes_results_alone: ClassVar[bool] = False
    #: whether its units compare pairs of representations (a baseline against each other):
    #: its results are pairs, not one representation each, so nothing is measured beyond a
    #: ``[run] baseline`` (conditional probing)
    compares_pairs: ClassVar[bool] = False
    #: its options' defaults, as an experiment file writes them, on tasks whose rows are
    #: texts a language model reads (:attr:`~probemeter.runs.tasks.TaskType.language_models`),
    #: where they differ from the papers' protocol its other defaults follow: what a file
    #: leaves out of ``[method]`` takes these there (the generated reference lists them)
    language_model_defaults: ClassVar[dict[str, Any]] = {}

    section = "method"

    def to_dict(self) -> dict[str, Any]:
        """The method as written in a file: kind and every option (defaults filled in)."""
        return {"kind": self.kind, **self.values()}

    @property
    def accuracy_name(self) -> str:
        """What the test accuracy of its probes is called in tables and figures (``"UAS"``
        for a parsing probe)."""
        return "accuracy"

    # ---- orchestration hooks -------------------------------------------------------------

    def check_setup(self, task: TaskFacts | None, names: Sequence[str]) -> list[tuple[str, str]]:
        """Problems of this method with the task (its declaration, None for feature files
        only) and the representation ``names``, as (location, text); before any data are
        loaded."""
        return []

    def direction_problem(self, name: str) -> tuple[str, str] | None:
        """Why its probes cannot be the direction probes of twin ``name`` (``directions``), as
        (location, text); None when they can (:attr:`fits_directions`)."""
        if self.fits_directions:
            return None
        return (
            "method.kind",
            f"{name!r} is a direction twin (directions = [...]), whose probes the {self.kind} "
            "method cannot fit in closed form: its probes are not the engine's one probe per "
            "representation; use the curve, mdl (online code), power or k-sparse method",
        )

    def layer_mix_problem(self, name: str) -> tuple[str, str] | None:
        """Why its probes cannot learn a scalar mix of the layers of representation ``name``
        (``combine = "scalar-mix"``), as (location, text); None when they can."""
        if self.mixes_layers:
            return None
        return (
            "method.kind",
            f'{name!r} mixes layers with a learned scalar mix (combine = "scalar-mix"), which '
            f"the {self.kind} method's probes cannot learn: use the curve or mdl method, or "
            'combine = "concat"',
        )

    def check_pool(self, pool_size: int, n_classes: int | None = None) -> list[tuple[str, str]]:
        """Problems of this method with a representation's pool (and its classes, once the
        data are loaded), as (location, text)."""
        return []

    def sparse_problems(self) -> list[tuple[str, str]]:
        """Why this method, with its options, cannot train on sparse features (a scipy.sparse
        CSR pool, e.g. sparse-autoencoder latents), as (location, reason); empty when it can.
        Only loss-data curves and online codes train on sparse rows
        (:func:`~probemeter.data.check_probe_data`)."""
        reason = (
            f"the {self.kind} method's probes read dense features; loss-data curves "
            '(kind = "curve") and online codes (kind = "mdl") train on sparse ones'
        )
        return [("method.kind", reason)]

    def engine_probes(self, pool_size: int) -> EngineProbes | None:
        """The probes one unit trains in the engine on a pool of ``pool_size`` examples, for
        the memory check of ``probemeter run --check``; None when its probes train elsewhere
        (checked when they train) or the pool cannot hold them (:meth:`check_pool` says why)."""
        return None

    def per_representation(
        self,
        datasets: Mapping[str, ProbeData],
        function: Callable[..., Mapping[str, Any]],
        options: dict[str, Any],
    ) -> list[UnitPlan]:
        """One unit per representation: ``function(data, method=self, **options)``, keyed by
        the method's settings."""
        spec = {"settings": self.to_dict()}
        options = {"method": self, **options}
        return [
            UnitPlan(name, (name,), spec, function, data, options)
            for name, data in datasets.items()
        ]

    @abstractmethod
    def units(self, datasets: Mapping[str, ProbeData], context: RunContext) -> list[UnitPlan]:
        """The stored units of a run over ``datasets`` (by representation name, in order)."""

    def compute_together(self, plans: Sequence[UnitPlan]) -> list[Mapping[str, Any]] | None:
        """The results of the units ``plans`` (some of :meth:`units`, not stored yet), computed
        together where that is faster than one after another (the structural method trains a
        layer sweep's probes together), each exactly what its own ``function`` returns but for
        the seconds it records; or None, the default: the runner computes them one after
        another. (The curve method does not: one engine plan for a sweep's curves saved no time,
        ``benchmarks/sweep_planning.py``.)"""
        return None

    @abstractmethod
    def finish(
        self,
        results: Sequence[Mapping[str, Any]],
        run_dir: Path,
        extra: dict[str, Any],
        figures: FigureOptions,
    ) -> MethodRun:
        """Write the run folder from the units' results (in :meth:`units` order): the method's
        own files, then :func:`write_run_files`; ``extra`` (the experiment and timings) goes
        into ``run.json`` (and the method's ``results.json``); figures are saved as
        ``figures`` says (formats, dpi)."""

    @classmethod
    def report_part(cls, run_dir: Path, epsilon: float | None) -> ReportPart | None:
        """Its own part of the report of the run folder ``run_dir``, its measures recomputed at
        the loss tolerance ``epsilon`` where it has one (None: the run's own); None, the
        default: the report shows the table and figure that :func:`write_run_files`
        recorded."""
        return None

    @abstractmethod
    def headlines(self) -> tuple[Headline, ...]:
        """The measures that compare representations (the columns of the layer table and the
        panels of its figure); the first ranks them."""

    @abstractmethod
    def summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, Summary]:
        """Each representation's :class:`~probemeter._summary.Summary` (estimates of every
        :meth:`headlines` measure, the best probes' accuracy and per-seed test correctness),
        by representation name, from the units' results (in :meth:`units` order)."""


#: a method run's description next to its results: method, figure, experiment, timings
RUN_NAME = "run.json"


def write_run_files(
    method: Method,
    run_dir: Path,
    tables: tuple[str, str, str],
    files: tuple[Path, ...],
    extra: dict[str, Any],
    frames: Mapping[str, Any],
) -> MethodRun:
    """The files every method writes beside its own: ``table.md``,
    ``table.tex`` and ``run.json`` (method, the figure to show and every figure file,
    experiment, timings), which
    :func:`probemeter.runs.html_report.write_report` turns into ``report.html``.

    Args:
        tables: the (text, Markdown, LaTeX) renderings of the method's table.
        files: the method's own files; the first ``.png`` (else ``.svg``) is the figure the
            report shows (none when figures are PDF only).
        frames: the method's tables, by name (:attr:`MethodRun.frames`).
    """
    from probemeter._io import write_json_atomic, write_text_atomic

    text, markdown, latex = tables
    write_text_atomic(run_dir / "table.md", markdown + "\n")
    write_text_atomic(run_dir / "table.tex", latex + "\n")
    saved = [path.name for path in files if path.suffix in (".png", ".pdf", ".svg")]
    shown = [name for name in saved if not name.endswith(".pdf")]
    figure = min(shown, key=lambda name: not name.endswith(".png"), default=None)
    described = {"method": method.kind, "figure": figure, "figures": saved}
    write_json_atomic(run_dir / RUN_NAME, {**described, **extra})
    written = (*files, run_dir / "table.md", run_dir / "table.tex", run_dir / RUN_NAME)
    return MethodRun(text, written, frames=frames)
