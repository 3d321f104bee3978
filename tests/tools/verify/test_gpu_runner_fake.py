"""gpu_runner.run_program end to end on a fake device: host memory stands in for device
memory and g++ builds a host launcher, so the copy-in, launch, copy-out, timing and cleanup
path runs without a GPU."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.verify import gpu_runner
from structcover.tools.verify.gpu_api import DeviceInfo
from structcover.tools.verify.inputs import make_inputs

SPEC = TaskSpec.model_validate(dict(task_id="scale", sizes={"N": 64}, args=[
    {"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
    {"name": "a", "kind": "scalar", "ctype": "float", "value": 1.5},
    {"name": "n", "kind": "scalar", "value": "N"}]))

#: The launcher as the GPU build would export it, compiled for the host: "device" pointers
#: are host addresses handed out by the fake device.
HOST_LAUNCHER = """extern "C" int launch(const float* x, float* y, float a, int n, void* stream) {
    if (stream == nullptr) return 1;
    for (int i = 0; i < n; ++i) y[i] = a * x[i];
    return n > 1000000 ? 2 : 0;
}
"""


class HostDevice:
    """A DeviceApi over host buffers; event times come from a list."""

    name = "fake-host"

    def __init__(self, times: list[float]) -> None:
        self.info = DeviceInfo("fake", 0, (9, 0), l2_bytes=1 << 20)
        self.times = list(times)
        self.buffers: dict[int, ctypes.Array] = {}
        self.streams: set[int] = set()
        self.flushes = 0
        self.closed = False

    def alloc(self, nbytes: int) -> int:
        buf = (ctypes.c_char * nbytes)()
        self.buffers[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    def free(self, ptr: int) -> None:
        del self.buffers[ptr]

    def htod(self, ptr: int, array: np.ndarray) -> None:
        ctypes.memmove(ptr, array.ctypes.data, array.nbytes)

    def dtoh(self, array: np.ndarray, ptr: int) -> None:
        ctypes.memmove(array.ctypes.data, ptr, array.nbytes)

    def memset_async(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        self.flushes += 1

    def stream_create(self) -> int:
        self.streams.add(0x5C)
        return 0x5C

    def stream_destroy(self, stream: int) -> None:
        self.streams.discard(stream)

    def synchronize(self, stream: int) -> None:
        pass

    def event_create(self) -> int:
        return 1

    def event_record(self, event: int, stream: int) -> None:
        pass

    def event_elapsed_ms(self, start: int, end: int) -> float:
        return self.times.pop(0)

    def event_destroy(self, event: int) -> None:
        pass

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def host_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("g++ not found")
    src = tmp_path / "launcher.cpp"
    src.write_text(HOST_LAUNCHER)
    lib = tmp_path / "launcher.so"
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    monkeypatch.setattr(gpu_runner, "build_library", lambda *a, **k: (lib, ""))
    return lib


def _use(monkeypatch: pytest.MonkeyPatch, dev: HostDevice) -> None:
    monkeypatch.setattr(gpu_runner, "open_device", lambda index=0, prefer=None: dev)


def test_run_program_copies_launches_times_and_cleans_up(host_build, monkeypatch) -> None:
    dev = HostDevice([2.0, 1.0, 3.0])
    _use(monkeypatch, dev)
    inputs = make_inputs(SPEC, 0, {"N": 64})
    x = inputs["x"].copy()
    res = gpu_runner.run_program("// source", SPEC, inputs, sizes={"N": 64}, trials=3, warmup=1)
    assert res.status == "ok", res.detail
    np.testing.assert_allclose(res.outputs["y"], 1.5 * x, rtol=1e-6)
    np.testing.assert_array_equal(res.inputs_after["x"], x)
    assert res.timing is not None and res.timing.median_ms == 2.0 and res.timing.trials == 3
    assert dev.flushes == 3  # L2 flushed before every timed trial
    assert dev.buffers == {} and dev.streams == set() and dev.closed
    assert "fake" in res.detail


def test_launcher_error_is_a_status_and_still_cleans_up(host_build, monkeypatch) -> None:
    dev = HostDevice([])
    _use(monkeypatch, dev)
    sizes = {"N": 1_000_001}
    res = gpu_runner.run_program("// source", SPEC, make_inputs(SPEC, 0, sizes), sizes=sizes,
                                 time_it=False)
    assert res.status == "launch-error" and "cudaError 2" in res.detail
    assert dev.buffers == {} and dev.closed


def test_missing_launcher_is_a_compile_error(tmp_path, monkeypatch) -> None:
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("g++ not found")
    src = tmp_path / "other.cpp"
    src.write_text('extern "C" int not_launch() { return 0; }\n')
    lib = tmp_path / "other.so"
    subprocess.run([cxx, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    monkeypatch.setattr(gpu_runner, "build_library", lambda *a, **k: (lib, ""))
    dev = HostDevice([])
    _use(monkeypatch, dev)
    res = gpu_runner.run_program("// source", SPEC, make_inputs(SPEC, 0, {"N": 8}),
                                 sizes={"N": 8}, time_it=False)
    assert res.status == "compile-error" and "launch" in res.detail and dev.closed
