"""Early stopping with LR annealing inside the batched engine (Voita & Titov §3.1), against a
slow one-probe reference built from ``torch.nn`` and ``torch.optim.Adam``.

The reference shares only the documented random-stream contract with the engine: a probe keyed
by ``key`` draws its initial parameters from ``default_rng(list(key))`` via
``probe.initial_parameters``, then its dev split (``rng.permutation(n)``, the first
``round(0.1 n)`` go to dev), then one ``rng.permutation(n_train)`` per epoch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from probemeter import Execution
from probemeter.probes import MLP
from probemeter.training.config import TrainingConfig
from probemeter.training.early_stopping import IMPROVEMENT_NATS, BatchedAdam
from probemeter.training.engine import fit_evaluate

D, K = 5, 3


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(3)
    teacher = rng.normal(size=(D, K))
    x = rng.normal(size=(400, D)).astype(np.float32)
    y = (x @ teacher + 1.5 * rng.normal(size=(400, K))).argmax(axis=1).astype(np.int64)
    return x[:300], y[:300], x[300:], y[300:]


def _reference(x, y, subset, key, probe, config):
    """One probe, nn.Linear + autograd + torch.optim.Adam, the §3.1 rule written out plainly."""
    rng = np.random.default_rng(list(key))
    layers = probe.initial_parameters(rng, D, K)
    modules = []
    for index, (weight, bias) in enumerate(layers):
        linear = nn.Linear(*weight.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(weight.T))
            linear.bias.copy_(torch.from_numpy(bias))
        modules.append(linear)
        if index < len(layers) - 1:
            modules.append(nn.ReLU())
    model = nn.Sequential(*modules)
    shuffled = subset[rng.permutation(len(subset))]
    n_dev = max(1, round(config.dev_fraction * len(subset)))
    dev, train = shuffled[:n_dev], shuffled[n_dev:]
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    best, best_state, bad, epochs = np.inf, None, 0, 0
    batch = min(len(train), config.batch_size)
    while True:
        order = train[rng.permutation(len(train))]
        for start in range(0, len(order), batch):
            rows = torch.from_numpy(order[start : start + batch])
            optimizer.zero_grad()
            F.cross_entropy(model(xt[rows]), yt[rows]).backward()
            optimizer.step()
        epochs += 1
        with torch.no_grad():
            loss = F.cross_entropy(model(xt[dev]), yt[dev]).item()
        if loss < best - IMPROVEMENT_NATS:
            best, bad = loss, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            for group in optimizer.param_groups:
                group["lr"] *= config.lr_decay
        if bad >= config.patience or epochs >= config.max_epochs:
            break
    model.load_state_dict(best_state)
    return model, epochs


@pytest.mark.numerics
def test_probes_stop_at_different_epochs_and_match_one_probe_reference(task):
    x, y, x_eval, y_eval = task
    probe = MLP((8,))
    config = TrainingConfig(batch_size=32, lr=1e-2, early_stopping=True, max_epochs=60)
    rng = np.random.default_rng(0)
    subsets = [rng.permutation(300)[:n] for n in (12, 40, 90, 300)]
    keys = [(5, i) for i in range(len(subsets))]
    result = fit_evaluate(
        x,
        y,
        x_eval,
        y_eval,
        K,
        subsets,
        keys,
        probe,
        config,
        execution=Execution(device="cpu", n_jobs=1),
        per_example=True,
    )
    assert len(set(result.epochs.tolist())) > 1, result.epochs
    for i, (subset, key) in enumerate(zip(subsets, keys)):
        model, epochs = _reference(x, y, subset, key, probe, config)
        assert result.epochs[i] == epochs
        with torch.no_grad():
            nll = F.cross_entropy(
                model(torch.from_numpy(x_eval)), torch.from_numpy(y_eval), reduction="none"
            ).numpy()
        np.testing.assert_allclose(result.nll[i], nll, rtol=2e-4, atol=2e-5)


@pytest.mark.numerics
@pytest.mark.parametrize("probe", [MLP((8,)), MLP((8,), dropout=0.3)], ids=["plain", "dropout"])
def test_stopped_probe_is_independent_of_companions(task, probe):
    """Also when companions stop first and the stack is compacted around the probe (its
    dropout stream then carries on in the smaller stack)."""
    x, y, x_eval, y_eval = task
    config = TrainingConfig(batch_size=16, lr=1e-2, early_stopping=True, max_epochs=40)
    subset = np.arange(60)
    alone = fit_evaluate(
        x,
        y,
        x_eval,
        y_eval,
        K,
        [subset],
        [(1,)],
        probe,
        config,
        execution=Execution(device="cpu", n_jobs=1),
    )
    together = fit_evaluate(
        x,
        y,
        x_eval,
        y_eval,
        K,
        [np.arange(250), np.arange(30), np.arange(40), subset],
        [(2,), (3,), (4,), (1,)],
        probe,
        config,
        execution=Execution(device="cpu", n_jobs=1),
    )
    assert together.epochs[3] == alone.epochs[0]
    np.testing.assert_allclose(together.loss[3], alone.loss[0], rtol=1e-5)


@pytest.mark.numerics
def test_batched_adam_matches_torch_adam_per_probe():
    torch.manual_seed(0)
    stacked = torch.randn(3, 4, 2)
    optimizer = BatchedAdam([stacked], lr=0.1)
    optimizer.lr[:] = torch.tensor([0.1, 0.02, 0.0])
    singles = [torch.nn.Parameter(stacked[i].clone()) for i in range(3)]
    torch_opts = [torch.optim.Adam([p], lr=lr) for p, lr in zip(singles, (0.1, 0.02, 0.0))]
    for _ in range(5):
        grad = torch.randn(3, 4, 2)
        stacked.grad = grad
        optimizer.step()
        for i, (p, opt) in enumerate(zip(singles, torch_opts)):
            p.grad = grad[i].clone()
            opt.step()
    for i in range(3):
        torch.testing.assert_close(stacked[i], singles[i].detach(), rtol=1e-6, atol=1e-7)


def test_config_records_the_rule_and_rejects_bad_settings():
    spec = TrainingConfig(early_stopping=True, lr=1e-3, patience=4).to_dict()
    assert "4 such epochs" in spec["stopping"] and "x0.5" in spec["stopping"]
    assert "steps" not in spec
    assert "early_stopping" not in TrainingConfig().to_dict()
    for kwargs, name in (
        ({"dev_fraction": 0.0}, "dev_fraction"),
        ({"lr_decay": 1.5}, "lr_decay"),
        ({"patience": 0}, "patience"),
        ({"max_epochs": 2.5}, "max_epochs"),
        ({"early_stopping": "yes"}, "early_stopping"),
    ):
        with pytest.raises(ValueError, match=name):
            TrainingConfig(**kwargs)


def test_subset_of_one_is_rejected(task):
    x, y, x_eval, y_eval = task
    config = TrainingConfig(early_stopping=True)
    with pytest.raises(ValueError, match="at least 2"):
        fit_evaluate(
            x,
            y,
            x_eval,
            y_eval,
            K,
            [np.array([0])],
            [(0,)],
            MLP((4,)),
            config,
            execution=Execution(device="cpu", n_jobs=1),
        )
