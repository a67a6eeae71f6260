"""Running an experiment file (:mod:`probemeter.experiment`) into a run folder.

Each representation's loss-data curve is one unit of :func:`probemeter.store.run_units`, keyed
by everything that determines it (representation config, data fingerprint, task, probe,
training settings, sizes, seeds, random state), so an interrupted run resumes and skips the
finished curves. The run folder then holds::

    RUN_DIR/experiment.toml   a copy of the experiment file
    RUN_DIR/units/<key>.json  one finished curve per representation (ResultStore)
    RUN_DIR/results.json      curves, comparison, parsed experiment, timings (results.py)
    RUN_DIR/curves.png        loss and accuracy curves
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from probemeter.comparison import Comparison, compare
from probemeter.curve import LossDataCurve, default_sizes, loss_data_curve
from probemeter.data import ProbeData, load_features
from probemeter.datasets.projections import project
from probemeter.engine import TrainingConfig
from probemeter.experiment import CurveMethod, Experiment, ExperimentError, Representation, Task
from probemeter.plotting import plot_curves
from probemeter.probes import MLP
from probemeter.results import save_results
from probemeter.store import ResultStore, run_units

__all__ = ["ExperimentRun", "prepare_data", "run_experiment"]

# (X_train, y_train, X_test, y_test) of one input of a task
_Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class ExperimentRun:
    """The outcome of :func:`run_experiment`.

    ``timings`` maps each representation to ``{"key", "seconds", "loaded"}``: its unit key,
    the seconds its curve took to compute (in an earlier run when ``loaded``).
    """

    run_dir: Path
    curves: tuple[LossDataCurve, ...]
    comparison: Comparison
    timings: dict[str, dict[str, Any]]


def run_experiment(
    experiment: Experiment,
    out: str | Path,
    *,
    fresh: bool = False,
    n_jobs: int | None = -1,
    progress: bool = True,
) -> ExperimentRun:
    """Run ``experiment`` into ``out / experiment.run.name``, resuming stored curves.

    All data are loaded and checked before anything is trained. With ``fresh`` the stored
    curves of this experiment are recomputed.

    Raises:
        ExperimentError: a representation's data do not fit the method (e.g. sizes beyond
            the pool of an ``npz`` file), listing every such problem.
    """
    datasets = prepare_data(experiment)
    method, random_state = experiment.method, experiment.run.random_state
    run_dir = Path(out) / experiment.run.name
    run_dir.mkdir(parents=True, exist_ok=True)
    copy = run_dir / "experiment.toml"
    if not (copy.exists() and copy.samefile(experiment.path)):  # rerunning from the copy
        shutil.copyfile(experiment.path, copy)
    units = []
    for rep in experiment.representations:
        data = datasets[rep.name]
        sizes = [int(n) for n in (method.sizes or default_sizes(data.pool_size))]
        spec = {
            "method": method.kind,
            "task": _task_dict(experiment.task),
            "representation": rep.to_dict(),
            "data_fingerprint": data.fingerprint(),
            "probe": MLP(method.probe).to_dict(),
            "training": _training(method).to_dict(),
            "sizes": sizes,
            "seeds": list(range(method.seeds)),
            "random_state": random_state,
        }
        compute = partial(
            _curve, data, method, sizes, random_state, experiment.run.device, n_jobs, progress
        )
        units.append((spec, compute))
    outcomes = run_units(units, ResultStore(run_dir), fresh=fresh, progress=progress)
    curves = tuple(LossDataCurve.from_dict(outcome.result) for outcome in outcomes)
    comparison = compare(curves, method.epsilon, unit=method.unit)
    timings = {
        rep.name: {"key": outcome.key, "seconds": outcome.seconds, "loaded": outcome.loaded}
        for rep, outcome in zip(experiment.representations, outcomes)
    }
    save_results(
        run_dir / "results.json",
        curves,
        comparison,
        experiment=experiment.to_dict(),
        timings=timings,
    )
    plot_curves(curves, method.epsilon if method.unit == "nats" else None, run_dir / "curves.png")
    return ExperimentRun(run_dir, curves, comparison, timings)


def _training(method: CurveMethod) -> TrainingConfig:
    return TrainingConfig(method.steps, method.batch_size, method.lr, method.precision)


def _task_dict(task: Task | None) -> dict[str, Any] | None:
    return None if task is None else {"dataset": task.dataset, **task.options}


def _curve(
    data: ProbeData,
    method: CurveMethod,
    sizes: list[int],
    random_state: int,
    device: str,
    n_jobs: int | None,
    progress: bool,
) -> dict[str, Any]:
    """One unit: the loss-data curve of ``data``, as a JSON dictionary."""
    return loss_data_curve(
        data,
        MLP(method.probe),
        sizes,
        method.seeds,
        steps=method.steps,
        batch_size=method.batch_size,
        lr=method.lr,
        precision=method.precision,
        random_state=random_state,
        device=device,
        n_jobs=n_jobs,
        progress=progress,
    ).to_dict()


def prepare_data(experiment: Experiment) -> dict[str, ProbeData]:
    """Every representation's :class:`ProbeData`, by name, checked against the method.

    Raises:
        ExperimentError: listing each representation whose files cannot be used or whose
            pool is smaller than the largest size asked for.
    """
    random_state = experiment.run.random_state
    inputs, standardize = (
        _task_inputs(experiment.task, random_state) if experiment.task else ({}, True)
    )
    datasets, problems = {}, []
    for index, rep in enumerate(experiment.representations):
        where = f"representations[{index}]"
        try:
            data = _representation(rep, inputs, standardize, random_state)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        sizes = experiment.method.sizes
        if sizes is not None and max(sizes) > data.pool_size:
            problems.append(
                f"method.sizes: {max(sizes)} exceeds the pool of {data.pool_size} examples "
                f"of {where} ({rep.name!r})"
            )
        datasets[rep.name] = data
    if problems:
        raise ExperimentError(experiment.path, problems)
    return datasets


def _task_inputs(task: Task, random_state: int) -> tuple[dict[str, _Arrays], bool]:
    """The task's inputs (views) as arrays, and whether to standardise features made of them."""
    options = task.options
    if task.dataset == "digits":
        from sklearn.datasets import load_digits

        from probemeter.datasets.digits import digits_split

        images, labels = load_digits(return_X_y=True)
        train, test = digits_split(options["n_test"], random_state)
        return {"pixels": (images[train], labels[train], images[test], labels[test])}, True
    if task.dataset == "fashion-mnist":
        from probemeter.datasets.idx import fashion_mnist

        data = fashion_mnist(
            options["root"],
            n_train=options["n_train"],
            n_test=options["n_test"],
            standardize=False,
            random_state=random_state,
        )
        return {"pixels": _arrays(data)}, True
    from probemeter.datasets.parity import parity_representations

    views = parity_representations(**options, random_state=random_state)
    return {name: _arrays(data) for name, data in views.items()}, False


def _arrays(data: ProbeData) -> _Arrays:
    return data.X_train, data.y_train, data.X_test, data.y_test


def _representation(
    rep: Representation, inputs: Mapping[str, _Arrays], standardize: bool, random_state: int
) -> ProbeData:
    """Build one representation: read its files, or transform a task input (fitted on the
    training pool only)."""
    if rep.kind == "npz":
        X, y = load_features(rep.train)
        X_test, y_test = load_features(rep.test)
        return ProbeData.from_arrays(X, y, X_test, y_test, name=rep.name)
    X, y, X_test, y_test = inputs[rep.view]
    if rep.kind != "raw":
        X, X_test = project(rep.kind, rep.n_components, X, X_test, random_state)
    return ProbeData.from_arrays(X, y, X_test, y_test, standardize=standardize, name=rep.name)
