"""``precision = "auto"``: bf16 matmuls where this device does them natively *and* measurably
faster, else f32 — decided once per process and device, and recorded.

bf16 halves the reference protocol's cost on a CPU with native bf16 arithmetic (issue 44: a
2-core AMD EPYC with AVX-512 BF16, 114.8 → 51.4 CPU-s, the curve within 2e-4 nats of f32) but
runs several times slower where torch emulates it through f32 (no ``avx512_bf16``/``amx_bf16``),
and a CPU with ``avx512_bf16`` but no AMX tiles multiplies bf16 more slowly than f32
(``benchmarks/README.md``). So "auto" asks two questions:

1. **native?** CPU: the Linux ``/proc/cpuinfo`` flags ``avx512_bf16`` or ``amx_bf16`` (x86),
   ``bf16`` (aarch64); torch 2.13's ``torch.backends.cpu.get_cpu_capability()`` names only the
   vector width ATen dispatches to (``"AVX512"`` on an AMX machine), so it cannot tell. CUDA:
   compute capability ≥ 8.0 (Ampere: bf16 tensor cores). Elsewhere: no.
2. **faster?** The batched product of the engine's commonest bf16 chunk — P probes of the
   curve's MLP 512×512 on minibatches of 256 rows, ``bmm`` of (P, 256, 512)·(P, 512, 512) —
   timed in f32 and in bf16, the repeats of the two interleaved (so a loaded machine slows
   both alike), best of each; on the CPU on one thread, as the engine's worker processes run.
   bf16 must reach :data:`BF16_MARGIN` × the f32 rate: a smaller gain in the matmuls alone is
   eaten by the bf16 path's copies (shadow weights, cast inputs) and Adam's f32 traffic.

:func:`choose_precision` is the decision, a pure function of the three facts;
:func:`auto_precision` measures them (a fraction of a second) once per process and device;
:func:`resolve_precision` turns a :class:`~probemeter.training.config.TrainingConfig` asking for
"auto" into the concrete one *before* unit keys are made and training starts, so that results
and keys carry the precision actually used. f32 stays the default: its numbers are the same on
every machine, bf16's depend on which one chose it.

References:
    Kalamkar, D. et al. (2019). A study of BFLOAT16 for deep learning training.
    arXiv:1905.12322
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from probemeter._device import resolve_device, single_threaded
from probemeter.training.config import AUTO_PRECISION, TrainingConfig

__all__ = [
    "BF16_MARGIN",
    "PrecisionChoice",
    "auto_precision",
    "bf16_native",
    "choose_precision",
    "concrete_config",
    "resolve_precision",
]

#: how many times the f32 rate bf16 matmuls must reach for "auto" to choose bf16
BF16_MARGIN = 1.3
#: the timed product: probes, minibatch rows, the MLP's width (the curve's 512×512 at batch 256)
_PROBES = {"cpu": 4, "cuda": 64}
_ROWS, _WIDTH = 256, 512
#: timed repeats of each precision, after one warm-up of each
_REPEATS = 4
_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


@dataclass(frozen=True)
class PrecisionChoice:
    """What ``precision = "auto"`` chose on one device, and why.

    Attributes:
        chosen: ``"f32"`` or ``"bf16"``.
        reason: one line saying why, with the measured ratio.
        native: whether the device does bf16 arithmetic in hardware.
        f32_gflops, bf16_gflops: the measured rates of the timed product (GFLOP/s).
        device: the torch device measured on (``"cpu"``, ``"cuda:0"``).
        hardware: what the native test read (the CPU flags found, or the compute capability).
    """

    chosen: str
    reason: str
    native: bool
    f32_gflops: float
    bf16_gflops: float
    device: str
    hardware: str

    def to_dict(self) -> dict[str, Any]:
        """The record results carry: requested "auto", the chosen precision, the reason, the
        two rates (GFLOP/s, rounded to 0.1) and what was measured."""
        return {
            "requested": AUTO_PRECISION,
            "chosen": self.chosen,
            "reason": self.reason,
            "native_bf16": self.native,
            "hardware": self.hardware,
            "f32_gflops": round(self.f32_gflops, 1),
            "bf16_gflops": round(self.bf16_gflops, 1),
            "margin": BF16_MARGIN,
            "device": self.device,
            "measured": f"bmm ({_ROWS}x{_WIDTH})·({_WIDTH}x{_WIDTH}) per probe, best of "
            f"{_REPEATS}" + (", one thread" if self.device == "cpu" else ""),
        }


def choose_precision(
    native: bool, f32_gflops: float, bf16_gflops: float, margin: float = BF16_MARGIN
) -> tuple[str, str]:
    """The precision "auto" chooses: ``"bf16"`` when the device does bf16 natively and its
    measured rate is at least ``margin`` × the f32 rate, else ``"f32"``; with the reason.

    Args:
        native: whether the device has bf16 arithmetic in hardware.
        f32_gflops, bf16_gflops: measured rates of the same product (GFLOP/s, > 0).
        margin: the speed-up bf16 must reach (default :data:`BF16_MARGIN`).

    Raises:
        ValueError: a rate that is not a positive finite number.
    """
    for name, rate in (("f32_gflops", f32_gflops), ("bf16_gflops", bf16_gflops)):
        if not (isinstance(rate, (int, float)) and 0 < rate < float("inf")):
            raise ValueError(f"{name} must be a positive finite rate; got {rate!r}")
    ratio = bf16_gflops / f32_gflops
    measured = f"bf16 {bf16_gflops:.0f} vs f32 {f32_gflops:.0f} GFLOP/s ({ratio:.2f}x)"
    if not native:
        return "f32", f"no native bf16 on this device (emulated through f32); {measured}"
    if ratio < margin:
        return "f32", f"native bf16 but not {margin:g}x faster: {measured}"
    return "bf16", f"native bf16, at least {margin:g}x faster: {measured}"


def _cpu_flags() -> set[str]:
    """The CPU's feature flags from Linux's ``/proc/cpuinfo`` (x86 ``flags``, aarch64
    ``Features``); empty where there is no such file."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def bf16_native(device: torch.device) -> tuple[bool, str]:
    """Whether ``device`` does bf16 arithmetic in hardware, and what that was read from.

    CPU: the flags ``avx512_bf16``/``amx_bf16`` (x86) or ``bf16`` (aarch64) in
    ``/proc/cpuinfo``; CUDA: compute capability ≥ 8.0; any other device: no."""
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        return major >= 8, f"compute capability {major}.{minor}"
    if device.type != "cpu":
        return False, f"{device.type} device"
    found = sorted(_CPU_FLAGS & _cpu_flags())
    return bool(found), ", ".join(found) if found else "no avx512_bf16/amx_bf16 flag"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _measure(device: torch.device) -> tuple[float, float]:
    """GFLOP/s of the timed product in f32 and in bf16: one warm-up of each, then
    :data:`_REPEATS` of each interleaved, the fastest of each."""
    probes = _PROBES.get(device.type, _PROBES["cpu"])
    generator = torch.Generator().manual_seed(0)
    a32 = torch.randn(probes, _ROWS, _WIDTH, generator=generator).to(device)
    b32 = torch.randn(probes, _WIDTH, _WIDTH, generator=generator).to(device)
    pairs = {
        torch.float32: (a32, b32),
        torch.bfloat16: (a32.to(torch.bfloat16), b32.to(torch.bfloat16)),
    }
    outputs = {dtype: torch.bmm(*pair) for dtype, pair in pairs.items()}  # warm-up
    best = dict.fromkeys(pairs, float("inf"))
    with single_threaded(device.type == "cpu"):
        for _ in range(_REPEATS):
            for dtype, (a, b) in pairs.items():
                _sync(device)
                began = time.perf_counter()
                torch.bmm(a, b, out=outputs[dtype])
                _sync(device)
                best[dtype] = min(best[dtype], time.perf_counter() - began)
    flops = 2.0 * probes * _ROWS * _WIDTH * _WIDTH
    return flops / best[torch.float32] / 1e9, flops / best[torch.bfloat16] / 1e9


@functools.cache
def _auto_precision(device: str) -> PrecisionChoice:
    torch_device = torch.device(device)
    native, hardware = bf16_native(torch_device)
    f32, bf16 = _measure(torch_device)
    chosen, reason = choose_precision(native, f32, bf16)
    return PrecisionChoice(chosen, reason, native, f32, bf16, device, hardware)


def auto_precision(device: str | torch.device = "auto") -> PrecisionChoice:
    """What ``precision = "auto"`` chooses on ``device`` (``"auto"``: CUDA when present, as
    :class:`~probemeter.Execution` resolves it): native bf16 and measured faster
    (:func:`choose_precision`), measured once per process and device, then remembered.

    Raises:
        ValueError: a device torch does not know, or CUDA where there is none.
    """
    torch_device = resolve_device(device)
    if torch_device.type == "cuda" and torch_device.index is None:
        torch_device = torch.device("cuda", torch.cuda.current_device())
    return _auto_precision(str(torch_device))


def resolve_precision(
    config: TrainingConfig, device: str | torch.device = "auto"
) -> tuple[TrainingConfig, PrecisionChoice | None]:
    """``config`` with ``precision = "auto"`` replaced by :func:`auto_precision`'s choice on
    ``device``, and that choice; ``config`` itself and None for any other precision (or for
    anything that is no config: the caller's own checks refuse it)."""
    if getattr(config, "precision", None) != AUTO_PRECISION:
        return config, None
    choice = auto_precision(device)
    return replace(config, precision=choice.chosen), choice


def concrete_config(config: TrainingConfig, device: str | torch.device = "auto") -> TrainingConfig:
    """``config`` with a concrete precision (:func:`resolve_precision` without the record)."""
    return resolve_precision(config, device)[0]
