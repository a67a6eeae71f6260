"""Every (layer, probe kind, rank, seed) trained together (fit_structural_layers) against the
plain one-probe loop (fit_one_probe), on an EWT-like case: sentences of 1 to 40 words (padded
and packed minibatches of very different lengths), several layers, both probe kinds, ranks on
both sides of the narrow-product threshold; chunks of layers under a memory budget; the
families of a joint run against one family at a time."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from structural_trees import random_heads

from probemeter.structural import training
from probemeter.structural.family import structural_families, structural_probes
from probemeter.structural.training import (
    ProbeSpec,
    StructuralTraining,
    fit_one_probe,
    fit_structural_layers,
    layers_per_chunk,
    length_buckets,
    step_bytes,
)
from probemeter.structural.trees import TreeData

#: B of the batched trainer against the one-probe loop: float32 rounding of a different
#: summation order (Gram form, closed-form gradient, packed words), carried through Adam
RTOL, ATOL = 1e-4, 1e-6
#: scores of the joint families against one family at a time: the same probes within the
#: tolerance above, so losses agree to float32 rounding and UUAS/Spearman/root accuracy
#: (ranks of predictions) to the rare flip of a near tie
LOSS_RTOL = 1e-4


def _ewt_like(seed: int, sentences: int, dimension: int) -> tuple[TreeData, list[np.ndarray]]:
    """Random trees of 1-40 words (EWT's range, mostly short) and two layers of Gaussian
    features of different scales (the trainers' agreement does not depend on the values)."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.geometric(1 / 12, size=sentences), 40)
    trees = TreeData(tuple(random_heads(rng, int(n)) for n in lengths))
    return trees, [
        (scale * rng.normal(size=(trees.n_words, dimension))).astype(np.float32)
        for scale in (0.3, 1.0)
    ]


def _assert_same_probes(a: list[dict], b: list[dict]) -> None:
    """Every layer's probes of both kinds equal bit for bit."""
    for x, y in zip(a, b, strict=True):
        for target in ("distance", "depth"):
            for first, second in zip(x[target], y[target], strict=True):
                np.testing.assert_array_equal(first, second)


def test_every_probe_of_the_joint_run_matches_the_one_probe_loop():
    trees, layers = _ewt_like(0, 36, 20)
    rng = np.random.default_rng(1)
    config = StructuralTraining(epochs=2, batch_size=8, lr=1e-2, random_state=3)
    # ranks 3 (narrow: transposed products) and 18, two seeds, different training sets
    specs = [
        ProbeSpec(rank, seed, rng.choice(36, size=size, replace=False))
        for rank, seed, size in [(3, 0, 36), (3, 1, 11), (18, 0, 30), (18, 1, 5)]
    ]
    targets = ("distance", "depth")
    trained = fit_structural_layers(layers, trees, targets, specs, config)
    assert len(trained) == 2
    for layer, features in zip(trained, layers):
        assert list(layer) == list(targets)
        for target in targets:
            for spec, projection in zip(specs, layer[target]):
                assert projection.shape == (20, spec.rank)
                expected = fit_one_probe(features, trees, target, spec, config)
                np.testing.assert_allclose(projection, expected, rtol=RTOL, atol=ATOL)


def test_chunks_of_layers_train_the_same_probes_bit_for_bit():
    trees, layers = _ewt_like(2, 20, 8)
    layers = [*layers, layers[0] * 0.5]
    specs = [ProbeSpec(4, seed, np.arange(20)) for seed in range(2)]
    config = StructuralTraining(epochs=2, batch_size=6)
    whole = fit_structural_layers(layers, trees, ("distance", "depth"), specs, config)
    per_step = step_bytes(trees, ("distance", "depth"), specs, config, 8)
    longest = int(trees.lengths.max())
    gold = 4 * 20 * (longest * longest + longest)
    # the budget less the gold values of every sentence, in layers' steps
    for layers_fit in (1, 2, 3, 5):
        budget = (gold + layers_fit * per_step + 1) / 2**30
        assert layers_per_chunk(trees, ("distance", "depth"), specs, config, 8, budget) == (
            layers_fit
        )
    one_each = fit_structural_layers(
        layers, trees, ("distance", "depth"), specs, config, max_memory=1e-9
    )
    _assert_same_probes(whole, one_each)


def test_the_joint_families_score_as_one_family_at_a_time():
    trees, layers = _ewt_like(4, 60, 12)
    config = StructuralTraining(epochs=4, batch_size=10, lr=1e-2)
    options = {"ranks": (2, 16), "seeds": 2, "test_size": 0.25, "config": config}
    joint = structural_families(layers, trees, ("distance", "depth"), **options)
    for number, features in enumerate(layers):
        for target in ("distance", "depth"):
            alone = structural_probes(features, trees, target, name=f"layer {number}", **options)
            together = joint[number][target]
            assert together.name == alone.name and together.target == target
            columns = ["train_loss", "dev_loss", "loss", "scale", "codelength"]
            np.testing.assert_allclose(
                together.points[columns], alone.points[columns], rtol=LOSS_RTOL
            )
            headline = together.metric
            np.testing.assert_allclose(
                together.points[[headline, "spearman"]],
                alone.points[[headline, "spearman"]],
                atol=0.02,
            )


def test_bad_inputs_of_the_joint_trainer_are_named():
    trees = TreeData(((2, 0), (0, 1)))
    good = np.zeros((4, 3), dtype=np.float32)
    spec = ProbeSpec(1, 0, [0])
    with pytest.raises(ValueError, match="layers is empty"):
        fit_structural_layers([], trees, ("depth",), [spec])
    with pytest.raises(ValueError, match="targets must be distinct"):
        fit_structural_layers([good], trees, ("depth", "depth"), [spec])
    with pytest.raises(ValueError, match="targets must be distinct"):
        fit_structural_layers([good], trees, "depth", [spec])
    with pytest.raises(ValueError, match="target"):
        fit_structural_layers([good], trees, ("heads",), [spec])
    with pytest.raises(ValueError, match="max_memory"):
        fit_structural_layers([good], trees, ("depth",), [spec], max_memory=0)
    with pytest.raises(ValueError, match=r"features must be \(n_words=4, d\)"):
        fit_structural_layers([good, good[:3]], trees, ("depth",), [spec])
    with pytest.raises(ValueError, match="names must name each of the 1 layers"):
        structural_families([good], trees, names=["a", "b"])


def _padded_pairs(lengths: np.ndarray, buckets: list[np.ndarray], per_bucket: float) -> float:
    return sum(b.size * float(lengths[b].max()) ** 2 + per_bucket for b in buckets)


def test_length_buckets_cut_where_the_padded_pairs_are_fewest():
    per_bucket = training._BUCKET_PAIRS
    rng = np.random.default_rng(0)
    for _trial in range(30):
        lengths = np.minimum(rng.geometric(1 / 12, size=int(rng.integers(1, 41))), 75)
        lengths[rng.random(lengths.size) < 0.1] = 0  # padding sentences: in no bucket
        buckets = length_buckets(lengths)
        kept = lengths > 0
        # every sentence once, the shortest first, consecutive lengths per bucket
        joined = np.concatenate(buckets) if buckets else np.empty(0, dtype=np.int64)
        assert sorted(joined.tolist()) == np.flatnonzero(kept).tolist()
        assert np.all(np.diff(lengths[joined]) >= 0)
        assert len(buckets) <= 3
        if not kept.any():
            assert buckets == []
            continue
        # the least padded pairs of every cut into 1-3 buckets, by enumeration
        order = np.sort(lengths[kept])
        n = order.size
        best = min(
            sum(
                (end - begin) * float(order[end - 1]) ** 2 + per_bucket
                for begin, end in itertools.pairwise(edges)
                if end > begin
            )
            for a in range(n + 1)
            for c in range(a, n + 1)
            for edges in [(0, a, c, n)]
        )
        assert _padded_pairs(lengths, buckets, per_bucket) == pytest.approx(best)


def test_length_buckets_of_a_hand_example():
    # lengths 2, 2, 3 and 40: one bucket pads 4 sentences to 40 words (6,400 pairs); cutting
    # the 40 off costs 3·9 + 1,600 pairs and a bucket's fixed cost
    lengths = np.array([40, 2, 0, 3, 2])
    buckets = length_buckets(lengths)
    assert [b.tolist() for b in buckets] == [[1, 4, 3], [0]]


def test_padded_targets_of_chosen_sentences_are_those_of_all_trimmed():
    trees, _ = _ewt_like(5, 12, 4)
    chosen = np.array([7, 2, 9])
    longest = int(trees.lengths[chosen].max())
    for target in ("distance", "depth"):
        every = trees.padded(target)
        some = trees.padded(target, chosen)
        expected = (
            every[chosen][:, :longest, :longest]
            if target == "distance"
            else every[chosen][:, :longest]
        )
        np.testing.assert_array_equal(some, expected)


def test_sentences_no_probe_trains_on_do_not_change_the_probes():
    trees, layers = _ewt_like(2, 30, 10)
    specs = [ProbeSpec(4, seed, np.arange(0, 30, 2)) for seed in range(2)]
    config = StructuralTraining(epochs=2, batch_size=5)
    before = fit_structural_layers(layers, trees, ("distance", "depth"), specs, config)
    # every odd sentence's words changed: no probe trains on them
    changed = [layer.copy() for layer in layers]
    for s in range(1, 30, 2):
        for layer in changed:
            layer[trees.offsets[s] : trees.offsets[s + 1]] *= 1000
    after = fit_structural_layers(changed, trees, ("distance", "depth"), specs, config)
    _assert_same_probes(before, after)


@pytest.mark.slow
def test_worker_processes_train_the_same_probes_bit_for_bit(monkeypatch):
    trees, layers = _ewt_like(3, 40, 12)
    layers = [*layers, layers[0] * 2.0]
    specs = [ProbeSpec(rank, seed, np.arange(40)) for rank in (3, 8) for seed in range(2)]
    config = StructuralTraining(epochs=2, batch_size=8)
    alone = fit_structural_layers(layers, trees, ("distance", "depth"), specs, config)
    # however small the work, two workers train the (chunk of layers, rank) stacks
    monkeypatch.setattr(training, "_SMALL_WORK_FLOPS", 0)
    shared = fit_structural_layers(layers, trees, ("distance", "depth"), specs, config, n_jobs=2)
    _assert_same_probes(alone, shared)


def test_a_bad_n_jobs_is_refused_before_training():
    trees, layers = _ewt_like(4, 6, 4)
    with pytest.raises(ValueError, match="n_jobs"):
        fit_structural_layers(layers, trees, ("depth",), [ProbeSpec(2, 0, np.arange(6))], n_jobs=0)
