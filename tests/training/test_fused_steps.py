"""The engine's direct fused-Adam calls and the chunking of early-stopped probes (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probemeter.probes import MLP
from probemeter.training import engine
from probemeter.training.config import TrainingConfig
from probemeter.training.early_stopping import BatchedAdam
from probemeter.training.fused_adam import FusedAdam
from probemeter.training.memory import estimate_memory


def _stacked(seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(3, 7, 5, generator=generator), torch.randn(3, 1, 5, generator=generator)]


@pytest.mark.numerics
def test_fused_adam_is_torch_adam_fused_bit_for_bit():
    ours, theirs = _stacked(0), _stacked(0)
    for tensor in ours + theirs:
        tensor.grad = torch.zeros_like(tensor)
    optimizer, reference = FusedAdam(ours, lr=3e-3), torch.optim.Adam(theirs, lr=3e-3, fused=True)
    generator = torch.Generator().manual_seed(1)
    for _ in range(25):
        for mine, other in zip(ours, theirs):
            gradient = torch.randn(mine.shape, generator=generator)
            mine.grad.copy_(gradient)
            other.grad.copy_(gradient)
        optimizer.step()
        reference.step()
    for mine, other in zip(ours, theirs):
        assert torch.equal(mine, other)


@pytest.mark.numerics
def test_batched_adam_runs_of_equal_rates_match_one_adam_per_probe():
    """Probes 0-1 and 3-4 share a rate (one fused call per run), probe 2 has its own and probe 5
    is stopped (rate 0: it must not move); each matches torch.optim.Adam on its own slice."""
    rates = [0.01, 0.01, 0.002, 0.005, 0.005, 0.0]
    stacked = torch.randn(6, 4, 3, generator=torch.Generator().manual_seed(2))
    start = stacked.clone()
    optimizer = BatchedAdam([stacked], lr=0.01)
    optimizer.lr[:] = torch.tensor(rates)
    singles = [torch.nn.Parameter(stacked[i].clone()) for i in range(6)]
    references = [torch.optim.Adam([p], lr=rate) for p, rate in zip(singles, rates)]
    generator = torch.Generator().manual_seed(3)
    for _ in range(6):
        gradient = torch.randn(6, 4, 3, generator=generator)
        stacked.grad = gradient
        optimizer.step()
        for i, (single, reference) in enumerate(zip(singles, references)):
            single.grad = gradient[i].clone()
            reference.step()
    for i in range(6):
        torch.testing.assert_close(stacked[i], singles[i].detach(), rtol=1e-6, atol=1e-7)
    assert torch.equal(stacked[5], start[5])


def test_early_stopped_probes_are_chunked_by_data_not_by_rows():
    """An online code's probes (prefixes 1/32 … 1 of the data): with two workers the full-data
    probe trains alone and the next largest in the other chunk, each chunk holding about half
    of the data; fixed-steps training still splits by rows."""
    sizes = [n * 1000 for n in (1, 2, 4, 8, 16, 32)]
    subsets = [np.arange(n) for n in sizes]
    probe, dims = MLP((32,)), (8, 3)
    stopping = TrainingConfig(early_stopping=True, batch_size=64)
    chunks = engine._plan_chunks(subsets, probe, dims, stopping, 2.0, 2, n_eval=100)
    members = [sorted(sizes[i] for i in chunk) for chunk, _ in chunks]
    assert members == [[32000], [1000, 2000, 4000, 8000, 16000]]
    assert sorted(i for chunk, _ in chunks for i in chunk) == list(range(6))
    fixed = TrainingConfig(steps=10, batch_size=64)
    by_rows = engine._plan_chunks(subsets, probe, dims, fixed, 2.0, 2, n_eval=100)
    assert sorted(len(chunk) for chunk, _ in by_rows) == [3, 3]


def test_balanced_chunks_respect_the_memory_budget():
    sizes = [5000, 4000, 3000, 2000, 1000, 500, 250]
    subsets = [np.arange(n) for n in sizes]
    probe, dims = MLP((32,)), (8, 3)
    config = TrainingConfig(early_stopping=True, batch_size=64)
    memory = estimate_memory(probe, *dims, config, rows=64, n_train=5000, n_eval=100)
    budget = memory.chunk_bytes(2) / 2**30  # two probes per chunk at most
    chunks = engine._plan_chunks(subsets, probe, dims, config, budget, 2, n_eval=100)
    assert all(len(chunk) <= 2 for chunk, _ in chunks)
    assert sorted(i for chunk, _ in chunks for i in chunk) == list(range(len(sizes)))
    assert len(chunks) == 4
