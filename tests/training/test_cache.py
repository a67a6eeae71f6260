"""The CPU cache share read from sysfs, and the engine's cap on chunks of probes on few rows:
their state within the cache budget, chunks on many rows and accelerators untouched, the
numbers the same whatever the chunking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from probemeter import Execution
from probemeter.probes import MLP
from probemeter.training import engine
from probemeter.training.cache import (
    CACHE_BOUND_ROWS,
    MIN_CACHE_BUDGET_BYTES,
    cache_budget,
    last_level_cache_share,
)
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate
from probemeter.training.memory import estimate_memory

MiB = 2**20


def _write_cache(root: Path, index: int, level: str, kind: str, size: str, cpus: str) -> None:
    entry = root / f"index{index}"
    entry.mkdir(parents=True)
    for name, text in (("level", level), ("type", kind), ("size", size)):
        (entry / name).write_text(text + "\n")
    (entry / "shared_cpu_list").write_text(cpus + "\n")


def test_the_share_is_the_last_level_divided_by_the_cpus_sharing_it(tmp_path):
    _write_cache(tmp_path, 0, "1", "Data", "32K", "0,64")
    _write_cache(tmp_path, 1, "1", "Instruction", "32K", "0,64")
    _write_cache(tmp_path, 2, "2", "Unified", "1024K", "0,64")
    _write_cache(tmp_path, 3, "3", "Unified", "32M", "0-7,64-71")
    assert last_level_cache_share(tmp_path) == 32 * MiB // 16


def test_the_share_skips_instruction_caches_and_unreadable_entries(tmp_path):
    _write_cache(tmp_path, 0, "1", "Data", "48K", "0")
    _write_cache(tmp_path, 1, "2", "Unified", "2048K", "0-1")
    _write_cache(tmp_path, 2, "3", "Instruction", "64M", "0")
    _write_cache(tmp_path, 3, "3", "Unified", "many", "0-3")  # garbled size
    assert last_level_cache_share(tmp_path) == 1 * MiB
    assert last_level_cache_share(tmp_path / "absent") == 0


def test_the_budget_is_half_this_machines_share_and_never_tiny():
    assert cache_budget() == max(last_level_cache_share() // 2, MIN_CACHE_BUDGET_BYTES)


def test_step_state_is_what_every_step_touches():
    config = TrainingConfig(steps=5, batch_size=32, early_stopping=True)
    memory = estimate_memory(MLP((64,)), 20, 4, config, rows=32, n_train=500, n_eval=100)
    parts = ("parameters", "gradients", "optimizer", "shadows", "activations", "minibatch")
    assert memory.step_state == sum(getattr(memory, name) for name in parts)
    assert memory.step_state < memory.training  # early-stopping copies are not per step


def _plan(sizes, cache_bytes):
    subsets = [np.arange(n) for n in sizes]
    config = TrainingConfig(steps=10, batch_size=256)
    chunks = engine._plan_chunks(
        subsets, MLP((512, 512)), (64, 10), config, 2.0, 1, n_eval=100, cache_bytes=cache_bytes
    )
    return sorted((rows, members.size) for members, rows in chunks)


def test_chunks_on_few_rows_hold_what_the_cache_budget_does():
    probe, config = MLP((512, 512)), TrainingConfig(steps=10, batch_size=256)
    state = estimate_memory(probe, 64, 10, config, rows=20, n_train=20, n_eval=100).step_state
    assert state > 4 * MiB  # the weights of 512 × 512 with their gradients and moments
    sizes = [20] * 5 + [400] * 4
    assert _plan(sizes, None) == [(20, 5), (256, 4)]
    assert _plan(sizes, int(2.5 * state)) == [(20, 1), (20, 2), (20, 2), (256, 4)]
    assert _plan(sizes, state // 3) == [(20, 1)] * 5 + [(256, 4)]  # never fewer than one
    # at CACHE_BOUND_ROWS rows and beyond the arithmetic hides the traffic: no cap
    at_bound = [CACHE_BOUND_ROWS] * 3
    assert _plan(at_bound, state // 3) == [(CACHE_BOUND_ROWS, 3)]
    assert _plan([CACHE_BOUND_ROWS - 1] * 3, state // 3) == [(CACHE_BOUND_ROWS - 1, 1)] * 3


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_engine_passes_the_cache_budget_on_the_cpu_only(monkeypatch, device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    seen = []
    real = engine._plan_chunks

    def spy(*args, cache_bytes=None, **kwargs):
        seen.append(cache_bytes)
        return real(*args, cache_bytes=cache_bytes, **kwargs)

    monkeypatch.setattr(engine, "_plan_chunks", spy)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 5)).astype(np.float32), rng.integers(0, 3, 60)
    config = TrainingConfig(steps=2)
    fit_evaluate(
        x,
        y,
        x,
        y,
        3,
        [np.arange(30)],
        [(0,)],
        MLP(),
        config,
        execution=Execution(device=device, n_jobs=1),
    )
    assert seen == [cache_budget() if device == "cpu" else None]


@pytest.mark.numerics
def test_capped_chunks_train_the_same_probes(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 64)).astype(np.float32)
    y = rng.integers(0, 10, 300)
    subsets = [rng.choice(300, n, replace=False) for n in (12, 12, 12, 40, 40)]
    keys = [(n, seed) for seed, n in enumerate((12, 12, 12, 40, 40))]
    config = TrainingConfig(steps=20, batch_size=256, lr=1e-3)

    def losses(budget: int) -> np.ndarray:
        monkeypatch.setattr(engine, "cache_budget", lambda: budget)
        probe = MLP((512, 512))
        # on the CPU, whatever the machine has: the cap is the CPU's (None on accelerators)
        arguments = (x, y, x, y, 10, subsets, keys, probe, config)
        return fit_evaluate(*arguments, execution=Execution(device="cpu", n_jobs=1)).loss

    plans = []
    real = engine._plan_chunks
    monkeypatch.setattr(
        engine, "_plan_chunks", lambda *a, **k: plans.append(real(*a, **k)) or plans[-1]
    )
    together, alone = losses(2**40), losses(1)
    assert [len(plan) for plan in plans] == [2, 5]  # by rows; then one probe per chunk
    np.testing.assert_allclose(alone, together, rtol=1e-5)
