"""The Ray backend: the units of a run fanned out as Ray tasks over a cluster.

:func:`run_units_on_ray` does what :func:`probemeter.runs.store.run_units` does — load the units
already in the :class:`~probemeter.runs.store.ResultStore`, compute the others, store each one as
soon as it is done — but computes each missing unit as one Ray task:

* each distinct input (a :attr:`Unit.data <probemeter.runs.store.Unit.data>`, e.g. one
  representation's :class:`~probemeter.data.ProbeData`) is ``ray.put`` into the object store
  once and passed to its tasks by reference, so features travel to a node once, not per task,
  and numpy arrays are read there without a copy;
* every task reserves :attr:`RayOptions.cpus_per_unit` CPUs and :attr:`RayOptions.gpus_per_unit`
  GPUs, and trains on that many threads (the runner also gives it that many worker processes);
* Ray re-executes a task whose worker process or node died up to
  :attr:`RayOptions.max_retries` times; an exception raised by the unit's code is not retried;
* the driver writes each result through the same store as it arrives (atomically), so a lost
  task is simply recomputed — by Ray, or by rerunning the command — and a stored unit never is;
* joining a cluster by address, the driver ships its own ``probemeter`` package to the workers
  (Ray's ``runtime_env`` ``py_modules``), so they run the driver's code; the nodes need its
  dependencies (torch, numpy, ...) installed;
* a Ray instance started for the run (``address=None``) dies with the driver, even on
  ``kill -9``: Ray ties its head processes to the driver and its task workers to those, so busy
  task workers exit within about 2 s (measured with Ray 2.60), and the engine's worker processes
  inside a task follow their Ray worker (:func:`probemeter.training.workers.exit_with_parent`).
  Only Ray's dashboard and runtime-env agents (about 85 MB each) linger for about a minute: they
  report the raylet's death to the GCS, which died too, with a timeout of 60 s fixed in Ray.

Scheduling, object transfer and retries are Ray's own; this module only submits the tasks and
stores what comes back. Ray is an optional dependency (``pip install 'probemeter[ray]'``),
imported only when this backend is used.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tqdm.auto import tqdm

from probemeter._validation import is_integer
from probemeter.runs.store import ResultStore, Unit, UnitOutcome, check_result, prepare_units

__all__ = ["RayOptions", "RayUnavailableError", "import_ray", "run_units_on_ray"]


class RayUnavailableError(ImportError, ValueError):
    """The Ray backend was asked for, but Ray is not installed (a ValueError too, so the
    command line reports it as bad input)."""


def import_ray() -> ModuleType:
    """The ``ray`` module.

    Raises:
        RayUnavailableError: Ray is not installed; the message names the ``probemeter[ray]``
            extra.
    """
    try:
        import ray
    except ImportError as error:
        raise RayUnavailableError(
            "backend 'ray' needs Ray, which is not installed: pip install 'probemeter[ray]'"
        ) from error
    return ray


@dataclass(frozen=True)
class RayOptions:
    """Where and how the units run on Ray.

    Args:
        address: the cluster to join: ``"auto"`` (the one started on this machine by
            ``ray start``), ``"HOST:PORT"`` (its GCS address) or ``"ray://HOST:10001"`` (Ray
            Client). None: a new Ray instance on this machine for this run only (Ray's
            ``address="local"``, with all its cores). If this process already called
            ``ray.init``, that connection is used.
        cpus_per_unit: CPUs each task reserves; the unit trains with that many threads and
            worker processes (results equal the local backend's with ``n_jobs=cpus_per_unit``).
        gpus_per_unit: GPUs each task reserves (fractions share a GPU); with a GPU, the
            experiment's ``device = "auto"`` trains on it.
        max_retries: how many times Ray re-executes a task whose worker or node died.
    """

    address: str | None = None
    cpus_per_unit: int = 1
    gpus_per_unit: float = 0.0
    max_retries: int = 3

    def __post_init__(self) -> None:
        if self.address is not None and (not isinstance(self.address, str) or not self.address):
            raise ValueError(f"address must be 'auto', 'HOST:PORT' or None; got {self.address!r}")
        if not is_integer(self.cpus_per_unit) or self.cpus_per_unit < 1:
            raise ValueError(
                f"cpus_per_unit must be a positive integer; got {self.cpus_per_unit!r}"
            )
        gpus = self.gpus_per_unit
        if isinstance(gpus, bool) or not isinstance(gpus, (int, float)) or not math.isfinite(gpus):
            raise ValueError(f"gpus_per_unit must be a number >= 0; got {gpus!r}")
        if gpus < 0:
            raise ValueError(f"gpus_per_unit must be a number >= 0; got {gpus!r}")
        if not is_integer(self.max_retries) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0; got {self.max_retries!r}")
        object.__setattr__(self, "cpus_per_unit", int(self.cpus_per_unit))
        object.__setattr__(self, "max_retries", int(self.max_retries))


def run_units_on_ray(
    units: Sequence[Unit],
    store: ResultStore,
    options: RayOptions | None = None,
    *,
    fresh: bool = False,
    progress: bool = True,
    probes: bool = False,
) -> list[UnitOutcome]:
    """Run ``units`` as Ray tasks, resuming from ``store``; outcomes in the order of ``units``.

    Stored units are loaded without contacting Ray at all; the others are submitted at once
    and stored as they finish. With ``probes`` (``save_probes``), a stored unit without its
    probes file is computed again, and each task's probes come back with its result (the
    driver writes them, :meth:`ResultStore.save`). When a unit fails for good (its code
    raised, or its worker died more than ``max_retries`` times), the remaining units are still
    awaited and stored, then the first failure is raised: rerunning computes only what is
    missing.

    Raises:
        ValueError: as :func:`probemeter.runs.store.run_units`.
        RayUnavailableError: a unit must be computed and Ray is not installed.
    """
    options = RayOptions() if options is None else options
    keys = prepare_units([unit.spec for unit in units], store, fresh=fresh)
    outcomes: list[UnitOutcome | None] = [None] * len(units)
    for index, key in enumerate(keys):
        if store.has(key, probes):
            outcomes[index] = UnitOutcome.from_record(store.load(key), loaded=True)
    todo = [index for index, outcome in enumerate(outcomes) if outcome is None]
    loaded = len(units) - len(todo)
    bar = tqdm(total=len(units), initial=loaded, desc="units", unit="unit", disable=not progress)
    with bar:
        if todo:
            ray = import_ray()
            with _connected(ray, options.address):
                _compute(ray, units, keys, todo, store, options, outcomes, bar, probes)
    return outcomes


@contextmanager
def _connected(ray: ModuleType, address: str | None) -> Iterator[None]:
    """Connect to Ray for the duration (unless this process is connected already)."""
    if ray.is_initialized():
        yield
        return
    settings: dict[str, Any] = {"address": address or "local", "logging_level": "WARNING"}
    if address is None:  # a throw-away local instance (never a stale one found on disk)
        settings["include_dashboard"] = False
    else:  # the cluster's workers run this very probemeter (same code: same results)
        import probemeter

        settings["runtime_env"] = {"py_modules": [probemeter]}
    ray.init(**settings)
    try:
        yield
    finally:
        ray.shutdown()


def _compute(
    ray: ModuleType,
    units: Sequence[Unit],
    keys: list[str],
    todo: list[int],
    store: ResultStore,
    options: RayOptions,
    outcomes: list[UnitOutcome | None],
    bar: tqdm,
    probes: bool = False,
) -> None:
    """Submit units ``todo``, then store each result as it arrives (filling ``outcomes``);
    with ``probes``, each result must hold its probes."""
    task = ray.remote(run_unit).options(
        num_cpus=options.cpus_per_unit,
        num_gpus=options.gpus_per_unit,
        max_retries=options.max_retries,
    )
    shipped: dict[int, Any] = {}  # id(data) -> its ObjectRef: each input is put once
    pending = {}
    for index in todo:
        unit = units[index]
        if id(unit.data) not in shipped:
            shipped[id(unit.data)] = ray.put(unit.data)
        ref = task.remote(unit.function, shipped[id(unit.data)], dict(unit.options), options)
        pending[ref] = index
    failures: list[Exception] = []
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        index = pending.pop(ready[0])
        key = keys[index]
        try:
            result, seconds = ray.get(ready[0])
            checked = check_result(key, result, probes)
            record = store.save(key, units[index].spec, checked, seconds)
        except (ray.exceptions.RayError, ValueError) as error:
            failures.append(error)
            continue
        outcomes[index] = UnitOutcome.from_record(record, loaded=False)
        computed = sum(outcome is not None and not outcome.loaded for outcome in outcomes)
        bar.set_postfix(computed=computed, failed=len(failures))
        bar.update()
    if failures:
        raise failures[0]


def run_unit(
    function: Callable[..., Mapping[str, Any]],
    data: Any,
    options: Mapping[str, Any],
    resources: RayOptions,
) -> tuple[Mapping[str, Any], float]:
    """The body of one Ray task: ``function(data, **options)`` on ``resources.cpus_per_unit``
    torch threads, and the seconds it took."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(resources.cpus_per_unit)
    try:
        started = time.perf_counter()
        result = function(data, **options)
        return result, time.perf_counter() - started
    finally:
        torch.set_num_threads(threads)
