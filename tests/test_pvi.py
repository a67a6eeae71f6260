"""Pointwise V-information (Ethayarajh et al. 2022): per-example values against a hand
computation from the probes' own log-probabilities and the training labels' frequencies, the
mean against the V-information difference of the curve's losses, aggregates, and the files."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from probemeter import Execution, Linear, ProbeData, TrainingConfig, loss_data_curve
from probemeter.curves.curve import LossDataCurve
from probemeter.data import nested_subset
from probemeter.pvi import PVIResult, null_codelengths, pointwise_v_information, pvi_figure
from probemeter.training.probe_runs import held_out_split

SIZES = [20, 60, 150]
CONFIG = TrainingConfig(steps=80, lr=1e-2)


def _data(n: int = 240, sentences: bool = False) -> ProbeData:
    """Three classes in four features, the third class rarer; with ``sentences``, rows in
    sentences of four."""
    rng = np.random.default_rng(0)
    labels = np.minimum(np.arange(n) % 5, 2)  # class 2 three times as frequent as 0 or 1
    X = rng.normal(size=(n, 4)) + 1.5 * labels[:, None]
    if not sentences:
        return ProbeData.from_arrays(X, labels, name="toy")
    data = ProbeData.from_arrays(X, labels, groups=np.arange(n) // 4, name="toy")
    return replace(data, clusters_train=data.groups_train, clusters_test=data.groups_test)


def _curve(data: ProbeData, **options) -> LossDataCurve:
    return loss_data_curve(
        data, Linear(), SIZES, seeds=2, config=CONFIG, execution=Execution(device="cpu", n_jobs=1),
        **options,
    )  # fmt: skip


def test_null_code_is_the_add_one_class_frequencies():
    train = np.array([0, 0, 0, 1])  # counts 3, 1, 0 of K = 3; n = 4
    bits = null_codelengths(train, [0, 1, 2], 3)
    np.testing.assert_allclose(bits, -np.log2([4 / 7, 2 / 7, 1 / 7]))


def test_hand_computation_on_three_classes():
    """PVI = −log2 p_null(y) + log2 p_probe(y | x), per seed, from log-probabilities given."""
    probabilities = np.array(  # two seeds' g[x](y) of four test examples' gold labels
        [[0.9, 0.5, 0.2, 0.6], [0.8, 0.25, 0.1, 0.6]]
    )
    labels = np.array([0, 1, 2, 2])
    train = [np.array([0, 0, 1, 2, 2, 2]), np.array([0, 1, 1, 2])]  # each seed's training labels
    result = pointwise_v_information(
        -np.log(probabilities), labels, train, 3, seeds=[3, 7], classes=("a", "b", "c")
    )
    null = [np.array([3 / 9, 2 / 9, 4 / 9]), np.array([2 / 7, 3 / 7, 2 / 7])]
    expected = np.stack([np.log2(p) - np.log2(q[labels]) for p, q in zip(probabilities, null)])
    np.testing.assert_allclose(result.values, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.pvi, expected.mean(axis=0), atol=1e-12)
    assert result.seeds == (3, 7) and result.labels == ("a", "b", "c", "c")
    frame = result.to_frame()
    assert list(frame.columns) == [
        "representation", "example", "label", "pvi_seed3", "pvi_seed7", "pvi"
    ]  # fmt: skip
    means = result.by_label(n_boot=200)
    assert means.loc["c", "n"] == 2
    assert means.loc["c", "mean"] == pytest.approx(expected.mean(axis=0)[2:].mean())
    assert means.loc["c", "seed_min"] == pytest.approx(expected[:, 2:].mean(axis=1).min())


@pytest.mark.numerics
def test_curve_pvi_equals_the_kept_probes_log_probabilities():
    """The curve's PVI of each test example is the kept final probes' log2-probability of its
    label (their logits recomputed by torch) less the null code of the labels they trained
    on; the curve's points do not change with ``pvi``."""
    data = _data()
    curve = _curve(data, pvi=True, keep_probes=True)
    pd.testing.assert_frame_equal(curve.points, _curve(data).points)
    result = curve.pvi
    assert result.seeds == (0, 1) and len(result.examples) == data.y_test.size
    train_rows, _ = held_out_split(data.pool_size, 0.1, 0, None)
    for row, seed in enumerate(result.seeds):
        probe = curve.probes.select(n=curve.sizes[-1], seed=seed)[0]
        with torch.no_grad():
            logits = probe.module()(torch.from_numpy(np.asarray(data.X_test)))
        log_p = torch.log_softmax(logits.double(), dim=1).numpy()
        gold = log_p[np.arange(data.y_test.size), data.y_test] / math.log(2)
        rows = train_rows[nested_subset(train_rows.size, int(curve.sizes[-1]), 0, seed)]
        counts = np.bincount(np.asarray(data.y_train)[rows], minlength=3)
        null = -np.log2((counts + 1) / (counts.sum() + 3))[data.y_test]
        np.testing.assert_allclose(result.values[row], null + gold, atol=1e-4)
    assert result.metadata["n_train"] == [int(curve.sizes[-1])] * 2


def test_mean_pvi_is_the_v_information_difference():
    """Mean PVI = H_null(Y) on the test set − the probes' test cross-entropy (bits), per seed:
    V-information estimated as a difference of entropies (Ethayarajh et al., §3)."""
    data = _data()
    curve = _curve(data, pvi=True, dev_fraction=0.0)
    final = curve.points[curve.points["n"] == curve.sizes[-1]]
    for row, seed in enumerate(curve.pvi.seeds):
        rows = nested_subset(data.pool_size, int(curve.sizes[-1]), 0, seed)
        null = null_codelengths(np.asarray(data.y_train)[rows], data.y_test, 3).mean()
        loss = float(final.loc[final["seed"] == seed, "loss"].iloc[0]) / math.log(2)
        assert curve.pvi.values[row].mean() == pytest.approx(null - loss, abs=1e-5)
    assert curve.pvi.v_information == pytest.approx(curve.pvi.values.mean(axis=1).mean())
    assert curve.pvi.v_information > 0.5  # the features separate the classes well


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json"])
def test_files_round_trip(tmp_path, suffix):
    data = _data(sentences=True)
    result = _curve(data, pvi=True).pvi
    assert result.sentences is not None and result.resampled == "sentences"
    path = result.save(tmp_path / f"pvi{suffix}")
    back = PVIResult.load(path)
    pd.testing.assert_frame_equal(back.to_frame(), result.to_frame(), check_dtype=False)
    np.testing.assert_array_equal(back.values, result.values)  # floats exactly
    if suffix == ".json":
        assert back.metadata == result.metadata


def test_curve_dictionary_keeps_pvi_and_leaves_it_out_unmeasured():
    data = _data()
    assert "pvi" not in _curve(data).to_dict()
    curve = _curve(data, pvi=True)
    back = LossDataCurve.from_dict(curve.to_dict())
    pd.testing.assert_frame_equal(back.pvi.to_frame(), curve.pvi.to_frame())
    assert curve.truncate(60).pvi is None and curve.for_seed(0).pvi is None


def test_groups_resample_whole_sentences():
    """The bootstrap over sentences: a label whose examples all sit in one sentence gets a
    zero-width interval (every resample containing it has the same mean); over examples it
    does not."""
    values = np.array([[1.0, 3.0, 0.0, 2.0, 4.0, -1.0]])
    labels = ["x", "x", "y", "y", "y", "y"]
    clustered = PVIResult(
        "r", np.arange(6), tuple(labels), (0,), values, np.array([0, 0, 1, 1, 2, 2])
    )
    table = clustered.by_label(n_boot=500)
    assert table.loc["x", "ci_low"] == table.loc["x", "ci_high"] == 2.0
    assert (table["resampled"] == "sentences").all()
    independent = PVIResult("r", np.arange(6), tuple(labels), (0,), values)
    table = independent.by_label(n_boot=500)
    assert table.loc["x", "ci_low"] < 2.0 < table.loc["x", "ci_high"]
    long = independent.by_group(["a", "b"] * 3, name="parity")
    assert long.index.name == "parity" and long["n"].sum() == 6


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="labels"):
        pointwise_v_information(np.zeros((1, 3)), [0, 1, 3], [0, 1], 3)
    with pytest.raises(ValueError, match="labels: class indices must be integers"):
        pointwise_v_information(np.zeros((1, 2)), ["x", "y"], [0, 1], 2)
    with pytest.raises(ValueError, match="label sets"):
        pointwise_v_information(np.zeros((1, 2)), np.eye(2), np.eye(2), 2)
    with pytest.raises(ValueError, match="train_labels"):
        pointwise_v_information(np.zeros((2, 2)), [0, 1], [[0], [1], [0]], 2)
    result = pointwise_v_information(np.zeros((1, 2)), [0, 1], [0, 1], 2)
    with pytest.raises(ValueError, match="groups"):
        result.by_group([1, 2, 3])
    with pytest.raises(ValueError, match="path"):
        result.save("pvi.txt")
    with pytest.raises(ValueError, match="kind"):
        result.plot(kind="violin")


def test_figures_of_one_and_of_several_representations():
    one = pointwise_v_information(np.full((1, 4), 0.2), [0, 1, 2, 2], [0, 1, 2], 3, name="a-0")
    other = pointwise_v_information(np.full((1, 4), 0.9), [0, 1, 2, 2], [0, 1, 2], 3, name="a-1")
    assert len(pvi_figure([one]).axes) == 1
    assert len(pvi_figure([one, other]).axes) == 2  # the heat map and its colour bar
