"""Every option a method shares with the Python API has one default (issue 31): for every
method in ``METHODS``, each API function that does the method's work takes the options it
shares with the method with the experiment file's defaults.

Read from the signatures (:func:`inspect.signature`): a parameter named like an option of its
method has that option's default, unless the table below writes out that it takes the option
in another form (``probe``'s widths as an ``MLP``), under another name, or is not that option
at all (with why); a parameter without a default (one the caller must give) is not compared.
The two defaults the functions resolve from None in their body are checked by calling them.
Training options are one ``config`` value, checked by ``tests/test_training_defaults.py``; the
experiment-file reader and command line against the method dataclass by
``tests/cli/test_method_defaults.py``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from probemeter.data import ProbeData
from probemeter.probes import MLP
from probemeter.runs.methods import METHODS


@dataclass(frozen=True)
class API:
    """One API function of a method (``"module:function"`` under ``probemeter.``) and how its
    parameters named otherwise or in another form than the method's options map to them."""

    function: str
    #: parameter -> (the method's option, its default in the parameter's form)
    takes: Mapping[str, tuple[str, Callable[[Any], Any]]] = field(default_factory=dict)
    #: parameter named like an option that is not that option -> why
    unrelated: Mapping[str, str] = field(default_factory=dict)

    def signature(self) -> inspect.Signature:
        module, name = self.function.split(":")
        return inspect.signature(getattr(importlib.import_module(f"probemeter.{module}"), name))


def _same(value: Any) -> Any:
    return value


#: a probe's hidden widths as the API takes them: the MLP of those widths
_AS_MLP = MLP
#: resolved in the function's body, checked by calling it below
_RESOLVED = "resolved from None in the body: test_defaults_resolved_in_the_body"

#: per method kind, the API functions doing its work
APIS: dict[str, list[API]] = {
    "curve": [
        API("curves.curve:loss_data_curve", takes={"probe": ("probe", _AS_MLP)}),
        # unit None is the metric's first unit: nats for the default metric, "loss"
        API(
            "curves.comparison:compare",
            takes={"unit": ("unit", lambda unit: None if unit == "nats" else unit)},
        ),
    ],
    "mdl": [
        API("mdl.online:online_codelength", takes={"probe": ("probe", _AS_MLP)}),
        API("mdl.online:online_codelengths"),
        API(
            "mdl.variational:variational_codelength",
            unrelated={
                "probe": _RESOLVED,
                "seeds": "the method's seeds are the online codes' data orders; its variational "
                "code trains one probe, the API's default seeds=1",
            },
        ),
    ],
    "switching": [
        API("mdl.switching_code:switching_codelength"),
        API("mdl.switching_code:switching_code"),
        API("mdl.online:online_codelengths"),
    ],
    "power": [
        API("power.paired:run_configurations", takes={"probes": ("probe", _AS_MLP)}),
        API("power.table:power_report"),
    ],
    "pareto": [
        API(
            "pareto.sweeps:linear_sweep",
            # ranks None: every rank 1 ... min(K, d), the method's ranks = true
            takes={"ranks": ("ranks", lambda ranks: None if ranks else ())},
            unrelated={"penalties": _RESOLVED},
        ),
        # the penalties' count: linear_sweep's λ by default
        API(
            "pareto.linear_probes:nuclear_norm_penalties", takes={"n_probes": ("penalties", _same)}
        ),
        API("pareto.sweeps:parser_sweep"),
        API("pareto.biaffine:fit_biaffine_parsers"),
    ],
    "structural": [
        API("structural.family:structural_probes"),
        API("structural.layers:structural_layers"),
    ],
    "k-sparse": [
        API("sparse_probing.k_sparse:k_sparse_probes", unrelated={"probe": _RESOLVED}),
        API("sparse_probing.ranking:rank_features"),
    ],
}
CASES = [(kind, api) for kind, apis in APIS.items() for api in apis]


def test_every_method_has_its_api_here():
    assert set(APIS) == set(METHODS)


@pytest.mark.parametrize(("kind", "api"), CASES, ids=[f"{k}-{a.function}" for k, a in CASES])
def test_the_api_takes_the_experiment_files_defaults(kind: str, api: API):
    options = {option.name: option.default for option in METHODS[kind].options()}
    parameters = api.signature().parameters
    written = {*api.takes, *api.unrelated}
    assert written <= set(parameters), f"{api.function} has no {written - set(parameters)}"
    assert {option for option, _ in api.takes.values()} <= set(options)
    compared = []
    for name, parameter in parameters.items():
        if name in api.unrelated:
            continue
        option, form = api.takes.get(name, (name, _same))
        if option not in options or parameter.default is parameter.empty:
            continue
        expected = form(options[option])
        assert parameter.default == expected, (
            f"{api.function}({name}={parameter.default!r}) but the {kind} method's {option} "
            f"defaults to {options[option]!r}"
        )
        compared.append(name)
    assert compared or _RESOLVED in api.unrelated.values(), (
        f"{api.function} shares no default with the {kind} method"
    )


def _data() -> ProbeData:
    rng = np.random.default_rng(0)
    labels = np.arange(60) % 3
    return ProbeData.from_arrays(rng.normal(size=(60, 4)) + labels[:, None], labels, name="toy")


def test_defaults_resolved_in_the_body():
    """variational_codelength's probe (``BayesianMLP.for_data`` of the ``mdl`` method's
    widths, span pooling where the rows are spans), k_sparse_probes' probe (the ``k-sparse``
    method's widths: linear) and linear_sweep's penalties (the ``pareto`` method's λ), each
    from one short training."""
    from probemeter.mdl.variational import variational_codelength
    from probemeter.pareto.frontiers import NUCLEAR_NORM
    from probemeter.pareto.sweeps import linear_sweep
    from probemeter.sparse_probing.k_sparse import k_sparse_probes
    from probemeter.training.config import TrainingConfig, VariationalTraining

    mdl = METHODS["mdl"]()
    code = variational_codelength(_data(), config=VariationalTraining(1, 64, 1e-2), device="cpu")
    assert tuple(code.metadata["probe"]["hidden"]) == mdl.probe

    k_sparse = METHODS["k-sparse"]()
    result = k_sparse_probes(_data(), (1, 2), sizes=[20], seeds=1, config=TrainingConfig(steps=1))
    assert tuple(result.curves[1].metadata["probe"]["hidden"]) == k_sparse.probe

    pareto = METHODS["pareto"]()
    sweep = linear_sweep(_data(), "task", "toy", ranks=(), config=TrainingConfig(steps=1))
    penalties = sweep.points.loc[sweep.points["measure"] == NUCLEAR_NORM, "setting"]
    assert tuple(penalties) == pareto.penalty_values()
