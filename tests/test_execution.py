"""One execution context: every function that trains probes takes ``execution=Execution(...)``;
the four keyword arguments it replaced are accepted for one release, with a DeprecationWarning."""

import dataclasses
import inspect

import numpy as np
import pytest

from probemeter import Execution, Linear, ProbeData, TrainingConfig, loss_data_curve
from probemeter.curves.refine import recommend_epsilon, refine_sample_complexity
from probemeter.mdl.online import online_codelength, online_codelengths
from probemeter.mdl.switching_code import switching_codelength
from probemeter.pareto.memorisation import memorisation_complexity
from probemeter.pareto.sweeps import mlp_family_points
from probemeter.power.paired import run_configurations
from probemeter.sparse_probing.k_sparse import k_sparse_probes
from probemeter.training.engine import fit_evaluate, fit_evaluate_many

FOUR = ("device", "n_jobs", "max_memory", "progress")
PUBLIC = (
    fit_evaluate,
    fit_evaluate_many,
    loss_data_curve,
    refine_sample_complexity,
    recommend_epsilon,
    online_codelength,
    online_codelengths,
    switching_codelength,
    k_sparse_probes,
    run_configurations,
    memorisation_complexity,
    mlp_family_points,
)


def _data():
    rng = np.random.default_rng(0)
    labels = np.arange(120) % 3
    return ProbeData.from_arrays(rng.normal(size=(120, 4)) + 2 * labels[:, None], labels)


def _curve(**kwargs):
    config = TrainingConfig(steps=20, lr=1e-2)
    return loss_data_curve(_data(), Linear(), [10, 40], seeds=2, config=config, **kwargs)


def test_execution_is_one_frozen_value_with_the_defaults_declared_once():
    assert Execution() == Execution("auto", -1, None, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Execution().device = "cpu"


@pytest.mark.parametrize("function", PUBLIC, ids=lambda f: f.__name__)
def test_every_trainer_takes_execution_and_none_of_the_four(function):
    parameters = inspect.signature(function).parameters
    assert parameters["execution"].default is None
    assert not set(FOUR) & set(parameters)
    assert parameters["old"].kind is inspect.Parameter.VAR_KEYWORD


def test_the_old_keywords_warn_naming_execution_and_give_the_same_curve():
    new = _curve(execution=Execution(device="cpu", n_jobs=1))
    with pytest.warns(DeprecationWarning, match=r"execution=Execution\(device='cpu', n_jobs=1\)"):
        old = _curve(device="cpu", n_jobs=1)
    assert old.points.equals(new.points)
    seconds = ("train_seconds",)
    assert {k: v for k, v in old.metadata.items() if k not in seconds} == {
        k: v for k, v in new.metadata.items() if k not in seconds
    }


def test_an_old_keyword_beside_execution_or_an_unknown_one_is_refused():
    with pytest.raises(TypeError, match=r"pass n_jobs in execution=Execution"):
        _curve(execution=Execution(device="cpu"), n_jobs=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_job'"):
        _curve(execution=Execution(device="cpu"), n_job=1)
