"""The Ray backend (`probemeter run --backend ray`) on a real local Ray cluster: results equal
the local backend's bit for bit, a worker killed mid-task is retried and every unit is stored
once, stored units are never recomputed, each input is shipped once; plus the command line's
checks of the backend options (those need no cluster)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from experiment_files import PIXELS, digits_experiment, pca

from probemeter.cli.main import main
from probemeter.curves import curve as curve_module
from probemeter.runs.config import load_experiment
from probemeter.runs.ray_backend import RayOptions, run_units_on_ray
from probemeter.runs.runner import run_experiment
from probemeter.runs.saved_probes import load_run_probes
from probemeter.runs.store import ResultStore, Unit

#: end-to-end: real models, worker processes or a Ray cluster (pytest -m 'not slow' skips)
pytestmark = pytest.mark.slow

#: the curve method of every experiment here, with {steps} training steps
CURVE = """epsilon = 0.3
probe = [16]
seeds = 2
steps = {steps}
lr = 1e-2
sizes = [20, 100, 400]"""


def _text(name: str, steps: int, run: str = "") -> str:
    """The experiment: digits pixels, pca-8 and pca-16 with :data:`CURVE`."""
    return digits_experiment(CURVE.format(steps=steps), name, (PIXELS, pca(8), pca(16)), run)


#: training steps of the kill test: long enough (seconds per unit) to kill a task mid-way
STEPS = 300


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 2 CPUs (loopback only, no dashboard) for this module's tests."""
    ray = pytest.importorskip("ray")
    # "local": always a new instance, even where a cluster started by `ray start` is running
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_units(tmp_path_factory):
    """The experiment run by the local backend (in this process, one worker): {key: result}."""
    out = tmp_path_factory.mktemp("local")
    experiment = _experiment(out, "exp", STEPS)
    run_experiment(experiment, out, n_jobs=1, progress=False)
    return _stored_results(out / "exp")


def _experiment(folder: Path, name: str, steps: int):
    path = folder / f"{name}.toml"
    path.write_text(_text(name, steps))
    return load_experiment(path)


def _stored_results(run_dir: Path) -> dict:
    store = ResultStore(run_dir)
    return {key: store.load(key)["result"] for key in store.keys()}


def _points(results: dict) -> dict:
    return {key: result["points"] for key, result in results.items()}


@pytest.mark.ray
def test_ray_results_equal_the_local_backend_bit_for_bit(tmp_path, ray_cluster, local_units):
    path = tmp_path / "exp.toml"
    path.write_text(_text("exp", STEPS))
    command = ["run", str(path), "--out", str(tmp_path), "--no-progress", "--backend", "ray"]
    assert main(command) == 0
    remote = _stored_results(tmp_path / "exp")
    assert set(remote) == set(local_units) and len(remote) == 3
    # every loss and accuracy is the same float, not merely close
    assert _points(remote) == _points(local_units)
    curves = json.loads((tmp_path / "exp" / "results.json").read_text())["curves"]
    assert [curve["name"] for curve in curves] == ["pixels", "pca-8", "pca-16"]


@pytest.mark.ray
def test_probes_kept_by_ray_tasks_come_back_to_the_driver(tmp_path, ray_cluster, local_units):
    path = tmp_path / "exp.toml"
    path.write_text(_text("exp", STEPS, run="save_probes = true\n"))
    command = ["run", str(path), "--out", str(tmp_path), "--no-progress", "--backend", "ray"]
    assert main(command) == 0
    remote = _stored_results(tmp_path / "exp")
    assert _points(remote) == _points(local_units)  # keeping probes changed nothing
    probes = load_run_probes(tmp_path / "exp")
    timings = json.loads((tmp_path / "exp" / "results.json").read_text())["timings"]
    for name, timing in timings.items():
        losses = probes[name].to_frame()["loss"].tolist()
        assert losses == local_units[timing["key"]]["points"]["loss"]


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (a local Ray cluster's workers are below its driver)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in children.get(parent, [])]
        found += frontier
    return found


class _WorkerKiller(threading.Thread):
    """Kills (SIGKILL) the first worker process of this test's cluster seen running a unit."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.killed: int | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and self.killed is None:
            for pid in _descendants(os.getpid()):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if title.startswith(b"ray::run_unit"):
                    os.kill(pid, signal.SIGKILL)
                    self.killed = pid
                    return
            time.sleep(0.02)


@pytest.mark.ray
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds workers in /proc")
def test_a_worker_killed_mid_task_is_retried_and_every_unit_is_stored_once(
    tmp_path, ray_cluster, local_units
):
    experiment = _experiment(tmp_path, "exp", STEPS)
    killer = _WorkerKiller()
    killer.start()
    try:
        run = run_experiment(experiment, tmp_path, progress=False, ray=RayOptions(max_retries=2))
    finally:
        killer.stop.set()
        killer.join()
    assert killer.killed is not None, "no worker was seen running a unit"
    assert [result["name"] for result in run.results] == ["pixels", "pca-8", "pca-16"]
    assert len({timing["key"] for timing in run.timings.values()}) == 3
    assert not any(timing["loaded"] for timing in run.timings.values())
    store = ResultStore(tmp_path / "exp")
    assert len(store.keys()) == 3
    assert not list(store.units_dir.glob(".*.tmp"))
    # the unit whose worker died was recomputed from scratch, to the same numbers
    assert _points(_stored_results(tmp_path / "exp")) == _points(local_units)


@pytest.mark.ray
def test_a_resumed_ray_run_computes_only_the_missing_units(tmp_path, ray_cluster, monkeypatch):
    experiment = _experiment(tmp_path, "exp", 20)
    run_experiment(experiment, tmp_path, progress=False, ray=RayOptions())
    store = ResultStore(tmp_path / "exp")
    files = {
        key: (store.path(key).read_bytes(), store.path(key).stat().st_mtime_ns)
        for key in store.keys()
    }
    lost = store.keys()[1]
    store.discard(lost)

    run = run_experiment(experiment, tmp_path, progress=False, ray=RayOptions())
    loaded = {timing["key"]: timing["loaded"] for timing in run.timings.values()}
    assert loaded == {key: key != lost for key in files}
    for key, (content, mtime) in files.items():
        now = (store.path(key).read_bytes(), store.path(key).stat().st_mtime_ns)
        if key != lost:
            assert now == (content, mtime)  # never rewritten
    assert store.load(lost)["result"]["points"] == json.loads(files[lost][0])["result"]["points"]

    # with every unit stored, Ray is not even needed
    monkeypatch.setitem(sys.modules, "ray", None)
    again = run_experiment(experiment, tmp_path, progress=False, ray=RayOptions(address="auto"))
    assert all(timing["loaded"] for timing in again.timings.values())


@pytest.mark.ray
def test_each_input_is_put_into_the_object_store_once(tmp_path, ray_cluster, monkeypatch):
    puts = []
    real_put = ray_cluster.put
    monkeypatch.setattr(ray_cluster, "put", lambda value: puts.append(value) or real_put(value))

    def weighted_sum(data, weight):  # local, so Ray ships it by value to its workers
        return {"sum": float(data.sum()) * weight, "read_only": not data.flags.writeable}

    shared, other = np.arange(100_000, dtype=np.float64), np.ones(50_000)
    units = [
        Unit({"unit": 0}, weighted_sum, shared, {"weight": 1.0}),
        Unit({"unit": 1}, weighted_sum, shared, {"weight": 2.0}),
        Unit({"unit": 2}, weighted_sum, other, {"weight": 3.0}),
    ]
    outcomes = run_units_on_ray(units, ResultStore(tmp_path), progress=False)
    assert [outcome.result["sum"] for outcome in outcomes] == [
        float(shared.sum()),
        2 * float(shared.sum()),
        150_000.0,
    ]
    # zero-copy views of the object store, not per-task copies of the arrays
    assert all(outcome.result["read_only"] for outcome in outcomes)
    assert len(puts) == 2 and puts[0] is shared and puts[1] is other


@pytest.mark.ray
def test_a_failing_unit_is_raised_after_the_others_are_stored(tmp_path, ray_cluster):
    def check_positive(data):
        if data < 0:
            raise ValueError(f"negative input {data}")
        return {"value": data}

    units = [Unit({"unit": i}, check_positive, value) for i, value in enumerate((1, -1, 2))]
    store = ResultStore(tmp_path)
    with pytest.raises(ValueError, match="negative input -1"):
        run_units_on_ray(units, store, RayOptions(max_retries=0), progress=False)
    assert len(store.keys()) == 2  # the two good units are stored; rerunning retries only one


def test_max_memory_reaches_the_engine(tmp_path, monkeypatch):
    budgets = []
    real = curve_module.fit_evaluate

    def spy(*args, **kwargs):
        budgets.append(kwargs["execution"].max_memory)
        return real(*args, **kwargs)

    monkeypatch.setattr(curve_module, "fit_evaluate", spy)
    path = tmp_path / "exp.toml"
    path.write_text(_text("exp", 5))
    command = ["run", str(path), "--out", str(tmp_path), "--no-progress", "--n-jobs", "1"]
    assert main([*command, "--max-memory", "0.25"]) == 0
    assert budgets == [0.25, 0.25, 0.25]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "slurm"], "--backend must be 'local' or 'ray'; got 'slurm'"),
        (["--address", "auto"], "--address needs --backend ray"),
        (["--cpus-per-unit", "2"], "--cpus-per-unit needs --backend ray"),
        (["--backend", "ray", "--n-jobs", "2"], "--n-jobs is for --backend local"),
        (["--backend", "ray", "--cpus-per-unit", "0"], "--cpus-per-unit must be a positive"),
        (["--backend", "ray", "--gpus-per-unit", "-1"], "--gpus-per-unit must be a number >= 0"),
        (["--backend", "ray", "--max-retries", "-2"], "--max-retries must be an integer >= 0"),
        (["--max-memory", "0"], "--max-memory must be a positive number of GiB; got 0.0"),
        (["--max-memory", "nan"], "--max-memory must be a positive number of GiB; got nan"),
    ],
)
def test_bad_backend_options_are_one_clear_line(tmp_path, capsys, flags, message):
    path = tmp_path / "exp.toml"
    path.write_text(_text("exp", 5))
    assert main(["run", str(path), "--out", str(tmp_path / "runs"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "runs").exists()


def test_missing_ray_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    path = tmp_path / "exp.toml"
    path.write_text(_text("exp", 5))
    assert main(["run", str(path), "--backend", "ray", "--address", "auto"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'probemeter[ray]'" in err


def test_ray_options_are_checked():
    with pytest.raises(ValueError, match=r"cpus_per_unit must be a positive integer; got 1\.5"):
        RayOptions(cpus_per_unit=1.5)
    with pytest.raises(ValueError, match="address must be"):
        RayOptions(address="")
    assert RayOptions(gpus_per_unit=0.25, max_retries=0).gpus_per_unit == 0.25
