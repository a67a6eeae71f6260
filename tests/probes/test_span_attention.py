"""Self-attentive span pooling (Lee et al. 2017; Voita & Titov 2020, Fig. 4) in the stacked
engine against an independent one-probe reference written with autograd, nn-style parameters
and torch.optim.Adam on the same initial parameters and minibatches."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from reference_training import minibatch_order, train_with_adam
from torch import nn

from probemeter import Execution
from probemeter.datasets.edge_probing import SpanLayout
from probemeter.probes import MLP
from probemeter.probes.draws import fill_uniform
from probemeter.probes.span_attention import SpanAttentions
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

WIDTH, CLASSES, PROJECTION = 5, 3, 4
TOKENS = (3, 2)  # padded lengths of span1 and span2


def _span_rows(rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two spans per row (1-3 and 1-2 tokens, zero-padded, counts first); the label is carried
    by span1's last token alone, so a pooling that attends to it does best."""
    labels = rng.integers(0, CLASSES, rows)
    centers = 2.0 * rng.normal(size=(CLASSES, WIDTH))
    layout = SpanLayout(TOKENS, WIDTH)
    features = np.zeros((rows, layout.n_features), dtype=np.float32)
    for row, label in enumerate(labels):
        offset = len(TOKENS)
        for span, padded in enumerate(TOKENS):
            count = rng.integers(1, padded + 1)
            features[row, span] = count
            block = features[row, offset : offset + padded * WIDTH].reshape(padded, WIDTH)
            block[:count] = rng.normal(size=(count, WIDTH))
            if span == 0:
                block[count - 1] += centers[label]
            offset += padded * WIDTH
    return features, labels.astype(np.int64)


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(3)
    return (*_span_rows(150, rng), *_span_rows(300, rng))


def _reference_pool(x: torch.Tensor, spans, pooling: str = "attention") -> torch.Tensor:
    """[z_1, z_2] for rows ``x``: per span u = hW + b, a = softmax over its tokens of u·w,
    z = Σ a u (``"max"``: z = max over its tokens of u, coordinate-wise) — written from the
    layout, for autograd."""
    pooled, offset = [], len(TOKENS)
    for index, (padded, (W, b, w)) in enumerate(zip(TOKENS, spans)):
        h = x[:, offset : offset + padded * WIDTH].reshape(-1, padded, WIDTH)
        offset += padded * WIDTH
        u = h @ W + b
        valid = torch.arange(padded)[None, :] < x[:, index : index + 1]
        if pooling == "max":
            pooled.append(u.masked_fill(~valid.unsqueeze(-1), -math.inf).amax(dim=1))
            continue
        scores = (u @ w).squeeze(-1)
        a = torch.softmax(scores.masked_fill(~valid, -math.inf), dim=1)
        pooled.append((a.unsqueeze(-1) * u).sum(dim=1))
    return torch.cat(pooled, dim=1)


def _reference_train(task, subset, key, probe, config):
    """One probe the slow way, from the engine's documented random stream: its span poolings
    (per span W, b, w) drawn first, then its layers, then its minibatch order."""
    x_train, y_train, x_eval, y_eval = task
    rng = np.random.default_rng(list(key))
    spans = []
    for _ in TOKENS:
        drawn = []
        for shape, fan_in in (((WIDTH, PROJECTION), WIDTH), ((PROJECTION,), WIDTH)):
            drawn.append(np.empty(shape, dtype=np.float32))
            fill_uniform(rng, drawn[-1], fan_in)
        drawn.append(np.zeros((PROJECTION, 1), dtype=np.float32))
        if probe.span_pooling == "attention":  # max pooling draws no score vector
            fill_uniform(rng, drawn[-1], PROJECTION)
        spans.append([nn.Parameter(torch.from_numpy(t)) for t in drawn])
    layers = [
        [nn.Parameter(torch.from_numpy(t.copy())) for t in layer]
        for layer in probe.initial_parameters(rng, x_train.shape[1], CLASSES)
    ]
    order, batch = minibatch_order(rng, subset, config.steps, config.batch_size)

    def forward(x):
        hidden = _reference_pool(x, spans, probe.span_pooling)
        for index, (W, b) in enumerate(layers):
            hidden = hidden @ W + b
            if index < len(layers) - 1:
                hidden = torch.relu(hidden)
        return hidden

    parameters = [p for span in spans for p in span] + [p for layer in layers for p in layer]
    train_with_adam(forward, parameters, x_train, y_train, order, batch, config.lr)
    with torch.no_grad():
        logits = forward(torch.from_numpy(x_eval))
        eval_loss = F.cross_entropy(logits, torch.from_numpy(y_eval)).item()
    return eval_loss, (logits.argmax(dim=1).numpy() == y_eval).mean()


@pytest.mark.numerics
@pytest.mark.parametrize("pooling", ["attention", "max"])
def test_backward_matches_autograd(pooling):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    features = torch.from_numpy(_span_rows(6, rng)[0]).expand(2, 6, -1).contiguous()
    stage = SpanAttentions.initial(
        [np.random.default_rng(i) for i in range(2)], TOKENS, WIDTH, PROJECTION, 6, "cpu", pooling
    )
    upstream = torch.randn(2, 6, 2 * PROJECTION)
    pooled = stage.forward(features).clone()
    stage.upstream.copy_(upstream)
    stage.backward(features)
    for probe in range(2):
        shapes = ((WIDTH, PROJECTION), (PROJECTION,), (PROJECTION, 1))
        spans = [
            [
                p[probe].detach().clone().reshape(shape).requires_grad_()
                for p, shape in zip(stage.parameters[i : i + 3], shapes)
            ]
            for i in (0, 3)
        ]
        reference = _reference_pool(features[probe], spans, pooling)
        torch.testing.assert_close(pooled[probe], reference.detach(), rtol=1e-5, atol=1e-6)
        (reference * upstream[probe]).sum().backward()
        for got, want in zip(stage.parameters, [p for span in spans for p in span]):
            if want.grad is None:  # max pooling reads no score vector: no gradient reaches it
                assert pooling == "max" and not got.grad[probe].any() and not got[probe].any()
                continue
            torch.testing.assert_close(
                got.grad[probe].reshape(want.shape), want.grad, rtol=1e-4, atol=1e-6
            )


@pytest.mark.numerics
@pytest.mark.parametrize("pooling", ["attention", "max"])
def test_engine_trains_span_probes_like_the_one_probe_reference(task, pooling):
    probe = MLP((8,), span=TOKENS, projection=PROJECTION, span_pooling=pooling)
    config = TrainingConfig(steps=120, batch_size=32, lr=1e-2)
    subsets = [np.arange(150), np.arange(40)]
    keys = [(7, 0, 150), (7, 1, 40)]
    result = fit_evaluate(
        *task, CLASSES, subsets, keys, probe, config, execution=Execution(device="cpu", n_jobs=1)
    )
    for row, (subset, key) in enumerate(zip(subsets, keys)):
        loss, accuracy = _reference_train(task, subset, key, probe, config)
        np.testing.assert_allclose(result.loss[row], loss, rtol=1e-4)
        assert result.accuracy[row] == pytest.approx(accuracy, abs=1 / len(task[3]))
    assert result.accuracy[0] > 0.5  # well above chance (1/3): the attended token is learnt


def test_span_probe_specification():
    probe = MLP((8,), span=TOKENS, projection=PROJECTION)
    n_features = SpanLayout(TOKENS, WIDTH).n_features
    assert probe.token_width(n_features) == WIDTH
    assert probe.input_width(n_features) == 2 * PROJECTION
    assert MLP.from_dict(probe.to_dict()) == probe
    assert probe.parameter_count(n_features, CLASSES) == (
        2 * (WIDTH + 2) * PROJECTION + (2 * PROJECTION + 1) * 8 + 9 * CLASSES
    )
    with pytest.raises(ValueError, match="do not hold 2 span count"):
        probe.token_width(n_features + 1)
    with pytest.raises(ValueError, match="projection"):
        MLP((8,), span=TOKENS)
    max_probe = MLP((8,), span=TOKENS, projection=PROJECTION, span_pooling="max")
    assert MLP.from_dict(max_probe.to_dict()) == max_probe
    assert max_probe.to_dict()["span_pooling"] == "max" and max_probe.name.endswith("-max")
    assert "span_pooling" not in probe.to_dict()  # attention probes' keys stay as they were
    with pytest.raises(ValueError, match="span_pooling"):
        MLP((8,), span=TOKENS, projection=PROJECTION, span_pooling="mean")
    with pytest.raises(ValueError, match="span_pooling pools spans"):
        MLP((8,), span_pooling="max")


def test_span_probes_through_the_curve_and_the_online_code(task):
    from dataclasses import replace

    from probemeter.curves.curve import loss_data_curve
    from probemeter.data import ProbeData
    from probemeter.mdl.online import online_codelength, paper_training
    from probemeter.probes import probe_for

    data = replace(ProbeData.from_arrays(*task, standardize=False), span_tokens=TOKENS)
    probe = probe_for(data, (8,), projection=PROJECTION)
    assert probe.span == TOKENS
    config = TrainingConfig(steps=60, lr=1e-2)
    curve = loss_data_curve(
        data, probe, [20, 150], 1, config=config, execution=Execution(n_jobs=1), dev_fraction=0.0
    )
    assert curve.points["loss"].iloc[-1] < curve.points["loss"].iloc[0]  # more data helps
    online = online_codelength(
        data,
        probe,
        config=paper_training(max_epochs=40, lr=1e-2),
        timesteps=(0.2, 0.5, 1.0),
        seeds=3,
        execution=Execution(n_jobs=1),
    )
    assert online.compression > 1  # it compresses: fewer bits than the uniform code
