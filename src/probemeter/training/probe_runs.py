"""What every method that trains probes shares around the engine: the seed-major grid of probes
and their keys, the wall-clock time of the training, and the metadata recorded in its result
(the probe, training settings, random state, device, data fingerprint, library versions)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import torch

from probemeter._device import resolve_device
from probemeter._io import environment
from probemeter._summary import LayerWeights
from probemeter._validation import check_scalar
from probemeter.data import ProbeData, seed_ids
from probemeter.probes import Direction
from probemeter.training.directions import DIRECTION_FAMILIES

__all__ = [
    "Stopwatch",
    "held_out_count",
    "held_out_split",
    "kept_spans",
    "learned_mix",
    "run_metadata",
    "seed_grid",
]


def seed_grid(
    seeds: int | Sequence[int], values: Sequence[int] | Any, random_state: int
) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int, int]]]:
    """The probes of a seeded sweep over ``values`` (subset sizes, block ends), seed-major.

    Returns:
        The seed ids (:func:`probemeter.data.seed_ids`), the (seed, value) pair of each probe,
        and each probe's engine key ``(random_state, seed, value)``.
    """
    seeds_used = seed_ids(seeds)
    grid = [(seed, int(value)) for seed in seeds_used for value in values]
    keys = [(random_state, seed, value) for seed, value in grid]
    return seeds_used, grid, keys


#: the stream of :func:`held_out_split`, apart from every probe's own streams
_HELD_OUT_STREAM = 0x5E1EC7


def held_out_count(units: int, fraction: float) -> int:
    """How many of ``units`` examples (or groups) a held-out share ``fraction`` takes:
    round(fraction · units), at least 1 and leaving at least 1."""
    return min(max(1, round(fraction * units)), units - 1)


def held_out_split(
    pool_size: int, fraction: float, random_state: int, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The pool indices (sorted) that probes train on and those held out to choose on: a
    seeded ``fraction`` of the pool, by whole groups when ``groups`` (one id per pool example,
    e.g. its sentence) is given, so that no sentence is split between training and choosing.
    At least one example (group) is held out and one kept.

    Raises:
        ValueError: ``fraction`` outside (0, 1), or fewer than two examples (groups).
    """
    check_scalar(
        fraction, "dev_fraction", float, min_val=0, max_val=1, include_boundaries="neither"
    )
    ids = np.arange(pool_size) if groups is None else np.asarray(groups)
    units = np.unique(ids)
    if units.size < 2:
        what = "examples" if groups is None else "groups"
        raise ValueError(
            f"dev_fraction: a held-out split needs at least 2 {what} in the pool; got {units.size}"
        )
    n_held = held_out_count(units.size, fraction)
    order = np.random.default_rng([int(random_state), _HELD_OUT_STREAM]).permutation(units.size)
    held = np.isin(ids, units[order[:n_held]])
    return np.flatnonzero(~held), np.flatnonzero(held)


class Stopwatch:
    """Wall-clock seconds of a ``with`` block, rounded to milliseconds as results record them
    (``train_seconds``)."""

    seconds: float = 0.0

    def __enter__(self) -> Stopwatch:
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.seconds = round(time.perf_counter() - self._started, 3)


def run_metadata(
    probe: Any,
    training: Mapping[str, Any],
    *,
    random_state: int,
    device: str | torch.device,
    seconds: float | Mapping[str, float],
    data: ProbeData | None = None,
    settings: Mapping[str, Any] | None = None,
    data_fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The metadata of a result trained by probes, in the order results record it.

    Keys: ``probe`` (its ``to_dict()``; or ``probes``, name -> ``to_dict()``, when ``probe``
    is a mapping of probes), ``training`` (a :class:`~probemeter.probes.Direction`'s fit
    instead: :meth:`~probemeter.training.directions.DirectionFamily.record`), then
    ``settings``, ``random_state``, ``device`` (resolved), ``data_fingerprint`` (when
    ``data`` is given), then ``data_fields``, ``train_seconds`` and ``versions``
    (:func:`probemeter._io.environment`).
    """
    if isinstance(probe, Mapping):
        probes: dict[str, Any] = {"probes": {name: p.to_dict() for name, p in probe.items()}}
    else:
        probes = {"probe": probe.to_dict()}
    if isinstance(probe, Direction):  # the engine's settings do not apply to its fit
        training = DIRECTION_FAMILIES[probe.family].record()
    fingerprint = {} if data is None else {"data_fingerprint": data.fingerprint()}
    return {
        **probes,
        "training": dict(training),
        **(settings or {}),
        "random_state": int(random_state),
        "device": str(resolve_device(device)),
        **fingerprint,
        **(data_fields or {}),
        "train_seconds": seconds,
        "versions": environment(),
    }


def learned_mix(
    data: ProbeData, evaluation: Any, rows: Sequence[int], seeds: Sequence[int]
) -> dict[str, Any] | None:
    """The layer weights the probes ``rows`` of ``evaluation`` (a ``ProbeEvaluation`` of
    probes with a scalar mix; the probes of ``seeds``) learned, as the JSON of a
    :class:`~probemeter._summary.LayerWeights` over ``data.mix_layers`` (0 … L−1 when the data
    do not name their layers); None for probes without a mix."""
    if evaluation.mix_logits is None:
        return None
    logits, scale = evaluation.mix_logits[list(rows)], evaluation.mix_scale[list(rows)]
    layers = data.mix_layers
    if layers is None or len(layers) != logits.shape[1]:
        layers = range(logits.shape[1])
    return LayerWeights.from_logits(layers, seeds, logits, scale).to_dict()


def kept_spans(evaluation: Any) -> tuple[Any, Any, Any] | None:
    """The trained span poolings of a ``ProbeEvaluation`` with parameters, as
    :meth:`~probemeter.probes.ProbeSet.from_stacked` takes them (``span_weight``,
    ``span_bias``, ``span_score``); None for probes that pool no spans."""
    if evaluation.span_weight is None:
        return None
    return evaluation.span_weight, evaluation.span_bias, evaluation.span_score
