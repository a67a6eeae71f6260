"""The Laplace scale of the structural codes is fitted on held-out sentences: the split by hand,
the fit against its closed form and a brute-force search, the online code's block scales
recomputed independently, block i + 1's model blind to block i + 1's data, and a probe that
overfits random features no longer coded with its optimistic in-sample scale."""

from __future__ import annotations

import math

import numpy as np
import pytest
from structural_trees import random_heads, tree_embedding

from probemeter.data import subset_permutation
from probemeter.structural.codes import (
    HOLDOUT,
    holdout_split,
    structural_curve,
    structural_online_code,
)
from probemeter.structural.likelihood import (
    MAX_SCALE,
    fit_laplace_scale,
    laplace_codelengths,
)
from probemeter.structural.scoring import (
    fitted_scale,
    predict_sentences,
    sentence_codelengths,
    target_codes,
)
from probemeter.structural.training import ProbeSpec, StructuralTraining, fit_structural_probes
from probemeter.structural.trees import TreeData

CONFIG = StructuralTraining(epochs=15, batch_size=8, lr=1e-2)
TIMESTEPS = (1 / 8, 1 / 4, 1 / 2, 1.0)


def _corpus(dimension: int, noise: float, seed: int) -> tuple[TreeData, np.ndarray]:
    """32 random trees of 5–9 words; features: each word's root-path indicator (the exact
    depth embedding) in the first 9 dimensions plus Gaussian noise in all ``dimension``."""
    rng = np.random.default_rng(seed)
    heads = [random_heads(rng, int(rng.integers(5, 10))) for _ in range(32)]
    trees = TreeData(tuple(heads))
    noise = noise * rng.normal(size=(trees.n_words, dimension))
    embedding = np.concatenate([tree_embedding(h, dimension) for h in heads])
    return trees, (noise + embedding).astype(np.float32)


def test_holdout_split_by_hand():
    order = [5, 3, 8, 1, 9, 2, 7, 4, 6, 0]
    train, held = holdout_split(order)  # h = 0.1: ⌈1.0⌉ = 1 held out
    assert HOLDOUT == 0.1 and train.tolist() == order[:9] and held.tolist() == [0]
    train, held = holdout_split(order, 0.25)  # ⌈2.5⌉ = 3, the most recently sent
    assert train.tolist() == order[:7] and held.tolist() == [4, 6, 0]
    train, held = holdout_split([7, 2], 0.9)  # at least one sentence is left to train on
    assert train.tolist() == [7] and held.tolist() == [2]
    with pytest.raises(ValueError, match="at least 2 sentences"):
        holdout_split([3])
    with pytest.raises(ValueError, match="holdout"):
        holdout_split(order, 0.0)


def test_scale_fit_closed_form_and_brute_force():
    rng = np.random.default_rng(4)
    # wide support, b ≫ 1: the continuous Laplace's MLE, the mean absolute residual
    y = rng.integers(400, 600, size=4000).astype(float)
    mu = y + rng.laplace(scale=20.0, size=y.size)
    lo, hi = np.ones_like(y), np.full_like(y, 1000.0)
    assert fit_laplace_scale(y, mu, lo, hi) == pytest.approx(np.abs(y - mu).mean(), rel=0.01)
    # narrow supports, b < 1: against a brute-force grid of the total codelength
    y = rng.integers(1, 6, size=300).astype(float)
    mu = y + rng.laplace(scale=0.4, size=y.size)
    lo, hi = np.ones_like(y), np.full_like(y, 5.0)
    grid = np.exp(np.linspace(math.log(0.1), math.log(10.0), 4001))  # steps of 0.12 %
    totals = np.array([laplace_codelengths(y, mu, lo, hi, b).sum() for b in grid])
    fitted = fit_laplace_scale(y, mu, lo, hi)
    assert fitted == pytest.approx(grid[totals.argmin()], rel=1e-3)
    assert laplace_codelengths(y, mu, lo, hi, fitted).sum() <= totals.min() + 1e-6
    # every Q sums to 1 over its support {lo, …, hi}, whatever the scale: a proper code
    support = np.arange(1.0, 6.0)
    for b in (1e-3, fitted, 7.0, MAX_SCALE):
        codes = laplace_codelengths(support, np.full(5, 2.7), np.ones(5), np.full(5, 5.0), b)
        assert np.exp(-codes).sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("target", ["distance", "depth"])
def test_block_scales_are_fitted_on_the_heldout_prefix(target):
    trees, features = _corpus(12, 0.3, seed=1)
    code = structural_online_code(
        features, trees, target, rank=4, timesteps=TIMESTEPS, config=CONFIG, holdout=0.25
    )
    order = subset_permutation(32, CONFIG.random_state, 0)
    for row in code.blocks[code.blocks.block > 0].itertuples():
        cut = row.start - math.ceil(0.25 * row.start)  # the last quarter of t_i is held out
        train, held = order[:cut], order[cut : row.start]
        assert (row.train_size, row.heldout_size) == (train.size, held.size)
        [projection] = fit_structural_probes(
            features, trees, target, [ProbeSpec(4, 0, train)], CONFIG
        )
        y, mu, lo, hi, _ = target_codes(
            predict_sentences(projection, features, trees, target, held), target
        )
        assert row.scale == pytest.approx(fit_laplace_scale(y, mu, lo, hi), rel=1e-4)
        block = predict_sentences(projection, features, trees, target, order[row.start : row.end])
        assert row.codelength == pytest.approx(
            sentence_codelengths(block, target, row.scale).sum(), rel=1e-5
        )


def test_block_model_does_not_see_its_own_block():
    trees, features = _corpus(12, 0.3, seed=2)
    code = structural_online_code(
        features, trees, "distance", rank=4, timesteps=TIMESTEPS, config=CONFIG
    )
    order = subset_permutation(32, CONFIG.random_state, 0)
    # replace the trees of block 2's sentences (8, 16]: the same lengths, other structures
    rng = np.random.default_rng(9)
    heads = list(trees.heads)
    for s in order[8:16]:
        heads[s] = random_heads(rng, len(heads[s]))
    changed = structural_online_code(
        features, TreeData(tuple(heads)), "distance", rank=4, timesteps=TIMESTEPS, config=CONFIG
    )
    before, after = code.blocks.set_index("block"), changed.blocks.set_index("block")
    # blocks 0–1 and block 2's model (its scale) are unchanged; block 2's code is not
    np.testing.assert_allclose(after.codelength[:2], before.codelength[:2], rtol=1e-9)
    np.testing.assert_allclose(after.scale[:3], before.scale[:3], rtol=1e-9, equal_nan=True)
    assert after.codelength[2] != pytest.approx(before.codelength[2], rel=1e-3)
    # while block 3's model (scale fitted on the tail of the first 16) does see them
    assert after.scale[3] != pytest.approx(before.scale[3], rel=1e-6)


def test_an_overfitting_probe_gets_no_optimistic_scale():
    """Pure noise in 300 dimensions, more than the training words of any block probe: the
    probe fits its training targets closely but predicts nothing. Its in-sample scale is far
    too small and codes the next block much worse than the uniform code; the held-out scale
    sees the failure and codes every block within 1 % of the uniform code."""
    trees, features = _corpus(300, 1.0, seed=3)
    features = np.random.default_rng(0).normal(size=features.shape).astype(np.float32)
    config = StructuralTraining(epochs=60, batch_size=8, lr=1e-2)
    code = structural_online_code(
        features, trees, "depth", rank=32, timesteps=TIMESTEPS, config=config
    )
    assert 0.99 < code.compression <= 1.0
    order = subset_permutation(32, config.random_state, 0)
    for row in code.blocks[code.blocks.block > 0].itertuples():
        train, _ = holdout_split(order[: row.start])
        assert trees.lengths[train].sum() < 300  # more dimensions than training words
        [projection] = fit_structural_probes(
            features, trees, "depth", [ProbeSpec(32, 0, train)], config
        )
        in_sample = fitted_scale(
            predict_sentences(projection, features, trees, "depth", train), "depth"
        )
        assert in_sample < row.scale / 100
        block = predict_sentences(projection, features, trees, "depth", order[row.start : row.end])
        optimistic = sentence_codelengths(block, "depth", in_sample).sum()
        assert optimistic > 1.2 * row.uniform_codelength
        assert row.codelength < 1.01 * row.uniform_codelength


def test_curve_scales_never_see_the_test_sentences():
    trees, features = _corpus(12, 0.3, seed=4)
    split = (np.arange(24), np.arange(24, 32))
    kwargs = dict(rank=4, sizes=(4, 24), seeds=1, split=split, config=CONFIG)
    result = structural_curve(features, trees, "depth", **kwargs)
    # each loss: the test sentences under the scale fitted on the held-out pool sentences
    order = subset_permutation(24, CONFIG.random_state, 0)
    for point in result.curve.points.itertuples():
        train, held = holdout_split(order[: point.n])
        [projection] = fit_structural_probes(
            features, trees, "depth", [ProbeSpec(4, 0, train)], CONFIG
        )
        scale = fitted_scale(predict_sentences(projection, features, trees, "depth", held), "depth")
        tested = predict_sentences(projection, features, trees, "depth", split[1])
        expected = sentence_codelengths(tested, "depth", scale).sum() / 8
        assert point.loss == pytest.approx(expected, rel=1e-5)
    assert result.curve.metadata["holdout"] == HOLDOUT


def test_too_few_sentences_to_hold_one_out_are_refused():
    trees, features = _corpus(12, 0.3, seed=5)
    with pytest.raises(ValueError, match="first block"):
        structural_online_code(features, trees, timesteps=(1 / 32, 1.0), config=CONFIG)
    with pytest.raises(ValueError, match="sizes must be distinct"):
        structural_curve(features, trees, sizes=(1, 8), config=CONFIG)
    with pytest.raises(ValueError, match="holdout"):
        structural_curve(features, trees, sizes=(4, 8), holdout=1.0, config=CONFIG)
