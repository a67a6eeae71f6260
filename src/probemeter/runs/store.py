"""Results on disk, one file per finished unit of work, so an interrupted run resumes.

A *unit* is one piece of an experiment whose result is a plain JSON dictionary — e.g. the
loss-data curve of one representation
(:meth:`~probemeter.curves.curve.LossDataCurve.to_dict`). It is named by
:func:`unit_key`, a hash of everything that determines its result, and stored by
:class:`ResultStore` as ``<run_dir>/units/<key>.json``, written atomically. :func:`run_units`
loads the units already stored and computes (and immediately stores) the others, so killing a
run loses at most the units in progress.

With ``save_probes``, a unit's result also holds its trained probes under
:data:`~probemeter._method.PROBES_ENTRY` (a :class:`~probemeter.probes.ProbeSet`, which travels
back from a Ray task like the rest of the result); the store writes them to
``<run_dir>/units/<key>.probes.safetensors`` before the unit's JSON, so a stored unit implies
its probes file, and :func:`run_units` recomputes a stored unit that lacks one. The probes are
not in the unit's key: a unit stored without them stays valid for runs that keep none.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from probemeter._io import environment, write_json_atomic
from probemeter._method import PROBES_ENTRY
from probemeter.probes.saved import ProbeSet, load_probes

__all__ = [
    "PROBES_SUFFIX",
    "RECORD_FIELDS",
    "ResultStore",
    "Unit",
    "UnitOutcome",
    "check_result",
    "prepare_units",
    "run_units",
    "unit_key",
]

#: the fields of a stored unit's JSON file
RECORD_FIELDS = ("key", "spec", "result", "created", "seconds", "versions")

#: the suffix of a unit's probes file, beside its JSON: ``<key>.probes.safetensors``
PROBES_SUFFIX = ".probes.safetensors"

_KEY_PATTERN = re.compile(r"[0-9a-f]{64}")


def unit_key(spec: Mapping[str, Any]) -> str:
    """The sha256 (hex) of ``spec`` as canonical JSON (sorted keys, no whitespace).

    ``spec`` must hold *everything that changes the unit's result*, so that equal keys mean
    interchangeable results: what the features are (``representation`` name and
    ``data_fingerprint`` — :meth:`ProbeData.fingerprint` — of the exact arrays, including how
    they were split and standardised), the ``task`` (labels, control task), the ``method``
    (e.g. ``"curve"``), the ``probe`` (:meth:`MLP.to_dict`), the ``training`` config
    (:meth:`TrainingConfig.to_dict`, which holds the stopping rule), the ``sizes`` and
    ``seeds``, and the ``random_state``. Leave out what does not change the result (device,
    ``n_jobs``, progress bars): results do not depend on them.

    Values must be JSON values — ``None``, booleans, integers, finite floats, strings, and
    lists, tuples or string-keyed mappings of them; a tuple hashes like the equal list.

    Raises:
        ValueError: ``spec`` is not a mapping, or holds a value (named by its path, e.g.
            ``spec['sizes'][2]``) that is not JSON-serialisable, such as a numpy integer.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(f"spec must be a mapping; got {type(spec).__name__}")
    _check_json(spec, "spec")
    return hashlib.sha256(_canonical_json(spec).encode()).hexdigest()


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _check_json(value: Any, where: str) -> None:
    """Raise a ValueError naming ``where`` if ``value`` is not a plain JSON value."""
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}; only finite numbers are JSON values")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]")
        return
    if isinstance(value, Mapping):
        for name, item in value.items():
            if not isinstance(name, str):
                raise ValueError(f"{where} has the non-string key {name!r}; JSON keys are strings")
            _check_json(item, f"{where}[{name!r}]")
        return
    raise ValueError(
        f"{where} is a {type(value).__module__}.{type(value).__name__} ({value!r}), which is "
        "not JSON-serialisable; convert it to a plain value (int(), float(), list())"
    )


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not _KEY_PATTERN.fullmatch(key):
        raise ValueError(f"key must be a unit_key (64 lower-case hex digits); got {key!r}")


@dataclass(frozen=True)
class ResultStore:
    """Finished units of one run, as ``<run_dir>/units/<key>.json``.

    Each file holds ``{"key", "spec", "result", "created", "seconds", "versions"}``: the unit's
    key and spec, its JSON result, when it was stored (ISO 8601, UTC), how long it took to
    compute, and the library versions. Files are written atomically (temporary file, then
    ``os.replace``), so a killed writer leaves either no unit or a complete one, plus possibly
    a stray ``.*.tmp`` file that the store ignores (and :meth:`clear` removes). A unit saved
    with probes has ``<key>.probes.safetensors`` beside its JSON (:meth:`probes_path`),
    written first.
    """

    run_dir: Path

    def __post_init__(self) -> None:
        if not isinstance(self.run_dir, (str, Path)):
            raise ValueError(f"run_dir must be a path; got {self.run_dir!r}")
        object.__setattr__(self, "run_dir", Path(self.run_dir))

    @property
    def units_dir(self) -> Path:
        """The folder holding the unit files."""
        return self.run_dir / "units"

    def path(self, key: str) -> Path:
        """The file of unit ``key`` (which may not exist yet)."""
        _check_key(key)
        return self.units_dir / f"{key}.json"

    def probes_path(self, key: str) -> Path:
        """The probes file of unit ``key`` (which may not exist)."""
        _check_key(key)
        return self.units_dir / f"{key}{PROBES_SUFFIX}"

    def has(self, key: str, probes: bool = False) -> bool:
        """Whether unit ``key`` is stored (with ``probes``: and its probes file too)."""
        return self.path(key).is_file() and (not probes or self.probes_path(key).is_file())

    def keys(self) -> list[str]:
        """The keys of the stored units, sorted; temporary files are not units."""
        if not self.units_dir.is_dir():
            return []
        return sorted(
            path.stem
            for path in self.units_dir.glob("*.json")
            if _KEY_PATTERN.fullmatch(path.stem) and path.is_file()
        )

    def save(
        self, key: str, spec: Mapping[str, Any], result: Mapping[str, Any], seconds: float
    ) -> dict[str, Any]:
        """Store the result of unit ``key`` atomically and return the stored record.

        A :class:`~probemeter.probes.ProbeSet` under :data:`~probemeter._method.PROBES_ENTRY`
        is taken out of ``result`` and written to :meth:`probes_path` first (atomically); a
        result without one removes any probes file left from an earlier computation, so a
        unit's probes file, when there is one, always comes from the result stored with it.

        Raises:
            ValueError: ``key`` is not ``unit_key(spec)``, ``result`` is not a mapping of JSON
                values (besides its probes), the probes entry is not a ProbeSet, or
                ``seconds`` is negative or not a number.
        """
        if unit_key(spec) != key:
            raise ValueError(f"key {key!r} is not unit_key(spec); the spec changed or mismatches")
        if not isinstance(result, Mapping):
            raise ValueError(f"result must be a mapping; got {type(result).__name__}")
        result = dict(result)
        probes = result.pop(PROBES_ENTRY, None)
        if probes is not None and not isinstance(probes, ProbeSet):
            raise ValueError(
                f"result[{PROBES_ENTRY!r}] must be a ProbeSet; got {type(probes).__name__}"
            )
        _check_json(result, "result")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError(f"seconds must be a non-negative number; got {seconds!r}")
        record = {
            "key": key,
            "spec": json.loads(_canonical_json(spec)),
            "result": json.loads(json.dumps(result)),  # as given, tuples as lists
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(float(seconds), 3),
            "versions": environment(),
        }
        if probes is None:
            self.probes_path(key).unlink(missing_ok=True)
        else:
            probes.save(self.probes_path(key))
        write_json_atomic(self.path(key), record)
        return record

    def load(self, key: str) -> dict[str, Any]:
        """The stored record of unit ``key`` (fields :data:`RECORD_FIELDS`).

        Raises:
            ValueError: the unit is not stored, or its file is not valid JSON or not a unit
                record of ``key`` (discard it, or rerun with ``fresh=True``).
        """
        path = self.path(key)
        if not path.is_file():
            raise ValueError(f"unit {key} is not stored ({str(path)!r} does not exist)")
        try:
            record = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ValueError(f"unit file {str(path)!r} is corrupt (not JSON: {error})") from None
        if not isinstance(record, dict) or set(record) != set(RECORD_FIELDS):
            raise ValueError(f"unit file {str(path)!r} is corrupt: fields are not {RECORD_FIELDS}")
        if record["key"] != key or not isinstance(record["result"], dict):
            raise ValueError(f"unit file {str(path)!r} is corrupt: not the unit {key}")
        return record

    def load_probes(self, key: str) -> ProbeSet:
        """The probes stored with unit ``key`` (:func:`~probemeter.probes.load_probes`).

        Raises:
            ValueError: the unit has no probes file (it was computed without
                ``save_probes``), or the file is not a readable probes file.
        """
        path = self.probes_path(key)
        if not path.is_file():
            raise ValueError(
                f"unit {key} has no probes ({str(path)!r} does not exist): run it with "
                "save_probes = true"
            )
        return load_probes(path)

    def discard(self, key: str) -> None:
        """Remove unit ``key`` and its probes file, where they are stored."""
        self.path(key).unlink(missing_ok=True)
        self.probes_path(key).unlink(missing_ok=True)

    def clear(self) -> None:
        """Remove every stored unit, every probes file and every temporary file left by a
        killed writer."""
        for key in self.keys():
            self.discard(key)
        if self.units_dir.is_dir():
            for pattern in (".*.tmp", f"*{PROBES_SUFFIX}"):
                for leftover in self.units_dir.glob(pattern):
                    leftover.unlink(missing_ok=True)


@dataclass(frozen=True)
class UnitOutcome:
    """One unit of :func:`run_units`: its key, spec and result, whether the result was loaded
    from the store (``True``) or computed in this run, and the seconds its computation took
    (when it was first computed, for a loaded unit)."""

    key: str
    spec: dict[str, Any]
    result: dict[str, Any]
    loaded: bool
    seconds: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any], loaded: bool) -> UnitOutcome:
        """The outcome of a stored record (:meth:`ResultStore.save` or :meth:`ResultStore.load`)."""
        return cls(record["key"], record["spec"], record["result"], loaded, record["seconds"])


@dataclass(frozen=True)
class Unit:
    """A unit whose large input is kept apart from its code, so that a backend can ship it
    once: its result is ``function(data, **options)``, a JSON mapping.

    The local backend calls :meth:`compute`; the Ray backend (:mod:`probemeter.runs.ray_backend`)
    puts each distinct ``data`` object into the object store once and runs ``function`` on it
    in a task. ``function`` must be importable (a module-level function) to run remotely, and
    ``options`` small (they travel with every task).
    """

    spec: Mapping[str, Any]
    function: Callable[..., Mapping[str, Any]]
    data: Any
    options: Mapping[str, Any] = field(default_factory=dict)

    def compute(self) -> Mapping[str, Any]:
        """The unit's result, computed in this process."""
        return self.function(self.data, **self.options)


def prepare_units(
    specs: Sequence[Mapping[str, Any]], store: ResultStore, *, fresh: bool = False
) -> list[str]:
    """The keys of ``specs``, after checking that they are distinct; with ``fresh``, their
    stored results are discarded first.

    Raises:
        ValueError: a spec is not JSON (see :func:`unit_key`), or two specs are equal.
    """
    keys = [unit_key(spec) for spec in specs]
    first_of: dict[str, int] = {}
    for index, key in enumerate(keys):
        if key in first_of:
            raise ValueError(f"units[{index}] has the same spec as units[{first_of[key]}]")
        first_of[key] = index
    if fresh:
        for key in keys:
            store.discard(key)
    return keys


def check_result(key: str, result: Any, probes: bool = False) -> Mapping[str, Any]:
    """``result`` if it is a mapping (with ``probes``: holding the unit's probes under
    :data:`~probemeter._method.PROBES_ENTRY`), else a ValueError naming unit ``key``."""
    if not isinstance(result, Mapping):
        raise ValueError(
            f"the compute function of unit {key} returned a {type(result).__name__}, not a mapping"
        )
    if probes and PROBES_ENTRY not in result:
        raise ValueError(f"the compute function of unit {key} kept no probes (save_probes is on)")
    return result


def run_units(
    units: Sequence[tuple[Mapping[str, Any], Callable[[], Mapping[str, Any]]]],
    store: ResultStore,
    *,
    fresh: bool = False,
    progress: bool = True,
    probes: bool = False,
    together: Callable[[list[int]], Sequence[Mapping[str, Any]] | None] | None = None,
) -> list[UnitOutcome]:
    """Run ``units`` — pairs (spec, compute) — resuming from ``store``; outcomes in order.

    A unit whose key (:func:`unit_key` of its spec) is stored is loaded; any other is computed
    by calling ``compute()`` (which returns a JSON mapping) and stored at once, so a killed run
    rerun with the same units computes only what was not finished. With ``fresh``, the stored
    results of these units are discarded first (before anything is computed, so a fresh run
    that is interrupted and resumed never mixes old and new results). With ``probes`` (the
    run's ``save_probes``), every result must hold its probes, and a stored unit without its
    probes file counts as not stored: it is computed again.

    With ``together``, the units not stored (when there are several) are first offered to
    ``together(positions)``, which computes them at once and returns their results in that
    order (a structural layer sweep trained together), or None to leave them to their own
    compute functions; each result is then stored as above, with an equal share of the joint
    seconds. A run killed while they are computed together stores none of them, and its
    rerun computes them again.

    Raises:
        ValueError: a spec is not JSON (see :func:`unit_key`), two units have the same spec,
            a compute function returns a non-mapping (or, with ``probes``, keeps no probes),
            or a stored unit file is corrupt.
    """
    keys = prepare_units([spec for spec, _ in units], store, fresh=fresh)
    joint: dict[int, tuple[Mapping[str, Any], float]] = {}
    pending = [i for i, key in enumerate(keys) if not store.has(key, probes)]
    if together is not None and len(pending) > 1:
        started = time.perf_counter()
        results = together(pending)
        if results is not None:
            share = (time.perf_counter() - started) / len(pending)
            joint = {i: (result, share) for i, result in zip(pending, results, strict=True)}
    outcomes = []
    bar = tqdm(total=len(units), desc="units", unit="unit", disable=not progress)
    with bar:
        for index, (key, (spec, compute)) in enumerate(zip(keys, units)):
            loaded = index not in joint and store.has(key, probes)
            if loaded:
                record = store.load(key)
            elif index in joint:
                result, seconds = joint[index]
                record = store.save(key, spec, check_result(key, result, probes), seconds)
            else:
                started = time.perf_counter()
                result = check_result(key, compute(), probes)
                record = store.save(key, spec, result, time.perf_counter() - started)
            outcomes.append(UnitOutcome.from_record(record, loaded))
            computed = sum(not outcome.loaded for outcome in outcomes)
            bar.set_postfix(computed=computed, loaded=len(outcomes) - computed)
            bar.update()
    return outcomes
