"""A loss-data curve measured on a development split held out of the pool as well as on the test
set: no probe trains on it, whole sentences are held out, and its losses are the probes' own."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from probemeter import Execution
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.data import ProbeData
from probemeter.probes import MLP
from probemeter.training.config import TrainingConfig
from probemeter.training.probe_runs import held_out_split


def _data(clustered: bool = False) -> ProbeData:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    data = ProbeData.from_arrays(X[:240], y[:240], X[240:], y[240:], n_classes=2)
    if not clustered:
        return data
    return replace(data, clusters_train=np.arange(240) // 6, clusters_test=np.arange(60) // 6)


def test_held_out_split_keeps_whole_groups_and_is_seeded() -> None:
    groups = np.arange(100) // 4  # 25 groups of 4
    train, dev = held_out_split(100, 0.2, 3, groups)
    assert dev.size == 20 and train.size == 80
    assert not set(groups[dev]) & set(groups[train])  # no group split across the two
    assert np.array_equal(held_out_split(100, 0.2, 3, groups)[1], dev)
    assert not np.array_equal(held_out_split(100, 0.2, 4, groups)[1], dev)
    with pytest.raises(ValueError, match="dev_fraction"):
        held_out_split(100, 1.5, 0)
    with pytest.raises(ValueError, match="at least 2 groups"):
        held_out_split(4, 0.5, 0, np.zeros(4, np.int64))


@pytest.mark.numerics
def test_curve_with_a_development_split() -> None:
    data = _data(clustered=True)
    curve = loss_data_curve(
        data, MLP(()), [20, 100], 2, config=TrainingConfig(steps=60, batch_size=16, lr=1e-2),
        execution=Execution(n_jobs=None),
        dev_fraction=0.25,
    )  # fmt: skip
    train, dev = held_out_split(240, 0.25, 0, data.clusters_train)
    assert curve.pool_size == train.size == 180 and dev.size == 60
    assert curve.metadata["development"] == {
        "fraction": 0.25, "n_dev": 60, "groups": "sentences", "random_state": 0,
    }  # fmt: skip
    assert curve.final_correct.clusters is not None
    assert np.array_equal(curve.final_correct.clusters, data.clusters_test)
    development = curve.development_curve()
    assert development.n_test == 60
    assert np.allclose(development.points["loss"], curve.points["dev_loss"])
    assert LossDataCurve.from_dict(curve.to_dict()).has_development

    # the same probes, kept, reproduce their development losses on the held-out rows
    kept = loss_data_curve(
        data, MLP(()), [20, 100], 2, config=TrainingConfig(steps=60, batch_size=16, lr=1e-2),
        execution=Execution(n_jobs=None),
        dev_fraction=0.25, keep_probes=True,
    )  # fmt: skip
    X_dev, y_dev = np.asarray(data.X_train)[dev], np.asarray(data.y_train)[dev]
    for probe, (_, point) in zip(kept.probes, kept.points.iterrows()):
        loss = probe.evaluate(X_dev, y_dev)["loss"]
        assert loss == pytest.approx(point["dev_loss"], rel=1e-4)


def test_without_a_split_the_curve_is_unchanged() -> None:
    data = _data()
    config = TrainingConfig(steps=30, batch_size=16, lr=1e-2)
    options = {"config": config, "execution": Execution(n_jobs=None)}
    plain = loss_data_curve(data, MLP(()), [20, 100], 1, dev_fraction=0.0, **options)
    assert not plain.has_development and "development" not in plain.metadata
    with pytest.raises(ValueError, match="without a development split"):
        plain.development_curve()
    with pytest.raises(ValueError, match="left for training"):
        loss_data_curve(data, MLP(()), [20, 230], 1, dev_fraction=0.1, **options)


def test_the_curve_method_plans_its_sizes_within_the_pool_left() -> None:
    from probemeter._method import RunContext
    from probemeter.curves.method import CurveMethod

    data = _data(clustered=True)
    context = RunContext(0, "cpu", None, None, False, "task")
    (plan,) = CurveMethod(epsilon=0.5, probe=(), seeds=1).units({"a": data}, context)
    train, _ = held_out_split(240, 0.1, 0, data.clusters_train)
    assert plan.options["sizes"][-1] == train.size < 240  # whole sentences held out
    assert plan.spec["dev_fraction"] == 0.1  # in the unit's key
    (full,) = CurveMethod(epsilon=0.5, probe=(), dev_fraction=0.0).units({"a": data}, context)
    assert full.options["sizes"][-1] == 240 and full.spec != plan.spec
    with pytest.raises(ValueError, match=r"method.sizes: 239 exceeds the \d+ examples of 'a'"):
        CurveMethod(epsilon=0.5, sizes=(10, 239)).units({"a": data}, context)
