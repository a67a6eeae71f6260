"""The batched family trainer against the one-probe reference (:func:`fit_one_probe`: plain
autograd and torch.optim.Adam on the same initial B and minibatches), and probes that learn an
exact tree embedding (UUAS = 1)."""

from __future__ import annotations

import numpy as np
import pytest
from structural_trees import random_heads

from probemeter.structural.evaluation import spearman_by_length
from probemeter.structural.family import structural_probes
from probemeter.structural.scoring import predict_sentences, score
from probemeter.structural.training import (
    ProbeSpec,
    StructuralTraining,
    fit_one_probe,
    fit_structural_probes,
)
from probemeter.structural.trees import TreeData, sentence_split


@pytest.mark.numerics
@pytest.mark.parametrize("target", ["distance", "depth"])
def test_the_batched_family_matches_one_probe_at_a_time(target):
    rng = np.random.default_rng(0)
    trees = TreeData(tuple(random_heads(rng, int(rng.integers(1, 9))) for _ in range(23)))
    features = rng.normal(size=(trees.n_words, 6)).astype(np.float32)
    config = StructuralTraining(epochs=3, batch_size=4, lr=1e-2, random_state=5)
    # two ranks, two seeds, subsets of different sizes: different step counts, partial batches
    specs = [
        ProbeSpec(rank, seed, rng.choice(23, size=size, replace=False))
        for rank, seed, size in [(2, 0, 23), (2, 1, 9), (3, 0, 3), (3, 1, 17), (2, 2, 1)]
    ]
    batched = fit_structural_probes(features, trees, target, specs, config)
    for spec, projection in zip(specs, batched):
        assert projection.shape == (6, spec.rank)
        expected = fit_one_probe(features, trees, target, spec, config)
        np.testing.assert_allclose(projection, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.numerics
def test_a_probe_does_not_depend_on_the_others_trained_with_it():
    rng = np.random.default_rng(1)
    trees = TreeData(tuple(random_heads(rng, 6) for _ in range(10)))
    features = rng.normal(size=(trees.n_words, 5)).astype(np.float32)
    config = StructuralTraining(epochs=2, batch_size=3)
    alone = ProbeSpec(2, 0, np.arange(10))
    together = [ProbeSpec(2, 1, np.arange(4)), alone, ProbeSpec(4, 0, np.arange(7))]
    np.testing.assert_array_equal(
        fit_structural_probes(features, trees, "distance", [alone], config)[0],
        fit_structural_probes(features, trees, "distance", together, config)[1],
    )


def test_the_exact_embedding_scores_uuas_one_and_spearman_one(exact_corpus):
    trees, features = exact_corpus
    # B = I realises every distance and depth exactly (and, on 0/1 features, in exact
    # float arithmetic, so tied distances stay tied)
    everything = np.arange(trees.n_sentences)
    identity = np.eye(features.shape[1])
    for target, headline in (("distance", "uuas"), ("depth", "root_accuracy")):
        scores = score(
            predict_sentences(identity, features, trees, target, everything), trees, target
        )
        assert getattr(scores, headline) == 1.0
        assert scores.spearman == pytest.approx(1.0, abs=1e-9)
        assert scores.loss == pytest.approx(0.0, abs=1e-9)


def test_trained_probes_recover_the_trees_of_an_exact_embedding(path_and_star_corpus):
    trees, features = path_and_star_corpus
    config = StructuralTraining(epochs=150, batch_size=10, lr=1e-2)
    for target, headline in (("distance", "uuas"), ("depth", "root_accuracy")):
        family = structural_probes(
            features, trees, target, ranks=(16,), test_size=0.25, config=config
        )
        row = family.points.iloc[0]
        assert row[headline] == 1.0
        # predictions within a few hundredths break the many ties of tree distances at
        # random, which caps Spearman's rho of an almost exact probe below 1: at the rho of
        # the gold values with their ties broken by tiny noise
        test = sentence_split(trees.n_sentences, 0.25, config.random_state)[1]
        assert row["spearman"] > _tie_broken_spearman(trees, target, test) - 0.03
        assert row["loss"] < 0.1
        assert row["codelength"] < 0.15 * row["uniform_codelength"]


def _tie_broken_spearman(trees: TreeData, target: str, sentences: np.ndarray) -> float:
    """Spearman's rho (length-averaged) of the gold targets against themselves plus noise of
    1e-6: the most an almost exact probe can reach."""
    rng = np.random.default_rng(0)
    pairs = []
    for s in sentences:
        gold = trees.distances(s) if target == "distance" else trees.depths(s)
        pairs.append((gold + 1e-6 * rng.normal(size=gold.shape), gold))
    return spearman_by_length(pairs)[0]


def test_a_rank_below_the_tree_dimension_cannot_fit_it(path_and_star_corpus):
    trees, features = path_and_star_corpus
    config = StructuralTraining(epochs=40, batch_size=10, lr=1e-2)
    family = structural_probes(features, trees, ranks=(1, 16), test_size=0.25, config=config)
    low, high = family.points.set_index("rank").loc[[1, 16], "loss"]
    assert low > 5 * high


def test_bad_inputs_are_named():
    trees = TreeData(((2, 0), (0, 1)))
    good = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"features must be \(n_words=4, d\)"):
        fit_structural_probes(np.zeros((3, 3)), trees, "distance", [ProbeSpec(1, 0, [0])])
    with pytest.raises(ValueError, match="target"):
        fit_structural_probes(good, trees, "heads", [ProbeSpec(1, 0, [0])])
    with pytest.raises(ValueError, match=r"outside 0\.\.1"):
        fit_structural_probes(good, trees, "depth", [ProbeSpec(1, 0, [2])])
    with pytest.raises(ValueError, match="rank"):
        ProbeSpec(0, 0, [0])
    with pytest.raises(ValueError, match="specs is empty"):
        fit_structural_probes(good, trees, "depth", [])
