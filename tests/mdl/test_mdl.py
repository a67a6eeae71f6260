"""Online code (Voita & Titov eq. 4, §2.3): hand computations, limits, the data/model split."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from stand_in_engine import stand_in_evaluation

from probemeter import Execution
from probemeter.data import ProbeData, subset_permutation
from probemeter.mdl.online import (
    OnlineCode,
    block_ends,
    development_split,
    online_codelength,
    paper_training,
)
from probemeter.probes import MLP, Linear, load_probes
from probemeter.training.engine import TrainingConfig, fit_evaluate


def _data(n=400, d=4, k=3, noise=0.0, seed=0, random_labels=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    teacher = rng.normal(size=(d, k))
    y = (x @ teacher + noise * rng.normal(size=(n, k))).argmax(axis=1)
    if random_labels:
        y = rng.integers(0, k, size=n)
    return ProbeData.from_arrays(x, y, test_size=0.2, random_state=seed, n_classes=k)


@pytest.mark.numerics
def test_online_codelength_equals_hand_computation(monkeypatch):
    """Fake engine: probe p gives every example cross-entropy 0.1·(p+1) nats. Probes stop on
    their own prefix here, so the whole pool is sent (the held-out development set of the
    default is in test_online_paper_details.py)."""
    data = _data(n=50, k=2)  # pool of 40
    seen = {}

    def fake_fit_evaluate(X_train, y_train, X_eval, y_eval, n_classes, subsets, keys, *a, **kw):
        seen["subsets"], seen["keys"], seen["dev_set"] = subsets, keys, kw["dev_set"]
        per_seed = len(subsets) // 2
        return stand_in_evaluation(
            y_train,
            y_eval,
            len(subsets),
            kw["pool_rows"],
            lambda i, rows: np.full(rows.shape, 0.1 * (i % per_seed + 1)),
        )

    monkeypatch.setattr(
        importlib.import_module("probemeter.mdl.online"), "fit_evaluate", fake_fit_evaluate
    )
    code = online_codelength(
        data, Linear(), (0.25, 0.5, 1.0), seeds=2, stopping_set="prefix", random_state=3
    )
    assert code.ends == (10, 20, 40)
    assert code.stopping_set == "prefix" and code.n_dev == 0 and seen["dev_set"] is None
    expected = 10 * math.log2(2) + 10 * 0.1 / math.log(2) + 20 * 0.2 / math.log(2)
    np.testing.assert_allclose(code.seeds["online_bits"], expected, rtol=1e-6)
    np.testing.assert_allclose(code.seeds["data_bits"], 40 * 0.3 / math.log(2), rtol=1e-6)
    np.testing.assert_allclose(code.seeds["compression"], 40 / expected, rtol=1e-6)
    blocks = code.blocks[code.blocks["seed"] == 0]
    assert blocks["train_size"].tolist() == [0, 10, 20]
    np.testing.assert_allclose(
        blocks["bits_per_label"], [1.0, 0.1 / math.log(2), 0.2 / math.log(2)]
    )
    # the probe of seed s trained on t examples is the first t of seed s's permutation
    for subset, key in zip(seen["subsets"], seen["keys"]):
        assert key[0] == 3
        np.testing.assert_array_equal(subset, subset_permutation(40, 3, key[1])[: key[2]])


@pytest.mark.numerics
def test_online_codelength_matches_direct_engine_computation():
    data = _data(n=250, noise=1.0)
    config = TrainingConfig(steps=30, batch_size=32, lr=1e-2)
    timesteps = (0.1, 0.3, 0.6, 1.0)
    code = online_codelength(
        data,
        Linear(),
        timesteps,
        seeds=1,
        config=config,
        random_state=1,
        execution=Execution(device="cpu", n_jobs=1),
    )
    n = data.pool_size
    ends = block_ends(n, timesteps)
    order = subset_permutation(n, 1, 0)
    result = fit_evaluate(
        data.X_train,
        data.y_train,
        data.X_train,
        data.y_train,
        data.n_classes,
        [order[:t] for t in ends[:-1]],
        [(1, 0, int(t)) for t in ends[:-1]],
        Linear(),
        config,
        execution=Execution(device="cpu", n_jobs=1),
        per_example=True,
    )
    bits = ends[0] * math.log2(data.n_classes)
    for i in range(len(ends) - 1):
        bits += result.nll[i, order[ends[i] : ends[i + 1]]].astype(float).sum() / math.log(2)
    assert code.codelength_bits == pytest.approx(bits, rel=1e-5)


def test_perfectly_predictable_task_compresses_and_random_labels_do_not():
    kwargs = dict(
        probe=MLP((32,)),
        timesteps=(0.05, 0.1, 0.2, 0.4, 1.0),
        seeds=2,
        config=paper_training(batch_size=32, lr=1e-2, max_epochs=30),
        execution=Execution(device="cpu", n_jobs=1),
    )
    easy = online_codelength(_data(n=1000, k=2, d=2), **kwargs)
    random = online_codelength(_data(n=1000, k=2, d=2, random_labels=True), **kwargs)
    assert easy.compression > 4
    assert 0.85 < random.compression < 1.1
    for code in (easy, random):  # §2.3: data + model = online, per seed
        np.testing.assert_allclose(
            code.seeds["data_bits"] + code.seeds["model_bits"], code.seeds["online_bits"]
        )
    assert easy.mean("data_bits") < 0.2 * random.mean("data_bits")
    assert set(easy.seeds["epochs"]) != {np.nan}


def test_round_trip_and_plot(tmp_path):
    data = _data(n=200)
    code = online_codelength(
        data,
        Linear(),
        (0.1, 0.5, 1.0),
        seeds=2,
        config=TrainingConfig(steps=5),
        execution=Execution(device="cpu", n_jobs=1),
    )
    path = tmp_path / "code.json"
    code.save(path)
    loaded = OnlineCode.load(path)
    assert loaded.codelength_bits == pytest.approx(code.codelength_bits)
    assert loaded.metadata["training"]["stopping"] == "fixed 5 steps"
    assert "kbits" in str(code)
    assert code.summary().loc["online_bits", "mean"] == pytest.approx(code.codelength_bits)
    assert code.plot() is not None


@pytest.mark.parametrize(
    ("timesteps", "message"),
    [
        ((0.5, 0.25, 1.0), "increasing"),
        ((0.1, 0.1, 1.0), "increasing"),
        ((0.0, 0.5, 1.0), r"\(0, 1\]"),
        ((0.5, 1.5), r"\(0, 1\]"),
        ((0.5, 0.9), "end at 1"),
        ((), "non-empty"),
        ((0.001, 1.0), "first block holds 0"),
        ((0.01, 1.0), "first block holds 1"),
        ((0.1, 0.101, 1.0), "empty"),
    ],
)
def test_bad_timesteps_are_rejected(timesteps, message):
    with pytest.raises(ValueError, match=message):
        online_codelength(_data(n=100), Linear(), timesteps, config=TrainingConfig(steps=1))


def test_first_block_of_one_example_is_named():
    """Eq. 4's 1 = t_0 < t_1: the first block holds at least 2 examples (a first block smaller
    than K is allowed: test_online_paper_details.py)."""
    with pytest.raises(ValueError, match=r"timesteps\[0\]=0.01 of n=100"):
        block_ends(100, (0.01, 1.0))
    assert block_ends(100, (0.02, 1.0)).tolist() == [2, 100]


@pytest.mark.numerics
@pytest.mark.parametrize("stopping_set", ["dev", "prefix"])
def test_kept_probes_are_the_block_and_full_probes_on_the_test_set(stopping_set, tmp_path):
    data = _data(n=301, d=5, k=3, noise=0.5)  # 61 test rows: stack rows off 16-byte lines
    settings = {
        "seeds": 2,
        "config": paper_training(batch_size=32, max_epochs=8),
        "stopping_set": stopping_set,
        "random_state": 2,
        "execution": Execution(device="cpu", n_jobs=1),
    }
    plain = online_codelength(data, MLP((6,)), (0.1, 0.3, 1.0), **settings)
    code = online_codelength(data, MLP((6,)), (0.1, 0.3, 1.0), keep_probes=True, **settings)
    assert plain.probes is None
    for table in ("blocks", "seeds"):  # the code is the same, bit for bit
        assert getattr(code, table).equals(getattr(plain, table))
    frame = code.probes.to_frame()
    n = code.n
    assert frame[["seed", "role", "train_size"]].values.tolist() == [
        [seed, role, size]
        for seed in (0, 1)
        for role, size in (("block", code.ends[0]), ("block", code.ends[1]), ("full", n))
    ]
    assert frame["block"].tolist()[:2] == [1, 2] and np.isnan(frame["block"].iloc[2])
    for seed in (0, 1):
        (full,) = code.probes.select(seed=seed, role="full")
        accuracy = code.seeds.set_index("seed").loc[seed, "accuracy"]
        assert full.accuracy == accuracy and full.n_test == data.y_test.size
    # block probe i is the probe that encoded block i: on block i's examples it has the
    # block's accuracy and codelength
    transmitted = np.arange(data.pool_size)
    if stopping_set == "dev":
        transmitted = development_split(data.pool_size, 0.1, 2)[0]
    order = transmitted[subset_permutation(n, 2, 1)]
    blocks = code.blocks[code.blocks["seed"] == 1].set_index("block")
    for block in (1, 2):
        (probe,) = code.probes.select(seed=1, block=block)
        sent = order[code.ends[block - 1] : code.ends[block]]
        on_block = probe.evaluate(data.X_train[sent], data.y_train[sent])
        assert on_block["accuracy"] == blocks.loc[block, "accuracy"]
        bits = on_block["loss"] * sent.size / math.log(2)
        assert bits == pytest.approx(blocks.loc[block, "codelength_bits"], rel=1e-6)
    code.probes.save(tmp_path / "online.safetensors")
    recomputed = load_probes(tmp_path / "online.safetensors").evaluate(data.X_test, data.y_test)
    assert recomputed["loss"].tolist() == frame["loss"].tolist()
