"""Probe settings chosen without the test set (issue 33, item 4): a grid of weight decay ×
learning rate trains in the curve's one engine pass, and at each size the setting of the lowest
development loss gives the points; the results record the grid, the choices, every setting's
development loss, chosen_on = "dev" and tested_on = "test"."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from experiment_files import PIXELS, digits_experiment, run_file

from probemeter import Execution
from probemeter.curves import curve as curve_module
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.method import CurveMethod
from probemeter.curves.results import result_frames, settings_note
from probemeter.data import ProbeData
from probemeter.probes import Linear
from probemeter.training import engine
from probemeter.training.config import TrainingConfig

CONFIG = TrainingConfig(steps=150, lr=0.02, batch_size=64)
SIZES = [20, 80, 300]
#: no penalty, and one that keeps every probe close to the uniform code
GRID = {"weight_decay": [0.0, 5.0]}


def _shifted_test() -> ProbeData:
    """A pool whose labels the features give cleanly, and a test set whose every label is the
    next class's: a confident probe is confidently wrong there, a strongly penalised one stays
    near ln 3. The development split (from the pool) favours no penalty, the test set the
    penalty."""
    rng = np.random.default_rng(0)
    labels = np.arange(600) % 3
    features = rng.normal(size=(600, 4)) + 3 * np.eye(3, 4)[labels]
    test_labels = (labels[400:] + 1) % 3
    return ProbeData(
        features[:400].astype(np.float32), labels[:400], features[400:].astype(np.float32),
        test_labels, 3, name="shifted",
    )  # fmt: skip


def _with_decay(decay: float) -> TrainingConfig:
    return replace(CONFIG, weight_decay=decay)


def _curve(data: ProbeData, **keywords) -> LossDataCurve:
    keywords = {"config": CONFIG, **keywords}
    return loss_data_curve(
        data, Linear(), SIZES, 2, execution=Execution(device="cpu", n_jobs=1), **keywords
    )


@pytest.mark.numerics
def test_the_development_split_chooses_not_the_test_set():
    data = _shifted_test()
    chosen = _curve(data, settings=GRID)
    alone = {decay: _curve(data, config=_with_decay(decay)) for decay in GRID["weight_decay"]}
    # the test set would choose the penalty at every size ...
    for n in SIZES:
        assert alone[5.0].mean("loss")[n] < alone[0.0].mean("loss")[n]
    # ... the development split chose none, and the points are those probes' test losses
    record = chosen.metadata["settings"]
    assert record["chosen_on"] == "dev" and record["tested_on"] == "test"
    assert [row["weight_decay"] for row in record["chosen"]] == [0.0] * len(SIZES)
    assert [row["n"] for row in record["chosen"]] == SIZES
    np.testing.assert_allclose(chosen.points["loss"], alone[0.0].points["loss"], rtol=1e-5)
    np.testing.assert_allclose(chosen.points["dev_loss"], alone[0.0].points["dev_loss"], rtol=1e-5)
    # every setting's development loss is recorded, the chosen one the lowest at its size
    frame = chosen.settings_frame()
    assert len(frame) == len(SIZES) * 2 and set(frame["chosen_on"]) == {"dev"}
    for n, rows in frame.groupby("n"):
        assert rows.loc[rows["chosen"], "dev_loss"].item() == rows["dev_loss"].min()
        for decay in GRID["weight_decay"]:
            dev = rows.loc[rows["weight_decay"] == decay, "dev_loss"].item()
            assert dev == pytest.approx(alone[decay].development_curve().mean("loss")[n], 1e-5)
    # and it survives the results file
    again = LossDataCurve.from_dict(json.loads(json.dumps(chosen.to_dict())))
    assert again.metadata["settings"] == record
    assert "settings" in result_frames([again])
    assert "chosen per size on dev" in settings_note([again])


def test_the_grid_is_one_engine_call_and_one_chunk_plan(monkeypatch):
    calls, plans = [], []
    real_fit, real_plan = curve_module.fit_evaluate, engine._plan

    def fit(*args, **kwargs):
        calls.append(len(args[5]))
        return real_fit(*args, **kwargs)

    def plan(*args, **kwargs):
        plans.append(real_plan(*args, **kwargs))
        return plans[-1]

    monkeypatch.setattr(curve_module, "fit_evaluate", fit)
    monkeypatch.setattr(engine, "_plan", plan)
    _curve(_shifted_test(), settings={"weight_decay": [0.0, 0.1, 1.0], "lr": [0.01, 0.02]})
    assert calls == [6 * len(SIZES) * 2]  # settings × sizes × seeds, in one call
    assert len(plans) == 1 and sum(chunk.members.size for chunk in plans[0]) == calls[0]


def test_without_a_grid_the_curve_and_its_key_are_unchanged():
    """No grid, or weight_decay = 0 given: the same probes, numbers and unit key as before the
    option existed (the engine's λ = 0 path is the one it always took)."""
    data = _shifted_test()
    plain = _curve(data)
    zero = _curve(data, config=_with_decay(0.0))
    assert plain.points.equals(zero.points) and "settings" not in plain.metadata
    method = CurveMethod(epsilon=0.5)
    assert method.settings_grid() is None and method.training() == TrainingConfig()
    assert "weight_decay" not in method.training().to_dict()


def test_the_method_reads_a_grid_and_checks_it():
    method, problems = CurveMethod.from_values(
        {"epsilon": 0.5, "lr": [1e-3, 1e-2], "weight_decay": [0, 1e-3, 1e-2]}
    )
    assert not problems
    assert method.settings_grid() == {"weight_decay": [0.0, 1e-3, 1e-2], "lr": [1e-3, 1e-2]}
    one, _ = CurveMethod.from_values({"epsilon": 0.5, "lr": [1e-3]})
    assert one.lr == 1e-3 and one.settings_grid() is None
    _, problems = CurveMethod.from_values({"epsilon": 0.5, "weight_decay": [0.1, 0.1]})
    assert problems and problems[0].startswith("method.weight_decay: must be a number >= 0")
    _, problems = CurveMethod.from_values({"epsilon": 0.5, "lr": [1e-3, 1e-2], "dev_fraction": 0})
    assert problems == [
        "method.lr: a list is a grid chosen on the development split: dev_fraction must be > 0 "
        "(the test set is never used to choose)"
    ]
    with pytest.raises(ValueError, match=r"^settings: a grid is chosen on the development"):
        _curve(_shifted_test(), settings=GRID, dev_fraction=0.0)


@pytest.mark.slow
def test_a_grid_through_probemeter_run(tmp_path):
    method = (
        'kind = "curve"\nepsilon = 0.5\nprobe = []\nsizes = [50, 200]\nseeds = 2\nsteps = 30\n'
        "lr = [0.003, 0.03]\nweight_decay = [0.0, 0.01]\n"
    )
    run = run_file(tmp_path, digits_experiment(method, "grid", [PIXELS]), "grid")
    results = json.loads((run / "results.json").read_text())
    record = results["curves"][0]["metadata"]["settings"]
    assert record["grid"] == {"weight_decay": [0.0, 0.01], "lr": [0.003, 0.03]}
    assert (record["chosen_on"], record["tested_on"]) == ("dev", "test")
    assert [row["n"] for row in record["chosen"]] == [50, 200] and len(record["dev_loss"]) == 8
    specs = [json.loads(p.read_text())["spec"] for p in (run / "units").glob("*.json")]
    assert specs and all(spec["settings"] == record["grid"] for spec in specs)


def test_kept_probes_are_the_chosen_settings():
    """With keep_probes, the probes kept are the chosen settings' (their losses the points', bit
    for bit)."""
    curve = _curve(_shifted_test(), settings={"lr": [0.005, 0.02]}, keep_probes=True)
    kept = np.array([probe.loss for probe in curve.probes])
    np.testing.assert_array_equal(kept, curve.points["loss"].to_numpy())
