import math

import numpy as np
import pandas as pd
import pytest

import probemeter as pm
from probemeter import Execution
from probemeter.curves.curve import LossDataCurve
from probemeter.curves.measures import evaluations_per_size, hoeffding_draws
from probemeter.curves.refine import (
    PAPER_BINS,
    recursive_grid_search,
    rounds_for_width,
)

CONFIG = pm.TrainingConfig(steps=300, lr=3e-3)


@pytest.fixture(scope="module")
def digits():
    return pm.digits_representations()["pca-8"]


@pytest.fixture(scope="module")
def coarse(digits):
    return pm.loss_data_curve(
        digits,
        pm.MLP((32,)),
        sizes=[20, 200, 1297],
        seeds=2,
        config=CONFIG,
        dev_fraction=0.0,
    )


def test_refinement_narrows_the_bracket_with_nested_retraining(digits, coarse, monkeypatch):
    import probemeter.curves.refine as refine_module

    rounds = []  # the sizes each round trained together (its probes' chunk companions)

    def recording(data, **settings):
        rounds.append(np.asarray(settings["sizes"]).tolist())
        return pm.loss_data_curve(data, **settings)

    monkeypatch.setattr(refine_module, "loss_data_curve", recording)
    epsilon = float(coarse.mean().loc[200]) + 0.05  # crossed between 20 and 200
    before = pm.sample_complexity(coarse, epsilon)
    assert before.value == 200 and not before.lower_bound
    refined = pm.refine_sample_complexity(digits, coarse, epsilon, rounds=2, points=5)
    lo, hi = refined.bracket
    assert 20 <= lo < hi <= 200 and hi - lo <= (200 - 20) / 5
    assert refined.result.value == hi and not refined.result.lower_bound
    assert refined.rounds_run == 2 and len(rounds) == 2
    # old points are kept unchanged; new ones are exactly what a fresh curve at the same sizes
    # gives: same subsets, seeds, settings and companions in the stack, so the same numbers
    new_sizes = np.setdiff1d(refined.curve.sizes, coarse.sizes)
    assert new_sizes.size >= 4 and sorted(np.concatenate(rounds).tolist()) == new_sizes.tolist()
    merged = refined.curve.points.set_index(["n", "seed"])
    for sizes in rounds:
        direct = pm.loss_data_curve(
            digits,
            pm.MLP((32,)),
            sizes=sizes,
            seeds=2,
            config=CONFIG,
            dev_fraction=0.0,
        )
        for row in direct.points.itertuples():
            assert merged.loc[(row.n, row.seed), "loss"] == row.loss
    assert refined.curve.points[refined.curve.points["n"] == 200]["loss"].tolist() == (
        coarse.points[coarse.points["n"] == 200]["loss"].tolist()
    )


def test_refinement_retrains_with_the_curves_development_split(digits):
    """A curve measured with a development split is refined on that split: its new points are
    those a curve with the same split gives."""
    settings = {"seeds": 1, "config": CONFIG, "dev_fraction": 0.2}
    curve = pm.loss_data_curve(digits, pm.MLP((32,)), sizes=[20, 200], **settings)
    assert curve.metadata["development"]["fraction"] == 0.2
    losses = curve.mean()
    epsilon = float(losses.loc[20] + losses.loc[200]) / 2
    refined = pm.refine_sample_complexity(digits, curve, epsilon, rounds=1, points=3)
    new_sizes = np.setdiff1d(refined.curve.sizes, curve.sizes).tolist()
    assert refined.rounds_run == 1 and new_sizes
    direct = pm.loss_data_curve(digits, pm.MLP((32,)), sizes=new_sizes, **settings)
    merged = refined.curve.points.set_index(["n", "seed"])
    for row in direct.points.itertuples():
        assert merged.loc[(row.n, row.seed), "loss"] == row.loss


def test_refinement_reports_lower_bound_when_never_reached(digits, coarse):
    refined = pm.refine_sample_complexity(digits, coarse, 1e-4, rounds=3)
    assert refined.result.lower_bound and refined.rounds_run == 0
    assert refined.bracket == (1297, 1297)


def test_refinement_checks_data_and_arguments(digits, coarse):
    other = pm.digits_representations()["pixels"]
    with pytest.raises(ValueError, match="data does not match"):
        pm.refine_sample_complexity(other, coarse, 1.0)
    with pytest.raises(ValueError, match="rounds"):
        pm.refine_sample_complexity(digits, coarse, 1.0, rounds=0)
    with pytest.raises(ValueError, match="points"):
        pm.refine_sample_complexity(digits, coarse, 1.0, points=1)


def test_recommend_epsilon_is_the_full_data_test_loss(digits):
    config = pm.TrainingConfig(steps=200, lr=3e-3)
    epsilon = pm.recommend_epsilon(digits, pm.MLP((32,)), seeds=2, config=config)
    curve = pm.loss_data_curve(
        digits,
        pm.MLP((32,)),
        sizes=[digits.pool_size],
        seeds=2,
        config=config,
        dev_fraction=0.0,
    )
    assert epsilon == pytest.approx(curve.points["loss"].mean())
    assert 0 < epsilon < np.log(10)


# ------------------------------------------------ Algorithm 2 / Theorem 5 (Whitney et al., App. B)


POOL = 10_000


def synthetic_error(n):
    """A monotone 0-1 loss curve with a known crossing: L(n) = 0.1 + 0.8·exp(−n/400)."""
    return 0.1 + 0.8 * np.exp(-np.asarray(n, dtype=float) / 400)


def first_n_below(level):
    """The smallest integer n with L(n) ≤ level (closed form of synthetic_error)."""
    return int(np.ceil(400 * np.log(0.8 / (level - 0.1))))


def synthetic_evaluator(bernoulli=False, rep=0, calls=None):
    """The learning algorithm A of a synthetic task: a draw at size n has 0-1 loss L(n)
    exactly, or (``bernoulli``) the loss on one test point, 1 with probability L(n) — the draw
    of Theorem 5's proof."""

    def evaluate(sizes, seeds):
        if calls is not None:
            calls.append((np.asarray(sizes).tolist(), list(seeds)))
        n = np.repeat(np.asarray(sizes, dtype=np.int64), len(seeds))
        seed = np.tile(np.asarray(seeds, dtype=np.int64), len(sizes))
        error = synthetic_error(n)
        if bernoulli:
            key = [rep, int(n[0]), int(seed[0]), n.size]
            error = (np.random.default_rng(key).random(n.size) < error).astype(float)
        points = pd.DataFrame(
            {"n": n, "seed": seed, "loss": error, "loss_truncated": error, "accuracy": 1 - error}
        )
        return LossDataCurve("synthetic", points, 2, POOL, 1)

    return evaluate


@pytest.mark.parametrize(
    ("epsilon", "delta", "k", "hand"),
    [
        # 2·ln(20k/δ)/ε², rounded up: 2·ln(400)/0.01 = 1198.29; 2·ln(600)/0.04 = 319.85;
        # 2·ln(4000)/0.25 = 66.35; 2·ln(40/0.05)/0.04 = 334.23 (ε = 0.2 of §4.2, one refinement)
        (0.1, 0.05, 1, 1199),
        (0.2, 0.1, 3, 320),
        (0.5, 0.01, 2, 67),
        (0.2, 0.05, 2, 335),
    ],
)
def test_evaluations_per_size_is_theorem_5s_closed_form(epsilon, delta, k, hand):
    """S = 2·log(20k/δ)/ε² (Theorem 5) for k rounds of 10 bins: M = 10k estimates."""
    ours = evaluations_per_size(epsilon, delta, PAPER_BINS * k)
    assert ours == hand == math.ceil(2 * math.log(20 * k / delta) / epsilon**2)
    assert ours == hoeffding_draws(epsilon, delta, k)
    # the guarantee behind it: 2·exp(−S·ε²/2) ≤ δ/M for each estimate, and not with S − 1
    assert 2 * math.exp(-ours * epsilon**2 / 2) <= delta / (10 * k)
    assert 2 * math.exp(-(ours - 1) * epsilon**2 / 2) > delta / (10 * k)


def test_rounds_for_width_is_the_worst_case_narrowing():
    assert rounds_for_width(9000, 10, 50) == 3  # 9000 -> 900 -> 90 -> 9
    assert rounds_for_width(900, 10, 90) == 1 and rounds_for_width(900, 10, 89) == 2
    assert rounds_for_width(5, 10, 5) == 0 and rounds_for_width(2, 10, 1) == 1


@pytest.mark.parametrize(
    ("target", "bracket_width", "rounds_run", "max_rounds", "m", "s"),
    # the widest gap of the grid, 9000, needs 3 rounds to reach 50 and 4 to reach 1 (9000 ->
    # 900 -> 90 -> 9 -> 1); M = 4 grid sizes + max_rounds × 9; S = ⌈2·ln(2M/δ)/ε²⌉ at
    # ε = 0.4, δ = 0.05: 12.5·ln(1240) = 89.04 and 12.5·ln(1600) = 92.22
    [(50, 9, 2, 3, 31, 90), (1, 1, 3, 4, 40, 93)],
)
def test_refinement_stops_at_the_target_width_on_a_known_crossing(
    target, bracket_width, rounds_run, max_rounds, m, s
):
    """Noise-free L(n) = 0.1 + 0.8·exp(−n/400), 0-1 loss, ε = 0.4: Algorithm 2 accepts
    L̂ ≤ ε/2 = 0.2, first at n* = ⌈400·ln 8⌉ = 832. The grid 10, 100, 1000, 10000 brackets it
    in (100, 1000]; each round of 10 bins divides the width by 10 (900 → 90 → 9 → 1), and the
    search stops at the first bracket no wider than the target."""
    calls = []
    evaluate = synthetic_evaluator(calls=calls)
    coarse = evaluate(np.array([10, 100, 1000, POOL]), [0, 1])
    calls.clear()
    refined = recursive_grid_search(
        coarse, evaluate, 0.4, target_width=target, delta=0.05, metric="error"
    )
    crossing = first_n_below(0.2)
    assert crossing == 832
    lo, hi = refined.bracket
    assert lo < crossing <= hi and hi - lo == bracket_width <= target
    assert refined.result.value == hi and refined.width_reached
    assert refined.rounds_run == rounds_run
    assert refined.max_rounds == rounds_for_width(9000, 10, target) == max_rounds
    # it stopped as soon as the target was met: one round fewer leaves a wider bracket
    earlier = recursive_grid_search(
        coarse, synthetic_evaluator(), 0.4, rounds=rounds_run - 1, delta=0.05, metric="error"
    )
    assert earlier.bracket[1] - earlier.bracket[0] > target
    assert refined.guarantee.n_estimates == m == 4 + max_rounds * 9
    assert refined.guarantee.draws_required == s == math.ceil(2 * math.log(2 * m / 0.05) / 0.16)
    # first round: the grid topped up to S seeds in increasing order until one reached ε/2
    # (10, 100, then 1000), never 10000; later rounds: S fresh seed ids each
    top_ups = [(sizes, seeds) for sizes, seeds in calls if len(sizes) == 1]
    assert [sizes for sizes, _ in top_ups] == [[10], [100], [1000]]
    assert all(seeds == list(range(2, s)) for _, seeds in top_ups)
    rounds = calls[len(top_ups) :]
    assert len(rounds) == rounds_run
    used = set(range(s))
    for sizes, seeds in rounds:
        assert 1 <= len(sizes) <= 9 and len(seeds) == s and used.isdisjoint(seeds)
        used |= set(seeds)
    assert refined.guarantee.holds and refined.guarantee.draws == s
    assert "Theorem 5: m_εSC ≤" in str(refined)


def test_without_target_or_rounds_one_round_is_run():
    evaluate = synthetic_evaluator()
    coarse = evaluate(np.array([10, 100, 1000, POOL]), [0])
    refined = recursive_grid_search(coarse, evaluate, 0.2, metric="error")  # rule "last"
    assert refined.max_rounds == 1 and refined.rounds_run == 1
    # rule "last" accepts L̂ ≤ ε = 0.2: first the grid point 1000, then among the round's
    # sizes 190, 280, ..., 910 (100 + 90j) first 910 (L = 0.182; L(820) = 0.203)
    assert refined.bracket == (820, 910)
    assert refined.guarantee.delta is None and not refined.guarantee.holds
    assert not refined.width_reached  # no target requested


@pytest.mark.slow
def test_theorem_5_coverage_is_measured_on_bernoulli_draws():
    """Each draw is the 0-1 loss on one test point (Bernoulli(L(n))), as in Theorem 5's proof.
    With S draws per size the search never returns m̂ below m_εSC = 393 (L ≤ ε = 0.4) in 25
    repetitions (the theorem allows a fraction δ = 0.1); with one draw per size it mostly
    does, and says the guarantee does not hold."""
    m_sc = first_n_below(0.4)
    assert m_sc == 393
    below_with_s, below_with_one = [], []
    for rep in range(25):
        evaluate = synthetic_evaluator(bernoulli=True, rep=rep)
        coarse = evaluate(np.array([10, 100, 1000, POOL]), [0])
        with_s = recursive_grid_search(coarse, evaluate, 0.4, delta=0.1, rounds=2, metric="error")
        assert with_s.guarantee.holds
        below_with_s.append(with_s.bracket[1] < m_sc)
        one = recursive_grid_search(coarse, evaluate, 0.4, rounds=2, metric="error", rule="half")
        assert not one.guarantee.holds and "S draws" in one.guarantee.unmet[0]
        below_with_one.append(one.bracket[1] < m_sc and not one.result.lower_bound)
    assert np.mean(below_with_s) <= 0.1
    assert np.mean(below_with_one) > 0.5


def test_guarantee_reports_each_unmet_condition():
    evaluate = synthetic_evaluator()
    coarse = evaluate(np.array([10, 100, 1000, POOL]), [0, 1])
    # cross-entropy is not bounded in [0, 1]; rule "last" does not keep the ε/2 margin
    unbounded = recursive_grid_search(coarse, evaluate, 0.4, delta=0.05, metric="loss")
    assert not unbounded.guarantee.holds
    assert [c.split(":")[0] for c in unbounded.guarantee.unmet] == ["bounded loss"]
    last = recursive_grid_search(coarse, evaluate, 0.4, delta=0.05, metric="error", rule="last")
    assert [c.split(":")[0] for c in last.guarantee.unmet] == ["threshold ε/2"]
    # never reached within the pool: only a lower bound, no m̂
    never = recursive_grid_search(coarse, evaluate, 0.1, delta=0.05, metric="error")
    assert never.result.lower_bound and never.rounds_run == 0 and not never.width_reached
    assert [c.split(":")[0] for c in never.guarantee.unmet] == ["ε/2 reached"]
    # an estimate that rises by more than ε (0.88 at n = 10, 1.0 at n = 100) refutes the
    # decreasing L the theorem assumes
    rising = coarse.points.assign(
        loss=lambda p: np.where(p["n"] == 100, 1.0, p["loss"]),
        loss_truncated=lambda p: np.where(p["n"] == 100, 1.0, p["loss_truncated"]),
        accuracy=lambda p: np.where(p["n"] == 100, 0.0, p["accuracy"]),
    )
    bumped = LossDataCurve("bumped", rising, 2, POOL, 1)
    shaky = recursive_grid_search(bumped, evaluate, 0.11, metric="error")
    unmet = [c.split(":")[0] for c in shaky.guarantee.unmet]
    assert unmet == ["threshold ε/2", "S draws", "L decreasing in n"]
    assert "refuted" in shaky.guarantee.unmet[2]
    payload = unbounded.to_dict()
    assert payload["guarantee"]["holds"] is False and payload["target_width"] is None


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"target_width": 0}, "target_width must be an integer >= 1; got 0"),
        ({"target_width": 2.5}, "target_width must be an integer; got 2.5"),
        ({"delta": 1.0}, "delta must be a probability in (0, 1)"),
        ({"delta": 0}, "delta must be a probability in (0, 1)"),
        ({"rounds": 0}, "rounds must be an integer >= 1; got 0"),
        ({"points": 1}, "points must be an integer >= 2; got 1"),
        ({"rule": "first"}, "rule must be one of ['last', 'half']; got 'first'"),
        ({"metric": "accuracy"}, "metric must be one of"),
    ],
)
def test_new_arguments_are_refused_up_front_by_name(keywords, message):
    calls = []
    evaluate = synthetic_evaluator(calls=calls)
    coarse = evaluate(np.array([10, 100, 1000]), [0])
    calls.clear()
    with pytest.raises(ValueError) as error:
        recursive_grid_search(coarse, evaluate, 0.4, **keywords)
    assert message in str(error.value)
    assert calls == []  # nothing evaluated before the refusal
    with pytest.raises(ValueError, match="epsilon"):
        recursive_grid_search(coarse, evaluate, 1.5, metric="error", delta=0.1)
    with pytest.raises(ValueError, match="evaluate must be a function"):
        recursive_grid_search(coarse, "train", 0.4)
    for bad in ({"epsilon": 0.0}, {"delta": 1.5}, {"n_estimates": 0}):
        arguments = {"epsilon": 0.1, "delta": 0.05, "n_estimates": 10} | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            evaluations_per_size(**arguments)


@pytest.mark.slow
def test_refinement_with_delta_on_digits_draws_s_probes(digits, coarse):
    """Real probes: 0-1 loss, ε = 0.6 (threshold 0.3, crossed between 20 and 200), δ = 0.5,
    4 bins: M = 3 + 3 = 6, S = ⌈2·ln(24)/0.36⌉ = 18 seeds at every consulted size."""
    refined = pm.refine_sample_complexity(
        digits, coarse, 0.6, delta=0.5, points=4, metric="error", execution=Execution(n_jobs=1)
    )
    s = math.ceil(2 * math.log(2 * 6 / 0.5) / 0.6**2)
    assert refined.guarantee.draws_required == s == 18
    seeds = refined.curve.points.groupby("n")["seed"].nunique()
    lo, hi = refined.bracket
    assert 20 <= lo < hi <= 200 and refined.rounds_run == 1
    assert (seeds.loc[[n for n in seeds.index if n <= hi]] >= s).all()
    assert seeds.loc[1297] == 2  # never consulted: not topped up
    errors = 1 - refined.curve.mean("accuracy")
    assert errors.loc[hi] <= 0.3 < errors.loc[lo]
    assert refined.guarantee.holds, refined.guarantee.unmet
