"""``online_codelengths``: several probe families' online codes from one engine call equal
each family's own ``online_codelength`` (same blocks, orders, development set and streams)."""

from __future__ import annotations

import numpy as np
import pytest

from probemeter import Execution
from probemeter.data import ProbeData
from probemeter.mdl import online_codelength, online_codelengths
from probemeter.probes import MLP, Linear
from probemeter.training.config import TrainingConfig

TIMESTEPS = (0.1, 0.25, 0.5, 1.0)


def _data(n: int = 300, seed: int = 0) -> ProbeData:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = ((x[:, 0] * x[:, 1] > 0) + 2 * (x[:, 2] > 0.5)).astype(np.int64)  # XOR-like: MLP wins
    return ProbeData.from_arrays(x, y, test_size=0.2, random_state=seed)


@pytest.mark.numerics
@pytest.mark.parametrize(
    "config",
    [
        TrainingConfig(steps=40, batch_size=32, lr=1e-2),
        TrainingConfig(lr=1e-2, batch_size=32, early_stopping=True, max_epochs=5),
    ],
    ids=["fixed-steps", "early-stopping"],
)
def test_one_call_equals_one_call_per_family(config):
    data = _data()
    families = [Linear(), MLP((16,)), MLP((16, 16))]
    together = online_codelengths(
        data,
        families,
        TIMESTEPS,
        seeds=2,
        config=config,
        random_state=5,
        execution=Execution(n_jobs=1),
        keep_example_bits=True,
    )
    assert list(together) == ["linear", "mlp-16", "mlp-16x16"]
    for family in families:
        alone = online_codelength(
            data,
            family,
            TIMESTEPS,
            seeds=2,
            config=config,
            random_state=5,
            execution=Execution(n_jobs=1),
            keep_example_bits=True,
        )
        code = together[family.name]
        assert code.ends == alone.ends and code.n_dev == alone.n_dev
        assert code.metadata["probe"] == alone.metadata["probe"]
        for column in ("online_bits", "data_bits", "accuracy"):
            np.testing.assert_allclose(code.seeds[column], alone.seeds[column], rtol=1e-5)
        np.testing.assert_allclose(
            code.blocks["codelength_bits"], alone.blocks["codelength_bits"], rtol=1e-5
        )
        np.testing.assert_allclose(code.example_bits, alone.example_bits, rtol=1e-5, atol=1e-6)
    # the families give different codes (so the split by family is not a copy of one)
    bits = [together[f.name].codelength_bits for f in families]
    assert len({round(b, 3) for b in bits}) == 3


def test_families_must_be_distinct():
    data = _data(n=100)
    with pytest.raises(ValueError, match="distinct probe architectures"):
        online_codelengths(data, [Linear(), Linear()], TIMESTEPS)
    with pytest.raises(ValueError, match="distinct probe architectures"):
        online_codelengths(data, [], TIMESTEPS)
