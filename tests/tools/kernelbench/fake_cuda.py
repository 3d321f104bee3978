"""A fake of the torch.cuda surface the KernelBench GPU protocol uses (tensors stay on the CPU).

Work "on the device" is modelled by the tests: a callable may queue a write with
:meth:`FakeCuda.queue_side_stream`; only a device-wide ``synchronize()`` completes it (as work on
a side stream completes for ``cudaDeviceSynchronize`` but not for the current stream's sync).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace


class FakeEvent:
    def __init__(self, cuda: FakeCuda, enable_timing: bool = False) -> None:
        self.cuda, self.t = cuda, None

    def record(self, stream: object = None) -> None:
        self.cuda.records += 1
        self.t = self.cuda.now()

    def synchronize(self) -> None:
        """Nothing queued on the current stream outlives a call in this fake."""

    def elapsed_time(self, other: FakeEvent) -> float:
        return other.t - self.t


class FakeStream:
    cuda_stream = 0

    def __init__(self, cuda: FakeCuda) -> None:
        self.cuda = cuda

    def synchronize(self) -> None:
        self.cuda.stream_syncs += 1


class FakeCuda:
    """``torch.cuda`` as far as the protocol uses it; the clock is virtual or the wall clock."""

    def __init__(self, l2_bytes: int = 50 << 20, virtual: bool = True) -> None:
        self.virtual, self.clock_ms = virtual, 0.0
        self.pending: list[Callable[[], None]] = []
        self.device_syncs = self.stream_syncs = self.records = 0
        self._props = SimpleNamespace(L2_cache_size=l2_bytes, name="FakeGPU")

    def now(self) -> float:
        return self.clock_ms if self.virtual else time.perf_counter() * 1e3

    def advance(self, ms: float) -> None:
        self.clock_ms += ms

    def queue_side_stream(self, work: Callable[[], None]) -> None:
        self.pending.append(work)

    def Event(self, enable_timing: bool = False) -> FakeEvent:  # noqa: N802 - torch's name
        return FakeEvent(self, enable_timing)

    def synchronize(self, device: object = None) -> None:
        self.device_syncs += 1
        while self.pending:
            self.pending.pop(0)()

    def current_stream(self, device: object = None) -> FakeStream:
        return FakeStream(self)

    def get_device_properties(self, index: int = 0) -> SimpleNamespace:
        return self._props


class FakeMonitor:
    """NVML's total-energy counter: ``step_mj`` more at every read."""

    def __init__(self, step_mj: int) -> None:
        self.value, self.step = 1_000_000, step_mj

    def energy_mj(self) -> int:
        self.value += self.step
        return self.value
