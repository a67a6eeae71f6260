"""The multi-label objective (K sigmoids, binary cross-entropy per label; Tenney et al. 2019)
in the stacked engine: its hand-written backward against autograd, the engine against a
one-probe torch reference (autograd, ``nn.Linear``, ``torch.optim.Adam``), and F1 scores
against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from reference_training import minibatch_order, train_with_adam
from torch import nn

from probemeter import Execution
from probemeter._multilabel import f1_scores, label_counts, uniform_nats
from probemeter.datasets.edge_probing import SpanLayout
from probemeter.probes import MLP, Linear
from probemeter.probes.multilabel import binary_nll
from probemeter.probes.span_attention import pool_spans
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

D, K = 6, 4
POOL, N_EVAL = 160, 600


def _label_sets(rows: int, rng: np.random.Generator, teacher: np.ndarray):
    """Gaussian features and label sets: label k present when a noisy linear score is > 0.3
    (so examples carry zero, one or several labels)."""
    x = rng.normal(size=(rows, D)).astype(np.float32)
    scores = x @ teacher + 0.5 * rng.normal(size=(rows, K))
    return x, (scores > 0.3).astype(np.uint8)


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(11)
    teacher = rng.normal(size=(D, K))
    return (*_label_sets(POOL, rng, teacher), *_label_sets(N_EVAL, rng, teacher))


def _bce(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over rows of the binary cross-entropy summed over labels (nats per example)."""
    return F.binary_cross_entropy_with_logits(logits, targets, reduction="none").sum(1).mean()


# ---------------------------------------------------------------------------------------------
# the hand-written backward against autograd
# ---------------------------------------------------------------------------------------------


@pytest.mark.numerics
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_sigmoid_backward_matches_autograd(precision):
    rows, n_probes = 5, 3
    probe = MLP((7, 5))
    rngs = [np.random.default_rng(i) for i in range(n_probes)]
    stack = probe.stack(rngs, D, K, rows, precision, torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n_probes, rows, D, generator=gen)
    y = (torch.rand(n_probes, rows, K, generator=gen) > 0.5).float()
    weights = torch.tensor([[1 / 5] * 5, [1 / 3] * 3 + [0, 0], [1.0] + [0] * 4]).unsqueeze(2)
    stack.accumulate_gradients(x, y, weights)
    leaves = [p.detach().clone().requires_grad_() for p in stack.parameters]
    hidden = x
    for layer in range(0, len(leaves), 2):
        hidden = torch.baddbmm(leaves[layer + 1], hidden, leaves[layer])
        if layer + 2 < len(leaves):
            hidden = hidden.relu()
    per_row = F.binary_cross_entropy_with_logits(hidden, y, reduction="none").sum(2)
    (per_row * weights[:, :, 0]).sum().backward()
    rtol, atol = (1e-4, 1e-6) if precision == "f32" else (3e-2, 3e-3)
    for got, want in zip(stack.parameters, leaves):
        torch.testing.assert_close(got.grad, want.grad, rtol=rtol, atol=atol)
        assert want.grad.abs().max() > 1e-3  # not trivially zero


@pytest.mark.numerics
def test_span_attention_stage_backward_with_label_sets():
    """The edge-probing span stage (Lee et al. 2017 pooling) under the multi-label loss: every
    gradient, the stage's included, equals autograd's through the same forward."""
    tokens, width, projection, rows, n_probes = (3, 2), 5, 4, 6, 2
    layout = SpanLayout(tokens, width)
    rng = np.random.default_rng(4)
    features = np.zeros((n_probes, rows, layout.n_features), dtype=np.float32)
    features[:, :, 0] = rng.integers(1, 4, (n_probes, rows))
    features[:, :, 1] = rng.integers(1, 3, (n_probes, rows))
    for p in range(n_probes):
        for r in range(rows):
            offset = 2
            for span, padded in enumerate(tokens):
                count = int(features[p, r, span])
                block = features[p, r, offset : offset + padded * width].reshape(padded, width)
                block[:count] = rng.normal(size=(count, width))
                offset += padded * width
    x = torch.from_numpy(features)
    y = torch.from_numpy((rng.random((n_probes, rows, K)) > 0.5).astype(np.float32))
    weights = torch.full((n_probes, rows, 1), 1 / rows)
    probe = MLP((8,), span=tokens, projection=projection)
    rngs = [np.random.default_rng(i) for i in range(n_probes)]
    stack = probe.stack(rngs, layout.n_features, K, rows, "f32", torch.device("cpu"))
    stack.accumulate_gradients(x, y, weights)
    leaves = [p.detach().clone().requires_grad_() for p in stack.parameters]
    layers, spans = leaves[:4], leaves[4:]  # the layers' parameters come first
    hidden = pool_spans(spans, tokens, width, x)
    hidden = torch.baddbmm(layers[1], hidden, layers[0]).relu()
    logits = torch.baddbmm(layers[3], hidden, layers[2])
    per_row = F.binary_cross_entropy_with_logits(logits, y, reduction="none").sum(2)
    (per_row * weights[:, :, 0]).sum().backward()
    for got, want in zip(stack.parameters, leaves):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.numerics
def test_development_losses_are_the_binary_code():
    probe = Linear()
    stack = probe.stack([np.random.default_rng(0)], D, K, 4, "f32", torch.device("cpu"))
    x = torch.randn(1, 9, D, generator=torch.Generator().manual_seed(1))
    y = (torch.rand(1, 9, K, generator=torch.Generator().manual_seed(2)) > 0.5).float()
    w = torch.full((1, 9), 1 / 9)
    got = stack.losses(torch.tensor([0]), x, y, w)
    W, b = stack.parameters
    want = _bce(torch.baddbmm(b, x, W)[0], y[0])
    torch.testing.assert_close(got, want.view(1).double(), rtol=1e-5, atol=1e-6)  # f64 sums


# ---------------------------------------------------------------------------------------------
# the engine against the one-probe reference
# ---------------------------------------------------------------------------------------------


def _reference(task, subset, key, probe, config):
    """One probe the slow way: nn.Linear layers from the engine's documented random stream,
    autograd and torch.optim.Adam on the mean binary cross-entropy summed over labels."""
    x_train, y_train, x_eval, y_eval = task
    rng = np.random.default_rng(list(key))
    layers = probe.initial_parameters(rng, D, K)
    order, batch = minibatch_order(rng, subset, config.steps, config.batch_size)
    modules: list[nn.Module] = []
    for index, (weight, bias) in enumerate(layers):
        linear = nn.Linear(*weight.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(weight.T))
            linear.bias.copy_(torch.from_numpy(bias))
        modules += [linear] if index == len(layers) - 1 else [linear, nn.ReLU()]
    model = nn.Sequential(*modules)
    targets = y_train.astype(np.float32)
    parameters = list(model.parameters())
    train_with_adam(model, parameters, x_train, targets, order, batch, config.lr, _bce)
    with torch.no_grad():
        logits = model(torch.from_numpy(x_eval))
        truth = torch.from_numpy(y_eval.astype(np.float32))
        nll = F.binary_cross_entropy_with_logits(logits, truth, reduction="none").sum(1).double()
    predicted = (logits > 0).numpy()
    exact = (predicted == y_eval.astype(bool)).all(axis=1).mean()
    return nll.mean().item(), nll.clamp(max=1).mean().item(), exact, predicted


@pytest.mark.numerics
@pytest.mark.parametrize("probe", [Linear(), MLP((16,))], ids=["linear", "mlp-16"])
def test_engine_matches_one_probe_reference(task, probe):
    config = TrainingConfig(steps=80, batch_size=32, lr=1e-2)
    subsets = [np.arange(20), np.arange(45), np.arange(POOL)]
    keys = [(3, 0, 20), (3, 1, 45), (3, 0, POOL)]
    result = fit_evaluate(
        *task,
        K,
        subsets,
        keys,
        probe,
        config,
        execution=Execution(device="cpu", n_jobs=1),
        per_example=True,
    )
    assert result.predictions.shape == (3, N_EVAL, K) and result.predictions.dtype == np.uint8
    for row, (subset, key) in enumerate(zip(subsets, keys)):
        loss, truncated, exact, predicted = _reference(task, subset, key, probe, config)
        assert loss < K * math.log(2)  # it learnt: below the uniform code, K ln 2 nats
        np.testing.assert_allclose(result.loss[row], loss, rtol=1e-4)
        np.testing.assert_allclose(result.loss_truncated[row], truncated, rtol=1e-4, atol=1e-6)
        assert abs(result.accuracy[row] - exact) <= 2 / N_EVAL
        micro, macro = f1_scores(label_counts(predicted, task[3]))
        assert result.micro_f1[row] == pytest.approx(micro, abs=2e-3)
        assert result.macro_f1[row] == pytest.approx(macro, abs=2e-3)
        # per-example codes add up to the mean loss; F1 from the returned predictions agrees
        assert result.nll[row].mean() == pytest.approx(result.loss[row], rel=1e-5)
        counts = label_counts(result.predictions[row], task[3])
        assert f1_scores(counts) == pytest.approx((result.micro_f1[row], result.macro_f1[row]))
    assert result.micro_f1[2] > 0.8  # the full pool learns the teacher's label sets


def test_early_stopping_on_label_sets(task):
    config = TrainingConfig(batch_size=32, lr=1e-2, early_stopping=True, max_epochs=30)
    subsets = [np.arange(40, POOL)]
    result = fit_evaluate(
        *task,
        K,
        subsets,
        [(1, 0, 0)],
        Linear(),
        config,
        execution=Execution(device="cpu", n_jobs=1),
        dev_set=np.arange(40),
    )
    assert 1 <= result.epochs[0] <= 30
    assert result.loss[0] < 0.6 * K * math.log(2)


def test_engine_refuses_bad_label_sets(task):
    x_train, y_train, x_eval, y_eval = task
    config = TrainingConfig(steps=2)
    run = [[np.arange(10)], [(0,)], Linear(), config]
    with pytest.raises(ValueError, match="y_eval must be a 0/1 indicator matrix"):
        fit_evaluate(x_train, y_train, x_eval, y_eval[:, 0].astype(np.int64), K, *run)
    with pytest.raises(ValueError, match="y_train has 4 label columns but n_classes=5"):
        fit_evaluate(x_train, y_train, x_eval, y_eval, K + 1, *run)
    with pytest.raises(ValueError, match="only 0 and 1"):
        fit_evaluate(x_train, 2 * y_train, x_eval, y_eval, K, *run)


# ---------------------------------------------------------------------------------------------
# F1 and the uniform code, by hand
# ---------------------------------------------------------------------------------------------


def test_f1_scores_by_hand():
    targets = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
    predictions = np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0], [0, 0, 0]])
    # label 0: tp 2; label 1: tp 1, fn 1; label 2: fp 1, fn 1
    counts = label_counts(predictions, targets)
    np.testing.assert_array_equal(counts, [[2, 1, 0], [0, 0, 1], [0, 1, 1]])
    micro, macro = f1_scores(counts)
    assert micro == pytest.approx(2 * 3 / (2 * 3 + 1 + 2))  # 6/9
    assert macro == pytest.approx((1.0 + 2 / 3 + 0.0) / 3)
    # a label absent from targets and predictions has no F1 and is left out of the mean
    wider = np.hstack([counts, np.zeros((3, 1), dtype=np.int64)])
    assert f1_scores(wider) == pytest.approx((micro, macro))
    assert f1_scores(np.zeros((3, 2))) == (1.0, 1.0)  # nothing to find, nothing claimed


def test_f1_scores_match_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    targets = (rng.random((50, 6)) > 0.6).astype(int)
    predictions = (rng.random((50, 6)) > 0.5).astype(int)
    micro, macro = f1_scores(label_counts(predictions, targets))
    assert micro == pytest.approx(metrics.f1_score(targets, predictions, average="micro"))
    assert macro == pytest.approx(metrics.f1_score(targets, predictions, average="macro"))


def test_uniform_code_and_binary_nll():
    assert uniform_nats(5, multilabel=True) == pytest.approx(5 * math.log(2))
    assert uniform_nats(5) == pytest.approx(math.log(5))
    # at logits 0 every label costs ln 2 nats whatever the set: K ln 2 per example
    zero = torch.zeros(1, 3, K)
    y = torch.tensor([[[1.0, 0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]]])
    torch.testing.assert_close(binary_nll(zero, y), torch.full((1, 3), K * math.log(2)))
    # by hand: one label, logit 2, present: ln(1 + e^-2); absent: ln(1 + e^2)
    logits = torch.tensor([[[2.0, 2.0]]])
    got = binary_nll(logits, torch.tensor([[1.0, 0.0]]))
    assert got.item() == pytest.approx(math.log1p(math.exp(-2)) + math.log1p(math.exp(2)))


@pytest.mark.numerics
@pytest.mark.slow
def test_label_sets_train_alike_in_worker_processes(task, monkeypatch):
    """Label sets travel to worker processes (as shared memory maps) and train there to the
    same numbers as in this process."""
    from probemeter.training import engine

    config = TrainingConfig(steps=30, batch_size=32, lr=1e-2)
    subsets = [np.arange(n) for n in (20, 45, 90, POOL)]
    keys = [(5, i, len(s)) for i, s in enumerate(subsets)]
    run = [*task, K, subsets, keys, MLP((8,)), config]
    in_process = fit_evaluate(*run, execution=Execution(device="cpu", n_jobs=1), per_example=True)
    monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)  # tiny work: force the workers
    in_workers = fit_evaluate(*run, execution=Execution(device="cpu", n_jobs=2), per_example=True)
    for name in ("loss", "accuracy", "micro_f1", "macro_f1", "nll"):
        np.testing.assert_allclose(
            getattr(in_workers, name), getattr(in_process, name), rtol=1e-6, atol=1e-7
        )
