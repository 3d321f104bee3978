"""The GPU backend. Tests marked ``gpu`` need a driver and a GPU and skip cleanly without one;
the others check the parts that run anywhere (probe, library build, argument marshalling,
timing statistics on a fake device)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.verify.gpu_api import DeviceInfo
from structcover.tools.verify.gpu_nvml import NvmlMonitor
from structcover.tools.verify.gpu_runner import (
    GpuBackend,
    _time,
    build_library,
    launcher_arguments,
    run_program,
)
from structcover.tools.verify.inputs import make_inputs

GPU_OK, GPU_WHY = GpuBackend().available()
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"no GPU: {GPU_WHY}")
needs_nvcc = pytest.mark.nvcc

SCALE = """#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    scale<<<(n + 255) / 256, 256, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
"""
SPEC = TaskSpec.model_validate(dict(task_id="scale", sizes={"N": 1 << 20}, args=[
    {"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
    {"name": "a", "kind": "scalar", "ctype": "float", "value": 1.5},
    {"name": "n", "kind": "scalar", "value": "N"}]))


def test_available_is_clean_without_gpu():
    ok, why = GpuBackend().available()
    assert isinstance(ok, bool) and why
    if not ok:
        assert "nvcc" in why or "GPU" in why


def test_run_without_gpu_is_a_status_not_an_exception():
    if GPU_OK:
        pytest.skip("a GPU is present")
    res = run_program(SCALE, SPEC, make_inputs(SPEC, 0, {"N": 16}), sizes={"N": 16})
    assert res.status in ("unsupported", "compile-error") and res.detail


def test_nvml_missing_reads_none():
    mon = NvmlMonitor(0)
    if mon.available:
        pytest.skip("NVML present")
    assert mon.energy_mj() is None and mon.busy_reason() is None and mon.reason
    assert mon.snapshot().describe() == ""


def test_launcher_arguments_follow_spec_order():
    types, values = launcher_arguments(SPEC, {"N": 10}, {"x": 0x1000, "y": 0x2000}, 0x3000)
    assert types == [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_int,
                     ctypes.c_void_p]
    assert [v.value for v in values] == [0x1000, 0x2000, 1.5, 10, 0x3000]


@needs_nvcc
def test_build_library_exports_launcher_and_caches(tmp_path):
    lib, log = build_library(SCALE, "sm_80", tmp_path)
    assert lib is not None, log
    assert hasattr(ctypes.CDLL(str(lib)), "launch")
    again, log2 = build_library(SCALE, "sm_80", tmp_path)
    assert again == lib and log2 == "cached"
    bad, log3 = build_library(SCALE.replace("a * x[i]", "a * undefined_name"), "sm_80", tmp_path)
    assert bad is None and "undefined_name" in log3


class _FakeDevice:
    """Records calls; event times come from a list."""

    name = "fake"

    def __init__(self, times):
        self.info = DeviceInfo("fake", 0, (9, 0), l2_bytes=50 << 20)
        self.times, self.log = list(times), []

    def alloc(self, n):
        self.log.append(("alloc", n))
        return 1

    def free(self, p):
        self.log.append(("free", p))

    def memset_async(self, p, b, n, s):
        self.log.append(("flush", n))

    def synchronize(self, s):
        pass

    def event_create(self):
        return len(self.log)

    def event_record(self, e, s):
        self.log.append(("record", e))

    def event_elapsed_ms(self, a, b):
        return self.times.pop(0)

    def event_destroy(self, e):
        pass


def test_timing_flushes_l2_before_every_trial_and_reports_spread():
    dev = _FakeDevice([1.0, 2.0, 3.0, 4.0])
    calls = []
    timing, energy, _ = _time(dev, lambda: calls.append(1), 0, trials=4, warmup=3,
                              nvml=NvmlMonitor(99))
    assert len(calls) == 3 + 4
    flushes = [n for op, n in dev.log if op == "flush"]
    assert len(flushes) == 4 and all(n >= 2 * dev.info.l2_bytes for n in flushes)
    assert timing.median_ms == 2.5 and timing.mean_ms == 2.5 and timing.trials == 4
    assert timing.cv == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2.5)
    assert ("free", 1) in dev.log


# ---- on a real GPU ----------------------------------------------------------------------


@pytest.mark.gpu
@needs_gpu
def test_gpu_runs_and_times():
    inputs = make_inputs(SPEC, 42)
    res = GpuBackend(trials=20).run(SCALE, SPEC, inputs, timeout_s=120)
    assert res.status == "ok", res.detail
    np.testing.assert_allclose(res.outputs["y"], 1.5 * inputs["x"], rtol=1e-6)
    np.testing.assert_array_equal(res.inputs_after["x"], inputs["x"])
    if "timing refused" not in res.detail:
        assert res.timing is not None and res.timing.trials == 20 and res.timing.median_ms > 0


@pytest.mark.gpu
@needs_gpu
def test_gpu_illegal_address_is_a_crash():
    bad = SCALE.replace("y[i] = a * x[i];", "y[i + (1 << 28)] = a * x[i];")
    res = GpuBackend(trials=0).run(bad, SPEC, make_inputs(SPEC, 1), timeout_s=120)
    assert res.status == "crash" and "CUDA_ERROR" in res.detail


@pytest.mark.gpu
@needs_gpu
def test_gpu_device_assert_is_a_crash():
    bad = "#include <assert.h>\n" + SCALE.replace("if (i < n) y[i]", "assert(i < 0);\n    if (i < n) y[i]")
    res = GpuBackend(trials=0).run(bad, SPEC, make_inputs(SPEC, 1), timeout_s=120)
    assert res.status == "crash" and "device assert" in res.detail, res.detail


@pytest.mark.gpu
@needs_gpu
def test_gpu_launch_error_is_reported():
    bad = SCALE.replace("<<<(n + 255) / 256, 256,", "<<<(n + 255) / 256, 4096,")
    res = GpuBackend(trials=0).run(bad, SPEC, make_inputs(SPEC, 1), timeout_s=120)
    assert res.status == "launch-error" and "cudaError" in res.detail


@pytest.mark.gpu
@needs_gpu
def test_gpu_equivalence_against_corpus_reference():
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence

    family = load_corpus()[0]
    spec = family.tasks[0]
    for prog in family.variants[:2]:
        v = check_equivalence(prog.source, family.reference.source, spec,
                              backend=GpuBackend(trials=5), cache=ReferenceCache(), trials=2)
        assert v.equivalent is True and v.backend == "gpu", v.detail
