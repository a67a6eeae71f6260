"""Methods that train more probes on top of a curve: recursive refinement of εSC and the
recommended ε.

* :func:`refine_sample_complexity` — the recursive grid search of Whitney et al., Algorithm 2
  (App. B) and App. C.2: space new sizes over the interval in which the curve crossed ε, train
  them, and repeat until the bracket is at most ``target_width`` examples wide. With ``delta``
  it draws Theorem 5's S = ⌈2·ln(2M/δ)/ε²⌉ independent evaluations at every size it consults
  (S = 2·log(20k/δ)/ε² for the paper's k rounds of 10 bins, M = 10k) and says whether the
  theorem's guarantee m_εSC ≤ m̂ with probability ≥ 1 − δ holds (:class:`Guarantee`).
* :func:`recursive_grid_search` — the same search for any learning algorithm: a function that
  returns a :class:`~probemeter.curves.curve.LossDataCurve` for given sizes and seeds.
* :func:`recommend_epsilon` — §4.3: "training a large model on the raw representation of the
  full dataset and using its validation loss as ε" guarantees ε ≥ H(Y|X), so SDL is bounded.

Theorem 5 (Whitney et al., App. B): "Let the loss function L be bounded in [0, 1] and assume
that it is decreasing in n. Then, Algorithm 2 returns an estimate m̂ that satisfies
m_εSC ≤ m̂ with probability at least 1 − δ." Its proof: each L̂_n is the mean of S
independent draws (a training set D^n and a test point), so by Hoeffding
P(|L̂_n − L(n)| ≥ ε/2) ≤ 2·exp(−S·ε²/2) = δ/(10k) for S = 2·log(20k/δ)/ε²; the algorithm
consults at most 10k sizes (k rounds, 10 bins), so by a union bound every estimate is within
ε/2 with probability ≥ 1 − δ, and then L̂_n ≤ ε/2 implies L(n) ≤ ε. Logarithms are natural.

Our adaptation, and what it changes in the statement:

* the input curve is the first round (any grid, e.g. log-spaced as in App. C.2, instead of 10
  equispaced bins of [1, N]); each later round puts ``points`` − 1 new sizes inside the bracket.
  The search then consults at most M = G + rounds·(points − 1) estimates (G: the curve's
  sizes), and S = ⌈2·ln(2M/δ)/ε²⌉ keeps each one's failure probability ≤ δ/M. For the paper's
  grid (10 sizes per round, M = 10k) this is its S.
* a draw is one probe (one seed): its training subset drawn from the pool and its mean loss
  over the test set; a bounded loss averaged over test points is itself bounded in [0, 1], so
  Hoeffding applies to the mean over seeds. The expectation is therefore over training subsets
  of the pool and over the fixed test set: the guarantee concerns L(n) under the pool's and the
  test set's empirical distributions.
* draws are independent where the union bound needs it: the curve's sizes form a grid fixed in
  advance (topped up to S seeds, nested per seed), and every refinement round, whose sizes
  depend on earlier estimates, trains fresh seed ids that no earlier size used.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from probemeter._execution import Execution, execution_of
from probemeter._validation import check_delta, check_scalar, one_of
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.measures import (
    RULES,
    SampleComplexity,
    _mean_losses,
    _resolve_unit,
    evaluations_per_size,
    sample_complexity,
)
from probemeter.data import ProbeData, check_probe_data
from probemeter.probes import MLP
from probemeter.training.config import TrainingConfig, config_or_default

__all__ = [
    "PAPER_BINS",
    "REFERENCE_TRAINING",
    "Evaluate",
    "Guarantee",
    "RefinedSampleComplexity",
    "recommend_epsilon",
    "recursive_grid_search",
    "refine_sample_complexity",
    "rounds_for_width",
]

#: bins per round of Algorithm 2 ("Partition [ℓ, u] into 10 equispaced bins")
PAPER_BINS = 10
#: how :func:`recommend_epsilon`'s reference probe trains by default: the curve's protocol
#: (Adam at lr 1e-4, minibatches of 256) with twice its updates, so that the probe on the
#: full pool is close to converged
REFERENCE_TRAINING = TrainingConfig(steps=2000)

#: the learning algorithm A: ``evaluate(sizes, seeds)`` trains one probe per (size, seed) and
#: returns their loss-data curve (each seed an independent draw of the training set)
Evaluate = Callable[[np.ndarray, list[int]], LossDataCurve]


def rounds_for_width(width: int, points: int, target_width: int) -> int:
    """Refinement rounds that narrow a bracket (lo, lo + ``width``] to at most ``target_width``
    examples, in the worst case over which sub-interval holds the crossing: each round splits
    the bracket at the ``points`` − 1 sizes of :func:`_interior_sizes` and keeps the widest
    piece (≈ width / points, at least 1 example narrower)."""
    check_scalar(width, "width", int, min_val=0)
    check_scalar(points, "points", int, min_val=2)
    check_scalar(target_width, "target_width", int, min_val=1)
    rounds, width = 0, int(width)
    while width > target_width:
        edges = np.concatenate([[0], _interior_sizes(0, width, points), [width]])
        width = int(np.diff(edges).max())
        rounds += 1
    return rounds


@dataclass(frozen=True)
class Guarantee:
    """Whether Theorem 5 (Whitney et al., App. B) covers a refined εSC: m_εSC ≤ m̂ with
    probability ≥ 1 − δ, m̂ the upper end of the bracket.

    Attributes:
        delta: the requested δ; None when no guarantee was asked for (the curve's own seeds
            were used, with no draw count to meet).
        draws_required: S = ⌈2·ln(2M/δ)/ε²⌉ (:func:`evaluations_per_size`); None without δ.
        n_estimates: M, the most loss estimates the search could consult (curve sizes plus
            rounds × (points − 1)).
        draws: the fewest draws (seeds) behind any estimate the search consulted.
        conditions: the theorem's conditions as ``(name, met, detail)``: ``"bounded loss"``
            (the metric lies in [0, 1]: ``error``, or ``loss_truncated`` in nats),
            ``"threshold ε/2"`` (a size is accepted when L̂ ≤ ε/2: ``rule="half"``),
            ``"S draws"`` (every consulted estimate averages ≥ S independent draws),
            ``"ε/2 reached"`` (some size within the pool reached ε/2; otherwise there is no m̂,
            only the lower bound "> N") and ``"L decreasing in n"`` (assumed by the theorem;
            refuted only when a consulted estimate exceeds an earlier, smaller size's by more
            than ε — impossible for a decreasing L when all estimates are within ε/2).
    """

    delta: float | None
    draws_required: int | None
    n_estimates: int
    draws: int
    conditions: tuple[tuple[str, bool, str], ...]

    @property
    def holds(self) -> bool:
        """True when δ was given and every condition of Theorem 5 is met."""
        return self.delta is not None and all(met for _, met, _ in self.conditions)

    @property
    def unmet(self) -> list[str]:
        """``"name: detail"`` of each condition that is not met."""
        return [f"{name}: {detail}" for name, met, detail in self.conditions if not met]

    def to_dict(self) -> dict:
        return {
            "holds": self.holds,
            "delta": self.delta,
            "draws_required": self.draws_required,
            "n_estimates": self.n_estimates,
            "draws": self.draws,
            "conditions": [
                {"name": name, "met": met, "detail": detail}
                for name, met, detail in self.conditions
            ],
        }


@dataclass(frozen=True)
class RefinedSampleComplexity:
    """εSC after recursive refinement.

    Attributes:
        result: εSC on the refined curve (a lower bound "> N" when ε was never reached).
        bracket: (lo, hi): the largest measured size with L̂ above the threshold (0 if none) and
            the first with L̂ at or below it; the εSC of the averaged curve lies in (lo, hi].
        curve: the input curve with every refinement point added.
        rounds_run: refinement rounds actually run (fewer than ``max_rounds`` when the bracket
            reached ``target_width``, could not be split further, or ε was never reached).
        target_width: the requested bracket width in examples (None: none requested).
        max_rounds: the most refinement rounds the search was allowed (given, or derived from
            ``target_width`` by :func:`rounds_for_width`).
        guarantee: whether Theorem 5's statement holds for ``bracket[1]`` (:class:`Guarantee`).
    """

    result: SampleComplexity
    bracket: tuple[int, int]
    curve: LossDataCurve
    rounds_run: int
    target_width: int | None = None
    max_rounds: int = 1
    guarantee: Guarantee | None = None

    @property
    def width_reached(self) -> bool:
        """True when a ``target_width`` was requested, ε was reached, and hi − lo ≤ target_width."""
        lo, hi = self.bracket
        return (
            self.target_width is not None
            and not self.result.lower_bound
            and hi - lo <= self.target_width
        )

    def __str__(self) -> str:
        lo, hi = self.bracket
        text = f"{self.result.format()} (bracket ({lo}, {hi}], {self.rounds_run} round(s))"
        if self.guarantee is None:
            return text
        if self.guarantee.holds:
            confidence = 1.0 - float(self.guarantee.delta)  # type: ignore[arg-type]
            return f"{text}; Theorem 5: m_εSC ≤ {hi} with probability ≥ {confidence:g}"
        return f"{text}; Theorem 5 does not apply: {'; '.join(self.guarantee.unmet)}"

    def to_dict(self) -> dict:
        return {
            "sample_complexity": self.result.to_dict(),
            "bracket": list(self.bracket),
            "rounds_run": self.rounds_run,
            "max_rounds": self.max_rounds,
            "target_width": self.target_width,
            "width_reached": self.width_reached,
            "guarantee": None if self.guarantee is None else self.guarantee.to_dict(),
        }


def refine_sample_complexity(
    data: ProbeData,
    curve: LossDataCurve,
    epsilon: float,
    *,
    rounds: int | None = None,
    points: int = PAPER_BINS,
    target_width: int | None = None,
    delta: float | None = None,
    metric: str = "loss",
    unit: str | None = None,
    rule: str | None = None,
    execution: Execution | None = None,
    **old: Any,
) -> RefinedSampleComplexity:
    """Refine εSC by recursive grid search (Whitney et al., Algorithm 2 and Theorem 5, App. B;
    App. C.2), retraining the curve's own probe with its training settings and random state.

    See :func:`recursive_grid_search` for the search, ``target_width``, ``delta`` and the
    guarantee. Without ``delta`` the new sizes are trained with the curve's seeds (so their
    subsets are nested with the old ones); with ``delta``, with S fresh seeds per round.

    Raises:
        ValueError: the curve was not made from ``data`` (different fingerprint), or any bad
            argument (named), before anything is trained.
    """
    execution = execution_of(execution, old, "refine_sample_complexity")
    settings = _curve_settings(check_probe_data(data), curve)
    del settings["seeds"]

    def evaluate(sizes: np.ndarray, seeds: list[int]) -> LossDataCurve:
        return loss_data_curve(data, sizes=sizes, seeds=seeds, execution=execution, **settings)

    return recursive_grid_search(
        curve,
        evaluate,
        epsilon,
        rounds=rounds,
        points=points,
        target_width=target_width,
        delta=delta,
        metric=metric,
        unit=unit,
        rule=rule,
    )


def recursive_grid_search(
    curve: LossDataCurve,
    evaluate: Evaluate,
    epsilon: float,
    *,
    rounds: int | None = None,
    points: int = PAPER_BINS,
    target_width: int | None = None,
    delta: float | None = None,
    metric: str = "loss",
    unit: str | None = None,
    rule: str | None = None,
) -> RefinedSampleComplexity:
    """Algorithm 2 of Whitney et al. (App. B) on top of ``curve``, with ``evaluate`` as the
    learning algorithm A.

    Each round takes the bracket (lo, hi] in which the mean curve first reached the threshold
    (ε with ``rule="last"``, ε/2 with ``rule="half"``), evaluates the ``points`` − 1 sizes
    n_j = lo + ⌊j·(hi − lo)/points + ½⌋, j = 1 … points − 1 (Δ = (hi − lo)/points, the paper's
    n = ℓ + jΔ), and moves the bracket to the first sub-interval that reaches the threshold.
    It stops when hi − lo ≤ ``target_width``, when the bracket cannot be split (hi − lo ≤ 1), or
    after ``rounds`` rounds.

    With ``delta`` (Theorem 5): S = :func:`evaluations_per_size` (ε, δ, M) with
    M = len(curve.sizes) + rounds·(points − 1). Before the first round the curve's sizes are
    consulted in increasing order, each topped up to S seeds, until one reaches the threshold
    (the first round of Algorithm 2); every later round evaluates its new sizes with S seed ids
    that no earlier size used (independent of the estimates that placed them). The result's
    :class:`Guarantee` says whether m_εSC ≤ hi holds with probability ≥ 1 − δ and, if not,
    which condition fails.

    Args:
        curve: the measured curve (the first round).
        evaluate: ``evaluate(sizes, seeds)`` → the curve of one probe per (size, seed).
        epsilon: the loss tolerance ε, in ``unit``.
        rounds: the most refinement rounds; default 1, or with ``target_width`` the rounds
            :func:`rounds_for_width` needs for the widest gap of the curve's grid
            (from 0 to the first size, or between two sizes).
        points: bins per round (10 in the paper); ``points`` − 1 new sizes per round.
        target_width: stop once the bracket is at most this many examples wide.
        delta: confidence parameter δ of Theorem 5; None: no draw count, no guarantee.
        metric, unit: the loss read from the curve (:func:`sample_complexity`).
        rule: ``"last"`` (L̂ ≤ ε) or ``"half"`` (L̂ ≤ ε/2, Algorithm 2); default ``"half"``
            with ``delta``, else ``"last"``.

    Raises:
        ValueError: naming the argument — ε not > 0 (or not < 1 for ``error``), rounds < 1,
            points < 2, target_width < 1, δ outside (0, 1), an unknown metric, unit or rule, or an
            ``evaluate`` that is not callable — before anything is evaluated.
    """
    if rounds is not None:
        check_scalar(rounds, "rounds", int, min_val=1)
    check_scalar(points, "points", int, min_val=2)
    if target_width is not None:
        check_scalar(target_width, "target_width", int, min_val=1)
    if delta is not None:
        delta = check_delta(delta)
    rule = ("half" if delta is not None else "last") if rule is None else rule
    one_of(*RULES)(rule, "rule")
    if not callable(evaluate):
        raise ValueError(f"evaluate must be a function (sizes, seeds) -> curve; got {evaluate!r}")
    loss_unit, _ = _resolve_unit(metric, unit)
    sample_complexity(curve, epsilon, metric=metric, unit=unit, rule=rule)  # checks ε, metric
    epsilon = float(epsilon)
    measure = {"metric": metric, "unit": unit, "rule": rule}

    if rounds is None:
        widest = int(np.diff(np.concatenate([[0], curve.sizes])).max())
        rounds = 1 if target_width is None else rounds_for_width(widest, points, target_width)
    n_estimates = len(curve.sizes) + rounds * (points - 1)
    draws_required = None if delta is None else evaluations_per_size(epsilon, delta, n_estimates)

    consulted: list[int] = []
    if draws_required is not None:
        curve, consulted = _first_round(curve, evaluate, epsilon, draws_required, measure)
    rounds_run = 0
    for _ in range(rounds):
        result = sample_complexity(curve, epsilon, **measure)
        lo, hi = _bracket(curve, result)
        if (
            result.lower_bound
            or hi - lo <= 1
            or (target_width is not None and hi - lo <= target_width)
        ):
            break
        new_sizes = np.setdiff1d(_interior_sizes(lo, hi, points), curve.sizes)
        if new_sizes.size == 0:
            break
        if draws_required is None:
            seeds = sorted(int(s) for s in curve.points["seed"].unique())
        else:
            first = int(curve.points["seed"].max()) + 1
            seeds = list(range(first, first + draws_required))
        curve = curve.merge(evaluate(new_sizes, seeds))
        consulted.extend(int(n) for n in new_sizes)
        rounds_run += 1
    result = sample_complexity(curve, epsilon, **measure)
    bracket = _bracket(curve, result)
    if draws_required is None:  # the search consulted the sizes up to the crossing
        consulted = [int(n) for n in curve.sizes if n <= bracket[1]]
    guarantee = _guarantee(
        curve, result, epsilon, delta, draws_required, n_estimates, consulted, loss_unit, measure
    )
    return RefinedSampleComplexity(
        result, bracket, curve, rounds_run, target_width, rounds, guarantee
    )


def _interior_sizes(lo: int, hi: int, points: int) -> np.ndarray:
    """The distinct integers lo + ⌊j·(hi − lo)/points + ½⌋, j = 1 … points − 1, strictly
    inside (lo, hi) (integer arithmetic: the pattern does not depend on lo)."""
    j = np.arange(1, points, dtype=np.int64)
    sizes = lo + (2 * (hi - lo) * j + points) // (2 * points)
    return np.unique(sizes[(sizes > lo) & (sizes < hi)])


def _first_round(
    curve: LossDataCurve, evaluate: Evaluate, epsilon: float, draws: int, measure: dict
) -> tuple[LossDataCurve, list[int]]:
    """Algorithm 2's first round on the curve's grid: consult the sizes in increasing order,
    topping each up to ``draws`` seeds (the lowest ids it lacks), until one reaches the
    threshold. Returns the topped-up curve and the sizes consulted."""
    consulted = []
    for n in (int(size) for size in curve.sizes):
        have = set(curve.points.loc[curve.points["n"] == n, "seed"].astype(int))
        if len(have) < draws:
            missing = [s for s in range(draws + len(have)) if s not in have][: draws - len(have)]
            curve = curve.merge(evaluate(np.array([n], dtype=np.int64), missing))
        consulted.append(n)
        result = sample_complexity(curve, epsilon, n, **measure)
        if not result.lower_bound:
            break
    return curve, consulted


def _guarantee(
    curve: LossDataCurve,
    result: SampleComplexity,
    epsilon: float,
    delta: float | None,
    draws_required: int | None,
    n_estimates: int,
    consulted: Sequence[int],
    loss_unit: str,
    measure: dict,
) -> Guarantee:
    """The conditions of Theorem 5 for this search (see :class:`Guarantee`)."""
    metric, rule = measure["metric"], measure["rule"]
    seeds = curve.points[curve.points["n"].isin(consulted)].groupby("n")["seed"].nunique()
    draws = int(seeds.min()) if len(seeds) else 0
    bounded = metric == "error" or (metric == "loss_truncated" and loss_unit == "nats")
    if draws_required is None:
        draws_detail = f"no delta given, so no S; estimates average {draws} seed(s)"
    else:
        draws_detail = (
            f"S = {draws_required} for M = {n_estimates} estimates; the fewest behind a "
            f"consulted estimate: {draws}"
        )
    _, scale = _resolve_unit(metric, measure["unit"])
    losses = _mean_losses(curve, metric, scale).loc[sorted(consulted)].to_numpy(dtype=float)
    rises = losses - np.minimum.accumulate(losses) if losses.size else np.zeros(1)
    rise = float(rises.max())
    conditions = (
        (
            "bounded loss",
            bounded,
            f"metric {metric!r} in {loss_unit}"
            + (
                ""
                if bounded
                else " is not bounded in [0, 1]: use 'error' or 'loss_truncated' in nats"
            ),
        ),
        (
            "threshold ε/2",
            rule == "half",
            f"rule {rule!r}" + ("" if rule == "half" else ": sizes accepted at L̂ ≤ ε, not ε/2"),
        ),
        ("S draws", draws_required is not None and draws >= draws_required, draws_detail),
        (
            "ε/2 reached" if rule == "half" else "ε reached",
            not result.lower_bound,
            f"first at n = {result.value}"
            if not result.lower_bound
            else f"not within the {curve.pool_size} pool examples: εSC > {result.value}, no m̂",
        ),
        (
            "L decreasing in n",
            rise <= epsilon,
            f"assumed; the consulted estimates rise by at most {rise:.4g} (≤ ε = {epsilon:g})"
            if rise <= epsilon
            else f"refuted: a consulted estimate exceeds an earlier one by {rise:.4g} > ε",
        ),
    )
    return Guarantee(delta, draws_required, n_estimates, draws, conditions)


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
    if curve.has_settings_grid:  # new sizes and seeds would mix settings chosen apart
        raise ValueError(
            f"curve {curve.name!r} chose its probe settings per size from a grid; refine a "
            "curve measured with the chosen setting instead"
        )
    return {
        "probe": MLP.from_dict(meta["probe"]),
        "seeds": sorted(curve.points["seed"].unique().tolist()),
        "config": TrainingConfig.from_dict(meta["training"]),
        "random_state": meta["random_state"],
        "dev_fraction": meta.get("development", {}).get("fraction", 0.0),
    }


def recommend_epsilon(
    data: ProbeData,
    probe: MLP | None = None,
    *,
    seeds: int = 3,
    config: TrainingConfig | None = None,
    random_state: int = 0,
    execution: Execution | None = None,
    **old: Any,
) -> float:
    """A tolerance ε for SDL and εSC: the mean test loss (nats) of a large probe trained on the
    full pool of a reference representation (Whitney et al., §4.3).

    Use the raw or best-known representation as ``data``; ε then lies above H(Y|X), so every
    representation's SDL is finite in the limit of data. Default probe: ``MLP((1024, 1024))``,
    trained as ``config`` says (default :data:`REFERENCE_TRAINING`). A reference probe that does
    not beat the uniform code returns an ε at or above ln K, which
    :func:`~probemeter.curves.measures.sdl` and ``sample_complexity`` refuse as vacuous.
    """
    execution = execution_of(execution, old, "recommend_epsilon")
    probe = MLP((1024, 1024)) if probe is None else probe
    curve = loss_data_curve(
        data,
        probe,
        sizes=[data.pool_size],
        seeds=seeds,
        config=config_or_default(config, REFERENCE_TRAINING),
        random_state=random_state,
        execution=execution,
        dev_fraction=0.0,  # trained on the full pool: nothing held out
    )
    return float(curve.points["loss"].mean())
