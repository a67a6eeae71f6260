"""Methods that train more probes on top of a curve: recursive refinement of εSC and the
recommended ε.

* :func:`refine_sample_complexity` — the recursive grid search of Whitney et al., Algorithm 2
  (App. B) and App. C.2: space new sizes over the interval in which the curve crossed ε, train
  them (same seeds, nested subsets), and repeat, so εSC is located to a requested precision.
* :func:`recommend_epsilon` — §4.3: "training a large model on the raw representation of the
  full dataset and using its validation loss as ε" guarantees ε ≥ H(Y|X), so SDL is bounded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probemeter._validation import check_scalar
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.measures import SampleComplexity, sample_complexity
from probemeter.data import ProbeData
from probemeter.probes import MLP

__all__ = ["RefinedSampleComplexity", "recommend_epsilon", "refine_sample_complexity"]


@dataclass(frozen=True)
class RefinedSampleComplexity:
    """εSC after recursive refinement.

    Attributes:
        result: εSC on the refined curve (a lower bound "> N" when ε was never reached).
        bracket: (lo, hi): the largest measured size with L > ε (0 if none) and the first with
            L ≤ ε; the true εSC of the averaged curve lies in (lo, hi].
        curve: the input curve with every refinement point added.
        rounds_run: refinement rounds actually run (fewer than asked when the bracket closed
            or ε was never reached).
    """

    result: SampleComplexity
    bracket: tuple[int, int]
    curve: LossDataCurve
    rounds_run: int

    def to_dict(self) -> dict:
        return {
            "sample_complexity": self.result.to_dict(),
            "bracket": list(self.bracket),
            "rounds_run": self.rounds_run,
        }


def refine_sample_complexity(
    data: ProbeData,
    curve: LossDataCurve,
    epsilon: float,
    *,
    rounds: int = 1,
    points: int = 10,
    metric: str = "loss",
    unit: str | None = None,
    rule: str = "last",
    n_jobs: int | None = -1,
    progress: bool = False,
) -> RefinedSampleComplexity:
    """Refine εSC by recursive grid search (Whitney et al., Algorithm 2; App. C.2).

    Each round takes the bracket (lo, hi] in which the mean curve first crossed ε, trains probes
    at ``points`` sizes spaced evenly over it (n = lo + jΔ, Δ = (hi − lo)/points, rounded to
    distinct integers) with the curve's own probe, training settings, seeds and random state (so
    new subsets are nested with the old ones), and moves the bracket to the first sub-interval
    that reaches ε. After k rounds the bracket has width ≈ (hi − lo)/points^k.

    Algorithm 2 accepts a size when L̂ ≤ ε/2 with S = 2 log(20k/δ)/ε² draws per size (a
    1 − δ upper bound on εSC for losses in [0, 1]); pass ``rule="half"`` for its threshold and
    see :func:`probemeter.curves.measures.hoeffding_draws` for S.

    Raises:
        ValueError: the curve was not made from ``data`` (different fingerprint), or bad
            ``rounds``/``points``.
    """
    check_scalar(rounds, "rounds", int, min_val=1)
    check_scalar(points, "points", int, min_val=2)
    settings = _curve_settings(data, curve)
    rounds_run = 0
    for _ in range(rounds):
        result = sample_complexity(curve, epsilon, metric=metric, unit=unit, rule=rule)
        lo, hi = _bracket(curve, result)
        if result.lower_bound or hi - lo <= 1:
            break
        step = (hi - lo) / points
        new_sizes = np.unique(np.round(lo + step * np.arange(1, points)).astype(np.int64))
        new_sizes = np.setdiff1d(new_sizes[(new_sizes > lo) & (new_sizes < hi)], curve.sizes)
        if new_sizes.size == 0:
            break
        extra = loss_data_curve(data, sizes=new_sizes, progress=progress, n_jobs=n_jobs, **settings)
        curve = curve.merge(extra)
        rounds_run += 1
    result = sample_complexity(curve, epsilon, metric=metric, unit=unit, rule=rule)
    return RefinedSampleComplexity(result, _bracket(curve, result), curve, rounds_run)


def _bracket(curve: LossDataCurve, result: SampleComplexity) -> tuple[int, int]:
    """(largest measured size below the crossing, crossing size); (N, N) when never reached."""
    if result.lower_bound:
        return result.value, result.value
    below = curve.sizes[curve.sizes < result.value]
    return (int(below[-1]) if below.size else 0), int(result.value)


def _curve_settings(data: ProbeData, curve: LossDataCurve) -> dict:
    """The keyword arguments of :func:`loss_data_curve` that made ``curve``."""
    meta = curve.metadata
    if meta.get("data_fingerprint") != data.fingerprint():
        raise ValueError(
            "data does not match the curve: refinement must retrain on the data the curve was "
            f"measured on (fingerprint {meta.get('data_fingerprint')!r}, data "
            f"{data.fingerprint()!r})"
        )
    training = meta["training"]
    return {
        "probe": MLP.from_dict(meta["probe"]),
        "seeds": sorted(curve.points["seed"].unique().tolist()),
        "steps": training["steps"],
        "batch_size": training["batch_size"],
        "lr": training["lr"],
        "precision": training["precision"],
        "random_state": meta["random_state"],
    }


def recommend_epsilon(
    data: ProbeData,
    probe: MLP | None = None,
    *,
    seeds: int = 3,
    steps: int = 2000,
    lr: float = 1e-4,
    batch_size: int = 256,
    random_state: int = 0,
    n_jobs: int | None = -1,
    progress: bool = False,
) -> float:
    """A tolerance ε for SDL and εSC: the mean test loss (nats) of a large probe trained on the
    full pool of a reference representation (Whitney et al., §4.3).

    Use the raw or best-known representation as ``data``; ε then lies above H(Y|X), so every
    representation's SDL is finite in the limit of data. Default probe: ``MLP((1024, 1024))``.
    """
    probe = MLP((1024, 1024)) if probe is None else probe
    curve = loss_data_curve(
        data,
        probe,
        sizes=[data.pool_size],
        seeds=seeds,
        steps=steps,
        lr=lr,
        batch_size=batch_size,
        random_state=random_state,
        n_jobs=n_jobs,
        progress=progress,
    )
    return float(curve.points["loss"].mean())
