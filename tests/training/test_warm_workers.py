"""``warm_workers``: the engine's worker processes start ahead of its first call, and that call
trains in them (the same processes), not in new ones."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from joblib import Parallel, delayed

from probemeter import Execution
from probemeter.probes import Linear
from probemeter.training import engine
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate, warm_workers


def _children() -> set[int]:
    """Live processes whose parent is this one (Linux ``/proc``)."""
    me, found = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def test_no_workers_no_thread():
    assert warm_workers(1) is None
    assert warm_workers(None) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.slow
def test_the_engine_trains_in_the_warmed_workers(monkeypatch):
    thread = warm_workers(2)
    thread.join(timeout=120)
    assert not thread.is_alive()
    warmed = _children()
    assert len(warmed) >= 2
    # the engine's call: worker processes (no in-process shortcut for small work)
    monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    subsets = [np.arange(50), np.arange(100), np.arange(150), np.arange(200)]
    keys = [(0, i) for i in range(4)]
    fit_evaluate(
        x,
        y,
        x,
        y,
        2,
        subsets,
        keys,
        Linear(),
        TrainingConfig(steps=5),
        execution=Execution(n_jobs=2),
    )
    assert _children() == warmed  # no process was started for it
    pids = Parallel(n_jobs=2, backend="loky")(delayed(os.getpid)() for _ in range(4))
    assert set(pids) <= warmed
