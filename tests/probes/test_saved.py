"""Tests of kept probes: the engine's trained probes as SavedProbes, their safetensors file, the
exact reproduction of their test losses, and their ``torch.nn`` modules."""

from __future__ import annotations

import json

import numpy as np
import pytest
import safetensors.numpy
import torch
from sklearn.datasets import load_digits

from probemeter import Execution
from probemeter.data import ProbeData, nested_subset
from probemeter.probes import MLP, Linear, ProbeSet, SavedProbe, load_probes
from probemeter.probes import saved as saved_module
from probemeter.training.config import TrainingConfig
from probemeter.training.engine import fit_evaluate

PROBE = MLP((32, 16))
GRID = [(n, seed) for n in (30, 300, 1258) for seed in (0, 1)]


@pytest.fixture(scope="module")
def digits() -> ProbeData:
    bunch = load_digits()
    return ProbeData.from_arrays(bunch.data, bunch.target, test_size=0.3, name="digits-pixels")


@pytest.fixture(scope="module")
def trained(digits):
    """Six MLP probes trained by the engine (its evaluation and parameters) and their set."""
    assert digits.pool_size == 1258
    subsets = [nested_subset(digits.pool_size, n, 0, seed) for n, seed in GRID]
    keys = [(0, seed, n) for n, seed in GRID]
    config = TrainingConfig(steps=100, batch_size=64, lr=1e-2)
    evaluation = fit_evaluate(
        digits.X_train, digits.y_train, digits.X_test, digits.y_test, digits.n_classes, subsets,
        keys, PROBE, config, execution=Execution(device="cpu"), return_parameters=True,
    )  # fmt: skip
    infos = [{"n": n, "seed": seed} for n, seed in GRID]
    probes = ProbeSet.from_stacked(
        digits.name, PROBE, evaluation.parameters, infos, digits.X_test, digits.y_test,
        stack_rows=evaluation.stack_rows,
    )  # fmt: skip
    return evaluation, probes


def test_kept_probes_carry_the_engines_weights_and_exact_test_metrics(trained, digits):
    evaluation, probes = trained
    assert len(probes) == 6 and probes.name == "digits-pixels"
    for index, probe in enumerate(probes):
        assert probe.info == {"n": GRID[index][0], "seed": GRID[index][1]}
        for (weights, biases), (kept_w, kept_b) in zip(evaluation.parameters, probe.layers):
            assert np.array_equal(kept_w, weights[index]) and np.array_equal(kept_b, biases[index])
        # evaluated once more, alone but placed as in the engine's chunk: the same float (539
        # test rows x 10 classes put odd rows off 16-byte boundaries, where MKL rounds apart)
        assert probe.stack_row == evaluation.stack_rows[index]
        assert probe.loss == evaluation.loss[index]
        assert probe.accuracy == evaluation.accuracy[index]
        assert probe.predictions.dtype == np.int32 and probe.n_test == digits.y_test.size
        assert np.mean(probe.predictions == digits.y_test) == probe.accuracy
        assert (probe.n_features, probe.n_classes) == (64, 10)


def test_saved_file_round_trips_and_reproduces_the_stored_loss_exactly(trained, digits, tmp_path):
    _, probes = trained
    path = tmp_path / "probes.safetensors"
    probes.save(path)
    loaded = load_probes(path)
    assert loaded.name == probes.name and len(loaded) == len(probes)
    for before, after in zip(probes, loaded):
        assert after.architecture == PROBE and after.info == before.info
        assert (after.loss, after.accuracy) == (before.loss, before.accuracy)
        assert np.array_equal(after.predictions, before.predictions)
        for (w0, b0), (w1, b1) in zip(before.layers, after.layers):
            assert w1.dtype == np.float32 and np.array_equal(w1, w0) and np.array_equal(b1, b0)
    recomputed = loaded.evaluate(digits.X_test, digits.y_test)
    assert recomputed["loss"].tolist() == [probe.loss for probe in probes]  # exactly
    assert recomputed["accuracy"].tolist() == [probe.accuracy for probe in probes]
    assert recomputed[["n", "seed"]].values.tolist() == [list(cell) for cell in GRID]
    assert (recomputed["loss_truncated"] <= recomputed["loss"]).all()
    # on other data the metrics are those of the other data
    other = loaded.evaluate(digits.X_train[:100], digits.y_train[:100])
    assert other["n_test"].tolist() == [100] * 6
    assert other["loss"].tolist() != recomputed["loss"].tolist()


def test_file_layout_is_a_state_dict_per_probe(trained, tmp_path):
    """The file needs no probemeter: probe i's tensors, prefix removed, load into its module."""
    _, probes = trained
    path = tmp_path / "probes.safetensors"
    probes.save(path)
    tensors = safetensors.numpy.load_file(str(path))
    assert tensors["predictions.3"].dtype == np.int32
    state = {
        name.removeprefix("probe.3."): torch.from_numpy(value)
        for name, value in tensors.items()
        if name.startswith("probe.3.")
    }
    assert sorted(state) == sorted(probes[3].module().state_dict())
    module = torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16), torch.nn.ReLU(),
        torch.nn.Linear(16, 10),
    )  # fmt: skip
    module.load_state_dict(state)
    assert torch.equal(module[0].weight, torch.from_numpy(probes[3].layers[0][0].T.copy()))
    with safetensors.safe_open(str(path), framework="numpy") as stored:
        header = stored.metadata()
    assert header["format"] == "probemeter.probes/1" and header["name"] == "digits-pixels"
    assert json.loads(header["probes"])[3]["info"] == {"n": 300, "seed": 1}


@pytest.mark.numerics
def test_module_gives_the_probes_logits_and_predictions(trained, digits):
    _, probes = trained
    features = torch.from_numpy(digits.X_test)
    for probe in probes:
        module = probe.module()
        assert not module.training
        assert [type(layer).__name__ for layer in module] == [
            "Linear", "ReLU", "Linear", "ReLU", "Linear"
        ]  # fmt: skip
        with torch.no_grad():
            logits = module(features)
        # the engine's arithmetic: batched matmuls on the (fan_in, fan_out) layout
        hidden = features.unsqueeze(0)
        for index, (weights, biases) in enumerate(probe.layers):
            hidden = torch.baddbmm(
                torch.from_numpy(biases).view(1, 1, -1), hidden, torch.from_numpy(weights)[None]
            )
            hidden = hidden.clamp_min(0.0) if index < len(probe.layers) - 1 else hidden
        # nn.Linear multiplies in another order: measured max |difference| 5.7e-6 on logits of
        # magnitude up to ~30 (a float32 ulp or two); predictions are the same
        torch.testing.assert_close(logits, hidden[0], rtol=0, atol=2e-5)
        assert np.array_equal(logits.argmax(dim=1).numpy(), probe.predictions)
        losses = torch.nn.functional.cross_entropy(logits, torch.from_numpy(digits.y_test))
        assert abs(losses.item() - probe.loss) < 1e-5


def test_module_draws_no_random_numbers(trained):
    _, probes = trained
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    probes[0].module()
    assert torch.equal(torch.rand(3), expected)


def test_a_linear_probe_is_one_linear_layer(digits):
    subsets = [nested_subset(digits.pool_size, 200, 0, 0)]
    evaluation = fit_evaluate(
        digits.X_train,
        digits.y_train,
        digits.X_test,
        digits.y_test,
        10,
        subsets,
        [(1,)],
        Linear(),
        TrainingConfig(steps=30, batch_size=64, lr=1e-2),
        execution=Execution(device="cpu"),
        return_parameters=True,
    )
    (probe,) = ProbeSet.from_stacked(
        "pixels", Linear(), evaluation.parameters, [{}], digits.X_test, digits.y_test
    )
    assert [type(layer).__name__ for layer in probe.module()] == ["Linear"]
    assert probe.loss == evaluation.loss[0]


def test_select_and_to_frame(trained):
    _, probes = trained
    frame = probes.to_frame()
    assert list(frame.columns) == [
        "representation", "n", "seed", "architecture", "n_test", "loss", "accuracy"
    ]  # fmt: skip
    assert frame["architecture"].tolist() == ["mlp-32x16"] * 6
    chosen = probes.select(n=300)
    assert [probe.info["seed"] for probe in chosen] == [0, 1]
    assert probes.select(n=300, seed=1)[0] is probes[3]
    with pytest.raises(ValueError, match=r"no probe of 'digits-pixels' has \{'n': 7\}.*'1258'"):
        probes.select(n=7)


def _damaged(path, tensors, header):
    path.write_bytes(safetensors.numpy.save(tensors, metadata=header))
    return path


def test_foreign_corrupt_and_missing_files_are_one_line_errors(trained, tmp_path):
    _, probes = trained
    good = tmp_path / "good.safetensors"
    probes.save(good)
    raw = good.read_bytes()
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(raw[: len(raw) // 2])
    text = tmp_path / "notes.safetensors"
    text.write_text("no tensors here\n")
    foreign = _damaged(tmp_path / "foreign.safetensors", {"X": np.zeros((2, 3), np.float32)}, {})
    with safetensors.safe_open(str(good), framework="numpy") as stored:
        header = stored.metadata()
        tensors = {name: stored.get_tensor(name) for name in stored.keys()}
    missing = _damaged(
        tmp_path / "missing.safetensors",
        {name: value for name, value in tensors.items() if name != "probe.2.4.bias"},
        header,
    )
    extra = _damaged(
        tmp_path / "extra.safetensors",
        {**tensors, "probe.9.0.weight": np.zeros(1, np.float32)},
        header,
    )
    as_float = {**tensors, "predictions.1": tensors["predictions.1"].astype(np.float32)}
    wrong_dtype = _damaged(tmp_path / "float.safetensors", as_float, header)
    bad_json = _damaged(tmp_path / "json.safetensors", tensors, {**header, "probes": "[{"})
    cases = {
        tmp_path / "absent.safetensors": "does not exist",
        truncated: "is no readable safetensors file",
        text: "is no readable safetensors file",
        foreign: "no probemeter probes file",
        missing: "is damaged: 'probe.2.4.bias'",
        extra: r"is damaged: tensors \['probe.9.0.weight'\] belong to no probe",
        wrong_dtype: "is damaged: predictions.1 is float32, not int32",
        bad_json: "is damaged",
    }
    for path, message in cases.items():
        with pytest.raises(ValueError, match=message) as error:
            load_probes(path)
        assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_save_is_atomic(trained, tmp_path, monkeypatch):
    """A save that fails half-way leaves the previous file whole and no temporary file."""
    _, probes = trained
    path = tmp_path / "probes.safetensors"
    probes.save(path)
    before = path.read_bytes()

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(saved_module, "write_bytes_atomic", lambda p, data: _write_then(p, fail))
    with pytest.raises(OSError, match="No space"):
        probes.save(path)
    assert path.read_bytes() == before
    assert sorted(item.name for item in tmp_path.iterdir()) == ["probes.safetensors"]


def _write_then(path, fail):
    """Write through the real atomic writer, failing inside it (after the temporary file)."""
    from probemeter import _io

    def write(stream):
        stream.write(b"partial")
        fail()

    _io._write_durable(path, write)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda args: {**args, "architecture": "mlp"}, "architecture must be an MLP"),
        (
            lambda args: {**args, "layers": ((args["layers"][0][0].astype(np.float64),
                                              args["layers"][0][1]), *args["layers"][1:])},
            r"layers\[0\] must be float32",
        ),
        (lambda args: {**args, "layers": args["layers"][:2]}, "not those of mlp-32x16"),
        (lambda args: {**args, "layers": ((args["layers"][0][0], args["layers"][0][1][:3]),
                                          *args["layers"][1:])},
         r"layers\[0\] must be W \(fan_in, fan_out\) and b \(fan_out,\)"),
        (lambda args: {**args, "predictions": args["predictions"] + 10}, r"outside \[0, 10\)"),
        (lambda args: {**args, "predictions": args["predictions"][None]}, "1-D integer array"),
        (lambda args: {**args, "accuracy": 1.5}, r"accuracy must be in \[0, 1\]"),
        (lambda args: {**args, "loss": "low"}, "loss must be a number of nats; got 'low'"),
        (lambda args: {**args, "stack_row": -1}, "stack_row must be an integer >= 0"),
        (lambda args: {**args, "info": {"loss": 1}}, "info key 'loss' must be a string other"),
        (lambda args: {**args, "info": {"n": np.int64(3)}}, r"info\['n'\] must be None, a bool"),
    ],
)  # fmt: skip
def test_saved_probe_rejects_bad_parts(trained, change, message):
    _, probes = trained
    probe = probes[0]
    args = {
        "architecture": probe.architecture,
        "layers": probe.layers,
        "loss": probe.loss,
        "accuracy": probe.accuracy,
        "predictions": probe.predictions,
        "info": probe.info,
    }
    with pytest.raises(ValueError, match=message):
        SavedProbe(**change(args))


def test_probe_set_and_evaluation_reject_bad_input(trained, digits):
    evaluation, probes = trained
    with pytest.raises(ValueError, match="at least one probe"):
        ProbeSet("x", ())
    other = SavedProbe(
        Linear(), ((np.zeros((5, 10), np.float32), np.zeros(10, np.float32)),), 0.1, 0.5,
        np.zeros(3, np.int32),
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"probes\[1\] reads 5 features but probes\[0\] reads 64"):
        ProbeSet("x", (probes[0], other))
    with pytest.raises(ValueError, match=r"X must have shape \(n, 64\)"):
        probes.evaluate(digits.X_test[:, :10], digits.y_test)
    with pytest.raises(ValueError, match="y must be 539 integer labels"):
        probes.evaluate(digits.X_test, digits.y_test[:5])
    with pytest.raises(ValueError, match=r"labels outside \[0, n_classes=10\)"):
        probes.evaluate(digits.X_test, digits.y_test + 1)
    with pytest.raises(ValueError, match="got 2 infos for 6 stacked probes"):
        ProbeSet.from_stacked("x", PROBE, evaluation.parameters, [{}, {}], digits.X_test,
                              digits.y_test)  # fmt: skip
