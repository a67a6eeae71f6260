"""Every method's training defaults are one value: a trainer of the Python API given no
``config`` trains exactly as an experiment file of that method does with its defaults (issue 31).

The experiment file's side is the method dataclass with its defaults (``training()``, and the
variational and parser configurations); ``tests/cli/test_method_defaults.py`` checks that the
experiment-file reader and the command line produce those defaults. The API's side is what the
trainer makes of ``config=None``: every trainer resolves it through
:func:`probemeter.training.config.config_or_default`, here replaced by a stand-in that stops
the call with the default it was given, before anything is trained.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from probemeter.data import ProbeData
from probemeter.probes import MLP
from probemeter.runs.methods import METHODS
from probemeter.structural.trees import TreeData
from probemeter.training.config import (
    ParserTraining,
    StructuralTraining,
    TrainingConfig,
    VariationalTraining,
    config_or_default,
)

#: values for the options without a default
REQUIRED = {"curve": {"epsilon": 0.25}, "power": {"baseline": "a"}}


def _data() -> ProbeData:
    rng = np.random.default_rng(0)
    labels = np.arange(60) % 3
    return ProbeData.from_arrays(rng.normal(size=(60, 4)) + labels[:, None], labels, name="toy")


def _split() -> Any:
    """Parsing data of two-word sentences (the second word attached to the first, the root)."""
    from probemeter.pareto.sweeps import ParseSplit

    features = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    heads, sentences = np.array([0, 1] * 4), np.repeat(np.arange(4), 2)
    return ParseSplit(features, heads, sentences, features, heads, sentences)


def _trees() -> tuple[np.ndarray, TreeData]:
    trees = TreeData(((0, 1, 1), (2, 0), (0, 1, 2, 2)) * 4)
    return np.random.default_rng(2).normal(size=(trees.n_words, 5)).astype(np.float32), trees


def _paired() -> dict[str, Any]:
    from probemeter.power.sampling import stratified_splits

    data = _data()
    return {
        "features": {"a": data.X_train, "b": data.X_train[:, ::-1]},
        "y": data.y_train,
        "splits": stratified_splits(data.y_train, [4]),
    }


#: per method kind: (trainer, the module that resolves its ``config``, a call of it with no
#: ``config`` given that module, the experiment file's configuration of that trainer from the
#: method with its defaults)
TRAINERS: dict[str, list[tuple[str, str, Callable[[Any], Any], Callable[[Any], Any]]]] = {
    "curve": [
        (
            "loss_data_curve",
            "probemeter.curves.curve",
            lambda m: m.loss_data_curve(_data(), MLP(()), [10, 20], 1),
            lambda method: method.training(),
        )
    ],
    "mdl": [
        (
            "online_codelength",
            "probemeter.mdl.online",
            lambda m: m.online_codelength(_data(), MLP(()), (0.5, 1.0), 1),
            lambda method: method.training(),
        ),
        (
            "online_codelengths",
            "probemeter.mdl.online",
            lambda m: m.online_codelengths(_data(), [MLP(()), MLP((4,))], (0.5, 1.0), 1),
            lambda method: method.training(),
        ),
        (
            "variational_codelength",
            "probemeter.mdl.variational",
            lambda m: m.variational_codelength(_data()),
            lambda method: method.variational_training(),
        ),
    ],
    "switching": [
        (
            "switching_codelength",
            "probemeter.mdl.online",
            lambda m: importlib.import_module("probemeter.mdl.switching_code").switching_codelength(
                _data(), [MLP(()), MLP((4,))], (0.5, 1.0), 1
            ),
            lambda method: method.training(),
        )
    ],
    "power": [
        (
            "run_configurations",
            "probemeter.power.paired",
            lambda m: m.run_configurations(**_paired(), seeds=1),
            lambda method: method.training(),
        )
    ],
    "pareto": [
        (
            "linear_sweep",
            "probemeter.pareto.linear_probes",
            lambda m: importlib.import_module("probemeter.pareto.sweeps").linear_sweep(
                _data(), "task", "toy", penalties=[0.0]
            ),
            lambda method: method.training(),
        ),
        (
            "parser_sweep",
            "probemeter.pareto.biaffine",
            lambda m: importlib.import_module("probemeter.pareto.sweeps").parser_sweep(
                _split(), "task", "toy", [MLP(())]
            ),
            lambda method: method.parser_training(),
        ),
    ],
    "structural": [
        (
            name,
            module,
            lambda m, name=name: getattr(m, name)(*_trees()),
            lambda method: method.training(random_state=0),
        )
        for name, module in (
            ("structural_probes", "probemeter.structural.family"),
            ("structural_curve", "probemeter.structural.codes"),
            ("structural_online_code", "probemeter.structural.codes"),
        )
    ]
    + [
        (
            "structural_layers",
            "probemeter.structural.layers",
            lambda m: m.structural_layers({"0": _trees()[0]}, _trees()[1]),
            lambda method: method.training(random_state=0),
        )
    ],
}
TRAINERS["k-sparse"] = [
    (
        "k_sparse_probes",
        "probemeter.curves.curve",
        lambda m: importlib.import_module("probemeter.sparse_probing").k_sparse_probes(
            _data(), (1, 2), sizes=[20], seeds=1
        ),
        lambda method: method.training(),
    ),
    (
        "k_sparse_probes online",
        "probemeter.mdl.online",
        lambda m: importlib.import_module("probemeter.sparse_probing").k_sparse_probes(
            _data(), (1,), sizes=[20], seeds=1, online=True, timesteps=(0.5, 1.0)
        ),
        lambda method: method.online_training(),
    ),
]
CASES = [(kind, *trainer) for kind, trainers in TRAINERS.items() for trainer in trainers]


class _Resolved(Exception):
    """Stops a trainer with the default its ``config=None`` resolved to."""


def test_every_method_has_its_trainers_here():
    assert set(TRAINERS) == set(METHODS)


@pytest.mark.parametrize(
    ("kind", "name", "module", "call", "expected"), CASES, ids=[case[1] for case in CASES]
)
def test_the_api_trains_as_the_experiment_file_does_by_default(
    kind, name, module, call, expected, monkeypatch
):
    def resolve(config: Any, default: Any) -> Any:
        assert config is None, f"{name} was given a config"
        raise _Resolved(default)

    trainer_module = importlib.import_module(module)
    monkeypatch.setattr(trainer_module, "config_or_default", resolve)
    with pytest.raises(_Resolved) as resolved:
        call(trainer_module)
    method = METHODS[kind](**REQUIRED.get(kind, {}))
    assert resolved.value.args[0] == expected(method)


def test_pareto_steps_have_one_default():
    """The linear probes and the biaffine parsers share the method's ``steps``."""
    method = METHODS["pareto"]()
    assert method.training().steps == method.parser_training().steps == method.steps


@pytest.mark.parametrize(
    ("default", "wrong"),
    [
        (TrainingConfig(), StructuralTraining()),
        (VariationalTraining(30, 256, 1e-2), TrainingConfig()),
        (ParserTraining(10, 8, 1e-3), {"steps": 10}),
    ],
)
def test_a_config_of_another_class_is_refused_by_name(default, wrong):
    assert config_or_default(None, default) is default
    assert config_or_default(default, default) is default
    with pytest.raises(ValueError, match=rf"^config must be a {type(default).__name__}"):
        config_or_default(wrong, default)
