"""Shared by the resume tests: start a run in a subprocess and SIGKILL it once it is ready."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence


def kill_when(
    command: Sequence[str],
    environment: Mapping[str, str],
    ready: Callable[[], bool],
    timeout: float = 60.0,
) -> None:
    """Run ``command``; as soon as ``ready()`` holds, kill it with SIGKILL (an abrupt stop, as
    a crash or an out-of-memory kill would be). Fails when the process ends on its own first
    or ``ready`` does not hold within ``timeout`` seconds."""
    process = subprocess.Popen(command, env=dict(environment), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while not ready() and process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"not ready after {timeout} s: {' '.join(command)}")
            time.sleep(0.01)
        assert process.poll() is None, process.stderr.read().decode()
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
