"""Choices made on development sentences held out of the pool, never on the test sentences: the
split by hand, the Laplace scale of a family's test codelength (an overfit depth probe), the
rank of the layer table and of the structural method's summaries, and the stored forms that
say so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from structural_trees import random_heads

from probemeter.structural.family import POINT_COLUMNS, StructuralFamily, structural_probes
from probemeter.structural.layers import StructuralLayers
from probemeter.structural.method import StructuralMethod
from probemeter.structural.scoring import (
    fitted_scale,
    predict_sentences,
    sentence_codelengths,
    uniform_codelength,
)
from probemeter.structural.training import StructuralTraining
from probemeter.structural.trees import TreeData, development_split


def test_development_split_by_hand():
    pool = np.array([3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377])
    order = pool[np.random.default_rng(7).permutation(11)]
    train, dev = development_split(pool, 0.1, random_state=7)
    # ⌈0.1 · 11⌉ = 2: the last two of the seeded order, both parts sorted
    assert dev.tolist() == sorted(order[-2:].tolist())
    assert train.tolist() == sorted(order[:-2].tolist())
    again = development_split(pool, 0.1, random_state=7)
    assert [part.tolist() for part in again] == [train.tolist(), dev.tolist()]
    train, dev = development_split([4, 9], 0.5)  # at least one sentence is left to train on
    assert train.size == 1 and dev.size == 1 and sorted([*train, *dev]) == [4, 9]
    with pytest.raises(ValueError, match="at least 2 sentences"):
        development_split([4])
    with pytest.raises(ValueError, match="holdout"):
        development_split(pool, 1.0)


@pytest.mark.slow
def test_an_overfit_depth_probe_is_coded_with_its_development_scale():
    """d = r = 200, 96 training sentences of 5-9 words, features that carry no tree: the probe
    fits its training depths (L1 loss 0.12) and predicts nothing. The scale of its test code
    is fitted on the 11 development sentences (1.08), not on its training sentences (0.07),
    and its test codelength stays below the uniform code's; the training-sentence scale would
    code the test sentences at 1.8 times the uniform code."""
    rng = np.random.default_rng(0)
    heads = [random_heads(rng, int(rng.integers(5, 10))) for _ in range(137)]
    trees = TreeData(tuple(heads))
    features = (0.1 * np.random.default_rng(0).normal(size=(trees.n_words, 200))).astype(np.float32)
    split = (np.arange(107), np.arange(107, 137))
    config = StructuralTraining(epochs=40, batch_size=8, lr=3e-3)
    family = structural_probes(features, trees, "depth", ranks=[200], split=split, config=config)
    row = family.points.iloc[0]
    train, dev = development_split(split[0], 0.1, config.random_state)
    assert (family.n_pool, family.n_dev, row["n_train"]) == (107, 11, 96) and dev.size == 11
    projection = family.projections[0]
    on = {
        name: predict_sentences(projection, features, trees, "depth", part)
        for name, part in (("train", train), ("dev", dev), ("test", split[1]))
    }
    assert row["scale"] == pytest.approx(fitted_scale(on["dev"], "depth"), rel=1e-9)
    assert row["codelength"] == pytest.approx(
        sentence_codelengths(on["test"], "depth", row["scale"]).sum(), rel=1e-9
    )
    uniform = uniform_codelength(trees, "depth", split[1])
    assert row["uniform_codelength"] == pytest.approx(uniform)
    assert row["codelength"] < 0.9 * uniform
    in_sample = fitted_scale(on["train"], "depth")
    assert row["train_loss"] < 0.2 and in_sample < row["scale"] / 10
    assert sentence_codelengths(on["test"], "depth", in_sample).sum() > 1.5 * uniform
    assert family.metadata["rank_chosen_on"] == "dev: 11 sentences held out of the pool"


def _family(target: str, dev: list[float], test: list[float], seeds: int = 1) -> StructuralFamily:
    """A family of ranks 1, 2, 4 (``seeds`` probes each) with the given development and test
    headline scores per probe (rank-major), every other score 0.5."""
    ranks = [r for r in (1, 2, 4) for _ in range(seeds)]
    metric = "uuas" if target == "distance" else "root_accuracy"
    other = "root_accuracy" if target == "distance" else "uuas"
    points = pd.DataFrame(
        {
            **{column: np.full(len(ranks), 0.5) for column in POINT_COLUMNS},
            "rank": ranks,
            "seed": list(range(seeds)) * 3,
            f"dev_{metric}": dev,
            metric: test,
            f"dev_{other}": np.nan,
            other: np.nan,
            "dev_spearman": [0.1 * r for r in ranks],
            "spearman": [0.01 * r for r in ranks],
            "codelength": [100.0 * r for r in ranks],
        }
    )
    return StructuralFamily("layer", target, points, n_pool=40, n_dev=4, n_test=10)


def test_the_layer_table_reports_test_scores_at_the_rank_chosen_on_dev():
    # development scores pick rank 2 (distance) and rank 1 (depth); the test scores would pick 4
    distance = _family("distance", [0.4, 0.7, 0.6], [0.3, 0.5, 0.9])
    depth = _family("depth", [0.8, 0.7, 0.6], [0.2, 0.4, 0.6])
    layers = StructuralLayers((("3", distance, depth),))
    row = layers.table().loc["3"]
    assert (row["distance_rank"], row["depth_rank"]) == (2, 1)
    assert (row["uuas"], row["root_accuracy"]) == (0.5, 0.2)
    assert (row["dspr"], row["nspr"]) == (pytest.approx(0.02), pytest.approx(0.01))
    assert (row["distance_nats"], row["depth_nats"]) == (200.0, 100.0)
    text = layers.format("markdown")
    assert "Ranks chosen on dev: 4 sentences held out of the pool" in text
    assert "scores on the 10 test sentences" in text
    assert StructuralLayers.from_dict(layers.to_dict()).table().equals(layers.table())


def test_summaries_test_at_the_dev_rank_and_select_on_dev():
    from probemeter._summary import SeedCorrectness

    distance = _family(
        "distance", [0.4, 0.4, 0.7, 0.5, 0.6, 0.6], [0.3] * 2 + [0.5, 0.6] + [0.9] * 2, 2
    )
    depth = _family("depth", [0.9, 0.7, 0.6, 0.6, 0.5, 0.5], [0.1, 0.3] + [0.4] * 2 + [0.6] * 2, 2)
    correctness = SeedCorrectness(
        (0, 1), (np.array([1, 0], bool), np.array([1, 1], bool)), "digest", 36, np.array([0, 0])
    )
    result = {
        "name": "minilm-3",
        "families": {"distance": distance.to_dict(), "depth": depth.to_dict()},
        "correctness": correctness.to_dict(),
        "rank_chosen_on": distance.rank_chosen_on,
    }
    summary = StructuralMethod().summaries([result])["minilm-3"]
    # rank 2 (development means 0.4, 0.6, 0.6: the lowest rank on ties) and rank 1 (0.8)
    uuas, root = summary.estimates["uuas"], summary.estimates["root_accuracy"]
    assert (uuas.value, uuas.low, uuas.high) == (pytest.approx(0.55), 0.5, 0.6)
    assert (root.value, root.low, root.high) == (pytest.approx(0.2), 0.1, 0.3)
    assert summary.estimates["dspr"].value == pytest.approx(0.02)
    assert summary.estimates["nspr"].value == pytest.approx(0.01)
    assert summary.accuracy == uuas
    assert summary.selection["uuas"].value == pytest.approx(0.6)
    assert summary.selection["root_accuracy"].value == pytest.approx(0.8)
    assert summary.selection["dspr"].value == pytest.approx(0.2)
    assert summary.selection["nspr"].value == pytest.approx(0.1)
    assert summary.selection_split == "dev: 4 sentences held out of the pool"
    assert summary.correctness.clusters.tolist() == [0, 0]
    table = StructuralMethod().table({"minilm-3": summary}, [result], "markdown")
    assert "Ranks chosen on dev: 4 sentences held out of the pool" in table
    cells = [cell.strip() for cell in table.splitlines()[2].strip("|").split("|")]
    assert cells == [
        "minilm-3",
        "0.55 [0.5, 0.6]",
        "0.02 [0.02, 0.02]",
        "2",
        "0.2 [0.1, 0.3]",
        "0.01 [0.01, 0.01]",
        "1",
    ]


def test_a_family_stored_by_an_older_version_is_refused():
    payload = _family("distance", [0.4, 0.7, 0.6], [0.3, 0.5, 0.9]).to_dict()
    del payload["schema"]
    with pytest.raises(ValueError, match="older version, which fitted the Laplace scale"):
        StructuralFamily.from_dict(payload)
