"""The structural curve's truncated loss (Whitney et al. 2021, App. A: a loss in [0, 1] per
independently drawn example): each target's codelength truncated at 1 nat, averaged over its
sentence, by hand against scipy's Laplace; the curve's points and first block from it; SDL
with the Hoeffding interval and εSC on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import laplace
from structural_trees import random_heads, tree_embedding

from probemeter.curves import measures
from probemeter.data import subset_permutation
from probemeter.structural.codes import StructuralCurve, holdout_split, structural_curve
from probemeter.structural.likelihood import UNIFORM_WEIGHT
from probemeter.structural.scoring import (
    SentencePredictions,
    fitted_scale,
    predict_sentences,
    sentence_truncated_losses,
    uniform_truncated_losses,
)
from probemeter.structural.training import ProbeSpec, StructuralTraining, fit_structural_probes
from probemeter.structural.trees import TreeData


def _code(y: float, mu: float, lo: float, hi: float, b: float) -> float:
    """−ln Q(y | μ, b) from scipy's Laplace CDF (the likelihood module's definition)."""
    cdf = lambda x: laplace.cdf(x, mu, b)  # noqa: E731
    mass = (cdf(y + 0.5) - cdf(y - 0.5)) / (cdf(hi + 0.5) - cdf(lo - 0.5))
    return -math.log((1 - UNIFORM_WEIGHT) * mass + UNIFORM_WEIGHT / (hi - lo + 1))


def test_truncated_losses_by_hand():
    # depths of "a <- b -> c" (1, 0, 1) on the support 0..2, and a one-word sentence (0 on 0..0)
    predictions = SentencePredictions(
        (0, 1),
        (np.array([1.1, 0.2, 2.9]), np.array([0.4])),
        (np.array([1.0, 0.0, 1.0]), np.array([0.0])),
    )
    b = 0.5
    codes = [_code(1, 1.1, 0, 2, b), _code(0, 0.2, 0, 2, b), _code(1, 2.9, 0, 2, b)]
    assert codes[0] < 1 and codes[1] < 1 and codes[2] > 1  # the last is truncated
    expected = (codes[0] + codes[1] + 1.0) / 3
    losses = sentence_truncated_losses(predictions, "depth", b)
    np.testing.assert_allclose(losses, [expected, 0.0], rtol=1e-10)
    # distances of the same sentence: pairs (0, 1), (0, 2), (1, 2) at 1, 2, 1 on 1..2; a
    # one-word sentence has no pair and costs nothing
    distances = SentencePredictions(
        (0, 1),
        (np.array([[0, 1.0, 1.6], [1.0, 0, 3.0], [1.6, 3.0, 0]]), np.zeros((1, 1))),
        (np.array([[0, 1.0, 2.0], [1.0, 0, 1.0], [2.0, 1.0, 0]]), np.zeros((1, 1))),
    )
    pairs = [_code(1, 1.0, 1, 2, b), _code(2, 1.6, 1, 2, b), _code(1, 3.0, 1, 2, b)]
    expected = np.mean(np.minimum(pairs, 1.0))
    np.testing.assert_allclose(
        sentence_truncated_losses(distances, "distance", b), [expected, 0.0], rtol=1e-10
    )
    # the uniform code's: min(ln(support), 1) per target, here of 3-, 1- and 5-word sentences
    trees = TreeData(((2, 0, 2), (0,), (0, 1, 2, 3, 4)))
    np.testing.assert_allclose(uniform_truncated_losses(trees, "depth", [0, 1, 2]), [1.0, 0.0, 1.0])
    np.testing.assert_allclose(
        uniform_truncated_losses(trees, "distance", [0, 1, 2]), [math.log(2), 0.0, 1.0]
    )


def _corpus(seed: int) -> tuple[TreeData, np.ndarray]:
    """40 random trees of 3-7 words: their exact depth embedding plus noise (9 dims)."""
    rng = np.random.default_rng(seed)
    heads = [random_heads(rng, int(rng.integers(3, 8))) for _ in range(40)]
    trees = TreeData(tuple(heads))
    noise = 0.05 * rng.normal(size=(trees.n_words, 9))
    embedding = np.concatenate([tree_embedding(h, 9) for h in heads])
    return trees, (noise + embedding).astype(np.float32)


def test_the_curve_measures_truncated_losses_per_target():
    trees, features = _corpus(1)
    config = StructuralTraining(epochs=15, batch_size=8, lr=1e-2)
    split = (np.arange(30), np.arange(30, 40))
    result = structural_curve(
        features, trees, "depth", rank=9, sizes=(4, 12, 30), seeds=2, split=split, config=config
    )
    points = result.curve.points
    for point in points.itertuples():
        order = subset_permutation(30, config.random_state, point.seed)
        train, held = holdout_split(order[: point.n])
        [projection] = fit_structural_probes(
            features, trees, "depth", [ProbeSpec(9, point.seed, train)], config
        )
        scale = fitted_scale(predict_sentences(projection, features, trees, "depth", held), "depth")
        tested = predict_sentences(projection, features, trees, "depth", split[1])
        y, mu = np.concatenate(tested.gold), np.concatenate(tested.predicted)
        per_sentence, start = [], 0
        for gold in tested.gold:
            n = gold.size
            codes = [_code(y[i], mu[i], 0, n - 1, scale) for i in range(start, start + n)]
            per_sentence.append(np.mean(np.minimum(codes, 1.0)))
            start += n
        assert point.loss_truncated == pytest.approx(np.mean(per_sentence), rel=1e-6)
    assert points.loss_truncated.between(0, 1).all()
    mean = result.curve.mean("loss_truncated")
    assert mean.loc[30] < 0.3 < mean.loc[12] < mean.loc[4] <= 1
    lengths = trees.lengths[:30]
    assert result.first_block_truncated == pytest.approx(np.mean(np.minimum(np.log(lengths), 1.0)))
    # SDL on the truncated loss, with the first block's truncated uniform cost, by hand
    epsilon = 0.3
    sdl = result.measure("sdl", epsilon, metric="loss_truncated", delta=0.05)
    expected = (
        4 * max(result.first_block_truncated - epsilon, 0)
        + 8 * max(mean.loc[4] - epsilon, 0)
        + 18 * max(mean.loc[12] - epsilon, 0)
        + 0 * max(mean.loc[30] - epsilon, 0)
    )
    assert sdl.value == pytest.approx(expected)
    assert 0 < sdl.value and not sdl.lower_bound
    assert sdl.half_width == pytest.approx(measures.hoeffding_half_width(30, 3, 2, 0.05))
    complexity = result.measure("sample_complexity", epsilon, metric="loss_truncated")
    assert complexity.value == 30 and not complexity.lower_bound
    with pytest.raises(ValueError, match="first_block: give the first block's error rate"):
        result.measure("description_length", metric="error")
    # ε of the loss in nats per sentence is bounded by the sentences' uniform code, which is
    # far above ln K of one target: a tolerance between the two is a real one
    per_sentence = result.first_block / 2
    assert per_sentence > math.log(result.curve.n_classes)
    assert result.measure("sdl", per_sentence).value >= 0
    with pytest.raises(ValueError, match="epsilon"):
        result.measure("sample_complexity", result.first_block * 1.01)
    restored = StructuralCurve.from_dict(result.to_dict())
    assert restored.first_block_truncated == result.first_block_truncated
    stale = result.to_dict()
    del stale["schema"], stale["first_block_truncated"]
    with pytest.raises(ValueError, match=r"loss_truncated was min\(nats per sentence, 1\)"):
        StructuralCurve.from_dict(stale)
