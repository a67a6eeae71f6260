"""Variational code (Voita & Titov eq. 3) with group-sparse Bayesian-compression probes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from probemeter.data import ProbeData
from probemeter.mdl.bayesian import BayesianMLP
from probemeter.mdl.variational import VariationalCode, variational_codelength
from probemeter.training.config import VariationalTraining


def _irrelevant_inputs(n=600, d=20, seed=0):
    """Labels depend on the first two of d features only."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    return ProbeData.from_arrays(x, y, test_size=0.2)


@pytest.mark.numerics
def test_kl_is_non_negative_and_its_gaussian_part_is_exact():
    rngs = [np.random.default_rng(i) for i in range(3)]
    model = BayesianMLP((5,)).stack(rngs, 4, 3, torch.device("cpu"))
    with torch.no_grad():  # move the posterior far from its initialisation, both ways
        for parameter in model.parameters:
            parameter.add_(torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)))
    kl = model.kl()
    assert kl.shape == (3,) and torch.all(kl >= 0)
    # the group term alone, for huge and tiny noise: → 0 as α → ∞, positive for small α
    z_term = kl.clone()
    for layer in range(2):
        _, _, w_mu, w_logvar, b_mu, b_logvar = model.parameters[6 * layer : 6 * layer + 6]
        for mu, logvar in ((w_mu, w_logvar), (b_mu, b_logvar)):
            exact = torch.distributions.kl_divergence(
                torch.distributions.Normal(mu, (0.5 * logvar).exp()),
                torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu)),
            )
            z_term = z_term - exact.flatten(1).sum(dim=1)
    alphas = [la for la in model.log_alpha()]
    k1, k2, k3 = 0.63576, 1.87320, 1.48695
    by_hand = sum(
        (k1 - k1 / (1 + torch.exp(-(k2 + k3 * la))) + 0.5 * torch.log1p(torch.exp(-la))).sum(dim=1)
        for la in alphas
    )
    torch.testing.assert_close(z_term, by_hand, rtol=1e-4, atol=1e-3)
    assert torch.all(z_term > 0)


def test_pruned_width_shrinks_on_irrelevant_inputs_and_code_adds_up(tmp_path):
    data = _irrelevant_inputs()
    code = variational_codelength(
        data, BayesianMLP((16,)), seeds=2, config=VariationalTraining(60, 64, 1e-2), device="cpu"
    )
    inputs_kept = code.architecture[:, 0]
    assert np.all(inputs_kept <= 4), code.seeds["architecture"].tolist()
    assert np.all(code.architecture[:, 1] < 16)
    assert np.all(code.seeds["model_bits"] >= 0)
    np.testing.assert_allclose(
        code.seeds["model_bits"] + code.seeds["data_bits"], code.seeds["codelength_bits"]
    )
    assert code.mean("accuracy") > 0.95
    expected_uniform = data.pool_size * math.log2(2)
    np.testing.assert_allclose(code.seeds["uniform_bits"], expected_uniform)
    code.save(tmp_path / "v.json")
    loaded = VariationalCode.load(tmp_path / "v.json")
    assert loaded.seeds["architecture"].tolist() == code.seeds["architecture"].tolist()
    assert "pruned architecture" in str(code)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"epochs": 0}, "epochs"), ({"batch_size": 1.5}, "batch_size"), ({"lr": -1.0}, "lr")],
)
def test_bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        config = VariationalTraining(**{"epochs": 1, "batch_size": 8, "lr": 1e-2, **kwargs})
        variational_codelength(_irrelevant_inputs(n=50), BayesianMLP(()), config=config)
