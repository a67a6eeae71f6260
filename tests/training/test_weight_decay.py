"""Weight decay, an L2 penalty (λ/2)·‖W‖² on the probes' weight matrices (TrainingConfig's
``weight_decay``), and per-probe settings trained side by side (fit_evaluate's ``lr`` and
``weight_decay``): λ = 0 changes nothing, the penalty's gradient is λW on the weights and
nothing on the biases (a hand computation), and a linear probe trained to convergence at
λ = 1/(C·n) is scikit-learn's LogisticRegression(C)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probemeter.probes import MLP, Linear
from probemeter.training import engine
from probemeter.training.config import TrainingConfig, grid_settings
from probemeter.training.early_stopping import BatchedAdam
from probemeter.training.engine import fit_evaluate


def _blobs(n: int = 240, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three overlapping Gaussian classes (not separable: the unpenalised optimum is finite)."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 3
    centres = rng.normal(size=(3, d))
    return (rng.normal(size=(n, d)) + centres[labels]).astype(np.float32), labels


def test_zero_weight_decay_keeps_the_config_and_its_key():
    assert TrainingConfig(weight_decay=0) == TrainingConfig()
    assert "weight_decay" not in TrainingConfig().to_dict()
    assert TrainingConfig(weight_decay=1e-3).to_dict()["weight_decay"] == 1e-3
    assert TrainingConfig.from_dict(TrainingConfig(weight_decay=0.5).to_dict()).weight_decay == 0.5
    with pytest.raises(ValueError, match="weight_decay"):
        TrainingConfig(weight_decay=-1.0)


def test_per_probe_settings_equal_to_the_config_change_nothing():
    """Per-probe values equal to the config's take the same path as none given: the same
    numbers bit for bit (and weight_decay=0 is the engine's default path: see
    tests/curves/test_settings_grid.py for a curve before and after)."""
    X, y = _blobs()
    subsets = [np.arange(n) for n in (20, 60, 200)]
    keys = [(0, i) for i in range(3)]
    config = TrainingConfig(steps=40, lr=3e-3, batch_size=32)
    common = (X, y, X[:90], y[:90], 3, subsets, keys, MLP((8,)), config)
    plain = fit_evaluate(*common, device="cpu", n_jobs=1)
    given = fit_evaluate(*common, device="cpu", n_jobs=1, lr=[3e-3] * 3, weight_decay=[0.0] * 3)
    np.testing.assert_array_equal(plain.loss, given.loss)
    np.testing.assert_array_equal(plain.accuracy, given.accuracy)


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def test_the_penalty_gradient_by_hand():
    """Three full-batch Adam steps of a linear probe at λ = 0.7, computed by hand in float64:
    the weights' gradient is Xᵀ(softmax(XW + b) − Y)/n + λW, the biases' has no λ term."""
    X, y = _blobs(n=30, d=4)
    lam, lr, steps, key = 0.7, 0.05, 3, (3, 1)
    config = TrainingConfig(steps=steps, lr=lr, batch_size=64, weight_decay=lam)
    trained = fit_evaluate(
        X, y, X, y, 3, [np.arange(30)], [key], Linear(), config, device="cpu", n_jobs=1,
        return_parameters=True,
    )  # fmt: skip
    [(weight, bias)] = Linear().initial_parameters(np.random.default_rng(list(key)), 4, 3)
    W, b = weight.astype(np.float64), bias.astype(np.float64)
    onehot = np.eye(3)[y]
    state = {"W": [np.zeros_like(W)] * 2, "b": [np.zeros_like(b)] * 2}
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for t in range(1, steps + 1):
        residual = _softmax(X @ W + b) - onehot
        gradients = {"W": X.T @ residual / len(y) + lam * W, "b": residual.mean(axis=0)}
        for name, value in (("W", W), ("b", b)):
            m, v = state[name]
            g = gradients[name]
            m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
            state[name] = [m, v]
            value -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    [(trained_w, trained_b)] = trained.parameters
    np.testing.assert_allclose(trained_w[0], W, atol=2e-6)
    np.testing.assert_allclose(trained_b[0], b, atol=2e-6)
    # the penalty mattered: without it the probe ends elsewhere
    free = fit_evaluate(
        X, y, X, y, 3, [np.arange(30)], [key], Linear(), TrainingConfig(steps=steps, lr=lr,
        batch_size=64), device="cpu", n_jobs=1, return_parameters=True,
    )  # fmt: skip
    assert np.abs(free.parameters[0][0][0] - W).max() > 1e-3


def test_batched_adam_per_probe_decay_matches_torch_adam():
    """Runs of probes with their own (lr, λ): each probe's weight follows torch.optim.Adam with
    weight_decay=λ (coupled L2), its bias Adam without; a probe at lr 0 does not move."""
    settings = [(0.01, 0.0), (0.01, 0.5), (0.01, 0.5), (0.003, 0.5), (0.0, 0.5)]
    generator = torch.Generator().manual_seed(4)
    weight = torch.randn(5, 4, 3, generator=generator)
    bias = torch.randn(5, 1, 3, generator=generator)
    start = weight.clone()
    optimizer = BatchedAdam(
        [weight, bias],
        [lr for lr, _ in settings],
        weight_decay=[decay for _, decay in settings],
        decayed=[True, False],
    )
    singles = [
        (torch.nn.Parameter(weight[i].clone()), torch.nn.Parameter(bias[i].clone()))
        for i in range(5)
    ]
    references = [
        torch.optim.Adam([{"params": [w], "weight_decay": decay}, {"params": [b]}], lr=lr)
        for (w, b), (lr, decay) in zip(singles, settings)
    ]
    for _ in range(6):
        weight.grad = torch.randn(5, 4, 3, generator=generator)
        bias.grad = torch.randn(5, 1, 3, generator=generator)
        optimizer.step()
        for i, ((w, b), reference) in enumerate(zip(singles, references)):
            w.grad, b.grad = weight.grad[i].clone(), bias.grad[i].clone()
            reference.step()
    for i in range(4):
        torch.testing.assert_close(weight[i], singles[i][0].detach(), rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(bias[i], singles[i][1].detach(), rtol=1e-6, atol=1e-7)
    assert torch.equal(weight[4], start[4])


def test_a_grid_trains_in_one_plan_and_each_setting_as_alone():
    """Four settings × three probes in one call: one chunk plan, one chunk on a CPU worker;
    each setting's probes have the numbers they have trained alone, up to float rounding."""
    X, y = _blobs()
    subsets = [np.arange(n) for n in (20, 60, 200)]
    keys = [(0, i) for i in range(3)]
    base = TrainingConfig(steps=60, lr=3e-3, batch_size=32)
    configs = grid_settings(base, {"weight_decay": [0.0, 0.05], "lr": [1e-3, 1e-2]})
    plans = []
    real = engine._plan

    def spy(*args, **kwargs):
        plans.append(real(*args, **kwargs))
        return plans[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "_plan", spy)
        together = fit_evaluate(
            X, y, X[:90], y[:90], 3, subsets * 4, keys * 4, MLP((8,)), base, device="cpu",
            n_jobs=1, lr=np.repeat([c.lr for c in configs], 3),
            weight_decay=np.repeat([c.weight_decay for c in configs], 3),
        )  # fmt: skip
    assert len(plans) == 1 and sum(chunk.members.size for chunk in plans[0]) == 12
    for s, config in enumerate(configs):
        alone = fit_evaluate(
            X, y, X[:90], y[:90], 3, subsets, keys, MLP((8,)), config, device="cpu", n_jobs=1
        )
        np.testing.assert_allclose(together.loss[3 * s : 3 * s + 3], alone.loss, rtol=1e-5)


def test_per_probe_settings_are_checked_by_name():
    X, y = _blobs(n=30)
    common = (X, y, X, y, 3, [np.arange(10)], [(0,)], Linear(), TrainingConfig(steps=1))
    with pytest.raises(ValueError, match=r"^lr: one value per probe"):
        fit_evaluate(*common, device="cpu", lr=[1e-3, 1e-3])
    with pytest.raises(ValueError, match=r"^weight_decay must be finite and >= 0"):
        fit_evaluate(*common, device="cpu", weight_decay=[-0.1])
    with pytest.raises(ValueError, match=r"^grid\['lr'\] repeats"):
        grid_settings(TrainingConfig(), {"lr": [1e-3, 1e-3]})
    with pytest.raises(ValueError, match="cannot be varied"):
        grid_settings(TrainingConfig(), {"steps": [1, 2]})


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_lambda_is_one_over_c_n_of_scikit_learn(C):
    """At λ = 1/(C·n), a linear probe trained full-batch to convergence minimises scikit-learn's
    LogisticRegression(C) objective: the same loss within 1 % and the same coefficients (the
    intercepts up to the constant that softmax ignores)."""
    from sklearn.linear_model import LogisticRegression

    X, y = _blobs(n=200, d=5, seed=1)
    n = len(y)
    reference = LogisticRegression(C=C, tol=1e-12, max_iter=10_000).fit(X, y)
    config = TrainingConfig(steps=4000, lr=0.02, batch_size=n, weight_decay=1.0 / (C * n))
    probe = fit_evaluate(
        X, y, X, y, 3, [np.arange(n)], [(0,)], Linear(), config, device="cpu", n_jobs=1,
        return_parameters=True,
    )  # fmt: skip
    [(weight, bias)] = probe.parameters
    theirs = reference.predict_log_proba(X)[np.arange(n), y].mean()
    assert probe.loss[0] == pytest.approx(-theirs, rel=0.01)
    np.testing.assert_allclose(weight[0], reference.coef_.T, atol=1e-3)
    np.testing.assert_allclose(
        bias[0] - bias[0].mean(), reference.intercept_ - reference.intercept_.mean(), atol=1e-3
    )
