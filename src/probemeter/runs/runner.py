"""Running an experiment file (:mod:`probemeter.runs.config`) into a run folder.

Each representation's loss-data curve is one unit of :func:`probemeter.runs.store.run_units`, keyed
by everything that determines it (representation config, data fingerprint, task, probe,
training settings, sizes, seeds, random state), so an interrupted run resumes and skips the
finished curves. The run folder then holds::

    RUN_DIR/experiment.toml   a copy of the experiment file
    RUN_DIR/units/<key>.json  one finished curve per representation (ResultStore)
    RUN_DIR/units/<key>.probes.safetensors   with save_probes: that unit's trained probes
    RUN_DIR/results.json      curves, comparison, parsed experiment, timings (results.py)
    RUN_DIR/curves.png        loss and accuracy curves
    RUN_DIR/layers.*          with a layer sweep: table, figure and verdicts (runs.layers)
    RUN_DIR/run.lock          while a run is going: its PID, host and start (runs.lock)

Costly features (encoded words, VAE/CNN features) are cached in ``OUT/.probemeter-cache``: a
transformer's layers one file per layer, written batch by batch (encoding holds one batch, not
every layer), and each word representation's split and standardised data saved there too and
read back memory-mapped, so a layer sweep keeps no layer in memory but the pages the probes
being trained read.
The units run in this process, or as Ray tasks on a cluster (:mod:`probemeter.runs.ray_backend`),
with the same results, bit for bit, when a Ray task trains with as many worker processes as
the local run (``n_jobs`` = ``cpus_per_unit``): per-probe random streams make a curve
independent of where it runs, and the worker count sets how the probe axis is chunked.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from probemeter._device import resolve_device
from probemeter._exports import export_formats, export_frames
from probemeter._figures import FigureOptions
from probemeter._method import RunContext, UnitPlan
from probemeter._validation import check_scalar, listed
from probemeter.curves.comparison import Comparison
from probemeter.curves.curve import LossDataCurve
from probemeter.data import ProbeData
from probemeter.datasets.arcs import ARC_HEADS, head_probe_data
from probemeter.datasets.conll import NO_FEATURE, Treebank, probe_data, sentence_test_mask
from probemeter.datasets.edge_probing import EdgeProbingSet, edge_probe_data, read_edge_probing
from probemeter.datasets.projections import project
from probemeter.datasets.senteval import SentEvalData
from probemeter.datasets.treebank_splits import TreebankSplits
from probemeter.encoders import FeatureCache, SpacyTokenVectors, TransformerEncoder, glove_6b_50d
from probemeter.encoders.hf import minilm_path
from probemeter.feature_files import load_features
from probemeter.runs.config import (
    WORD_KINDS,
    Experiment,
    ExperimentError,
    Representation,
    Task,
    layer_sweeps,
    pipeline_warnings,
    save_probes_problem,
)
from probemeter.runs.layers import LayerAnalysis, analyse_layers, write_layer_files
from probemeter.runs.lock import RunLock
from probemeter.runs.store import ResultStore, Unit, run_units
from probemeter.training.engine import warm_workers
from probemeter.training.shared_memory import share_data
from probemeter.training.workers import worker_count

if TYPE_CHECKING:
    from probemeter.runs.ray_backend import RayOptions

__all__ = ["FEATURE_CACHE", "ExperimentRun", "check_data", "prepare_data", "run_experiment"]

#: folder under ``--out`` caching encoded words and VAE/CNN features, shared by runs
FEATURE_CACHE = ".probemeter-cache"

# (X_train, y_train, X_test, y_test) of one input of a task
_Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class ExperimentRun:
    """The outcome of :func:`run_experiment`.

    ``timings`` maps each unit (a representation; for ``power`` a pair) to ``{"key",
    "seconds", "loaded"}``: its unit key, the seconds it took to compute (in an earlier run
    when ``loaded``). ``table`` is the method's printable result table (followed by the layer
    table and verdicts of a layer sweep); ``curves`` and ``comparison`` are set for the
    ``curve`` method only; ``layers`` for runs with a layer sweep
    (:mod:`probemeter.runs.layers`).
    """

    run_dir: Path
    kind: str
    table: str
    timings: dict[str, dict[str, Any]]
    files: tuple[Path, ...]
    curves: tuple[LossDataCurve, ...] = ()
    comparison: Comparison | None = None
    layers: LayerAnalysis | None = None


def run_experiment(
    experiment: Experiment,
    out: str | Path,
    *,
    fresh: bool = False,
    n_jobs: int | None = -1,
    max_memory: float | None = None,
    progress: bool = True,
    ray: RayOptions | None = None,
    figures: FigureOptions | None = None,
    export: Iterable[str] = (),
) -> ExperimentRun:
    """Run ``experiment`` into ``out / experiment.run.name``, resuming stored curves.

    All data are loaded and checked before anything is trained. With ``fresh`` the stored
    curves of this experiment are recomputed.

    The run folder is locked (:class:`~probemeter.runs.lock.RunLock`, the file
    ``RUN_DIR/run.lock``) from before the data are loaded until the results are written, also
    when the run fails or is interrupted: a second run into the same folder fails at once, and
    a lock left by a killed run is taken over with a
    :class:`~probemeter.runs.lock.StaleLockWarning`. ``probemeter run --check`` does not call
    this function and takes no lock.

    Args:
        n_jobs: CPU worker processes per curve in this process (``-1``: one per usable CPU). On Ray
            each curve trains with ``ray.cpus_per_unit`` worker processes instead.
        max_memory: GiB budget of one chunk of stacked probes, per worker process (None: sized
            to the device, see :func:`~probemeter.training.memory.memory_budget`).
        ray: run the curves as Ray tasks with these options; None: in this process.
        figures: formats and resolution of the figures (default PNG and PDF, 150 dpi).
        export: also write the method's tables (:attr:`~probemeter._method.MethodRun.frames`:
            probe points, measures, …) in these formats, ``"csv"`` and/or ``"parquet"``, to
            the run folder (:func:`~probemeter._exports.export_frames`).

    With ``experiment.run.save_probes``, every unit's trained probes are stored beside it
    (``RUN_DIR/units/<key>.probes.safetensors``, read back by
    :func:`~probemeter.runs.saved_probes.load_run_probes`), and a stored unit without them is
    computed again.

    Raises:
        ValueError: ``save_probes`` with a method that keeps no probes, or without
            safetensors (before anything is loaded or trained).
        ExperimentError: a representation's data do not fit the method (e.g. sizes beyond
            the pool of an ``npz`` file), listing every such problem.
        RunLockedError: another run, still going, holds the run folder (a ValueError naming
            the folder, the holder's PID and the lock file).
    """
    if max_memory is not None:
        check_scalar(max_memory, "max_memory", float, min_val=0, include_boundaries="neither")
    if ray is None:
        worker_count(n_jobs)  # a bad n_jobs is refused before the data load, whatever the method
    formats = export_formats(list(export), "export") if export else ()
    for message in pipeline_warnings(experiment.to_dict()):
        warnings.warn(message, UserWarning, stacklevel=2)
    save_probes = experiment.run.save_probes
    problem = save_probes_problem(experiment.method) if save_probes else None
    if problem:
        raise ValueError(f"save_probes: {problem}")
    run_dir = Path(out) / experiment.run.name
    with RunLock(run_dir):  # before loading data: a second run fails at once
        method, random_state = experiment.method, experiment.run.random_state
        workers = None
        on_cpu = resolve_device(experiment.run.device).type == "cpu"
        if ray is None and method.trains_in_workers and on_cpu:
            workers = warm_workers(n_jobs)  # the worker processes start while the data load
        datasets = prepare_data(
            experiment,
            cache_dir=Path(out) / FEATURE_CACHE,
            progress=progress,
            shared=workers is not None,  # held once by the run and its workers
        )
        copy = run_dir / "experiment.toml"
        if not (copy.exists() and copy.samefile(experiment.path)):  # rerunning from the copy
            shutil.copyfile(experiment.path, copy)
        context = RunContext(
            random_state=random_state,
            device=experiment.run.device,
            n_jobs=n_jobs if ray is None else ray.cpus_per_unit,
            max_memory=max_memory,
            progress=progress and ray is None,
            task=experiment.task.dataset if experiment.task else "task",
            keep_probes=save_probes,
        )
        reps = {rep.name: rep for rep in experiment.representations}
        named = {name: replace(datasets[name], name=name) for name in reps}
        plans = method.units(named, context)
        units = [
            Unit(_spec(experiment, plan, reps, named), plan.function, plan.payload, plan.options)
            for plan in plans
        ]
        store = ResultStore(run_dir)
        if ray is None:
            pairs = [(unit.spec, unit.compute) for unit in units]
            outcomes = run_units(pairs, store, fresh=fresh, progress=progress, probes=save_probes)
        else:
            from probemeter.runs.ray_backend import run_units_on_ray

            outcomes = run_units_on_ray(
                units, store, ray, fresh=fresh, progress=progress, probes=save_probes
            )
        timings = {
            plan.label: {"key": outcome.key, "seconds": outcome.seconds, "loaded": outcome.loaded}
            for plan, outcome in zip(plans, outcomes)
        }
        extra = {"experiment": experiment.to_dict(), "timings": timings}
        results = [outcome.result for outcome in outcomes]
        figures = figures or FigureOptions()
        finished = method.finish(results, run_dir, extra, figures)
        exported = export_frames(finished.frames, run_dir, formats)
        finished = replace(finished, files=(*finished.files, *exported))
        mixed = [name for name, data in named.items() if data.mix_layers is not None]
        if mixed:  # the layer weights each mixing representation's probes learned
            summaries = method.summaries(results)
            lines = [f"{name}: {summaries[name].layer_weights.describe()}" for name in mixed]
            finished = replace(finished, table="\n\n".join([finished.table, *lines]))
        sweeps = layer_sweeps(experiment.representations)
        layers = None
        if sweeps:
            layers = analyse_layers(method, results, sweeps, random_state=random_state)
            written = write_layer_files(layers, run_dir, figures)
            written += export_frames({"layers": layers.to_frame()}, run_dir, formats)
            table = f"{finished.table}\n\n{layers}"
            finished = replace(finished, table=table, files=(*finished.files, *written))
    return ExperimentRun(
        run_dir,
        method.kind,
        finished.table,
        timings,
        finished.files,
        curves=finished.curves,
        comparison=finished.comparison,
        layers=layers,
    )


def _spec(
    experiment: Experiment,
    plan: UnitPlan,
    reps: dict[str, Representation],
    datasets: dict[str, ProbeData],
) -> dict[str, Any]:
    """Everything a unit's key depends on: what its data are (the last of ``plan.names``,
    after a paired comparison's baseline) and the method's part of the spec."""
    *baseline, name = plan.names
    spec = {
        "method": experiment.method.kind,
        "task": _task_dict(experiment.task),
        "representation": reps[name].key_dict(),
        "data_fingerprint": datasets[name].fingerprint(),
        "random_state": experiment.run.random_state,
    }
    for other in baseline:
        spec["baseline"] = reps[other].key_dict()
        spec["baseline_fingerprint"] = datasets[other].fingerprint()
    return {**spec, **plan.spec}


def _task_dict(task: Task | None) -> dict[str, Any] | None:
    """The task in unit keys; ``multilabel = false``, the default that edge-probing units were
    computed with before it existed, is left out, so those stored units stay valid."""
    if task is None:
        return None
    options = {k: v for k, v in task.options.items() if (k, v) != ("multilabel", False)}
    return {"dataset": task.dataset, **options}


def prepare_data(
    experiment: Experiment,
    cache_dir: str | Path | None = None,
    *,
    progress: bool = True,
    shared: bool = False,
) -> dict[str, ProbeData]:
    """Every representation's :class:`ProbeData`, by name, checked against the method.

    Args:
        cache_dir: folder of a :class:`~probemeter.encoders.FeatureCache` for features that
            are costly to make (encoded words, VAE/CNN features); None: no cache.
        progress: progress bars while encoding and fitting encoders (False: none, not even
            transformers' own).
        shared: move each representation's features and labels into shared memory as soon
            as it is built (:func:`~probemeter.training.shared_memory.share_data`), for runs
            that train in worker processes: they then map the arrays the run holds, not copies.

    Raises:
        ExperimentError: listing each representation whose files cannot be used, whose pool
            is smaller than the largest size asked for, or whose first MDL block would hold
            fewer examples than classes.
    """
    random_state = experiment.run.random_state
    inputs = _read_task(experiment)
    cache = None if cache_dir is None else FeatureCache(cache_dir)
    build = _Build(
        random_state, cache, experiment.run.device, progress, experiment.method.reads_trees
    )
    datasets, problems = {}, []
    for rep in experiment.representations:
        where = _where(rep)
        try:
            data = _representation(rep, inputs, build)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        for location, message in experiment.method.check_pool(data.pool_size, data.n_classes):
            problems.append(f"{location}: {message} ({_named(rep)})")
        datasets[rep.name] = share_data(data) if shared else data
    if problems:
        raise ExperimentError(experiment.path, problems)
    return datasets


#: the tasks whose inputs are files the user gives (read whole by :func:`check_data`)
_FILE_TASKS = ("conllu", "edge-probing", "senteval")


def check_data(experiment: Experiment, *, max_memory: float | None = None) -> None:
    """What a run checks of its data before it trains, without encoding, fitting or training
    anything: ``probemeter run --check``, after
    :func:`~probemeter.runs.config.load_experiment` (which reads files' headers only). The
    checks are the run's own, on the data the run would build:

    * a ``conllu``, ``edge-probing`` or ``senteval`` task's files are read whole by the
      readers the run uses (one pass over each), and its split and labels built as the run
      builds them (:func:`_text_task_data`), from one column of zeros where a representation
      would give its features (the split and the labels do not depend on them): malformed
      lines, a pool of one class, a ``feats:<Name>`` label no word carries, a tree the
      labels cannot be read from are refused, and the method's sizes and blocks are checked
      against that pool (:meth:`~probemeter._method.Method.check_pool`);
    * each ``npz`` representation is read and validated as the run does (features finite,
      labels class indices unless ``labels = "encode"``, two classes or more, sparse arrays
      consistent; not standardised), then checked against the method's sizes and, for the
      ``curve`` and ``mdl`` methods, against the memory budget of one probe, as the engine
      checks it (:func:`_memory_problem`).

    The datasets the package makes itself (digits, parity, fashion-mnist, ptb) and the
    features of encoders and of VAE/CNN are not built here: their sizes are checked from the
    file by ``load_experiment``, the rest when the run builds them.

    Args:
        max_memory: the run's GiB budget of one chunk of stacked probes (None: the device's
            default, :func:`~probemeter.training.memory.memory_budget`).

    Raises:
        ExperimentError: listing every problem found, each ``"location: message"``; of a
            representation, its first problem.
    """
    from probemeter.training.memory import memory_budget

    method, problems = experiment.method, []
    build = _Build(
        experiment.run.random_state, None, experiment.run.device, False, method.reads_trees
    )
    task, inputs = experiment.task, _TaskInputs({}, task=experiment.task)
    if task is not None and task.dataset in _FILE_TASKS:
        try:
            inputs = _read_task(experiment)
        except ExperimentError as error:
            problems.extend(error.problems)
        else:
            if any(rep.kind in WORD_KINDS for rep in experiment.representations):
                problems.extend(_text_task_problems(inputs, method, build))
    budget = memory_budget(max_memory, resolve_device(experiment.run.device))
    failed = set()  # entries with a problem: the other layers of a sweep are not checked
    for rep in experiment.representations:
        if rep.kind != "npz" or rep.entry in failed:
            continue
        where = _where(rep)
        try:
            data = _representation(rep, inputs, build, standardize=False)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            failed.add(rep.entry)
            continue
        found = [
            f"{location}: {message} ({_named(rep)})"
            for location, message in method.check_pool(data.pool_size, data.n_classes)
        ]
        memory = _memory_problem(method, data, budget)
        found += [f"{where}: {memory}"] if memory else []
        if found:
            problems.extend(found)
            failed.add(rep.entry)
    if problems:
        raise ExperimentError(experiment.path, problems)


def _read_task(experiment: Experiment) -> _TaskInputs:
    """The task's inputs (:func:`_task_inputs`); a file that cannot be read is an
    :class:`ExperimentError` at ``task`` (its message names the file)."""
    if experiment.task is None:
        return _TaskInputs({})
    try:
        return _task_inputs(experiment.task, experiment.run.random_state)
    except ValueError as error:
        raise ExperimentError(experiment.path, [f"task: {error}"]) from None


def _text_task_problems(inputs: _TaskInputs, method: Any, build: _Build) -> list[str]:
    """The problems of a text task's data (:func:`_text_task_data` over a stand-in column of
    zeros, one row per word or sentence) and of the method's sizes against its pool."""
    stand_in = np.zeros((inputs.n_rows, 1), dtype=np.float32)
    dataset = inputs.task.dataset
    try:
        data = _text_task_data(inputs, stand_in, dataset, build)
    except ValueError as error:
        return [f"task: {error}"]
    pool = f"the {dataset} task's pool: {data.pool_size} rows, {data.n_classes} classes"
    return [
        f"{location}: {message} ({pool})"
        for location, message in method.check_pool(data.pool_size, data.n_classes)
    ]


def _where(rep: Representation) -> str:
    """Where a representation's problems are reported: its ``[[representations]]`` entry,
    and, for one layer of a sweep, its name."""
    where = f"representations[{rep.entry}]"
    return f"{where} ({rep.name!r})" if rep.sweep is not None else where


def _named(rep: Representation) -> str:
    """A representation's entry and name, e.g. ``representations[0], 'pca-8'``."""
    return f"representations[{rep.entry}], {rep.name!r}"


def _memory_problem(method: Any, data: ProbeData, max_memory: float) -> str | None:
    """Why one probe of ``method`` on ``data`` cannot fit in ``max_memory`` GiB, as the engine
    refuses it before training (:func:`~probemeter.training.memory.check_memory_budget`, with
    the training-set sizes the method trains on: a curve's sizes, the online code's block
    ends, and their evaluation on every test example), or None. Other methods train
    probes of their own (power's pairs, pareto's families, structural probes) and are
    checked when they train."""
    from probemeter.curves.method import CurveMethod
    from probemeter.mdl.method import MDLMethod
    from probemeter.probes import probe_for
    from probemeter.probes.sparse_inputs import sparse_row_bytes
    from probemeter.training.memory import check_memory_budget

    shared_dev_rows = None
    if isinstance(method, CurveMethod):
        from probemeter.curves.curve import default_sizes

        config = method.training()
        sizes = list(method.sizes or default_sizes(data.pool_size))
    elif isinstance(method, MDLMethod):
        from probemeter.mdl.online import block_ends, transmitted_size

        config = method.training()
        n = transmitted_size(data.pool_size, method.stopping_set, config.dev_fraction)
        try:
            sizes = [int(end) for end in block_ends(n, method.timesteps)]
        except ValueError:  # blocks the pool cannot hold: check_pool reports them
            return None
        if method.stopping_set == "dev":
            shared_dev_rows = data.pool_size - n
    else:
        return None
    probe = probe_for(data, method.probe)
    row_bytes = None
    if data.is_sparse:  # a gathered sparse row, as the engine counts it
        if probe.mix or probe.span:
            return None  # refused by the engine with its own message
        width = probe.layer_shapes(data.n_features, data.n_classes)[0][1]
        row_bytes = sparse_row_bytes(data.X_train, width)
    try:
        check_memory_budget(
            probe,
            data.n_features,
            data.n_classes,
            config,
            max_memory,
            sizes=sizes,
            n_eval=len(data.y_test),
            per_example=True,
            shared_dev_rows=shared_dev_rows,
            row_bytes=row_bytes,
        )
    except ValueError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class _Build:
    """How representations are built: the run's seed, the feature cache (None: no cache), the
    device of encoders, and whether they show progress."""

    random_state: int
    cache: FeatureCache | None
    device: str
    progress: bool
    #: head-selection data for a method that reads trees
    #: (:attr:`~probemeter._method.Method.reads_trees`): :func:`_tree_arguments`
    trees: bool = False


@dataclass
class _TaskInputs:
    """A task's inputs: numeric views as arrays, or words; images held out from the pool."""

    arrays: dict[str, _Arrays]
    standardize: bool = True
    task: Task | None = None
    treebank: Treebank | None = None
    #: an edge-probing task's training and test files
    edges: tuple[EdgeProbingSet, EdgeProbingSet] | None = None
    #: the task file of a ``senteval`` task (one row per sentence)
    senteval: SentEvalData | None = None
    #: a gold treebank's official split (task "conllu"); ``treebank`` is its train + test
    splits: TreebankSplits | None = None
    #: n_fit -> (images scaled to [0, 1], labels) outside the pool, for VAE/CNN training
    heldout: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None
    #: per (model, random_init, dtype, word_pooling, pooling): the encoder's key and every
    #: layer's features (one encoder pass for all; memory-mapped files when there is a
    #: feature cache)
    layers: dict[tuple[str, bool, str, str, str], tuple[dict[str, Any], list[np.ndarray]]] = field(
        default_factory=dict
    )
    #: per (train, test) feature files, their arrays (read once for all the layers of a sweep)
    files: dict[tuple[Path, Path], _Arrays] = field(default_factory=dict)

    def feature_files(self, train: Path, test: Path) -> _Arrays:
        """``(X, y, X_test, y_test)`` of a pair of feature files, read on first use; sparse
        features as scipy CSR matrices (never dense)."""
        if (train, test) not in self.files:
            pair = (load_features(train, sparse=True), load_features(test, sparse=True))
            self.files[train, test] = (*pair[0], *pair[1])
        return self.files[train, test]

    @property
    def n_rows(self) -> int:
        """Rows of a text representation's features: one per line of a SentEval file, else
        one per word of :attr:`words`."""
        if self.senteval is not None:
            return self.senteval.n_sentences
        return sum(len(words) for words in self.words)

    @cached_property
    def words(self) -> list[list[str]]:
        """The words to encode, sentence after sentence (an edge-probing task's training
        sentences, then its test sentences)."""
        if self.edges is not None:
            return [list(s.tokens) for split in self.edges for s in split.sentences]
        return [list(words) for words in self.treebank.sentences]

    @cached_property
    def labels_digest(self) -> str:
        """A hash of the words and their annotation (what the labels are made of): a
        treebank's, every split file's of an official split (the split and the label
        vocabulary), an edge-probing task's sentences and targets, or a SentEval file's lines."""
        if self.senteval is not None:
            return self.senteval.digest
        content: list[Any]
        if self.edges is not None:
            content = [
                [s.tokens, [[t.span1, t.span2, t.labels] for t in s.targets]]
                for split in self.edges
                for s in split.sentences
            ]
        elif self.splits is not None:
            columns = ("sentences", "upos", "heads", "deprels", "xpos", "feats")
            content = [
                [name, *(getattr(split, column) for column in columns)]
                for name, split in self.splits.splits.items()
            ]
        else:
            treebank = self.treebank
            content = [treebank.sentences, treebank.upos, treebank.heads, treebank.deprels]
        text = json.dumps(content, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _task_inputs(task: Task, random_state: int) -> _TaskInputs:
    """The task's inputs (views), and whether to standardise features made of them."""
    options = task.options
    if task.dataset == "digits":
        from sklearn.datasets import load_digits

        from probemeter.datasets.digits import digits_split

        images, labels = load_digits(return_X_y=True)
        train, test = digits_split(options["n_test"], random_state)
        pixels = (images[train], labels[train], images[test], labels[test])
        return _TaskInputs({"pixels": pixels}, task=task)
    if task.dataset == "fashion-mnist":
        from probemeter.datasets.idx import fashion_mnist, fashion_mnist_heldout

        data = fashion_mnist(
            options["root"],
            n_train=options["n_train"],
            n_test=options["n_test"],
            standardize=False,
            random_state=random_state,
        )

        def heldout(n_fit: int) -> tuple[np.ndarray, np.ndarray]:
            images, labels = fashion_mnist_heldout(
                options["root"],
                n_train=options["n_train"],
                n_heldout=n_fit,
                random_state=random_state,
            )
            return images.reshape(n_fit, -1).astype(np.float32) / np.float32(255.0), labels

        return _TaskInputs({"pixels": _arrays(data)}, task=task, heldout=heldout)
    if task.dataset == "ptb":
        from probemeter.datasets.conll import annotate_text, ptb_sentences

        sentences = ptb_sentences(options["n_sentences"], options["split"])
        return _TaskInputs({}, task=task, treebank=annotate_text(sentences))
    if task.dataset == "edge-probing":
        edges = (read_edge_probing(options["train"]), read_edge_probing(options["test"]))
        return _TaskInputs({}, task=task, edges=edges)
    if task.dataset == "conllu":
        return _treebank_split_inputs(task)
    if task.dataset == "senteval":
        from probemeter.datasets.senteval import read_senteval

        senteval = read_senteval(options["path"], options["task"], labels=options["labels"])
        return _TaskInputs({}, task=task, senteval=senteval)
    from probemeter.datasets.parity import parity_representations

    views = parity_representations(**options, random_state=random_state)
    arrays = {name: _arrays(data) for name, data in views.items()}
    return _TaskInputs(arrays, standardize=False, task=task)


def _treebank_split_inputs(task: Task) -> _TaskInputs:
    """A ``conllu`` task's official split, its labels checked on every file; labels of dev
    or test that train never has are reported (a warning), not renumbered."""
    from probemeter.datasets.treebank_splits import read_treebank_splits

    options = task.options
    splits = read_treebank_splits(options["train"], options["test"], options["dev"])
    label = options["label"]
    if label != ARC_HEADS:  # heads are no vocabulary: every file has the HEAD column
        vocabulary = splits.vocabulary(label)  # a column the files lack: an error, before encoding
        if label.startswith("feats:") and vocabulary == (NO_FEATURE,):
            raise ValueError(_feature_nowhere(splits, label))
    unseen = None if label == ARC_HEADS else splits.describe_unseen(label)
    if unseen:
        warnings.warn(f"task.label: {unseen}", UserWarning, stacklevel=2)
    if splits.silver:
        warnings.warn(
            f"task: {splits.train.source!r} is silver (a parser's output, not gold): scores "
            "measure agreement with that parser",
            UserWarning,
            stacklevel=2,
        )
    return _TaskInputs({}, task=task, treebank=splits.combined, splits=splits)


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
    shown = listed(carried, 12)
    return (
        f"label {label!r}: no word of {files} carries the feature {name!r} (every word would "
        f"be {NO_FEATURE!r}, one class); their FEATS carry {shown or 'no feature'}"
    )


def _arrays(data: ProbeData) -> _Arrays:
    return data.X_train, data.y_train, data.X_test, data.y_test


def _representation(
    rep: Representation, inputs: _TaskInputs, build: _Build, *, standardize: bool = True
) -> ProbeData:
    """Build one representation: read its files, encode the task's words, or transform a
    task input (projections fitted on the training pool only, VAE/CNN on held-out images).
    ``standardize=False`` leaves an ``npz`` entry's features as read (the check validates
    them without the standardised copy)."""
    if rep.kind == "npz":
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
    if rep.kind in WORD_KINDS:
        return _word_representation(rep, inputs, build)
    X, y, X_test, y_test = inputs.arrays[rep.view]
    if rep.kind in ("pca", "random-projection"):
        X, X_test = project(rep.kind, rep.n_components, X, X_test, build.random_state)
    elif rep.kind in ("vae", "cnn"):
        key = {
            "kind": rep.kind,
            "task": _task_dict(inputs.task),
            "n_components": rep.n_components,
            **rep.options,
            "random_state": build.random_state,
        }
        features = _cached(build.cache, key, lambda: _fitted_features(rep, inputs, build))
        X, X_test = features[: len(X)], features[len(X) :]
    return ProbeData.from_arrays(
        X, y, X_test, y_test, standardize=inputs.standardize, name=rep.name
    )


def _cached(
    cache: FeatureCache | None, key: dict[str, Any], compute: Callable[[], np.ndarray]
) -> np.ndarray:
    """``compute()``, through ``cache`` when there is one (``key`` names the features)."""
    if cache is None:
        return compute()
    return cache.features(key, "experiment-representation", lambda _: compute())


def _fitted_features(rep: Representation, inputs: _TaskInputs, build: _Build) -> np.ndarray:
    """Train the VAE or CNN on ``n_fit`` held-out images; features of pool then test rows."""
    from probemeter.encoders.image_models import train_cnn, train_vae

    images, labels = inputs.heldout(rep.options["n_fit"])
    settings = {
        "epochs": rep.options["epochs"],
        "scale": 1.0,
        "random_state": build.random_state,
        "device": build.device,
        "progress": build.progress,
    }
    if rep.kind == "vae":
        encoder = train_vae(images, rep.n_components, **settings)
    else:
        encoder = train_cnn(images, labels, **settings)
    X, _, X_test, _ = inputs.arrays[rep.view]
    return encoder.encode(np.concatenate([X, X_test]))


def _word_representation(rep: Representation, inputs: _TaskInputs, build: _Build) -> ProbeData:
    """Encode the task's text: words (one row per word) split by sentence (a treebank), or
    pooled into the spans of an edge-probing task's targets (its own split); or SentEval's
    sentences (one row per sentence, the file's own split)."""
    senteval = inputs.senteval
    sentences: list[Any] = list(senteval.sentences) if senteval is not None else inputs.words
    if rep.kind == "transformer":
        model, random_init = rep.options["model"], rep.options["random_init"]
        dtype, batch_size = rep.options["dtype"], rep.options["batch_size"]
        word_pooling = rep.options["word_pooling"]
        pooling = rep.options.get("pooling") or "words"
        group = (model, random_init, dtype, word_pooling, pooling)
        if group not in inputs.layers:
            encoder = _transformer(
                model, random_init, dtype, word_pooling, batch_size, build, pooling
            )
            inputs.layers[group] = (
                {**encoder.cache_key, "layer": "all"},
                _layer_features(encoder, sentences, build.cache),
            )
        encoder_key, layers = inputs.layers[group]
        chosen = rep.options["layer"]  # a hidden state, or a list of them side by side
        for layer in chosen if isinstance(chosen, list) else [chosen]:
            if layer >= len(layers):
                raise ValueError(
                    f"layer {layer} does not exist: the model has {len(layers)} hidden states "
                    f"(0..{len(layers) - 1})"
                )
        features_key = {**encoder_key, "layer": chosen}
        if isinstance(chosen, list):
            features = np.concatenate([layers[layer] for layer in chosen], axis=1)
        else:
            features = layers[chosen]
    elif senteval is not None:  # glove (spacy is refused by the file's checks)
        glove = glove_6b_50d()
        features_key = {**glove.cache_key, "pooling": "mean"}
        words = [sentence.split() for sentence in sentences]
        features = _cached(
            build.cache, {**features_key, "sentences": words}, lambda: glove.sentence_means(words)
        )
    else:
        encoder = (
            glove_6b_50d() if rep.kind == "glove" else SpacyTokenVectors(progress=build.progress)
        )
        features_key = encoder.cache_key
        features = _cached(
            build.cache, {**features_key, "sentences": sentences}, lambda: encoder.encode(sentences)
        )

    def split() -> ProbeData:
        return _text_task_data(inputs, features, rep.name, build)

    if build.cache is None:
        return replace(split(), mix_layers=_mix_layers(rep))
    key = {
        "features": features_key,
        "treebank": inputs.labels_digest,
        "task": _task_dict(inputs.task),
        "random_state": build.random_state,
        # data laid out before rows recorded their sentences (ProbeData.clusters_*) are
        # rebuilt: paired tests and development splits need them
        "layout": 2,
    }
    if build.trees:  # only then: the keys of other data stay as before, so they stay valid
        key["trees"] = _tree_arguments(True)
    data = build.cache.probe_data(key, split)  # the same arrays for "concat" and "scalar-mix"
    return replace(data, name=rep.name, mix_layers=_mix_layers(rep))


def _text_task_data(
    inputs: _TaskInputs, features: np.ndarray, name: str, build: _Build
) -> ProbeData:
    """A text task's data from features of its words (one row per word of
    :attr:`_TaskInputs.words`) or of its sentences (SentEval: one row per line): its split,
    labels and their checks (the task's own split, or a seeded split by sentence), which do not
    depend on the features. The run calls it with a representation's features; the check with
    one column of zeros (:func:`check_data`)."""
    options = inputs.task.options
    if inputs.senteval is not None:
        return inputs.senteval.probe_data(features, name=name)
    if inputs.edges is not None:
        return _edge_data(inputs.edges, inputs.words, features, options, name)
    if inputs.splits is not None:  # the official split
        return _official_split(inputs.splits, features, options["label"], name, build.trees)
    if options["label"] == ARC_HEADS:
        test = sentence_test_mask(inputs.treebank, float(options["test_size"]), build.random_state)
        return head_probe_data(
            inputs.treebank, features, test, name=name, **_tree_arguments(build.trees)
        )
    return probe_data(
        inputs.treebank,
        features,
        options["label"],
        test_size=float(options["test_size"]),
        random_state=build.random_state,
        name=name,
    )


def _edge_data(
    edges: tuple[EdgeProbingSet, EdgeProbingSet],
    sentences: list[list[str]],
    features: np.ndarray,
    options: dict[str, Any],
    name: str,
) -> ProbeData:
    """An edge-probing task's data: the word features (one row per word of ``sentences``, the
    training sentences first) pooled into each target's spans."""
    ends = np.cumsum([len(words) for words in sentences])
    per_sentence = np.split(features, ends[:-1])
    n_train = len(edges[0].sentences)
    return edge_probe_data(
        *edges,
        per_sentence[:n_train],
        per_sentence[n_train:],
        options["pooling"],
        name=name,
        max_tokens=options["max_tokens"],
        multilabel=options["multilabel"],
        labels=options["labels"],
    )


def _official_split(
    splits: TreebankSplits, features: np.ndarray, label: str, name: str, trees: bool
) -> ProbeData:
    """A ``conllu`` task's data: train is the pool, test the test set; word labels one row
    per word, ``deprel-arcs`` one row per non-root arc, ``[h_dependent; h_head]`` (the arc
    labelling data of :func:`~probemeter.datasets.arcs.arc_label_data`, grouped by dependent
    type, its classes the non-root relations), ``arcs`` one row per word labelled with its head
    (:func:`head_probe_data`; for a method that reads ``trees``, as :func:`_tree_arguments`
    says)."""
    if label == ARC_HEADS:
        return head_probe_data(
            splits.combined, features, splits.test_mask, name=name, **_tree_arguments(trees)
        )
    return splits.probe_data(features, label, name=name)


def _tree_arguments(trees: bool) -> dict[str, Any]:
    """How :func:`head_probe_data` lays out head selection: for the pareto method's parser,
    word types as groups (its control task) and standardised features; for a method that
    reads ``trees`` (structural probes), tag ids as groups — PTB XPOS where the treebank has
    them, else UPOS: punctuation is left out of UUAS by Hewitt & Manning's tags — and the
    model's features as they are, as Hewitt & Manning probe them (§3: the depth probe's
    ‖Bᵀh‖² measures from the origin of the model's space, which centring would move to the
    mean word)."""
    if trees:
        return {"groups": "tags", "standardize": False}
    return {"groups": "types", "standardize": True}


def _mix_layers(rep: Representation) -> tuple[int, ...] | None:
    """The layers a representation's probes mix (``combine = "scalar-mix"``), or None."""
    if rep.options.get("combine") != "scalar-mix":
        return None
    return tuple(rep.options["layer"])


def _layer_features(
    encoder: TransformerEncoder, sentences: list[list[str]], cache: FeatureCache | None
) -> list[np.ndarray]:
    """Every hidden state's word features from one forward pass per batch: per-layer files of
    the cache, memory-mapped (written batch by batch, so encoding holds one batch, not all
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


def _transformer(
    model: str,
    random_init: bool,
    dtype: str,
    word_pooling: str,
    batch_size: int,
    build: _Build,
    pooling: str = "words",
) -> TransformerEncoder:
    """The encoder of a ``transformer`` representation: ``model`` is ``"minilm"``, a local
    folder's absolute path or a Hugging Face Hub id (as the file reader left it); ``pooling``
    ``"words"`` (ptb) or a sentence pooling (senteval)."""
    source = (
        minilm_path() if model == "minilm" else Path(model) if Path(model).is_absolute() else model
    )
    return TransformerEncoder(
        source,
        0,
        pooling=pooling,
        batch_size=batch_size,
        device=build.device,
        dtype=dtype,
        random_init=random_init,
        random_state=build.random_state,
        progress=build.progress,
        word_pooling=word_pooling,
    )
