"""The small device interface the GPU runner needs, and how to pick an implementation.

Two implementations: ``gpu_cuda_python`` (NVIDIA's ``cuda.bindings``, installs from wheels
everywhere) and ``gpu_pycuda`` (pycuda, which builds only against a full toolkit with a driver).
``open_device`` uses the first that imports and finds a driver. Every method raises
``GpuError`` on a CUDA error, with the error's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class GpuError(RuntimeError):
    """A CUDA driver call failed; ``code`` is the CUDA error name (CUDA_ERROR_ILLEGAL_ADDRESS…)."""

    def __init__(self, call: str, code: str) -> None:
        super().__init__(f"{call} failed: {code}")
        self.call = call
        self.code = code


@dataclass(frozen=True)
class DeviceInfo:
    """What the runner needs to know about the device."""

    name: str
    index: int
    compute_capability: tuple[int, int]
    l2_bytes: int

    @property
    def arch(self) -> str:
        """nvcc's ``sm_XY`` for this device."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"


class DeviceApi(Protocol):
    """Device memory, streams and events on the primary context of one GPU."""

    name: str
    info: DeviceInfo

    def alloc(self, nbytes: int) -> int:
        """Allocate device memory; returns the device pointer."""
        ...

    def free(self, ptr: int) -> None:
        """Free device memory."""
        ...

    def htod(self, ptr: int, array: np.ndarray) -> None:
        """Copy a contiguous host array to the device (synchronous)."""
        ...

    def dtoh(self, array: np.ndarray, ptr: int) -> None:
        """Fill a contiguous host array from the device (synchronous)."""
        ...

    def memset_async(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        """Set ``nbytes`` bytes to ``byte`` on ``stream``."""
        ...

    def stream_create(self) -> int:
        """A new non-default stream handle."""
        ...

    def stream_destroy(self, stream: int) -> None:
        """Destroy a stream."""
        ...

    def synchronize(self, stream: int) -> None:
        """Wait for ``stream``; raises GpuError for a fault that happened on it."""
        ...

    def event_create(self) -> int:
        """A timing event."""
        ...

    def event_record(self, event: int, stream: int) -> None:
        """Record ``event`` on ``stream``."""
        ...

    def event_elapsed_ms(self, start: int, end: int) -> float:
        """Milliseconds between two recorded, completed events."""
        ...

    def event_destroy(self, event: int) -> None:
        """Destroy an event."""
        ...

    def close(self) -> None:
        """Release the context."""
        ...
