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

import shutil
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from probemeter._device import resolve_device
from probemeter._exports import export_formats, export_frames
from probemeter._figures import FigureOptions
from probemeter._method import RunContext, UnitPlan
from probemeter._validation import check_scalar
from probemeter.curves.comparison import Comparison
from probemeter.curves.curve import LossDataCurve
from probemeter.data import ProbeData
from probemeter.encoders import FeatureCache
from probemeter.runs.config import (
    Experiment,
    ExperimentError,
    layer_sweeps,
    pipeline_warnings,
    save_probes_problem,
)
from probemeter.runs.kinds import KINDS, Build, FileKind, Representation
from probemeter.runs.layers import LayerAnalysis, analyse_layers, write_layer_files
from probemeter.runs.lock import RunLock
from probemeter.runs.store import ResultStore, Unit, run_units
from probemeter.runs.tasks import WORDS, TaskInputs
from probemeter.training.engine import warm_workers
from probemeter.training.shared_memory import share_data
from probemeter.training.workers import worker_count

if TYPE_CHECKING:
    from probemeter.runs.ray_backend import RayOptions

__all__ = ["FEATURE_CACHE", "ExperimentRun", "check_data", "prepare_data", "run_experiment"]

#: folder under ``--out`` caching encoded words and VAE/CNN features, shared by runs
FEATURE_CACHE = ".probemeter-cache"

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
        "task": None if experiment.task is None else experiment.task.key_dict(),
        "representation": reps[name].key_dict(),
        "data_fingerprint": datasets[name].fingerprint(),
        "random_state": experiment.run.random_state,
    }
    for other in baseline:
        spec["baseline"] = reps[other].key_dict()
        spec["baseline_fingerprint"] = datasets[other].fingerprint()
    return {**spec, **plan.spec}


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
    build = Build(
        random_state, cache, experiment.run.device, progress, experiment.method.reads_trees
    )
    datasets, problems = {}, []
    for rep in experiment.representations:
        where = _where(rep)
        try:
            data = KINDS[rep.kind].build(rep, inputs, build)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        for location, message in experiment.method.check_pool(data.pool_size, data.n_classes):
            problems.append(f"{location}: {message} ({_named(rep)})")
        datasets[rep.name] = share_data(data) if shared else data
    if problems:
        raise ExperimentError(experiment.path, problems)
    return datasets


def check_data(experiment: Experiment, *, max_memory: float | None = None) -> None:
    """What a run checks of its data before it trains, without encoding, fitting or training
    anything: ``probemeter run --check``, after
    :func:`~probemeter.runs.config.load_experiment` (which reads files' headers only). The
    checks are the run's own, on the data the run would build:

    * a task whose files the user gives (``conllu``, ``edge-probing``, ``senteval``:
      :attr:`~probemeter.runs.tasks.TaskType.reads_files`) has them read whole by the
      readers the run uses (one pass over each), and its split and labels built as the run
      builds them (:meth:`~probemeter.runs.tasks.TaskText.probe_data`), from one column of
      zeros where a representation
      would give its features (the split and the labels do not depend on them): malformed
      lines, a pool of one class, a ``feats:<Name>`` label no word carries, a tree the
      labels cannot be read from are refused, and the method's sizes and blocks are checked
      against that pool (:meth:`~probemeter._method.Method.check_pool`);
    * each representation read from files (``npz``) is read and validated as the run does
      (features finite, labels class indices unless ``labels = "encode"``, two classes or
      more, sparse arrays consistent; not standardised), then checked against the method's
      sizes and, for the ``curve`` and ``mdl`` methods, against the memory budget of one
      probe, as the engine checks it (:func:`_memory_problem`).

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
    build = Build(
        experiment.run.random_state, None, experiment.run.device, False, method.reads_trees
    )
    task, inputs = experiment.task, TaskInputs(experiment.task)
    if task is not None and task.declared.reads_files:
        try:
            inputs = _read_task(experiment)
        except ExperimentError as error:
            problems.extend(error.problems)
        else:
            if any(KINDS[rep.kind].reads == WORDS for rep in experiment.representations):
                problems.extend(_text_task_problems(inputs, method, build))
    budget = memory_budget(max_memory, resolve_device(experiment.run.device))
    failed = set()  # entries with a problem: the other layers of a sweep are not checked
    for rep in experiment.representations:
        kind = KINDS[rep.kind]
        if not issubclass(kind, FileKind) or rep.entry in failed:
            continue
        where = _where(rep)
        try:
            data = kind.read(rep, inputs, standardize=False)
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


def _read_task(experiment: Experiment) -> TaskInputs:
    """The task's inputs (:meth:`~probemeter.runs.tasks.TaskType.inputs`); a file that cannot
    be read is an :class:`ExperimentError` at ``task`` (its message names the file)."""
    task = experiment.task
    if task is None:
        return TaskInputs()
    try:
        inputs = task.declared.inputs(experiment.run.random_state)
    except ValueError as error:
        raise ExperimentError(experiment.path, [f"task: {error}"]) from None
    return replace(inputs, task=task)


def _text_task_problems(inputs: TaskInputs, method: Any, build: Build) -> list[str]:
    """The problems of a text task's data (built over a stand-in column of zeros, one row per
    word or sentence) and of the method's sizes against its pool."""
    text, dataset = inputs.text, inputs.task.dataset
    stand_in = np.zeros((text.n_rows, 1), dtype=np.float32)
    try:
        data = text.probe_data(
            stand_in, dataset, trees=build.trees, random_state=build.random_state
        )
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


