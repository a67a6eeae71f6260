"""Pareto probing on edge-probing span rows with self-attentive pooling: the linear probes'
attention pooling against Lee et al.'s pooling (the identity of the module docstring), the
nuclear-norm span probe against a one-probe autograd reference, rank probes, and the MLP
family's span pooling."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from probes.test_span_attention import CLASSES, TOKENS, WIDTH, _reference_pool, _span_rows

from probemeter import Execution
from probemeter.data import ProbeData
from probemeter.pareto.linear_probes import (
    _minibatches,
    fit_nuclear_norm_probes,
    fit_rank_probes,
)
from probemeter.pareto.memorisation import memorisation_complexity, span_probe
from probemeter.pareto.span_pooling import attention_pool
from probemeter.pareto.sweeps import NUCLEAR_NORM, RANK, linear_sweep
from probemeter.probes import MLP
from probemeter.training.config import TrainingConfig


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(7)
    return (*_span_rows(200, rng), *_span_rows(100, rng))


@pytest.mark.numerics
def test_lee_pooling_then_a_linear_map_is_a_linear_map_of_attention_pooled_tokens(task):
    """[z_1, z_2] W + c with z_s = Σ a_t (h_t W_s + b_s), a = softmax(u · w_s), equals
    Σ_s h̄_s (W_s W⁽ˢ⁾) + Σ_s b_s W⁽ˢ⁾ + c with h̄_s pooled by attention vectors v_s = W_s w_s."""
    generator = torch.Generator().manual_seed(0)
    q = 4
    x = torch.from_numpy(task[0][:50])
    spans = [
        (torch.randn(WIDTH, q, generator=generator), torch.randn(q, generator=generator),
         torch.randn(q, 1, generator=generator))
        for _ in TOKENS
    ]  # fmt: skip
    W, c = (
        torch.randn(2 * q, CLASSES, generator=generator),
        torch.randn(CLASSES, generator=generator),
    )
    lee = _reference_pool(x, spans) @ W + c
    scores = torch.stack([W_s @ w_s[:, 0] for W_s, _, w_s in spans])[None]  # (1, S, d)
    pooled = attention_pool(x, scores, TOKENS, WIDTH)[0]
    maps = [spans[s][0] @ W[s * q : (s + 1) * q] for s in range(2)]
    bias = c + sum(spans[s][1] @ W[s * q : (s + 1) * q] for s in range(2))
    torch.testing.assert_close(pooled @ torch.cat(maps) + bias, lee, rtol=1e-4, atol=1e-4)
    # zero attention vectors pool each span's real tokens by their mean
    mean = attention_pool(x, torch.zeros(1, 2, WIDTH), TOKENS, WIDTH)[0, :, :WIDTH]
    first = x[:, 2 : 2 + 3 * WIDTH].reshape(-1, 3, WIDTH).sum(dim=1) / x[:, :1]
    torch.testing.assert_close(mean, first)


def _reference_nuclear_probe(task, penalty, steps, batch_size, lr):
    """One nuclear-norm span probe the slow way: attention vectors from 0 and W from its key's
    stream, the reference pooling (W_s = I, b_s = 0), L2-normalised pooled spans, eq. 3 (mean
    CE in bits + λ‖W‖*, the norm's autograd gradient) and Adam on the documented minibatches."""
    x_train, y_train, x_test, y_test = (torch.from_numpy(np.asarray(a)) for a in task)
    key = [0, *np.array([penalty], np.float64).view(np.uint32).tolist()]
    rng = np.random.default_rng(key)
    width = 2 * WIDTH
    bound = 1 / math.sqrt(width)
    weight = torch.tensor(rng.uniform(-bound, bound, (width + 1, CLASSES)), dtype=torch.float32)
    weight.requires_grad_()
    scores = [torch.zeros(WIDTH, 1, requires_grad=True) for _ in TOKENS]
    eye = torch.eye(WIDTH)

    def logits(x):
        pooled = _reference_pool(x, [(eye, torch.zeros(WIDTH), v) for v in scores])
        pooled = pooled / (pooled.norm(dim=1, keepdim=True) + 1e-5)
        return pooled @ weight[:-1] + weight[-1]

    optimizer = torch.optim.Adam([weight, *scores], lr=lr)
    for batch in _minibatches(len(y_train), batch_size, steps, 0):
        index = torch.from_numpy(batch)
        loss = F.cross_entropy(logits(x_train[index]), y_train[index]) / math.log(2)
        loss = loss + penalty * torch.linalg.svdvals(weight).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        accuracy = (logits(x_test).argmax(dim=1) == y_test).double().mean().item()
        return torch.linalg.svdvals(weight).sum().item(), accuracy


def test_nuclear_norm_span_probe_matches_the_one_probe_reference(task):
    penalties = [0.0, 0.05]
    result = fit_nuclear_norm_probes(
        *task, CLASSES, penalties, span=TOKENS, config=TrainingConfig(40, 32, 1e-2)
    )
    for index, penalty in enumerate(penalties):
        norm, accuracy = _reference_nuclear_probe(task, penalty, 40, 32, 1e-2)
        assert result.complexity[index] == pytest.approx(norm, rel=1e-3)
        assert result.accuracy[index] == pytest.approx(accuracy, abs=1.5 / len(task[3]))
    assert result.complexity[1] < result.complexity[0]  # the penalty lowers ‖W‖*
    assert result.metadata["span_attention"] == list(TOKENS)


def test_rank_span_probes_bound_the_rank_of_their_map(task):
    result = fit_rank_probes(*task, CLASSES, span=TOKENS, config=TrainingConfig(60, lr=1e-2))
    assert result.setting.tolist() == [1, 2, 3]  # min(K, S · d) = 3
    assert np.all(result.rank <= result.setting)
    assert result.accuracy[-1] > 1 / CLASSES


def test_linear_sweep_pools_the_spans_of_span_data(task):
    data = replace(ProbeData.from_arrays(*task, standardize=False), span_tokens=TOKENS)
    config = TrainingConfig(steps=20, lr=1e-2)
    sweep = linear_sweep(data, "edges", "tokens", penalties=[0.0, 0.1], ranks=[1, 3], config=config)
    assert sweep.points["measure"].tolist() == [NUCLEAR_NORM] * 2 + [RANK] * 2
    assert sweep.correct.shape == (4, len(task[3]))
    plain = fit_nuclear_norm_probes(*task, CLASSES, [0.0, 0.1], config=config)  # rows as they are
    assert sweep.points["complexity"].iloc[0] != pytest.approx(plain.complexity[0])


def test_the_mlp_family_pools_spans_on_span_rows(task):
    data = replace(ProbeData.from_arrays(*task, standardize=False), span_tokens=TOKENS)
    assert span_probe(MLP((8,), 0.1), data) == MLP((8,), 0.1, span=TOKENS, projection=256)
    result = memorisation_complexity(
        data, [MLP((8,)), MLP(())], random_state=0, execution=Execution(device="cpu", n_jobs=1),
        config=TrainingConfig(steps=10),
    )  # fmt: skip
    assert [p.span for p in result.probes] == [TOKENS, TOKENS]
    assert np.all((result.complexity >= 0) & (result.complexity <= 1))
    with pytest.raises(ValueError, match=r"pools spans \(4,\) but the rows hold \(3, 2\)"):
        span_probe(MLP((8,), span=(4,), projection=2), data)


def test_bad_span_input_is_named(task):
    with pytest.raises(ValueError, match="learned_input and span exclude each other"):
        fit_nuclear_norm_probes(
            *task, CLASSES, [0.0], span=TOKENS, learned_input=4, config=TrainingConfig(steps=1)
        )
    with pytest.raises(ValueError, match="do not hold 1 span count"):
        fit_rank_probes(*task, CLASSES, span=(4,), config=TrainingConfig(steps=1))
