"""The online codes and loss-data curves of a layer sweep's two targets trained in one stacked
call (structural_online_codes, structural_curves) against each (layer, target) alone, the
one-target path every code took before; the scores computed from the gold side kept in the
trees' memo against the same scores computed afresh; and Spearman's correlations of a
length's sentences ranked together against one sentence at a time."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest
from structural_trees import random_heads

from probemeter.structural.codes import (
    structural_curve,
    structural_curves,
    structural_online_code,
    structural_online_codes,
)
from probemeter.structural.evaluation import (
    minimum_spanning_edges,
    spearman_by_length,
    uuas_counts,
)
from probemeter.structural.scoring import (
    predict_sentences,
    score,
    spanning_edges,
    target_codes,
)
from probemeter.structural.training import StructuralTraining
from probemeter.structural.trees import TreeData

CONFIG = StructuralTraining(epochs=3, batch_size=8, lr=1e-2, random_state=1)
TIMESTEPS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
SIZES = (4, 16, 60)
#: a block probe's B trained with the other target beside it against alone: below rank 8
#: the stacked product has other rows than the one-target one (2r against r, both under the
#: narrow-output threshold), which MKL sums in another order: float32 rounding carried
#: through Adam, as the joint trainer's B against the one-probe loop (test_batched_layers)
RTOL = 1e-4


@pytest.fixture(scope="module")
def sweep() -> tuple[TreeData, list[np.ndarray]]:
    """120 random trees of 1-30 words and three layers of Gaussian features of different
    scales."""
    rng = np.random.default_rng(7)
    lengths = np.minimum(rng.geometric(1 / 10, size=120), 30)
    trees = TreeData(tuple(random_heads(rng, int(n)) for n in lengths))
    layers = [(s * rng.normal(size=(trees.n_words, 16))).astype(np.float32) for s in (0.3, 1, 2)]
    return trees, layers


def _codes_and_curves(trees, layers, rank):
    options = {"rank": rank, "seeds": 2, "config": CONFIG}
    codes = structural_online_codes(layers, trees, timesteps=TIMESTEPS, **options)
    curves = structural_curves(layers, trees, sizes=SIZES, **options)
    alone = [
        {
            target: (
                structural_online_code(
                    features, trees, target, timesteps=TIMESTEPS, name=f"layer {n}", **options
                ),
                structural_curve(
                    features, trees, target, sizes=SIZES, name=f"layer {n}", **options
                ),
            )
            for target in ("distance", "depth")
        }
        for n, features in enumerate(layers)
    ]
    return codes, curves, alone


@pytest.mark.numerics
@pytest.mark.parametrize("rank", [8, 13])
def test_the_joint_sweep_codes_each_layer_and_target_as_alone_bit_for_bit(sweep, rank):
    trees, layers = sweep
    codes, curves, alone = _codes_and_curves(trees, layers, rank)
    assert len(codes) == len(curves) == 3
    for joint_codes, joint_curves, own in zip(codes, curves, alone, strict=True):
        assert list(joint_codes) == list(joint_curves) == ["distance", "depth"]
        for target, (code, curve) in own.items():
            together = joint_codes[target]
            assert (together.name, together.target, together.rank) == (code.name, target, rank)
            assert together.ends == code.ends and together.n == code.n
            columns = ["seed", "block", "train_size", "codelength", "scale"]
            # exactly: the same probes (streams, minibatches, order of training), the same B
            np.testing.assert_array_equal(together.blocks[columns], code.blocks[columns])
            points = ["n", "seed", "loss", "loss_truncated", "accuracy"]
            np.testing.assert_array_equal(
                joint_curves[target].curve.points[points], curve.curve.points[points]
            )
            assert joint_curves[target].first_block == curve.first_block


def test_below_rank_8_the_joint_sweep_differs_by_float_rounding_only(sweep):
    trees, layers = sweep
    codes, curves, alone = _codes_and_curves(trees, layers, 3)
    for joint_codes, joint_curves, own in zip(codes, curves, alone, strict=True):
        for target, (code, curve) in own.items():
            for column in ("codelength", "scale"):
                np.testing.assert_allclose(
                    joint_codes[target].blocks[column], code.blocks[column], rtol=RTOL
                )
            for column in ("loss", "loss_truncated"):
                np.testing.assert_allclose(
                    joint_curves[target].curve.points[column],
                    curve.curve.points[column],
                    rtol=RTOL,
                )


def test_bad_targets_layers_and_names_of_a_sweep_are_named(sweep):
    trees, layers = sweep
    with pytest.raises(ValueError, match="targets must be distinct"):
        structural_online_codes(layers, trees, ("depth", "depth"))
    with pytest.raises(ValueError, match="target"):
        structural_curves(layers, trees, ("distance", "depths"))
    with pytest.raises(ValueError, match="layers is empty"):
        structural_curves([], trees)
    with pytest.raises(ValueError, match="names must name each of the 3 layers"):
        structural_online_codes(layers, trees, names=["a", "b"])


def test_scores_from_the_trees_memo_equal_scores_computed_afresh(sweep):
    trees, layers = sweep
    rng = np.random.default_rng(0)
    projection = rng.normal(size=(16, 5))
    sentences = rng.choice(trees.n_sentences, size=40, replace=False)
    for target in ("distance", "depth"):
        for _ in range(2):  # the second time from the memo
            kept = predict_sentences(projection, layers[1], trees, target, sentences)
            afresh = replace(kept, trees=None)
            for a, b in zip(target_codes(kept, target), target_codes(afresh, target), strict=True):
                np.testing.assert_array_equal(a, b)
            scored, expected = score(kept, trees, target, 1.5), score(afresh, trees, target, 1.5)
            np.testing.assert_equal(vars(scored), vars(expected))  # NaN where NaN
            if target == "distance":
                found = sum(
                    uuas_counts(p, trees.heads[s], trees.punctuation[s])[0]
                    for s, p in zip(kept.sentences, kept.predicted)
                )
                total = sum(
                    uuas_counts(p, trees.heads[s], trees.punctuation[s])[1]
                    for s, p in zip(kept.sentences, kept.predicted)
                )
                assert scored.uuas == found / total
                for s, p, edges in zip(kept.sentences, kept.predicted, spanning_edges(kept, trees)):
                    words = np.flatnonzero(~np.asarray(trees.punctuation[s]))
                    alone = (
                        minimum_spanning_edges(p[np.ix_(words, words)]) if words.size > 1 else ()
                    )
                    assert edges == {(int(words[i]), int(words[j])) for i, j in alone}
            assert scored.spearman == spearman_by_length(zip(kept.predicted, kept.gold))[0]
    assert trees.memo  # filled as it scored
    # the memo stays with its trees: pickled (to a worker) without it, equal trees otherwise
    copy = pickle.loads(pickle.dumps(trees))
    assert copy == trees and copy.memo == {}


def test_a_lengths_sentences_ranked_together_correlate_as_one_at_a_time():
    from scipy.stats import rankdata, spearmanr

    rng = np.random.default_rng(5)
    pairs = []
    for n in (5, 7, 5, 3, 7, 50, 51, 5, 6):
        # integer predictions and gold values: many ties; one constant row
        predicted = rng.integers(0, 4, size=(n, n)).astype(float)
        predicted[0] = 1.0
        pairs.append((predicted, rng.integers(0, 6, size=(n, n)).astype(float)))
    pairs.append((rng.normal(size=6), rng.integers(0, 3, size=6).astype(float)))  # depths
    average, by_length = spearman_by_length(pairs)
    # the reference: one sentence at a time, each row's rho from its own average ranks
    expected: dict[int, list[float]] = {}
    for predicted, gold in pairs:
        p, g = np.atleast_2d(predicted), np.atleast_2d(gold)
        if not 5 <= p.shape[-1] <= 50:
            continue
        for a, b in zip(rankdata(p, axis=-1), rankdata(g, axis=-1)):
            a, b = a - a.mean(), b - b.mean()
            norm = np.sqrt((a**2).sum() * (b**2).sum())
            if norm > 0:
                expected.setdefault(p.shape[-1], []).append((a * b).sum() / norm)
                assert expected[p.shape[-1]][-1] == pytest.approx(spearmanr(a, b).statistic)
    means = {n: float(np.mean(values)) for n, values in sorted(expected.items())}
    assert by_length == means  # exactly
    assert average == float(np.mean(list(means.values())))


def test_spanning_trees_grown_together_are_those_of_one_matrix_at_a_time():
    from probemeter.structural.evaluation import spanning_parents

    rng = np.random.default_rng(9)
    for n, values in ((2, 3), (6, 3), (9, 2), (12, 50)):  # few values: many ties
        upper = rng.integers(0, values, size=(40, n, n)).astype(float)
        matrices = np.triu(upper, 1) + np.triu(upper, 1).transpose(0, 2, 1)
        parents = spanning_parents(matrices)
        for matrix, parent in zip(matrices, parents):
            edges = {(min(w, int(p)), max(w, int(p))) for w, p in enumerate(parent) if w}
            assert edges == minimum_spanning_edges(matrix)
    with pytest.raises(ValueError, match="NaN or infinite"):
        spanning_parents(np.full((1, 3, 3), np.nan))
    with pytest.raises(ValueError, match=r"\(k, n, n\)"):
        spanning_parents(np.zeros((3, 3)))
