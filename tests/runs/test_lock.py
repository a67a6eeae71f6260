"""The run-folder lock: one run at a time per folder, released on every exit, stale locks of
dead processes taken over with a warning; `probemeter run` refuses a locked folder at once."""

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from experiment_files import PIXELS, digits_experiment

import probemeter.runs.runner as runner
from probemeter.cli.main import main
from probemeter.runs.config import load_experiment
from probemeter.runs.lock import (
    LOCK_FILE,
    LockHolder,
    RunLock,
    RunLockedError,
    StaleLockWarning,
    process_start_token,
)
from probemeter.runs.runner import run_experiment
from probemeter.runs.store import ResultStore

#: the curve method of the tiny experiment, with {steps} training steps
TINY = """epsilon = 0.3
probe = []
seeds = 1
steps = {steps}
lr = 1e-2
sizes = [20, 100]"""

#: a process that takes the lock of folder argv[1], says so, and holds it until killed
HOLDER = """
import sys, time
from probemeter.runs.lock import RunLock
with RunLock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(120)
"""


def _experiment(tmp_path: Path, steps: int = 20) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(digits_experiment(TINY.format(steps=steps), "tiny", (PIXELS,)))
    return path


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _write_lock(run_dir: Path, holder: LockHolder) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_FILE
    path.write_text(holder.to_text())
    return path


def _forbid(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make the runner's ``names`` fail the test if a run gets as far as calling them."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a run into a locked folder loaded data or computed units")

    for name in names:
        monkeypatch.setattr(runner, name, forbidden)


def test_the_lock_file_names_this_process_and_goes_on_exit(tmp_path):
    run_dir = tmp_path / "out" / "run"
    with RunLock(run_dir) as lock:
        assert lock.held
        record = json.loads((run_dir / LOCK_FILE).read_text())
        assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
        assert record["started"].endswith("+00:00")
        assert record["process_start"] == process_start_token(os.getpid())
        (run_dir / "results.json").write_text("{}")
    assert not lock.held
    assert sorted(path.name for path in run_dir.iterdir()) == ["results.json"]


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_the_lock_is_released_when_the_run_raises_or_is_interrupted(tmp_path, error):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(type(error)):
        with RunLock(run_dir):
            assert (run_dir / LOCK_FILE).exists()
            raise error
    assert not (run_dir / LOCK_FILE).exists()
    with RunLock(run_dir):  # and can be taken again, without a warning
        pass


def test_a_folder_the_lock_created_is_removed_if_nothing_was_written(tmp_path):
    with pytest.raises(RuntimeError):
        with RunLock(tmp_path / "out" / "run"):
            raise RuntimeError("bad input found before anything was written")
    assert not (tmp_path / "out" / "run").exists()


def test_a_live_holder_is_refused_with_one_line_naming_folder_pid_and_file(tmp_path):
    run_dir = tmp_path / "run"
    with RunLock(run_dir):
        with pytest.raises(RunLockedError) as caught:
            RunLock(run_dir).acquire()
        assert (run_dir / LOCK_FILE).exists()  # the refused run did not touch the lock
    message = str(caught.value)
    assert isinstance(caught.value, ValueError) and "\n" not in message
    assert repr(str(run_dir)) in message and f"PID {os.getpid()} on this host" in message
    assert repr(str(run_dir / LOCK_FILE)) in message
    assert caught.value.holder.pid == os.getpid()


def test_a_lock_of_another_host_counts_as_held(tmp_path):
    run_dir = tmp_path / "run"
    holder = LockHolder(_dead_pid(), "elsewhere.example", "2024-01-01T00:00:00+00:00")
    _write_lock(run_dir, holder)
    with pytest.raises(RunLockedError, match=re.escape("on host 'elsewhere.example'")):
        RunLock(run_dir).acquire()


def test_a_stale_lock_of_a_dead_process_is_taken_over_with_a_warning(tmp_path):
    run_dir, dead = tmp_path / "run", _dead_pid()
    _write_lock(run_dir, LockHolder(dead, socket.gethostname(), "2024-01-01T00:00:00+00:00"))
    with pytest.warns(StaleLockWarning, match=f"process {dead}, which took it at 2024-01-01"):
        with RunLock(run_dir):
            assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert not (run_dir / LOCK_FILE).exists()


def test_a_reused_pid_does_not_keep_a_stale_lock_alive(tmp_path):
    """The pid is alive, but it is a later process than the one that took the lock."""
    run_dir = tmp_path / "run"
    if process_start_token(os.getpid()) is None:
        pytest.skip("no process start times on this platform (Linux /proc)")
    holder = LockHolder(os.getpid(), socket.gethostname(), "2024-01-01T00:00:00+00:00", "x:1")
    _write_lock(run_dir, holder)
    with pytest.warns(StaleLockWarning, match="its pid now belongs to another process"):
        with RunLock(run_dir):
            pass


def test_an_unreadable_old_lock_is_taken_over_and_a_fresh_empty_one_is_waited_for(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    path = run_dir / LOCK_FILE
    path.write_text("")  # a lock file created, then its writer died before writing
    os.utime(path, (time.time() - 60, time.time() - 60))
    with pytest.warns(StaleLockWarning, match="not a lock record"):
        with RunLock(run_dir):
            pass

    # just created and not yet written: wait for the content, then see the live holder
    path.write_text("")

    def write_later() -> None:
        time.sleep(0.2)
        path.write_text(LockHolder.this_process().to_text())

    writer = threading.Thread(target=write_later)
    writer.start()
    with pytest.raises(RunLockedError, match=f"PID {os.getpid()}"):
        RunLock(run_dir).acquire()
    writer.join()


@pytest.mark.parametrize("stale", [False, True])
def test_of_runs_starting_together_exactly_one_gets_the_lock(tmp_path, stale):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    if stale:
        _write_lock(run_dir, LockHolder(_dead_pid(), socket.gethostname(), "2024-01-01T00:00Z"))
    locks = [RunLock(run_dir) for _ in range(8)]
    start, outcomes = threading.Barrier(len(locks)), []

    def attempt(lock: RunLock) -> None:
        start.wait()
        try:
            lock.acquire()
            outcomes.append("held")
        except RunLockedError:
            outcomes.append("refused")

    threads = [threading.Thread(target=attempt, args=(lock,)) for lock in locks]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(outcomes) == ["held"] + ["refused"] * 7
    notes = [w for w in seen if issubclass(w.category, StaleLockWarning)]
    assert len(notes) <= (1 if stale else 0)  # the winner notes a takeover it made itself
    winner = next(lock for lock in locks if lock.held)
    winner.release()
    assert not (run_dir / LOCK_FILE).exists()
    assert [path.name for path in run_dir.iterdir()] == []  # no private leftovers


def test_a_run_into_a_folder_locked_by_another_process_fails_at_once(tmp_path, monkeypatch, capsys):
    """Fast: the other process only holds the lock (the slow test below runs for real)."""
    path, out = _experiment(tmp_path), tmp_path / "runs"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out / "tiny")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        _forbid(monkeypatch, "prepare_data", "run_units")
        started = time.perf_counter()
        assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 2
        assert time.perf_counter() - started < 2.0
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and error.startswith("probemeter: error: run folder ")
        assert f"PID {holder.pid} on this host" in error and LOCK_FILE in error
        # --check validates the file, without the lock
        assert main(["run", str(path), "--out", str(out), "--check"]) == 0
        assert "experiment file OK" in capsys.readouterr().out
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert ResultStore(out / "tiny").keys() == []


@pytest.mark.slow
def test_two_runs_into_one_folder_the_second_fails_and_computes_nothing(
    tmp_path, monkeypatch, capsys
):
    path, out = _experiment(tmp_path, steps=200), tmp_path / "runs"
    lock_file = out / "tiny" / LOCK_FILE
    command = [sys.executable, "-m", "probemeter.cli.main", "run", str(path), "--out", str(out)]
    command += ["--no-progress", "--n-jobs", "1"]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen(  # progress lines are log records, on stderr
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not lock_file.exists():
            assert first.poll() is None and time.monotonic() < deadline, "no lock taken"
            time.sleep(0.01)
        _forbid(monkeypatch, "prepare_data", "run_units")
        assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 2
        error = capsys.readouterr().err
        assert f"PID {first.pid} on this host" in error and "\n" not in error.rstrip("\n")
        assert first.poll() is None, "the first run ended before the second one was tried"
        output, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0 and "pixels: computed in" in output
    assert not lock_file.exists() and (out / "tiny" / "results.json").exists()
    assert len(ResultStore(out / "tiny").keys()) == 1


@pytest.mark.slow
def test_run_experiment_releases_the_lock_after_a_failure_and_takes_over_a_stale_one(
    tmp_path, monkeypatch
):
    path, out = _experiment(tmp_path), tmp_path / "runs"
    experiment = load_experiment(path)
    run_dir = out / "tiny"

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a unit failed")

    with monkeypatch.context() as patch:
        patch.setattr(runner, "run_units", fail)
        with pytest.raises(RuntimeError, match="a unit failed"):
            run_experiment(experiment, out, n_jobs=1, progress=False)
    assert (run_dir / "experiment.toml").exists() and not (run_dir / LOCK_FILE).exists()

    dead = _dead_pid()
    _write_lock(run_dir, LockHolder(dead, socket.gethostname(), "2024-01-01T00:00:00+00:00"))
    with pytest.warns(StaleLockWarning, match=f"process {dead}"):
        run = run_experiment(experiment, out, n_jobs=1, progress=False)
    assert not run.timings["pixels"]["loaded"]
    assert (run_dir / "results.json").exists() and not (run_dir / LOCK_FILE).exists()
