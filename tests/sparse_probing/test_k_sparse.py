"""k-sparse probes (Gurnee et al. 2023): rankings on the pool alone, probes on the top k, the
knee on the development split; the done-when case of issue 32, item 6: the label depends on 3
known coordinates among 1,000, both rankings put them first and the knee is at k = 3."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from probemeter import Execution, ProbeData, TrainingConfig
from probemeter.sparse_probing import (
    KSparseResult,
    default_ks,
    k_sparse_probes,
    mean_differences,
    rank_features,
)
from probemeter.sparse_probing.k_sparse import _columns
from probemeter.training.probe_runs import held_out_split

FAST = TrainingConfig(steps=300, lr=3e-2)
KNOWN = {0, 1, 2}


@pytest.fixture(scope="module")
def haystack() -> ProbeData:
    """4,000 rows of 1,000 Gaussian features; y = [x0 + x1 + x2 > 0]."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 1000)).astype(np.float32)
    y = (X[:, :3].sum(axis=1) > 0).astype(np.int64)
    return ProbeData.from_arrays(X, y, test_size=0.25, name="haystack")


def _probes(data: ProbeData, ks: tuple[int, ...], size: int = 2700, **options) -> KSparseResult:
    return k_sparse_probes(
        data,
        ks,
        sizes=[size],
        seeds=2,
        config=FAST,
        execution=Execution(device="cpu", n_jobs=1),
        **options,
    )


def test_both_rankings_put_the_three_known_coordinates_first(haystack):
    assert set(rank_features(haystack)[:3].tolist()) == KNOWN
    assert set(rank_features(haystack, "l1", n_top=3).tolist()[:3]) == KNOWN


def test_the_knee_is_at_three_features_chosen_on_the_development_split(haystack):
    result = _probes(haystack, (1, 2, 3, 4, 8, 32), epsilon=0.3)
    assert set(result.features(3)) == KNOWN
    assert (result.knee, result.chosen_on) == (3, "dev")
    frame = result.to_frame()
    assert frame["k"].tolist() == [1, 2, 3, 4, 8, 32]
    assert frame.loc[frame["k"] == 3, "dev_accuracy"].item() > 0.95
    assert frame.loc[frame["k"] == 2, "dev_accuracy"].item() < 0.9
    assert {"test_loss", "test_accuracy", "dev_loss", "sdl", "sample_complexity"} <= set(frame)
    # the frontier over k ends where more features stop helping
    assert result.frontier("dev")["k"].tolist()[-1] == 3
    assert result.frontier()["k"].tolist()[:3] == [1, 2, 3]
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["knee"] == 3 and payload["table"][2]["features"] == list(result.features(3))


def test_the_l1_ranking_gives_the_same_knee(haystack):
    result = _probes(haystack, (1, 2, 3, 4), ranking="l1", l1_grid=10)
    assert set(result.order[:3]) == KNOWN
    assert result.knee == 3


def test_the_ranking_never_reads_the_test_set():
    rng = np.random.default_rng(1)
    X, X_test = rng.normal(size=(300, 20)), rng.normal(size=(100, 20))
    y = (X[:, 5] - X[:, 7] > 0).astype(int)
    other_test = rng.normal(size=(100, 20)) * 5
    one = ProbeData.from_arrays(X, y, X_test, (X_test[:, 0] > 0).astype(int))
    two = ProbeData.from_arrays(X, y, other_test, rng.integers(0, 2, 100))
    for method in ("mean-difference", "l1"):
        np.testing.assert_array_equal(rank_features(one, method), rank_features(two, method))
    first, second = (_probes(data, (1, 2), 200) for data in (one, two))
    assert first.order == second.order
    # nor the development split the knee is chosen on: only the rows the probes train on
    train_rows, _ = held_out_split(one.pool_size, 0.1, 0)
    assert first.order == tuple(rank_features(one, rows=train_rows)[:2].tolist())


def test_mean_differences_by_hand():
    # one-vs-rest: feature 0 separates class 2 (6 − 0), feature 3 class 0 (3 − 0), feature 1
    # classes 0 and 1 (|1 − (−0.5)| = 1.5), feature 2 nothing
    X = np.array(
        [[0, 1, 0, 3], [0, 1, 2, 3], [0, -1, 0, 0], [0, -1, 2, 0], [6, 0, 0, 0], [6, 0, 2, 0]],
        dtype=float,
    )
    y = [0, 0, 1, 1, 2, 2]
    data = ProbeData.from_arrays(X, y, X, y, standardize=False)
    np.testing.assert_allclose(mean_differences(data.X_train, data.y_train), [6, 1.5, 0, 3])
    assert rank_features(data).tolist() == [0, 3, 1, 2]
    # two classes on the rows asked for, |μ₁ − μ₀|: 3 for feature 3, 2 for feature 1, 0 for
    # features 0 and 2 (the tie to the lower index)
    assert rank_features(data, rows=np.arange(4)).tolist() == [3, 1, 0, 2]


def test_sparse_latents_stay_sparse(monkeypatch):
    rng = np.random.default_rng(2)
    latents = rng.exponential(size=(1500, 200)) * (rng.random((1500, 200)) < 0.1)
    latents[:, :3] = rng.exponential(size=(1500, 3)) * (rng.random((1500, 3)) < 0.5)
    y = (latents[:, :3].sum(axis=1) > 1).astype(int)
    data = ProbeData.from_arrays(sp.csr_matrix(latents), y, test_size=0.2)
    assert data.is_sparse

    def refuse(*_, **__):
        raise AssertionError("the sparse pool was made dense")

    for dense in ("toarray", "todense", "__array__"):
        monkeypatch.setattr(sp.csr_matrix, dense, refuse, raising=False)
    assert set(rank_features(data)[:3].tolist()) == KNOWN
    assert set(rank_features(data, "l1", n_top=3)[:3].tolist()) == KNOWN
    subset = _columns(data, np.array([2, 0, 1]), "top-3")
    assert sp.issparse(subset.X_train) and sp.issparse(subset.X_test)
    assert subset.X_train.shape == (data.pool_size, 3)
    monkeypatch.undo()
    np.testing.assert_array_equal(subset.X_train.toarray(), data.X_train[:, [0, 1, 2]].toarray())
    assert _probes(data, (1, 3), 1000).knee == 3


def test_default_ks():
    assert default_ks(1000) == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000)
    assert default_ks(8) == (1, 2, 4, 8)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ks": [0, 1]}, "ks must be a list of positive integers"),
        ({"ks": [2, 2]}, "ks must be a list of distinct"),
        ({"ks": [1, 21]}, "ks must be at most the number of features, 20"),
        ({"ks": "12"}, "ks must be a list"),
        ({"ks": (np.int64(1), np.int64(21))}, "ks must be at most"),
        ({"ranking": "f-stat"}, "ranking must be one of"),
        ({"tolerance": 1.5}, "tolerance"),
        ({"dev_fraction": 0.0}, "dev_fraction"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": 0.7}, "epsilon"),
        ({"random_state": -1}, "random_state"),
    ],
)
def test_bad_arguments_are_named(options, message):
    rng = np.random.default_rng(3)
    data = ProbeData.from_arrays(rng.normal(size=(60, 20)), np.arange(60) % 2)
    with pytest.raises(ValueError, match=message):
        k_sparse_probes(data, **{"ks": [1, 2], **options})


def test_bad_ranking_arguments_are_named():
    rng = np.random.default_rng(4)
    data = ProbeData.from_arrays(rng.normal(size=(60, 5)), np.arange(60) % 2)
    with pytest.raises(ValueError, match="data must be a ProbeData"):
        rank_features(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="method must be one of"):
        rank_features(data, "anova")
    with pytest.raises(ValueError, match="n_top"):
        rank_features(data, "l1", n_top=6)
    with pytest.raises(ValueError, match="rows must be pool row indices"):
        rank_features(data, rows=np.array([0, 100]))
    with pytest.raises(ValueError, match="single class"):
        rank_features(data, rows=np.flatnonzero(data.y_train == 0))


def test_online_codes_and_figure():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(5)
    X = rng.normal(size=(800, 30))
    data = ProbeData.from_arrays(X, (X[:, 4] > 0).astype(int))
    result = _probes(data, (1, 2, 30), 500, online=True, timesteps=(0.1, 0.2, 0.4, 1.0))
    assert result.order[0] == 4 and result.knee == 1
    frame = result.to_frame()
    assert frame["online_bits"].gt(0).all()
    # one informative feature compresses better than thirty, twenty-nine of them noise
    assert frame["compression"].iloc[0] > frame["compression"].iloc[-1]
    assert set(result.to_dict()["online"]) == {"1", "2", "30"}
    accuracy, loss = result.plot()
    assert accuracy.get_xscale() == "log" and loss.get_ylabel() == "loss (nats)"
    plt.close(accuracy.figure)


def test_exact_linear_probes_on_the_top_k():
    """solver = "newton" for the curves' and the online codes' probes on the top k: the knee is
    the informative feature as with Adam, and the method reads the option and refuses it
    without weight decay."""
    from probemeter.sparse_probing.method import KSparseMethod

    rng = np.random.default_rng(5)
    X = rng.normal(size=(800, 30))
    data = ProbeData.from_arrays(X, (X[:, 4] > 0).astype(int))
    exact = TrainingConfig(solver="newton", weight_decay=1e-3)
    result = k_sparse_probes(
        data, (1, 2, 30), sizes=[500], seeds=2, config=exact, online=True,
        online_config=exact, timesteps=(0.1, 0.4, 1.0),
        execution=Execution(device="cpu", n_jobs=1),
    )  # fmt: skip
    assert result.order[0] == 4 and result.knee == 1
    assert result.to_frame()["online_bits"].gt(0).all()
    method, problems = KSparseMethod.from_values({"solver": "newton", "weight_decay": 1e-3})
    assert not problems and method.training() == method.online_training()
    _, problems = KSparseMethod.from_values({"solver": "newton"})
    assert len(problems) == 1 and problems[0].startswith("method.weight_decay: solver = newton")
