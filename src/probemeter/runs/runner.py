"""Running an experiment file (:mod:`probemeter.runs.config`) into a run folder.

The method splits the run into units (:meth:`~probemeter._method.Method.units`: one per
representation, for ``power`` one per pair with the baseline), each one unit of
:func:`probemeter.runs.store.run_units`, keyed by everything that determines it (representation
config, data fingerprint, task, the method's settings, random state), so an interrupted run
resumes and skips the finished units. The method then writes the run folder from their results
(:meth:`~probemeter._method.Method.finish`), which holds::

    RUN_DIR/experiment.toml   a copy of the experiment file
    RUN_DIR/units/<key>.json  one finished unit (ResultStore)
    RUN_DIR/units/<key>.probes.safetensors   with save_probes: that unit's trained probes
    RUN_DIR/results.json      the method's results (its schema is the method's)
    RUN_DIR/<figure>.png      the method's figure (and its other formats)
    RUN_DIR/table.md, .tex    the method's table
    RUN_DIR/run.json          method, figures, parsed experiment, timings (write_run_files)
    RUN_DIR/layers.*          with a layer sweep: table, figure and verdicts (runs.layers)
    RUN_DIR/run.lock          while a run is going: its PID, host and start (runs.lock)

Costly features (encoded words, VAE/CNN features) are cached in ``OUT/.probemeter-cache``: a
transformer's layers one file per layer, written batch by batch (encoding holds one batch, not
every layer), and each word representation's split and standardised data saved there too and
read back memory-mapped, so a layer sweep keeps no layer in memory but the pages the probes
being trained read.
The units run in this process, or as Ray tasks on a cluster (:mod:`probemeter.runs.ray_backend`),
with the same results, bit for bit, when a Ray task trains with as many worker processes as
the local run (``n_jobs`` = ``cpus_per_unit``): per-probe random streams make a unit
independent of where it runs, and the worker count sets how the probe axis is chunked.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probemeter._device import resolve_device
from probemeter._exports import export_formats, export_frames
from probemeter._figures import FigureOptions
from probemeter._method import RunContext, UnitPlan
from probemeter._validation import check_scalar
from probemeter.data import ProbeData
from probemeter.encoders import FeatureCache
from probemeter.runs.conditional import (
    analyse_conditional,
    conditional_data,
    conditional_name,
    conditional_representation,
    write_conditional_files,
)
from probemeter.runs.config import (
    Experiment,
    ExperimentError,
    layer_sweeps,
    pipeline_warnings,
    save_probes_problem,
    site_sweeps,
)
from probemeter.runs.directions import build_data
from probemeter.runs.kinds import Build, Representation
from probemeter.runs.kinds.surface import surface_floor_names
from probemeter.runs.layers import LayerAnalysis, analyse_layers, write_layer_files
from probemeter.runs.lock import RunLock
from probemeter.runs.shift import analyse_shift, write_shift_files
from probemeter.runs.store import ResultStore, Unit, run_units
from probemeter.runs.tasks import TaskInputs
from probemeter.training.engine import warm_workers
from probemeter.training.shared_memory import share_data
from probemeter.training.workers import worker_count

if TYPE_CHECKING:
    from probemeter.runs.ray_backend import RayOptions

__all__ = ["FEATURE_CACHE", "ExperimentRun", "prepare_data", "run_experiment", "task_inputs"]

#: folder under ``--out`` caching encoded words and VAE/CNN features, shared by runs
FEATURE_CACHE = ".probemeter-cache"


@dataclass(frozen=True)
class ExperimentRun:
    """The outcome of :func:`run_experiment`.

    ``timings`` maps each unit (a representation; for ``power`` a pair) to ``{"key",
    "seconds", "loaded"}``: its unit key, the seconds it took to compute (in an earlier run
    when ``loaded``). ``table`` is the method's printable result table (followed by the layer
    table and verdicts of a layer sweep); ``results`` the units' JSON results, in the order of
    ``timings``, as the method's ``finish`` and ``summaries`` read them; ``layers`` is set for
    runs with a layer sweep (:mod:`probemeter.runs.layers`).
    """

    run_dir: Path
    kind: str
    table: str
    timings: dict[str, dict[str, Any]]
    files: tuple[Path, ...]
    results: tuple[Mapping[str, Any], ...] = ()
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
    """Run ``experiment`` into ``out / experiment.run.name``, resuming stored units.

    All data are loaded and checked before anything is trained. With ``fresh`` the stored
    units of this experiment are recomputed.

    The run folder is locked (:class:`~probemeter.runs.lock.RunLock`, the file
    ``RUN_DIR/run.lock``) from before the data are loaded until the results are written, also
    when the run fails or is interrupted: a second run into the same folder fails at once, and
    a lock left by a killed run is taken over with a
    :class:`~probemeter.runs.lock.StaleLockWarning`. ``probemeter run --check`` does not call
    this function and takes no lock.

    Args:
        n_jobs: CPU worker processes per unit in this process (``-1``: one per usable CPU). On Ray
            each unit trains with ``ray.cpus_per_unit`` worker processes instead.
        max_memory: GiB budget of one chunk of stacked probes, per worker process (None: sized
            to the device, see :func:`~probemeter.training.memory.memory_budget`).
        ray: run the units as Ray tasks with these options; None: in this process.
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
        baseline = experiment.run.baseline
        beyond = [name for name in reps if baseline is not None and name != baseline]
        for name in beyond:  # each beside the baseline: prepare_data made their data
            reps[conditional_name(name, baseline)] = conditional_representation(
                reps[name], reps[baseline]
            )
        named = {name: replace(datasets[name], name=name) for name in reps}
        plans = method.units(named, context)
        units = [
            Unit(_spec(experiment, plan, reps, named), plan.function, plan.payload, plan.options)
            for plan in plans
        ]
        store = ResultStore(run_dir)
        if ray is None:
            pairs = [(unit.spec, unit.compute) for unit in units]
            outcomes = run_units(
                pairs, store, fresh=fresh, progress=progress, probes=save_probes,
                together=lambda pending: method.compute_together([plans[i] for i in pending]),
            )  # fmt: skip
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
            floors = surface_floor_names(experiment.representations)
            sites = site_sweeps(experiment.representations)
            layers = analyse_layers(
                method, results, sweeps, random_state=random_state, floors=floors, sites=sites
            )
            written = write_layer_files(layers, run_dir, figures)
            written += export_frames({"layers": layers.to_frame()}, run_dir, formats)
            table = f"{finished.table}\n\n{layers}"
            finished = replace(finished, table=table, files=(*finished.files, *written))
        if method.evaluates_shifted and any(data.shifted for data in named.values()):
            shift = _shift_analysis(results, random_state)
            if shift is not None:
                written = write_shift_files(shift, run_dir)
                table = f"{finished.table}\n\n{shift}"
                finished = replace(finished, table=table, files=(*finished.files, *written))
        if beyond:
            others = {s: [(i, n) for i, n in pairs if n != baseline] for s, pairs in sweeps.items()}
            conditional = analyse_conditional(method, results, baseline, beyond, others)
            written = write_conditional_files(conditional, run_dir, figures)
            written += export_frames({"conditional": conditional.to_frame()}, run_dir, formats)
            table = f"{finished.table}\n\n{conditional}"
            finished = replace(finished, table=table, files=(*finished.files, *written))
    return ExperimentRun(
        run_dir,
        method.kind,
        finished.table,
        timings,
        finished.files,
        results=tuple(results),
        layers=layers,
    )


def _shift_analysis(results: list[Mapping[str, Any]], random_state: int) -> Any:
    """The shift analysis (:func:`~probemeter.runs.shift.analyse_shift`) of curve results."""
    from probemeter.curves.curve import LossDataCurve

    curves = [LossDataCurve.from_dict(dict(result)) for result in results]
    return analyse_shift(curves, random_state=random_state)


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
    inputs = task_inputs(experiment)
    cache = None if cache_dir is None else FeatureCache(cache_dir)
    method = experiment.method
    # sparse features (surface floors) densified for a method, or kept probes, that read
    # dense ones only
    dense = bool(method.sparse_problems()) or experiment.run.save_probes
    build = Build(random_state, cache, experiment.run.device, progress, method.reads_trees, dense)
    datasets, problems = {}, []
    for rep in experiment.representations:
        where = rep.location
        try:
            data = build_data(rep, inputs, build, datasets)
        except ValueError as error:
            # once: the representations of one entry (an SAE's latents and its dense site)
            # share what fails of what they read
            if f"{where}: {error}" not in problems:
                problems.append(f"{where}: {error}")
            continue
        for location, message in experiment.method.check_pool(data.pool_size, data.n_classes):
            problems.append(f"{location}: {message} ({rep.described})")
        datasets[rep.name] = share_data(data) if shared else data
    baseline = experiment.run.baseline
    if baseline is not None and not problems:  # each representation beside the baseline
        for name in [name for name in datasets if name != baseline]:
            pair = conditional_name(name, baseline)
            try:
                data = conditional_data(datasets[baseline], datasets[name], pair)
            except ValueError as error:
                problems.append(f"run.baseline: {error}")
                continue
            datasets[pair] = share_data(data) if shared else data
    if problems:
        raise ExperimentError(experiment.path, problems)
    return datasets


def task_inputs(experiment: Experiment) -> TaskInputs:
    """The task's inputs (:meth:`~probemeter.runs.tasks.TaskType.inputs`) with the run's
    representations; a file that cannot be read is an :class:`ExperimentError` at ``task``
    (its message names the file)."""
    task = experiment.task
    if task is None:
        return TaskInputs()
    try:
        inputs = task.declared.inputs(experiment.run.random_state)
    except ValueError as error:
        raise ExperimentError(experiment.path, [f"task: {error}"]) from None
    return replace(inputs, task=task, representations=tuple(experiment.representations))
