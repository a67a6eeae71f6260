"""The learned scalar mix of layers (Peters et al. 2018, eq. 1) against independent autograd
references: its hand-written backward, a stacked probe's gradients, and training in the engine
against one probe trained with nn.Module, autograd and torch.optim.Adam on the same batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from reference_training import minibatch_order, train_with_adam
from torch import nn

from probemeter import Execution
from probemeter.probes import MLP, ProbeSet, load_probes
from probemeter.probes.scalar_mix import ScalarMixes, center_of_gravity
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate
from probemeter.training.memory import estimate_memory

LAYERS, WIDTH, CLASSES = 3, 4, 3


def _reference_mix(features: torch.Tensor, logits: torch.Tensor, scale: torch.Tensor):
    """γ Σ_l softmax(a)_l h_l for (..., L·d) features, written out for autograd."""
    blocks = features.reshape(*features.shape[:-1], LAYERS, WIDTH)
    weights = torch.softmax(logits, dim=-1)
    return scale * (blocks * weights.unsqueeze(-1)).sum(dim=-2)


@pytest.mark.numerics
def test_mix_forward_and_backward_match_autograd():
    torch.manual_seed(0)
    features = torch.randn(2, 5, LAYERS * WIDTH)
    logits, scale = torch.randn(2, 1, LAYERS), torch.rand(2, 1, 1) + 0.5
    upstream = torch.randn(2, 5, WIDTH)
    mixes = ScalarMixes(logits.clone(), scale.clone(), rows=5, width=WIDTH)
    mixed = mixes.forward(features)
    mixes.upstream.copy_(upstream)
    mixes.backward(features)
    a, g = logits.clone().requires_grad_(), scale.clone().requires_grad_()
    expected = torch.stack([_reference_mix(features[p], a[p, 0], g[p, 0]) for p in range(2)])
    (expected * upstream).sum().backward()
    torch.testing.assert_close(mixed, expected.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(mixes.logits.grad, a.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mixes.scale.grad, g.grad, rtol=1e-5, atol=1e-6)
    uniform = torch.full((1, LAYERS), 1 / LAYERS)
    assert center_of_gravity(uniform).item() == pytest.approx(1.0)  # layers 0, 1, 2


@pytest.mark.numerics
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_stacked_gradients_match_autograd(precision):
    probe = MLP((5,), mix=LAYERS)
    rngs = [np.random.default_rng([3, p]) for p in range(2)]
    stack = probe.stack(rngs, LAYERS * WIDTH, CLASSES, 6, precision, torch.device("cpu"))
    with torch.no_grad():  # a non-uniform mix, so every gradient term matters
        stack.stage.logits.copy_(torch.tensor([[[0.3, -0.2, 0.5]], [[-0.4, 0.1, 0.0]]]))
        stack.stage.scale.copy_(torch.tensor([[[1.3]], [[0.7]]]))
        stack.refresh()
    torch.manual_seed(1)
    x = torch.randn(2, 6, LAYERS * WIDTH)
    y = torch.randint(0, CLASSES, (2, 6, 1))
    w = torch.full((2, 6, 1), 1 / 6)
    stack.accumulate_gradients(x, y, w)
    reference = [p.detach().clone().requires_grad_() for p in stack.parameters]
    w0, b0, w1, b1, logits, scale = reference
    loss = 0.0
    for p in range(2):
        mixed = _reference_mix(x[p], logits[p, 0], scale[p, 0])
        hidden = torch.relu(mixed @ w0[p] + b0[p])
        loss = loss + F.cross_entropy(hidden @ w1[p] + b1[p], y[p, :, 0])
    loss.backward()
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if precision == "f32" else {"rtol": 0.05, "atol": 0.02}
    for got, want in zip(stack.parameters, reference):
        torch.testing.assert_close(got.grad, want.grad, **tolerance)


def _layered_task(rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Three layers side by side: noise, a weak view and a strong view of the labels."""
    labels = rng.integers(0, CLASSES, rows)
    centers = rng.normal(size=(CLASSES, WIDTH))
    layers = [rng.normal(size=(rows, WIDTH)) for _ in range(LAYERS)]
    layers[1] += 0.3 * centers[labels]
    layers[2] += 2.0 * centers[labels]
    return np.hstack(layers).astype(np.float32), labels.astype(np.int64)


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(11)
    return (*_layered_task(120, rng), *_layered_task(500, rng))


def _reference_train(task, subset, key, probe, config):
    """One probe the slow way: its own mix and layers, autograd, torch.optim.Adam, the same
    initial parameters and minibatch order as the engine's documented random stream."""
    x_train, y_train, x_eval, y_eval = task
    rng = np.random.default_rng(list(key))
    (w0, b0), (w1, b1) = probe.initial_parameters(rng, x_train.shape[1], CLASSES)
    order, batch = minibatch_order(rng, subset, config.steps, config.batch_size)
    parameters = [
        nn.Parameter(torch.zeros(LAYERS)),
        nn.Parameter(torch.ones(1)),
        *(nn.Parameter(torch.from_numpy(t.copy())) for t in (w0, b0, w1, b1)),
    ]
    logits, scale, w0, b0, w1, b1 = parameters

    def forward(x):
        return torch.relu(_reference_mix(x, logits, scale) @ w0 + b0) @ w1 + b1

    train_with_adam(forward, parameters, x_train, y_train, order, batch, config.lr)
    with torch.no_grad():
        eval_loss = F.cross_entropy(forward(torch.from_numpy(x_eval)), torch.from_numpy(y_eval))
    return eval_loss.item(), torch.softmax(logits.detach(), dim=0).numpy()


@pytest.mark.numerics
def test_engine_with_a_mix_trains_like_the_reference_and_finds_the_informative_layer(task):
    probe = MLP((8,), mix=LAYERS)
    config = TrainingConfig(steps=150, batch_size=32, lr=1e-2)
    subsets = [np.arange(120), np.arange(40)]
    keys = [(5, 0, 120), (5, 1, 40)]
    result = fit_evaluate(
        *task, CLASSES, subsets, keys, probe, config, execution=Execution(device="cpu", n_jobs=1)
    )
    weights = np.exp(result.mix_logits) / np.exp(result.mix_logits).sum(axis=1, keepdims=True)
    for row, (subset, key) in enumerate(zip(subsets, keys)):
        loss, reference_weights = _reference_train(task, subset, key, probe, config)
        np.testing.assert_allclose(result.loss[row], loss, rtol=1e-4)
        np.testing.assert_allclose(weights[row], reference_weights, rtol=1e-3, atol=1e-4)
    assert weights[0].argmax() == 2 and weights[0][2] > 0.5  # the strong layer wins
    assert result.mix_scale.shape == (2,) and result.mix_logits.shape == (2, LAYERS)


def test_early_stopping_and_kept_probes_with_a_mix(task, tmp_path):
    probe = MLP((8,), mix=LAYERS)
    config = TrainingConfig(batch_size=32, lr=1e-2, early_stopping=True, max_epochs=15)
    subsets = [np.arange(120), np.arange(60)]
    keys = [(5, 0, 120), (5, 1, 60)]
    result = fit_evaluate(
        *task,
        CLASSES,
        subsets,
        keys,
        probe,
        config,
        execution=Execution(device="cpu"),
        return_parameters=True,
    )
    x_eval, y_eval = task[2], task[3]
    kept = ProbeSet.from_stacked(
        "mixed", probe, result.parameters, [{"n": 120}, {"n": 60}], x_eval, y_eval,
        stack_rows=result.stack_rows, mixes=(result.mix_logits, result.mix_scale),
    )  # fmt: skip
    assert [p.loss for p in kept] == result.loss.tolist()  # the engine's numbers, exactly
    kept.save(tmp_path / "mixed.safetensors")
    again = load_probes(tmp_path / "mixed.safetensors")
    assert again.evaluate(x_eval, y_eval)["loss"].tolist() == result.loss.tolist()
    module = again[0].module()
    assert [name for name, _ in module.named_parameters()][:3] == [
        "0.logits",
        "0.scale",
        "1.weight",
    ]
    with torch.no_grad():
        logits = module(torch.from_numpy(x_eval))
    assert (logits.argmax(dim=1).numpy() == again[0].predictions).mean() > 0.99
    assert again[0].n_features == LAYERS * WIDTH and again[0].mix[0].shape == (LAYERS,)


def test_mlp_spec_with_a_mix():
    probe = MLP((8,), mix=LAYERS)
    assert probe.name == "mlp-8-mix3" and MLP.from_dict(probe.to_dict()) == probe
    assert probe.to_dict() == {"family": "mlp", "hidden": [8], "mix": 3}
    assert probe.layer_shapes(12, CLASSES) == [(4, 8), (8, 3)]
    plain = MLP((8,))
    assert probe.parameter_count(12, CLASSES) == plain.parameter_count(4, CLASSES) + LAYERS + 1
    assert probe.forward_flops(12, CLASSES) == plain.forward_flops(4, CLASSES) + 2 * 12
    with pytest.raises(ValueError, match="mix=3 layers side by side need a multiple of 3"):
        probe.layer_shapes(13, CLASSES)
    with pytest.raises(ValueError, match="mix"):
        MLP((8,), mix=1)
    # the mix adds its mixed inputs and their gradient (f32, rows x one layer's width) to the
    # buffers, and L + 1 parameters, to what the same layers would need without it
    config = TrainingConfig(batch_size=32)
    mixed, alone = (
        estimate_memory(probe, 12, CLASSES, config),
        estimate_memory(plain, 4, CLASSES, config),
    )
    assert mixed.activations - alone.activations == 32 * WIDTH * 2 * 4
    assert mixed.parameters - alone.parameters == (LAYERS + 1) * 4
