"""Devices and threads: which torch device a run uses, and single-threaded sections."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["resolve_device", "single_threaded"]


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` picks CUDA when present, else the CPU; anything else is passed to torch.

    Raises:
        ValueError: a device torch does not know, or CUDA asked for where there is none.
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]'; got {device!r}") from error
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but CUDA is not available")
    return resolved


@contextmanager
def single_threaded(active: bool) -> Iterator[None]:
    """Run torch on one thread while active: small matmuls gain nothing from intra-op threads,
    and on a busy machine their synchronisation made them orders of magnitude slower."""
    if not active:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
