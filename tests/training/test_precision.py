"""``precision = "auto"``: the decision by hand-given facts, the facts read on this machine, and
curves and runs that resolve "auto" to exactly the precision it chose (issue 44, item 3)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from probemeter import Execution
from probemeter.curves.curve import loss_data_curve
from probemeter.data import ProbeData
from probemeter.probes import MLP
from probemeter.runs import load_experiment, run_experiment
from probemeter.training import precision
from probemeter.training.config import PRECISIONS, TrainingConfig
from probemeter.training.precision import (
    BF16_MARGIN,
    auto_precision,
    bf16_native,
    choose_precision,
    resolve_precision,
)

CPU = Execution(device="cpu", n_jobs=1)
#: minibatches of 64 rows, the narrowest the engine trains in bf16 (BF16_MIN_ROWS)
CONFIG = TrainingConfig(steps=40, batch_size=64, lr=1e-3)
SIZES = [30, 200]


@pytest.fixture(scope="module")
def digits() -> ProbeData:
    bunch = load_digits()
    return ProbeData.from_arrays(bunch.data, bunch.target, test_size=0.3, name="digits")


def _curve(data: ProbeData, config: TrainingConfig):
    return loss_data_curve(
        data, MLP((64,)), SIZES, seeds=2, config=config, execution=CPU, dev_fraction=0.0
    )


# ---------------------------------------------------------------------------------------------
# the decision, from hand-given facts
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("native", "f32", "bf16", "chosen", "says"),
    [
        (False, 100.0, 500.0, "f32", "no native bf16"),  # emulated: never, however it timed
        (True, 100.0, 20.0, "f32", "not 1.3x faster"),  # issue 44's emulated 5x slower
        (True, 250.0, 110.0, "f32", "not 1.3x faster"),  # avx512_bf16 without AMX (README)
        (True, 100.0, 129.0, "f32", "not 1.3x faster"),  # just below the margin
        (True, 100.0, 130.0, "bf16", "at least 1.3x faster"),  # the margin itself
        (True, 160.0, 609.0, "bf16", "(3.81x)"),  # AMX
    ],
)
def test_choice_is_bf16_only_when_native_and_faster_by_the_margin(native, f32, bf16, chosen, says):
    assert BF16_MARGIN == 1.3
    got, reason = choose_precision(native, f32, bf16)
    assert got == chosen
    assert says in reason
    assert f"bf16 {bf16:.0f} vs f32 {f32:.0f} GFLOP/s" in reason


def test_margin_is_an_argument():
    assert choose_precision(True, 100.0, 150.0, margin=2.0)[0] == "f32"
    assert choose_precision(True, 100.0, 200.0, margin=2.0)[0] == "bf16"


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan"), float("inf"), "fast"])
def test_a_rate_that_is_no_positive_number_is_refused(rate):
    with pytest.raises(ValueError, match="bf16_gflops must be a positive finite rate"):
        choose_precision(True, 100.0, rate)


def test_native_reads_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(precision, "_cpu_flags", lambda: {"avx512f", "avx2"})
    assert bf16_native(torch.device("cpu")) == (False, "no avx512_bf16/amx_bf16 flag")
    monkeypatch.setattr(precision, "_cpu_flags", lambda: {"avx512f", "amx_bf16", "avx512_bf16"})
    assert bf16_native(torch.device("cpu")) == (True, "amx_bf16, avx512_bf16")
    monkeypatch.setattr(precision, "_cpu_flags", lambda: {"asimd", "bf16"})  # aarch64
    assert bf16_native(torch.device("cpu"))[0]


# ---------------------------------------------------------------------------------------------
# on this machine
# ---------------------------------------------------------------------------------------------


def _flags_here() -> set[str]:
    """The flags of /proc/cpuinfo's first processor, read independently of the module."""
    path = Path("/proc/cpuinfo")
    if not path.exists():
        return set()
    for line in path.read_text().splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def test_auto_here_is_the_decision_on_its_measured_rates_and_is_measured_once():
    choice = auto_precision("cpu")
    assert choice.native == bool({"avx512_bf16", "amx_bf16", "bf16"} & _flags_here())
    assert choice.f32_gflops > 0 and choice.bf16_gflops > 0
    assert (choice.chosen, choice.reason) == choose_precision(
        choice.native, choice.f32_gflops, choice.bf16_gflops
    )
    assert auto_precision(torch.device("cpu")) is choice  # cached for the process
    record = choice.to_dict()
    assert record["requested"] == "auto" and record["chosen"] == choice.chosen
    assert record["reason"] == choice.reason
    assert record["f32_gflops"] == round(choice.f32_gflops, 1)
    assert record["bf16_gflops"] == round(choice.bf16_gflops, 1)


def test_resolve_leaves_concrete_precisions_and_replaces_auto():
    for concrete in ("f32", "bf16"):
        config = replace(CONFIG, precision=concrete)
        assert resolve_precision(config, "cpu") == (config, None)
    resolved, choice = resolve_precision(replace(CONFIG, precision="auto"), "cpu")
    assert resolved == replace(CONFIG, precision=choice.chosen)


def test_a_bad_precision_names_all_three():
    assert PRECISIONS == ("f32", "bf16", "auto")
    with pytest.raises(ValueError, match=r"precision must be one of \['f32', 'bf16', 'auto'\]"):
        TrainingConfig(precision="f16")


def test_an_auto_curve_is_the_chosen_precisions_curve_bit_for_bit_and_records_why(digits):
    choice = auto_precision("cpu")
    auto = _curve(digits, replace(CONFIG, precision="auto"))
    chosen = _curve(digits, replace(CONFIG, precision=choice.chosen))
    assert np.array_equal(auto.points["loss"], chosen.points["loss"])
    assert np.array_equal(auto.points["accuracy"], chosen.points["accuracy"])
    assert auto.metadata["training"]["precision"] == choice.chosen
    assert auto.metadata["precision"] == choice.to_dict()
    assert "precision" not in chosen.metadata  # only "auto" records a choice
    if choice.chosen == "bf16":  # bf16 did train: the curve is not the f32 one
        assert not np.array_equal(auto.points["loss"], _curve(digits, CONFIG).points["loss"])
    assert auto.to_dict()["metadata"]["precision"]["chosen"] == choice.chosen


def test_auto_without_native_bf16_is_the_f32_curve_bit_for_bit(digits, monkeypatch):
    """A CPU without native bf16 (the flags read as absent): "auto" measures, chooses f32 and
    says why; its curve is the f32 one exactly."""
    monkeypatch.setattr(precision, "_cpu_flags", lambda: {"avx512f"})
    precision._auto_precision.cache_clear()
    try:
        auto = _curve(digits, replace(CONFIG, precision="auto"))
        record = auto.metadata["precision"]
    finally:
        precision._auto_precision.cache_clear()  # the real machine's choice for later tests
    f32 = _curve(digits, CONFIG)
    assert record["chosen"] == "f32" and not record["native_bf16"]
    assert record["reason"].startswith("no native bf16")
    assert auto.metadata["training"]["precision"] == "f32"
    assert np.array_equal(auto.points["loss"], f32.points["loss"])


def test_the_engine_resolves_auto_for_any_caller(digits):
    """``fit_evaluate`` with "auto" (an online code's or a user's config) trains as its choice."""
    from probemeter.training.engine import fit_evaluate

    choice = auto_precision("cpu")
    subsets = [np.arange(200), np.arange(100)]
    keys = [(0, 1), (0, 2)]

    def run(name):
        config = replace(CONFIG, precision=name)
        return fit_evaluate(
            digits.X_train, digits.y_train, digits.X_test, digits.y_test, digits.n_classes,
            subsets, keys, MLP((64,)), config, execution=CPU,
        )  # fmt: skip

    assert np.array_equal(run("auto").loss, run(choice.chosen).loss)


# ---------------------------------------------------------------------------------------------
# a run: the key carries the precision used, the results the choice
# ---------------------------------------------------------------------------------------------

EXPERIMENT = """[run]
name = "{name}"
device = "cpu"
[task]
dataset = "digits"
[[representations]]
name = "pca-8"
kind = "pca"
n_components = 8
[method]
kind = "curve"
epsilon = 0.5
probe = []
steps = 20
batch_size = 64
seeds = 1
sizes = [20, 80]
precision = "{precision}"
"""


def test_a_run_with_auto_is_keyed_and_computed_as_its_choice(tmp_path):
    choice = auto_precision("cpu")
    runs = {}
    for name in ("auto", choice.chosen):
        path = tmp_path / f"{name}.toml"
        path.write_text(EXPERIMENT.format(name=f"run-{name}", precision=name))
        runs[name] = run_experiment(
            load_experiment(path), tmp_path / "runs", n_jobs=1, progress=False
        )
    auto, chosen = runs["auto"], runs[choice.chosen]
    assert auto.timings["pca-8"]["key"] == chosen.timings["pca-8"]["key"]
    assert auto.results[0]["metadata"]["precision"] == choice.to_dict()
    assert auto.results[0]["metadata"]["training"]["precision"] == choice.chosen
    assert auto.results[0]["points"] == chosen.results[0]["points"]


@pytest.mark.parametrize("kind", ["curve", "k-sparse"])
def test_methods_plan_auto_units_under_the_chosen_precisions_key(kind, digits):
    """The unit's key part names the chosen precision, the same as asking for it; the unit
    function gets the method with it and the record of the choice."""
    from probemeter._method import RunContext
    from probemeter.curves.method import CurveMethod
    from probemeter.sparse_probing.method import KSparseMethod

    choice = auto_precision("cpu")
    context = RunContext(
        random_state=0, device="cpu", n_jobs=1, max_memory=None, progress=False, task="digits"
    )

    def plan(name: str):
        method = (
            CurveMethod(epsilon=0.5, precision=name)
            if kind == "curve"
            else KSparseMethod(precision=name)
        )
        [unit] = method.units({"digits": digits}, context)
        return unit

    auto, plain = plan("auto"), plan(choice.chosen)
    assert auto.spec == plain.spec
    assert auto.options["method"].precision == choice.chosen
    assert auto.options["precision_choice"] == choice.to_dict()
    assert plain.options["precision_choice"] is None
