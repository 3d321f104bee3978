"""``DeviceApi`` on NVIDIA's ``cuda.bindings`` driver API (the cuda-python package).

Works on the *primary* context so that the CUDA runtime statically linked into a program's
shared library (which also uses the primary context) sees the same device pointers.
"""

from __future__ import annotations

import numpy as np

from structcover.tools.verify.gpu_api import DeviceInfo, GpuError

NAME = "cuda-python"


def _cu():  # noqa: ANN202 - the module
    from cuda.bindings import driver

    return driver


def _check(call: str, result: tuple) -> object:
    """Unpack ``(err, value...)`` from a driver call; raise GpuError on failure."""
    cu = _cu()
    err = result[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        code = name.decode() if isinstance(name, bytes) else str(err)
        raise GpuError(call, code)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


class CudaPythonDevice:
    """One GPU through cuda.bindings."""

    name = NAME

    def __init__(self, index: int) -> None:
        cu = _cu()
        _check("cuInit", cu.cuInit(0))
        self._dev = _check("cuDeviceGet", cu.cuDeviceGet(index))
        self._ctx = _check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(self._dev))
        _check("cuCtxSetCurrent", cu.cuCtxSetCurrent(self._ctx))
        attr = cu.CUdevice_attribute
        get = lambda a: int(_check("cuDeviceGetAttribute",  # noqa: E731
                                   cu.cuDeviceGetAttribute(a, self._dev)))
        raw_name = _check("cuDeviceGetName", cu.cuDeviceGetName(256, self._dev))
        self.info = DeviceInfo(
            name=raw_name.split(b"\0", 1)[0].decode(errors="replace"), index=index,
            compute_capability=(get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            l2_bytes=get(attr.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE))
        self._streams: dict[int, object] = {}
        self._events: dict[int, object] = {}

    def alloc(self, nbytes: int) -> int:
        return int(_check("cuMemAlloc", _cu().cuMemAlloc(max(int(nbytes), 1))))

    def free(self, ptr: int) -> None:
        _check("cuMemFree", _cu().cuMemFree(ptr))

    def htod(self, ptr: int, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        if array.nbytes:
            _check("cuMemcpyHtoD", _cu().cuMemcpyHtoD(ptr, array.ctypes.data, array.nbytes))

    def dtoh(self, array: np.ndarray, ptr: int) -> None:
        if not array.flags.c_contiguous:
            raise ValueError("dtoh needs a C-contiguous array")
        if array.nbytes:
            _check("cuMemcpyDtoH", _cu().cuMemcpyDtoH(array.ctypes.data, ptr, array.nbytes))

    def memset_async(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        _check("cuMemsetD8Async", _cu().cuMemsetD8Async(ptr, byte, nbytes, self._streams[stream]))

    def stream_create(self) -> int:
        cu = _cu()
        flags = int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)
        stream = _check("cuStreamCreate", cu.cuStreamCreate(flags))
        self._streams[int(stream)] = stream
        return int(stream)

    def stream_destroy(self, stream: int) -> None:
        _check("cuStreamDestroy", _cu().cuStreamDestroy(self._streams.pop(stream)))

    def synchronize(self, stream: int) -> None:
        _check("cuStreamSynchronize", _cu().cuStreamSynchronize(self._streams[stream]))

    def event_create(self) -> int:
        cu = _cu()
        event = _check("cuEventCreate", cu.cuEventCreate(int(cu.CUevent_flags.CU_EVENT_DEFAULT)))
        self._events[int(event)] = event
        return int(event)

    def event_record(self, event: int, stream: int) -> None:
        _check("cuEventRecord", _cu().cuEventRecord(self._events[event], self._streams[stream]))

    def event_elapsed_ms(self, start: int, end: int) -> float:
        cu = _cu()
        _check("cuEventSynchronize", cu.cuEventSynchronize(self._events[end]))
        return float(_check("cuEventElapsedTime",
                            cu.cuEventElapsedTime(self._events[start], self._events[end])))

    def event_destroy(self, event: int) -> None:
        _check("cuEventDestroy", _cu().cuEventDestroy(self._events.pop(event)))

    def close(self) -> None:
        cu = _cu()
        for event in list(self._events):
            cu.cuEventDestroy(self._events.pop(event))
        for stream in list(self._streams):
            cu.cuStreamDestroy(self._streams.pop(stream))
        cu.cuDevicePrimaryCtxRelease(self._dev)


def open_device(index: int = 0) -> CudaPythonDevice:
    """Open GPU ``index``; raises (ImportError, GpuError, driver-not-found) when impossible."""
    return CudaPythonDevice(index)
