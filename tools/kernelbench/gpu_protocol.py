"""The GPU half of the KernelBench protocol: side-stream and thread checks, timing, energy.

Every function takes the ``torch.cuda``-like surface it uses as an argument (``cuda``), so the
protocol runs unchanged against the real module in the sandboxed child and against a fake
device in the tests. What it uses of that surface:

* ``cuda.Event(enable_timing=True)`` with ``record()``, ``synchronize()`` and
  ``elapsed_time(other)`` (milliseconds);
* ``cuda.synchronize()`` (the whole device) and ``cuda.current_stream()`` with
  ``synchronize()`` (only the stream the caller waits on);
* ``cuda.get_device_properties(i).L2_cache_size`` (bytes) for the flush buffer;
* an NVML-like monitor with ``energy_mj()`` (``tools/verify/gpu_nvml.NvmlMonitor``), optional.

Timing follows KernelBench with the hardening the issue asks for: warm-up calls first, then per
timed call an L2 flush (a write over a buffer twice the L2 size, so no call reads a warm cache
another call left), a start event, the call, an end event, a device-wide synchronize. The
speedup is the reference's median over the candidate's (each timed in its own process).

A candidate that returns before its work is done (work queued on a side stream, or on a
thread) makes the events time only the launch. :func:`async_work_check` calls it, waits only on
the caller's stream, snapshots the outputs, then waits for the whole device and snapshots again:
outputs that changed in between were written by work the caller's stream did not wait for. A
thread still alive after the call is reported too.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["EnergyMonitor", "TimingResult", "async_work_check", "l2_flush_buffer",
           "time_callable"]


class EnergyMonitor(Protocol):
    """What the timing loop reads energy from (NVML's total energy counter)."""

    def energy_mj(self) -> int | None:
        """Total energy since the driver loaded, millijoules; None when unsupported."""


class TimingResult(dict[str, Any]):
    """``median_ms``, ``mean_ms``, ``std_ms``, ``trials``, ``cv``, ``energy_j`` (per call)."""


def l2_flush_buffer(torch: Any, cuda: Any, device: Any, index: int = 0) -> Any:
    """A buffer twice the device's L2 size (at least 8 MiB) to overwrite between timed calls."""
    try:
        l2 = int(cuda.get_device_properties(index).L2_cache_size)
    except (AttributeError, RuntimeError):
        l2 = 0
    size = max(2 * l2, 8 << 20)
    return torch.empty(size // 4, dtype=torch.float32, device=device)


def _snapshot(outputs: Sequence[Any]) -> list[Any]:
    return [o.detach().to("cpu", copy=True) if hasattr(o, "detach") else o for o in outputs]


def _flatten(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple | list) else [result]


def async_work_check(fn: Callable[..., Any], args: Sequence[Any], cuda: Any) -> str | None:
    """Whether ``fn(*args)`` leaves work running after it returns (see the module doc).

    Returns:
        None, or the reason (``side-stream: ...`` / ``thread: ...``).
    """
    import torch

    before = {t.ident for t in threading.enumerate()}
    outputs = _flatten(fn(*args))
    cuda.current_stream().synchronize()
    early = _snapshot(outputs)
    cuda.synchronize()
    late = _snapshot(outputs)
    alive = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    for i, (a, b) in enumerate(zip(early, late, strict=True)):
        if isinstance(a, torch.Tensor) and not torch.equal(a, b):
            # NaN != NaN: compare bit patterns only where both are NaN-free.
            if not (a.is_floating_point() and torch.equal(torch.isnan(a), torch.isnan(b))
                    and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))):
                return (f"side-stream: output {i} changed after the caller's stream was done "
                        "(work not ordered on the current stream)")
    if alive:
        return f"thread: {len(alive)} thread(s) still running after forward returned"
    return None


def time_callable(fn: Callable[..., Any], args: Sequence[Any], cuda: Any, flush: Any, *,
                  warmup: int = 3, trials: int = 20,
                  monitor: EnergyMonitor | None = None) -> TimingResult:
    """Time ``fn(*args)`` with CUDA events after ``warmup`` calls, flushing L2 before each.

    Args:
        fn: The model's forward (or the model).
        args: Its inputs, on the device.
        cuda: The ``torch.cuda``-like surface.
        flush: The buffer :func:`l2_flush_buffer` made (``zero_()`` overwrites it).
        warmup: Untimed calls first (compiles, caches, clocks).
        trials: Timed calls.
        monitor: Energy counter, when NVML is present.

    Returns:
        Median/mean/std milliseconds per call, coefficient of variation, and the energy per
        call in joules (None without a monitor or a supported counter).
    """
    if trials < 1 or warmup < 0:
        raise ValueError(f"trials must be >= 1 and warmup >= 0, got {trials}, {warmup}")
    for _ in range(warmup):
        fn(*args)
    cuda.synchronize()
    times: list[float] = []
    energy_start = monitor.energy_mj() if monitor is not None else None
    for _ in range(trials):
        flush.zero_()
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        cuda.synchronize()
        times.append(float(start.elapsed_time(end)))
    energy_end = monitor.energy_mj() if monitor is not None else None
    mean = statistics.fmean(times)
    std = statistics.pstdev(times) if len(times) > 1 else 0.0
    energy = None
    if energy_start is not None and energy_end is not None and energy_end >= energy_start:
        # Includes the flushes: an upper bound per call, the same for reference and candidate.
        energy = (energy_end - energy_start) / 1000.0 / trials
    return TimingResult(median_ms=statistics.median(times), mean_ms=mean, std_ms=std,
                        trials=trials, cv=std / mean if mean > 0 else 0.0, energy_j=energy)
