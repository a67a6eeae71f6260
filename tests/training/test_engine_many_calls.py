"""Several engine calls in one plan (``fit_evaluate_many``): each call's probes are planned
into the chunks ``fit_evaluate`` makes of them alone, every chunk of every call runs through one
pass of the workers, and every number is the one of the call made alone, bit for bit."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from probemeter import Execution
from probemeter.probes import MLP, Linear
from probemeter.training import engine
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import EngineCall, ProbeEvaluation, fit_evaluate, fit_evaluate_many

POOL = 240


def _call(seed: int, features: int, classes: int, probe, config, **options) -> EngineCall:
    """Probes of three sizes × two seeds on a random task of ``features`` and ``classes``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(POOL + 100, features)).astype(np.float32)
    y = (x @ rng.normal(size=(features, classes))).argmax(axis=1)
    subsets = [rng.permutation(POOL)[:n] for n in (15, 60, 240) for _ in range(2)]
    keys = [(seed, i) for i in range(len(subsets))]
    return EngineCall(
        x[:POOL], y[:POOL], x[POOL:], y[POOL:], classes, subsets, keys, probe, config, **options
    )


def _calls() -> list[EngineCall]:
    """Three calls that differ in data, probe, settings and what they return."""
    fixed = TrainingConfig(steps=30, batch_size=32, lr=1e-2)
    stopping = TrainingConfig(lr=1e-2, batch_size=16, early_stopping=True, max_epochs=4)
    return [
        _call(0, 6, 3, MLP((8,)), fixed, per_example=True, pool_rows=[np.arange(20)] * 6),
        _call(1, 10, 4, Linear(), fixed, return_parameters=True, lr=[1e-2, 3e-3] * 3),
        _call(2, 5, 3, MLP((8,)), stopping),
    ]


def _alone(call: EngineCall, n_jobs: int) -> ProbeEvaluation:
    return fit_evaluate(
        call.X_train, call.y_train, call.X_eval, call.y_eval, call.n_classes, call.subsets,
        call.keys, call.probe, call.config, execution=Execution(device="cpu", n_jobs=n_jobs),
        per_example=call.per_example, return_parameters=call.return_parameters,
        pool_rows=call.pool_rows, lr=call.lr,
    )  # fmt: skip


def _assert_identical(got: ProbeEvaluation, expected: ProbeEvaluation) -> None:
    for item in fields(ProbeEvaluation):
        a, b = getattr(got, item.name), getattr(expected, item.name)
        assert (a is None) == (b is None), item.name
        if item.name == "parameters" and a is not None:
            for (wa, ba), (wb, bb) in zip(a, b):
                assert np.array_equal(wa, wb) and np.array_equal(ba, bb)
        elif isinstance(a, tuple):
            assert all(np.array_equal(u, v) for u, v in zip(a, b)), item.name
        elif a is not None:
            assert np.array_equal(a, b), item.name


class _Spy:
    """Records the chunk plans and the worker passes of the engine."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plans: list[list[tuple[list[int], int]]] = []
        self.passes: list[int] = []
        plan, run_in_workers = engine._plan, engine._run_in_workers

        def planned(*args, **kwargs):
            chunks = plan(*args, **kwargs)
            self.plans.append([(chunk.members.tolist(), chunk.rows) for chunk in chunks])
            return chunks

        def in_workers(work, *args, **kwargs):
            self.passes.append(len(work))
            return run_in_workers(work, *args, **kwargs)

        monkeypatch.setattr(engine, "_plan", planned)
        monkeypatch.setattr(engine, "_run_in_workers", in_workers)


def test_calls_in_this_process_equal_each_call_alone(monkeypatch):
    calls = _calls()
    spy = _Spy(monkeypatch)
    alone = [_alone(call, n_jobs=1) for call in calls]
    together = fit_evaluate_many(calls, execution=Execution(device="cpu", n_jobs=1))
    assert len(together) == len(calls)
    for got, expected in zip(together, alone):
        _assert_identical(got, expected)
    assert spy.plans[3:] == spy.plans[:3] and spy.passes == []


@pytest.mark.slow
@pytest.mark.parametrize("small", [False, True], ids=["in-workers-alone", "small-alone"])
def test_calls_in_one_worker_pass_equal_each_call_alone(small, monkeypatch):
    """Every chunk of every call in one pass of two workers, the same chunks as alone. With
    ``small``, each call alone is small work (in this process, on one thread) and all of them
    together are not: the same numbers in the workers."""
    calls = _calls()
    if small:
        flops = [
            engine._training_flops(
                call.subsets, call.probe, (call.X_train.shape[1], call.n_classes), call.config
            )
            for call in calls
        ]
        monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 1.01 * max(flops))
        assert sum(flops) > engine._SMALL_WORK_FLOPS
    else:
        monkeypatch.setattr(engine, "_SMALL_WORK_FLOPS", 0)
    spy = _Spy(monkeypatch)
    alone = [_alone(call, n_jobs=2) for call in calls]
    # alone: a small call in this process, any other in the workers (more than one chunk)
    assert spy.passes == ([] if small else [len(p) for p in spy.plans])
    assert small or all(len(plan) > 1 for plan in spy.plans)
    together = fit_evaluate_many(calls, execution=Execution(device="cpu", n_jobs=2))
    for got, expected in zip(together, alone):
        _assert_identical(got, expected)
    assert spy.plans[3:] == spy.plans[:3]  # each call's chunks as alone
    assert spy.passes[-1] == sum(len(plan) for plan in spy.plans[:3])  # all in one pass


def test_calls_are_checked_before_anything_trains(monkeypatch):
    assert fit_evaluate_many([]) == []
    trained = []
    monkeypatch.setattr(engine, "_run", lambda *args, **kwargs: trained.append(1))
    good = _calls()[0]
    with pytest.raises(ValueError, match=r"^calls\[1\] must be an EngineCall; got dict"):
        fit_evaluate_many([good, {}])
    bad = _call(3, 4, 3, Linear(), TrainingConfig(steps=5), lr=[1.0])
    with pytest.raises(ValueError, match=r"^lr: one value per probe \(6\)"):
        fit_evaluate_many([good, bad])
    with pytest.raises(ValueError, match="n_jobs"):
        fit_evaluate_many([good], execution=Execution(n_jobs=0))
    assert trained == []


def test_a_divergence_warning_names_the_callers_line():
    config = TrainingConfig(steps=30, lr=1e6)
    call = _call(0, 6, 3, Linear(), config)
    with pytest.warns(RuntimeWarning, match="diverged") as many:
        fit_evaluate_many([call], execution=Execution(device="cpu", n_jobs=1))
    with pytest.warns(RuntimeWarning, match="diverged") as one:
        _alone(call, n_jobs=1)
    assert many[0].filename == __file__ and one[0].filename == __file__
