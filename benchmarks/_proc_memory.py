"""Memory of this process as Linux reports it (``/proc/self/status``), for the benchmarks."""

import re
from pathlib import Path


def memory_mib(field: str) -> float:
    """``VmRSS`` (resident now) or ``VmHWM`` (peak resident) of this process, in MiB."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1)) / 1024
