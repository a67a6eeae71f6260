"""The discretised-Laplace codelength against scipy, the online code's block sums, the
loss-data curve with the curve measures, and the family's Pareto frontier and saved form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import laplace
from structural_trees import random_heads

from probemeter.curves import measures
from probemeter.mdl.online import block_ends
from probemeter.structural.codes import (
    StructuralCurve,
    StructuralOnlineCode,
    structural_curve,
    structural_online_code,
)
from probemeter.structural.family import StructuralFamily, structural_probes
from probemeter.structural.likelihood import (
    UNIFORM_WEIGHT,
    fit_laplace_scale,
    laplace_codelengths,
    uniform_codelengths,
)
from probemeter.structural.scoring import uniform_codelength
from probemeter.structural.training import StructuralTraining
from probemeter.structural.trees import TreeData


def test_laplace_codelengths_match_scipy_and_form_a_distribution():
    y = np.array([1.0, 2, 3, 5, 0])
    mu = np.array([1.2, 2.5, 2.0, 40.0, -3.0])
    lo, hi = np.array([1.0, 1, 1, 1, 0]), np.array([6.0, 6, 6, 6, 3])
    b = 0.7
    cdf = lambda x, m: laplace.cdf(x, m, b)  # noqa: E731
    truncated = (cdf(y + 0.5, mu) - cdf(y - 0.5, mu)) / (cdf(hi + 0.5, mu) - cdf(lo - 0.5, mu))
    mixed = (1 - UNIFORM_WEIGHT) * truncated + UNIFORM_WEIGHT / (hi - lo + 1)
    np.testing.assert_allclose(laplace_codelengths(y, mu, lo, hi, b), -np.log(mixed), rtol=1e-10)
    support = np.arange(1.0, 7)
    for mean in (-5.0, 0.3, 3.5, 1e4):
        codes = laplace_codelengths(support, np.full(6, mean), np.ones(6), np.full(6, 6.0), 2.0)
        assert np.exp(-codes).sum() == pytest.approx(1.0)
    # far tails stay finite, and a badly missed target costs at most ln(1/α) + uniform
    worst = laplace_codelengths(np.array([1.0]), np.array([1e6]), np.ones(1), np.array([9.0]), 1e-3)
    assert worst[0] <= -math.log(UNIFORM_WEIGHT) + math.log(9) + 1e-9
    assert uniform_codelengths(np.array([1.0]), np.array([9.0]))[0] == pytest.approx(math.log(9))
    with pytest.raises(ValueError, match="outside its support"):
        laplace_codelengths(np.array([7.0]), np.array([1.0]), np.ones(1), np.array([6.0]), 1.0)


def test_the_fitted_scale_minimises_the_training_codelength():
    rng = np.random.default_rng(0)
    y = rng.integers(1, 10, size=200).astype(float)
    mu = y + rng.laplace(scale=1.3, size=200)
    lo, hi = np.ones(200), np.full(200, 9.0)
    best = fit_laplace_scale(y, mu, lo, hi)
    total = lambda b: laplace_codelengths(y, mu, lo, hi, b).sum()  # noqa: E731
    assert total(best) <= min(total(best * 0.9), total(best * 1.1))
    assert 0.8 < best < 2.0


@pytest.fixture(scope="module")
def noisy_corpus():
    """Random trees with their exact embedding plus noise: a probe learns them partly."""
    rng = np.random.default_rng(2)
    heads = [random_heads(rng, int(rng.integers(5, 12))) for _ in range(64)]
    trees = TreeData(tuple(heads))
    features = np.zeros((trees.n_words, 11), dtype=np.float32)
    for s, h in enumerate(heads):
        start = trees.offsets[s]
        for v in range(len(h)):
            u = v
            while h[u] != 0:
                features[start + v, u] = 1.0
                u = h[u] - 1
    features += 0.3 * rng.normal(size=features.shape).astype(np.float32)
    return trees, features


CONFIG = StructuralTraining(epochs=20, batch_size=8, lr=1e-2)


def test_online_code_sums_its_blocks_and_beats_the_uniform_code(noisy_corpus):
    trees, features = noisy_corpus
    timesteps = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
    code = structural_online_code(
        features, trees, "depth", rank=11, timesteps=timesteps, seeds=2, config=CONFIG
    )
    assert code.ends == tuple(block_ends(64, timesteps))
    blocks = code.blocks
    assert len(blocks) == 2 * len(timesteps)
    first = blocks[blocks.block == 0]
    # the first block costs its uniform code; every block's uniform code is its targets'
    np.testing.assert_allclose(first.codelength, first.uniform_codelength)
    assert code.uniform_codelength == pytest.approx(uniform_codelength(trees, "depth", range(64)))
    per_seed = code.per_seed()
    np.testing.assert_allclose(per_seed.online, blocks.groupby("seed").codelength.sum())
    assert code.codelength == pytest.approx(per_seed.online.mean())
    assert code.codelength_bits == pytest.approx(code.codelength / math.log(2))
    assert code.compression > 1.5
    # block i is coded by the probe of the first t_{i-1} sentences: trained on all but the
    # last ⌈0.1·t_{i-1}⌉ of them, its scale fitted on those
    later = blocks[blocks.block > 0]
    assert (later.train_size + later.heldout_size == later.start).all()
    assert later.heldout_size.tolist() == [math.ceil(0.1 * t) for t in later.start]
    restored = StructuralOnlineCode.from_dict(code.to_dict())
    assert restored.codelength == pytest.approx(code.codelength)


def test_curve_measures_apply_with_the_sentence_first_block(noisy_corpus):
    trees, features = noisy_corpus
    result = structural_curve(
        features, trees, "distance", rank=11, sizes=(4, 12, 48), seeds=2, config=CONFIG
    )
    curve = result.curve
    assert curve.sizes.tolist() == [4, 12, 48] and curve.pool_size == 51 and curve.n_test == 13
    mean = curve.mean("loss")
    assert mean.iloc[-1] < mean.iloc[0]  # more sentences, shorter codes
    mdl = result.measure("description_length")
    expected = 4 * result.first_block + 8 * mean.loc[4] + 36 * mean.loc[12] + 3 * mean.loc[48]
    assert mdl.value == pytest.approx(expected)
    assert mdl.value == pytest.approx(
        measures.description_length(curve, first_block=result.first_block).value
    )
    assert result.measure("sdl", 1e-3).lower_bound  # the loss never reaches 0.001 nats
    assert StructuralCurve.from_dict(result.to_dict()).curve.to_dict() == curve.to_dict()
    assert set(result.to_frame().columns) >= {"n", "seed", "loss", "accuracy", "target"}


def test_family_frontier_hypervolume_and_round_trip(noisy_corpus):
    trees, features = noisy_corpus
    family = structural_probes(features, trees, ranks=(1, 2, 11), seeds=2, config=CONFIG)
    summary = family.summary()
    assert summary.index.tolist() == [1, 2, 11] and (summary.seeds == 2).all()
    front = family.frontier()
    assert front.index[0] == 1 and front["uuas"].is_monotonic_increasing
    assert 0 < family.hypervolume() <= summary["uuas"].max()
    assert StructuralFamily.from_dict(family.to_dict()).points.equals(family.points)
    assert len(family.projections) == 6 and family.projections[-1].shape == (11, 11)
    assert family.to_frame().target.eq("distance").all()
    with pytest.raises(ValueError, match="overlap"):
        structural_probes(features, trees, split=([0, 1], [1, 2]), config=CONFIG)


def test_uniform_codelength_by_hand():
    trees = TreeData(((2, 0, 2), (0,)))
    assert uniform_codelength(trees, "distance", [0, 1]) == pytest.approx(3 * math.log(2))
    assert uniform_codelength(trees, "depth", [0, 1]) == pytest.approx(3 * math.log(3))
