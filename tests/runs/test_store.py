"""Tests of the result store: unit keys, atomic unit files, and resuming a killed run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from subprocess_kill import kill_when

from probemeter import Execution
from probemeter._method import PROBES_ENTRY
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.data import ProbeData
from probemeter.probes import Linear, ProbeSet, SavedProbe
from probemeter.runs import store as store_module
from probemeter.runs.store import RECORD_FIELDS, ResultStore, check_result, run_units, unit_key
from probemeter.training.config import TrainingConfig

TRAINING = {"steps": 20, "batch_size": 16, "lr": 1e-2}

SPEC = {
    "representation": "blobs",
    "data_fingerprint": "0123456789abcdef",
    "task": "blobs",
    "method": "curve",
    "probe": {"family": "mlp", "hidden": []},
    "training": TrainingConfig(**TRAINING).to_dict(),
    "sizes": [10, 40],
    "seeds": [0, 1],
    "random_state": 0,
}

# Builds 6 curve units over the same tiny data; each compute trains a small loss-data curve,
# sleeps a little (so the test can kill the run mid-way) and logs its key.
SCRIPT = """
import sys, time
import numpy as np
from probemeter.runs.store import ResultStore, run_units, unit_key
from probemeter.curves.curve import loss_data_curve
from probemeter.data import ProbeData
from probemeter.training.config import TrainingConfig
from probemeter.probes import Linear

run_dir, log = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
labels = rng.integers(0, 3, 150)
data = ProbeData.from_arrays(rng.normal(size=(150, 4)) + labels[:, None], labels, name="blobs")
training = {training!r}

def compute(seed):
    curve = loss_data_curve(data, Linear(), sizes=[10, 40], seeds=[seed], random_state=0,
                            device="cpu", n_jobs=1, progress=False,
                            config=TrainingConfig(**training))
    time.sleep(0.4)
    spec = specs[seed]
    with open(log, "a") as stream:
        stream.write(unit_key(spec) + "\\n")
    return curve.to_dict()

specs = [{{"representation": "blobs", "data_fingerprint": data.fingerprint(), "task": "blobs",
          "method": "curve", "probe": Linear().to_dict(),
          "training": TrainingConfig(**training).to_dict(), "sizes": [10, 40], "seeds": [seed],
          "random_state": 0}} for seed in range(6)]
units = [(spec, lambda seed=seed: compute(seed)) for seed, spec in enumerate(specs)]
run_units(units, ResultStore(run_dir), progress=False)
"""


@pytest.fixture(scope="module")
def blobs() -> ProbeData:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 150)
    features = rng.normal(size=(150, 4)) + labels[:, None]
    return ProbeData.from_arrays(features, labels, name="blobs")


@pytest.fixture(scope="module")
def curve(blobs) -> LossDataCurve:
    return loss_data_curve(
        blobs,
        Linear(),
        sizes=[10, 40],
        seeds=2,
        execution=Execution(device="cpu", n_jobs=1),
        config=TrainingConfig(**TRAINING),
    )


def test_unit_key_ignores_key_order_and_is_a_sha256():
    reordered = dict(reversed(list(SPEC.items())))
    reordered["training"] = dict(reversed(list(SPEC["training"].items())))
    assert unit_key(reordered) == unit_key(SPEC)
    assert len(unit_key(SPEC)) == 64
    assert unit_key({**SPEC, "sizes": (10, 40)}) == unit_key(SPEC)


@pytest.mark.parametrize(
    "change",
    [
        {"representation": "other"},
        {"data_fingerprint": "fedcba9876543210"},
        {"task": "control"},
        {"method": "mdl"},
        {"probe": {"family": "mlp", "hidden": [16]}},
        {"training": {**SPEC["training"], "steps": 21}},
        {"sizes": [10, 41]},
        {"seeds": [0]},
        {"random_state": 1},
        {"extra": None},
    ],
)
def test_unit_key_changes_with_any_field(change):
    assert unit_key({**SPEC, **change}) != unit_key(SPEC)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"sizes": [10, np.int64(40)]}, r"spec\['sizes'\]\[1\]"),
        ({"probe": {"family": object()}}, r"spec\['probe'\]\['family'\]"),
        ({"random_state": float("nan")}, r"spec\['random_state'\]"),
        ({"training": {1: "a"}}, r"spec\['training'\]"),
    ],
)
def test_unit_key_rejects_non_json_values_by_name(change, named):
    with pytest.raises(ValueError, match=named):
        unit_key({**SPEC, **change})


def test_unit_key_rejects_a_non_mapping():
    with pytest.raises(ValueError, match="spec must be a mapping"):
        unit_key([1, 2])


def test_save_load_round_trip_of_a_curve(tmp_path, curve):
    store = ResultStore(tmp_path)
    key = unit_key(SPEC)
    assert not store.has(key) and store.keys() == []
    store.save(key, SPEC, curve.to_dict(), 1.25)
    assert store.has(key) and store.keys() == [key]
    record = store.load(key)
    assert set(record) == set(RECORD_FIELDS)
    assert record["spec"] == SPEC and record["seconds"] == 1.25
    assert "torch" in record["versions"]
    restored = LossDataCurve.from_dict(store.load(key)["result"])
    assert restored.to_dict() == curve.to_dict()
    assert restored.points.equals(curve.points)
    assert [path.name for path in store.units_dir.iterdir()] == [f"{key}.json"]


def test_save_checks_key_result_and_seconds(tmp_path, curve):
    store = ResultStore(tmp_path)
    key = unit_key(SPEC)
    with pytest.raises(ValueError, match="is not unit_key"):
        store.save(unit_key({**SPEC, "seeds": [0]}), SPEC, curve.to_dict(), 1.0)
    with pytest.raises(ValueError, match=r"result\['n'\]"):
        store.save(key, SPEC, {"n": np.arange(3)}, 1.0)
    with pytest.raises(ValueError, match="seconds"):
        store.save(key, SPEC, {}, -1.0)
    with pytest.raises(ValueError, match="key must be a unit_key"):
        store.has("../escape")
    assert store.keys() == [] and not any(store.units_dir.glob("*"))


def test_load_of_missing_or_corrupt_units_is_a_clear_error(tmp_path):
    store = ResultStore(tmp_path)
    key = unit_key(SPEC)
    with pytest.raises(ValueError, match="is not stored"):
        store.load(key)
    store.units_dir.mkdir(parents=True)
    store.path(key).write_text('{"key": "trunc')
    with pytest.raises(ValueError, match=r"corrupt.*not JSON"):
        store.load(key)
    store.path(key).write_text(json.dumps({"key": key}))
    with pytest.raises(ValueError, match=r"corrupt.*fields"):
        store.load(key)
    with pytest.raises(ValueError, match="corrupt"):
        run_units([(SPEC, dict)], store, progress=False)


def test_temporary_leftovers_are_ignored_and_cleared(tmp_path):
    store = ResultStore(tmp_path)
    key = unit_key(SPEC)
    store.units_dir.mkdir(parents=True)
    leftover = store.units_dir / f".{key}.json.abc123.tmp"
    leftover.write_text('{"key": "half-writ')
    assert store.keys() == [] and not store.has(key)
    [outcome] = run_units([(SPEC, lambda: {"value": 1})], store, progress=False)
    assert not outcome.loaded and store.keys() == [key]
    store.clear()
    assert store.keys() == [] and list(store.units_dir.iterdir()) == []


def test_run_units_loads_stored_units_and_fresh_recomputes(tmp_path):
    store = ResultStore(tmp_path)
    calls = []

    def unit(seed: int) -> tuple[dict, object]:
        def compute() -> dict:
            calls.append(seed)
            return {"seed": seed, "call": len(calls)}

        return {**SPEC, "seeds": [seed]}, compute

    first = run_units([unit(0), unit(1)], store, progress=False)
    assert calls == [0, 1] and [o.loaded for o in first] == [False, False]
    second = run_units([unit(0), unit(1), unit(2)], store, progress=False)
    assert calls == [0, 1, 2] and [o.loaded for o in second] == [True, True, False]
    assert [o.result for o in second[:2]] == [o.result for o in first]
    fresh = run_units([unit(0), unit(1)], store, fresh=True, progress=False)
    assert calls == [0, 1, 2, 0, 1] and not any(o.loaded for o in fresh)
    assert [o.result["call"] for o in fresh] == [4, 5]
    assert len(store.keys()) == 3
    store.discard(fresh[0].key)
    assert not store.has(fresh[0].key)


def test_pending_units_are_offered_together_and_stored_one_by_one(tmp_path):
    store = ResultStore(tmp_path)
    alone, together = [], []

    def unit(seed: int) -> tuple[dict, object]:
        def compute() -> dict:
            alone.append(seed)
            return {"seed": seed, "how": "alone"}

        return {**SPEC, "seeds": [seed]}, compute

    def joint(positions: list[int]) -> list[dict]:
        together.append(positions)
        return [{"seed": p, "how": "together"} for p in positions]

    run_units([unit(1)], store, progress=False)
    outcomes = run_units([unit(0), unit(1), unit(2)], store, progress=False, together=joint)
    # only the units not stored are offered, in order; the stored one is loaded
    assert together == [[0, 2]] and alone == [1]
    assert [o.result["how"] for o in outcomes] == ["together", "alone", "together"]
    assert [o.loaded for o in outcomes] == [False, True, False]
    assert store.has(outcomes[0].key) and store.has(outcomes[2].key)
    # declined (None): each computes alone; one pending unit is never offered
    run_units([unit(3), unit(4)], store, progress=False, together=lambda positions: None)
    run_units([unit(5)], store, progress=False, together=joint)
    assert alone == [1, 3, 4, 5] and together == [[0, 2]]

    # a failure while computing together stores none of them
    def broken(positions: list[int]) -> list[dict]:
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        run_units([unit(6), unit(7)], store, progress=False, together=broken)
    assert not any(store.has(unit_key(unit(seed)[0])) for seed in (6, 7))


def test_run_units_rejects_duplicates_and_non_mapping_results(tmp_path):
    store = ResultStore(tmp_path)
    with pytest.raises(ValueError, match=r"units\[1\] has the same spec as units\[0\]"):
        run_units([(SPEC, dict), (dict(SPEC), dict)], store, progress=False)
    with pytest.raises(ValueError, match="not a mapping"):
        run_units([(SPEC, lambda: [1])], store, progress=False)
    assert store.keys() == []


def _probes(loss: float = 0.5) -> ProbeSet:
    """A one-probe set (a 2 -> 3 linear probe), no training needed."""
    layers = ((np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros(3, np.float32)),)
    probe = SavedProbe(Linear(), layers, loss, 0.5, np.array([0, 2], np.int32), {"n": 2})
    return ProbeSet("blobs", (probe,))


def test_probes_are_stored_beside_their_unit_before_it(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    key = unit_key(SPEC)
    written = []
    real_write = store_module.write_json_atomic

    def write_json(path, payload):
        written.append(store.probes_path(key).is_file())  # the probes are already there
        real_write(path, payload)

    monkeypatch.setattr(store_module, "write_json_atomic", write_json)
    record = store.save(key, SPEC, {"value": 1, PROBES_ENTRY: _probes()}, 1.0)
    assert written == [True]
    assert record["result"] == {"value": 1} == store.load(key)["result"]
    assert store.probes_path(key) == store.units_dir / f"{key}.probes.safetensors"
    assert store.has(key) and store.has(key, probes=True)
    assert store.keys() == [key]  # a probes file is no unit
    assert store.load_probes(key)[0].loss == 0.5


def test_a_unit_stored_without_probes_drops_stale_ones_and_discard_clears_both(tmp_path):
    store = ResultStore(tmp_path)
    key = unit_key(SPEC)
    store.save(key, SPEC, {"value": 1, PROBES_ENTRY: _probes()}, 1.0)
    store.save(key, SPEC, {"value": 2}, 1.0)  # recomputed without probes: none left over
    assert store.has(key) and not store.has(key, probes=True)
    with pytest.raises(ValueError, match=f"unit {key} has no probes .* save_probes = true"):
        store.load_probes(key)
    store.save(key, SPEC, {"value": 1, PROBES_ENTRY: _probes()}, 1.0)
    store.discard(key)
    assert list(store.units_dir.iterdir()) == []
    _probes().save(store.probes_path(key))  # an orphan, e.g. from a writer killed before
    store.clear()
    assert list(store.units_dir.iterdir()) == []


def test_probes_entries_are_checked(tmp_path):
    store = ResultStore(tmp_path)
    key = unit_key(SPEC)
    with pytest.raises(ValueError, match=r"result\['__probes__'\] must be a ProbeSet; got dict"):
        store.save(key, SPEC, {"value": 1, PROBES_ENTRY: {}}, 1.0)
    with pytest.raises(ValueError, match=f"unit {key} kept no probes \\(save_probes is on\\)"):
        check_result(key, {"value": 1}, probes=True)
    assert check_result(key, {"value": 1}) == {"value": 1}
    assert store.keys() == []


def test_with_probes_a_stored_unit_lacking_them_is_recomputed(tmp_path):
    store = ResultStore(tmp_path)
    calls = []

    def compute(keep: bool):
        def run() -> dict:
            calls.append(keep)
            return {"value": 1, **({PROBES_ENTRY: _probes(len(calls))} if keep else {})}

        return run

    [first] = run_units([(SPEC, compute(False))], store, progress=False)
    assert not first.loaded and not store.has(first.key, probes=True)
    [second] = run_units([(SPEC, compute(False))], store, progress=False)
    assert second.loaded and calls == [False]  # without probes asked for, it stays valid
    [third] = run_units([(SPEC, compute(True))], store, progress=False, probes=True)
    assert not third.loaded and calls == [False, True] and third.key == first.key
    [fourth] = run_units([(SPEC, compute(True))], store, progress=False, probes=True)
    assert fourth.loaded and calls == [False, True]
    assert store.load_probes(first.key)[0].loss == 2.0
    with pytest.raises(ValueError, match="kept no probes"):
        run_units([({**SPEC, "seeds": [9]}, compute(False))], store, progress=False, probes=True)


@pytest.mark.slow
def test_a_killed_run_resumes_without_recomputing_stored_units(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(training=TRAINING))
    run_dir, log = tmp_path / "run", tmp_path / "computed.log"
    command = [sys.executable, str(script), str(run_dir), str(log)]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    store = ResultStore(run_dir)

    kill_when(command, environment, lambda: len(store.keys()) >= 2)
    stored = store.keys()
    assert 2 <= len(stored) < 6
    for key in stored:
        record = json.loads(store.path(key).read_text())
        assert record["key"] == key and set(record) == set(RECORD_FIELDS)
        assert LossDataCurve.from_dict(record["result"]).sizes.tolist() == [10, 40]

    finished = subprocess.run(command, env=environment, capture_output=True, timeout=120)
    assert finished.returncode == 0, finished.stderr.decode()
    computed = log.read_text().split()
    assert all(computed.count(key) == 1 for key in stored)
    assert len(store.keys()) == 6 and set(computed) == set(store.keys())
    assert len(list(store.units_dir.glob("*.json"))) == 6
    seeds = sorted(store.load(key)["spec"]["seeds"][0] for key in store.keys())
    assert seeds == list(range(6))
