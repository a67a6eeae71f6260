"""Worker processes end with their parent: `exit_with_parent` in loky workers, measured after a
`kill -9` of the process that started them; `pid_alive` on live, dead and zombie processes."""

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probemeter.training.workers import exit_with_parent, parent_alive, pid_alive, worker_count

#: starts two loky workers that call exit_with_parent, prints "PARENT [(worker, its parent)]"
#: and sleeps until killed (the workers idle in loky's pool, as after a finished chunk)
PARENT = """
import os, sys, time
from joblib import Parallel, delayed

def task(index):
    from probemeter.training.workers import exit_with_parent
    exit_with_parent()
    time.sleep(0.2)  # so that both workers get a task
    return os.getpid(), os.getppid()

pids = Parallel(n_jobs=2, backend="loky")(delayed(task)(index) for index in range(4))
print(os.getpid(), sorted(set(pids)), flush=True)
time.sleep(120)
"""


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_pid_alive_of_live_dead_zombie_and_invalid_pids():
    assert pid_alive(os.getpid()) and parent_alive(os.getppid())
    assert not pid_alive(_dead_pid())
    for invalid in (0, -1, True, 2**40, "1"):
        assert not pid_alive(invalid)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        if Path("/proc").is_dir():  # unreaped, the child is a zombie: dead all the same
            deadline = time.monotonic() + 10
            while ") Z " not in Path(f"/proc/{child.pid}/stat").read_text():
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert not pid_alive(child.pid)
    finally:
        child.wait()


def test_exit_with_parent_starts_one_watcher_per_process():
    script = (
        "import threading\n"
        "from probemeter.training.workers import exit_with_parent\n"
        "first, again = exit_with_parent(), exit_with_parent(0.5)\n"
        "names = [t.name for t in threading.enumerate() if t.daemon]\n"
        "print(first, again, sum(n.startswith('probemeter-exit-with-parent') for n in names))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "1"]


@pytest.mark.parametrize("interval", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_exit_with_parent_checks_its_interval(interval):
    with pytest.raises(ValueError, match="interval must be a positive number of seconds"):
        exit_with_parent(interval)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (not a zombie): by /proc where there is one, else by signal 0."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc").is_dir():
        try:
            return stat.read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_loky_workers_exit_within_seconds_of_a_kill_9_of_their_parent(tmp_path):
    log = tmp_path / "stderr.txt"
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    with log.open("w") as stderr:
        parent = subprocess.Popen(
            [sys.executable, "-c", PARENT],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=environment,
            text=True,
        )
    workers: list[int] = []
    try:
        line = parent.stdout.readline()
        assert line, log.read_text()
        parent_pid, pairs = line.split(" ", 1)
        workers = [worker for worker, _ in ast.literal_eval(pairs)]
        assert len(workers) == 2
        assert {ppid for _, ppid in ast.literal_eval(pairs)} == {int(parent_pid)}
        assert all(_running(worker) for worker in workers)

        parent.send_signal(signal.SIGKILL)
        parent.wait()
        killed = time.monotonic()
        while any(_running(worker) for worker in workers) and time.monotonic() - killed < 10:
            time.sleep(0.05)
        seconds = time.monotonic() - killed
        assert not any(_running(worker) for worker in workers), "workers outlived their parent"
        assert seconds < 5, f"workers took {seconds:.1f} s to exit"
        deadline = time.monotonic() + 5
        while log.read_text().count("exits: its parent process") < 2:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        for worker in workers:
            assert f"worker process {worker} exits: its parent process {parent_pid}" in (
                log.read_text()
            )
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        parent.stdout.close()
        for worker in workers:  # never leave a worker behind, whatever failed
            if _running(worker):
                os.kill(worker, signal.SIGKILL)


#: prints worker_count for -1, 3 and -2 in a process allowed to run on one CPU only
ONE_CPU = """
import os
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from probemeter.training.workers import worker_count
try:
    too_many = worker_count(-2)
except ValueError as error:
    too_many = str(error)
print(worker_count(-1), worker_count(3), too_many)
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_all_cpus_means_those_the_process_may_use():
    """n_jobs=-1 counts the CPUs of the process's affinity mask (taskset, a cluster job's
    cpuset), not the machine's; an explicit count is kept; -2 is refused on one CPU."""
    done = subprocess.run([sys.executable, "-c", ONE_CPU], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    all_cpus, three, too_many = done.stdout.strip().split(" ", 2)
    assert (all_cpus, three) == ("1", "3")
    assert "n_jobs" in too_many and "-2" in too_many


def test_all_cpus_respects_loky_max_cpu_count():
    script = "from probemeter.training.workers import worker_count; print(worker_count(-1))"
    env = {**os.environ, "LOKY_MAX_CPU_COUNT": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"


def test_n_jobs_none_is_one_and_zero_is_refused():
    assert worker_count(None) == 1
    with pytest.raises(ValueError, match="n_jobs must be a non-zero integer or None; got 0"):
        worker_count(0)
