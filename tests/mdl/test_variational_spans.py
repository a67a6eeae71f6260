"""The variational code on edge-probing span rows: the variational probe's self-attentive span
pooling (its KL in the model code) against a one-probe reference written with autograd from
the documented formulas, drawing the same noise in the same order."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from probes.test_span_attention import CLASSES, TOKENS, WIDTH, _reference_pool, _span_rows

from probemeter.data import ProbeData
from probemeter.mdl.bayesian import BayesianMLP
from probemeter.mdl.variational import variational_codelength
from probemeter.training.config import VariationalTraining

ONE_EPOCH = VariationalTraining(epochs=1, batch_size=256, lr=1e-2)

PROJECTION = 3
PROBE = BayesianMLP((6,), span=TOKENS, projection=PROJECTION)
K1, K2, K3 = 0.63576, 1.87320, 1.48695


@pytest.fixture(scope="module")
def data() -> ProbeData:
    rng = np.random.default_rng(5)
    task = (*_span_rows(60, rng), *_span_rows(40, rng))
    return replace(ProbeData.from_arrays(*task, standardize=False), span_tokens=TOKENS)


def _split(parameters):
    """The stacked parameters of one probe: its layers' six tensors each, then the span
    poolings' means and log-variances (per span W, b, w)."""
    n_layers = len(PROBE.hidden) + 1
    layers = [parameters[6 * i : 6 * i + 6] for i in range(n_layers)]
    stage = parameters[6 * n_layers :]
    return layers, stage[: len(stage) // 2], stage[len(stage) // 2 :]


def _reference_kl(parameters):
    """KL(β‖α) in nats: Molchanov et al.'s approximation for the group scales, exact Gaussian
    KLs against N(0, 1) for the layers' weights and biases and every pooling parameter."""
    layers, means, logvars = _split(parameters)
    standard = torch.distributions.Normal(0.0, 1.0)
    gaussians = [(w_mu, w_lv) for _, _, w_mu, w_lv, _, _ in layers]
    gaussians += [(b_mu, b_lv) for *_, b_mu, b_lv in layers] + list(zip(means, logvars))
    normal = torch.distributions.Normal
    total = sum(
        torch.distributions.kl_divergence(normal(mu, (0.5 * lv).exp()), standard).sum()
        for mu, lv in gaussians
    )
    for z_mu, z_logvar, *_ in layers:
        log_alpha = z_logvar - torch.log(z_mu**2 + 1e-8)
        sigmoid = 1 / (1 + torch.exp(-(K2 + K3 * log_alpha)))
        total = total + (K1 - K1 * sigmoid + 0.5 * torch.log1p(1 / log_alpha.exp())).sum()
    return total


def _reference_logits(parameters, x, generator):
    """One probe's sampled logits (rows, K) for span rows x (rows, F): one draw of each pooling
    parameter, the reference pooling, then the local reparameterisation layer by layer."""
    layers, means, logvars = _split(parameters)
    drawn = [
        mu + (0.5 * lv).exp() * torch.randn(mu.shape, generator=generator)
        for mu, lv in zip(means, logvars)
    ]
    spans = [(drawn[i][0], drawn[i + 1][0, 0], drawn[i + 2][0]) for i in (0, 3)]
    hidden = _reference_pool(x, spans).unsqueeze(0)
    for index, (z_mu, z_lv, w_mu, w_lv, b_mu, b_lv) in enumerate(layers):
        noise = torch.randn(hidden.shape, generator=generator)
        scaled = hidden * (z_mu[:, None, :] + (0.5 * z_lv).exp()[:, None, :] * noise)
        mean = scaled @ w_mu + b_mu
        variance = scaled**2 @ w_lv.exp() + b_lv.exp()
        hidden = mean + variance.clamp_min(1e-16).sqrt() * torch.randn(
            mean.shape, generator=generator
        )
        hidden = torch.relu(hidden) if index < len(layers) - 1 else hidden
    return hidden[0]


def _reference_code(data, epochs, batch_size, lr):
    """variational_codelength of one seed (0) the slow way: eq. 3 / n minimised by Adam on
    minibatches in the documented order, then the model and data bits and the test accuracy
    of the pruned probe at the posterior means."""
    rng = np.random.default_rng([0, 0])
    start = PROBE.stack([rng], data.n_features, data.n_classes, torch.device("cpu")).parameters
    parameters = [p.detach().clone().requires_grad_() for p in start]
    generator = torch.Generator().manual_seed(0)
    x, y = torch.from_numpy(data.X_train), torch.from_numpy(data.y_train)
    optimizer = torch.optim.Adam(parameters, lr=lr)
    n = len(y)
    for _ in range(epochs):
        order = torch.from_numpy(rng.permutation(n))
        for first in range(0, n, batch_size):
            batch = order[first : first + batch_size]
            logits = _reference_logits(parameters, x[batch], generator)
            loss = F.cross_entropy(logits, y[batch]) + _reference_kl(parameters) / n
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        data_nats = F.cross_entropy(_reference_logits(parameters, x, generator), y, reduction="sum")
        layers, means, _ = _split(parameters)
        spans = [(means[i][0], means[i + 1][0, 0], means[i + 2][0]) for i in (0, 3)]
        hidden = _reference_pool(torch.from_numpy(data.X_test), spans)
        for index, (z_mu, z_lv, w_mu, _, b_mu, _) in enumerate(layers):
            keep = (z_lv - torch.log(z_mu**2 + 1e-8)) < PROBE.threshold
            hidden = (hidden * (z_mu * keep)[0]) @ w_mu[0] + b_mu[0]
            hidden = torch.relu(hidden) if index < len(layers) - 1 else hidden
        accuracy = (hidden.argmax(dim=1).numpy() == data.y_test).mean()
        model_nats = _reference_kl(parameters)
    return model_nats.item() / math.log(2), data_nats.item() / math.log(2), accuracy


@pytest.mark.numerics
def test_span_pooling_is_part_of_the_variational_model_and_its_kl(data):
    model = PROBE.stack([np.random.default_rng(1)], data.n_features, CLASSES, torch.device("cpu"))
    pooling = 2 * (WIDTH + 2) * PROJECTION  # per span W (d x q), b and w
    assert sum(p[0].numel() for p in model.parameters) == 2 * pooling + sum(
        2 * (fan_in * fan_out + fan_in + fan_out)
        for fan_in, fan_out in PROBE.layer_shapes(data.n_features, CLASSES)
    )
    assert PROBE.layer_shapes(data.n_features, CLASSES)[0] == (2 * PROJECTION, 6)
    with torch.no_grad():  # move the posterior away from its initialisation
        for parameter in model.parameters:
            parameter.add_(torch.randn(parameter.shape, generator=torch.Generator().manual_seed(2)))
    torch.testing.assert_close(model.kl()[0], _reference_kl(model.parameters), rtol=1e-5, atol=1e-3)
    _, means, logvars = _split(model.parameters)
    stage = sum(0.5 * (lv.exp() + mu**2 - 1 - lv).sum() for mu, lv in zip(means, logvars))
    assert model.stage.kl()[0].item() == pytest.approx(stage.item(), rel=1e-6)
    assert stage.item() > 0  # the poolings cost bits


@pytest.mark.numerics
def test_variational_span_code_matches_the_one_probe_reference(data):
    # on the CPU, as the reference: the weight noise comes from the device's generator
    config = VariationalTraining(epochs=3, batch_size=20, lr=1e-2)
    code = variational_codelength(data, PROBE, seeds=1, config=config, device="cpu")
    model_bits, data_bits, accuracy = _reference_code(data, epochs=3, batch_size=20, lr=1e-2)
    row = code.seeds.iloc[0]
    assert row["model_bits"] == pytest.approx(model_bits, rel=1e-4)
    assert row["data_bits"] == pytest.approx(data_bits, rel=1e-3)
    assert row["accuracy"] == pytest.approx(accuracy, abs=1 / len(data.y_test))
    assert row["codelength_bits"] == pytest.approx(row["model_bits"] + row["data_bits"])
    assert code.metadata["probe"]["span"] == list(TOKENS)
    assert code.architecture.shape == (1, 2) and code.architecture[0, 0] <= 2 * PROJECTION


def test_probe_and_rows_must_agree_on_spans(data):
    assert BayesianMLP.for_data(data, (4,)) == BayesianMLP((4,), span=TOKENS, projection=256)
    with pytest.raises(ValueError, match="probe pools spans none but the data's rows hold spans"):
        variational_codelength(data, BayesianMLP((4,)), config=ONE_EPOCH)
    plain = replace(data, span_tokens=None)
    with pytest.raises(ValueError, match=r"probe pools spans \(3, 2\) but the data's rows hold no"):
        variational_codelength(plain, PROBE, config=ONE_EPOCH)
    with pytest.raises(ValueError, match="projection"):
        BayesianMLP((4,), span=TOKENS)
    assert BayesianMLP.for_data(plain, (4,)) == BayesianMLP((4,))
    assert PROBE.name == "bayesian-6-span3x2-proj3"
