"""Several probe architectures in one ``fit_evaluate`` call: every probe gets the numbers it
gets when its architecture is trained alone (up to float rounding, as with any companions)."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter import Execution
from probemeter.probes import MLP, Linear
from probemeter.training import engine
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

POOL = 240


def _task(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(POOL + 100, 6)).astype(np.float32)
    y = (x @ rng.normal(size=(6, 3)) + 0.5 * rng.normal(size=(POOL + 100, 3))).argmax(axis=1)
    return x[:POOL], y[:POOL], x[POOL:], y[POOL:]


def _probes():
    rng = np.random.default_rng(3)
    sizes = (15, 60, 240)
    subsets = [rng.permutation(POOL)[:n] for n in sizes]
    return subsets, [(1, 0, n) for n in sizes]


@pytest.mark.numerics
@pytest.mark.parametrize(
    "config",
    [
        TrainingConfig(steps=30, batch_size=16, lr=1e-2),
        TrainingConfig(lr=1e-2, batch_size=16, early_stopping=True, max_epochs=6),
    ],
    ids=["fixed-steps", "early-stopping"],
)
@pytest.mark.parametrize("n_jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_families_in_one_call_equal_one_call_each(config, n_jobs, monkeypatch):
    if n_jobs == 2:
        monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)  # worker processes, not in-process
    x, y, x_eval, y_eval = _task()
    subsets, keys = _probes()
    families = [Linear(), MLP((8,)), MLP((8, 8))]
    alone = {
        family: fit_evaluate(
            x,
            y,
            x_eval,
            y_eval,
            3,
            subsets,
            keys,
            family,
            config,
            execution=Execution(n_jobs=n_jobs),
            per_example=True,
            pool_rows=[np.arange(20)] * len(subsets),
        )
        for family in families
    }
    # interleaved: probe i of family f at position 3 i + f
    order = [(f, i) for i in range(len(subsets)) for f in range(len(families))]
    together = fit_evaluate(
        x, y, x_eval, y_eval, 3,
        [subsets[i] for _, i in order], [keys[i] for _, i in order],
        [families[f] for f, _ in order], config, execution=Execution(n_jobs=n_jobs),
        per_example=True, pool_rows=[np.arange(20)] * len(order),
    )  # fmt: skip
    for position, (f, i) in enumerate(order):
        single = alone[families[f]]
        for name in ("loss", "accuracy", "loss_truncated"):
            np.testing.assert_allclose(
                getattr(together, name)[position], getattr(single, name)[i], rtol=1e-5
            )
        np.testing.assert_allclose(together.nll[position], single.nll[i], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            together.pool_nll[position], single.pool_nll[i], rtol=1e-5, atol=1e-6
        )
        if config.early_stopping:
            assert together.epochs[position] == single.epochs[i]
    # the families really differ: the deeper probes do not give the linear probe's numbers
    assert not np.allclose(alone[families[0]].loss, alone[families[2]].loss)


def test_families_are_checked():
    x, y, x_eval, y_eval = _task()
    subsets, keys = _probes()
    config = TrainingConfig(steps=5)
    with pytest.raises(ValueError, match=r"probe: one MLP, or one per subset \(3\); got 2"):
        fit_evaluate(x, y, x_eval, y_eval, 3, subsets, keys, [Linear(), Linear()], config)
    with pytest.raises(ValueError, match="return_parameters: one architecture per call"):
        fit_evaluate(
            x, y, x_eval, y_eval, 3, subsets, keys, [Linear(), MLP((4,)), Linear()], config,
            return_parameters=True,
        )  # fmt: skip
    with pytest.raises(ValueError, match="must share mix, span, projection"):
        x3 = np.tile(x, 3)
        fit_evaluate(
            x3, y, np.tile(x_eval, 3), y_eval, 3, subsets, keys,
            [MLP((4,), mix=3), MLP((4,)), MLP((4,))], config,
        )  # fmt: skip
