"""``DeviceApi`` on pycuda (used when cuda.bindings is missing; pycuda needs a full toolkit).

Uses the device's primary context, like the cuda-python implementation, so the CUDA runtime
inside a program's shared library shares its pointers.
"""

from __future__ import annotations

import numpy as np

from structcover.tools.verify.gpu_api import DeviceInfo, GpuError

NAME = "pycuda"


def _drv():  # noqa: ANN202 - the module
    import pycuda.driver as drv

    return drv


def _wrap(call: str, exc: Exception) -> GpuError:
    return GpuError(call, f"{type(exc).__name__}: {exc}")


class PycudaDevice:
    """One GPU through pycuda."""

    name = NAME

    def __init__(self, index: int) -> None:
        drv = _drv()
        drv.init()
        self._device = drv.Device(index)
        self._ctx = self._device.retain_primary_context()
        self._ctx.push()
        attr = drv.device_attribute
        self.info = DeviceInfo(name=self._device.name(), index=index,
                               compute_capability=self._device.compute_capability(),
                               l2_bytes=int(self._device.get_attribute(attr.L2_CACHE_SIZE)))
        self._allocs: dict[int, object] = {}
        self._streams: dict[int, object] = {}
        self._events: dict[int, object] = {}

    def alloc(self, nbytes: int) -> int:
        try:
            mem = _drv().mem_alloc(max(int(nbytes), 1))
        except Exception as exc:  # noqa: BLE001
            raise _wrap("mem_alloc", exc) from exc
        self._allocs[int(mem)] = mem
        return int(mem)

    def free(self, ptr: int) -> None:
        self._allocs.pop(ptr).free()

    def htod(self, ptr: int, array: np.ndarray) -> None:
        try:
            _drv().memcpy_htod(ptr, np.ascontiguousarray(array))
        except Exception as exc:  # noqa: BLE001
            raise _wrap("memcpy_htod", exc) from exc

    def dtoh(self, array: np.ndarray, ptr: int) -> None:
        try:
            _drv().memcpy_dtoh(array, ptr)
        except Exception as exc:  # noqa: BLE001
            raise _wrap("memcpy_dtoh", exc) from exc

    def memset_async(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        _drv().memset_d8_async(ptr, byte, nbytes, self._streams[stream])

    def stream_create(self) -> int:
        stream = _drv().Stream()
        self._streams[stream.handle] = stream
        return int(stream.handle)

    def stream_destroy(self, stream: int) -> None:
        self._streams.pop(stream, None)

    def synchronize(self, stream: int) -> None:
        try:
            self._streams[stream].synchronize()
        except Exception as exc:  # noqa: BLE001 - pycuda raises LaunchError etc.
            raise _wrap("stream.synchronize", exc) from exc

    def event_create(self) -> int:
        event = _drv().Event()
        self._events[event.handle] = event
        return int(event.handle)

    def event_record(self, event: int, stream: int) -> None:
        self._events[event].record(self._streams[stream])

    def event_elapsed_ms(self, start: int, end: int) -> float:
        self._events[end].synchronize()
        return float(self._events[end].time_since(self._events[start]))

    def event_destroy(self, event: int) -> None:
        self._events.pop(event, None)

    def close(self) -> None:
        self._events.clear()
        self._streams.clear()
        for mem in self._allocs.values():
            mem.free()
        self._allocs.clear()
        self._ctx.pop()
        self._ctx.detach()


def open_device(index: int = 0) -> PycudaDevice:
    """Open GPU ``index``; raises when pycuda or a driver is missing."""
    return PycudaDevice(index)
