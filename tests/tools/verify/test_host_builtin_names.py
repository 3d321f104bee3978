"""Host code may name its own ``blockDim``/``gridDim``/``threadIdx``/``blockIdx``: in CUDA the
built-ins exist only in device code. On the emulator they are macros, so the rewriter renames
the host-scope uses; device code keeps the built-ins (and a host local never changes them)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from structcover.tools.verify.rewriter import rewrite

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of, uniform  # noqa: E402

#: Public-solution shape: the launcher's dim3 locals are called blockDim and gridDim.
HOST_NAMES = r"""
#include <cuda_runtime.h>
struct LaunchCfg { dim3 blockDim; dim3 gridDim; };
__global__ void scale2d(const float* x, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = x[r * cols + c] * (float)(blockDim.x * blockDim.y);
}
static LaunchCfg config(int rows, int cols) {
    LaunchCfg cfg;
    dim3 blockDim(16, 16);
    cfg.blockDim = blockDim;
    cfg.gridDim = dim3((cols + blockDim.x - 1) / blockDim.x, (rows + blockDim.y - 1) / blockDim.y);
    return cfg;
}
extern "C" int launch(const float* x, float* out, int rows, int cols, cudaStream_t stream) {
    LaunchCfg cfg = config(rows, cols);
    dim3 blockDim = cfg.blockDim;
    dim3 gridDim(cfg.gridDim.x, cfg.gridDim.y);
    int threadIdx = 0, blockIdx = 0;   // unused host counters with built-in names
    (void)threadIdx; (void)blockIdx;
    scale2d<<<gridDim, blockDim, 0, stream>>>(x, out, rows, cols);
    return (int)cudaGetLastError();
}
"""

#: Hacker's case: a host local named blockDim claims 1024 threads; the launch uses 128. The
#: kernel must see the launch's block size, not the host variable.
HOST_DECOY = r"""
#include <cuda_runtime.h>
__device__ unsigned block_size() { return blockDim.x; }
__global__ void dims(unsigned* out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = block_size() * 1000u + gridDim.x;
}
extern "C" int launch(unsigned* out, cudaStream_t stream) {
    dim3 blockDim(1024);
    dim3 gridDim(1);
    dims<<<2, 128, 0, stream>>>(out);
    return (int)cudaGetLastError() + (int)(blockDim.x + gridDim.x) * 0;
}
"""

#: Hacker's case: device code declaring its own blockDim to fake the dimensions.
DEVICE_SHADOW = r"""
#include <cuda_runtime.h>
__global__ void fake(unsigned* out) {
    dim3 blockDim(1024);
    out[threadIdx.x] = blockDim.x;
}
extern "C" int launch(unsigned* out, cudaStream_t stream) {
    fake<<<1, 32, 0, stream>>>(out);
    return (int)cudaGetLastError();
}
"""


def _body(r) -> str:
    return r.source.split("\n", 2)[2]


def test_host_locals_with_builtin_names_are_renamed_device_uses_kept():
    r = rewrite(HOST_NAMES)
    assert r.unsupported == [] and r.launches == 1
    body = _body(r)
    kernel = body[body.index("__global__"):body.index("static LaunchCfg")]
    # Device code still names the built-ins (the runtime's macros).
    assert "blockIdx.x * blockDim.x + threadIdx.x" in kernel
    assert "__sc_h_" not in kernel
    host = body[body.index("static LaunchCfg"):]
    # No host-scope spelling of a built-in is left for the macros to expand.
    for name in ("blockDim", "gridDim", "threadIdx", "blockIdx"):
        assert f" {name}" not in host.replace(f"__sc_h_{name}", "")
        assert f".{name}" not in host.replace(f".__sc_h_{name}", "")
    # The launch configuration uses the renamed host locals.
    assert "::sc::launch((__sc_h_gridDim), (__sc_h_blockDim)," in host
    # Member declarations are renamed too (a member is never the built-in).
    assert "struct LaunchCfg { dim3 __sc_h_blockDim; dim3 __sc_h_gridDim; };" in body
    assert body.count("\n") == HOST_NAMES.count("\n")


def test_host_and_device_functions_are_told_apart():
    src = ("__host__ __device__ unsigned both() { return blockDim.x; }\n"
           "__host__ unsigned host_only() { unsigned blockDim = 4; return blockDim; }\n")
    body = _body(rewrite(src))
    assert "unsigned both() { return blockDim.x; }" in body
    assert "unsigned __sc_h_blockDim = 4; return __sc_h_blockDim;" in body


@pytest.fixture(scope="module")
def be(tmp_path_factory):
    return backend(session_cache(tmp_path_factory))


@needs_cxx
@pytest.mark.slow
def test_host_names_build_and_run(be):
    rows, cols = 37, 50
    spec = spec_of("scale2d", [("x", ["R", "C"], "input"), ("out", ["R", "C"], "output")],
                   [("rows", "R"), ("cols", "C")], {"R": rows, "C": cols})
    x = uniform((rows, cols), seed=5)
    r = be.run(HOST_NAMES, spec, {"x": x, "out": np.zeros((rows, cols), np.float32)})
    assert r.status == "ok", r.detail
    np.testing.assert_allclose(r.outputs["out"], x * 256.0, rtol=1e-6)


@needs_cxx
@pytest.mark.slow
def test_host_local_named_blockdim_does_not_change_the_builtin(be):
    spec = spec_of("dims", [("out", [256], "output", "uint32")])
    r = be.run(HOST_DECOY, spec, {"out": np.zeros(256, np.uint32)})
    assert r.status == "ok", r.detail
    np.testing.assert_array_equal(r.outputs["out"], np.full(256, 128 * 1000 + 2, np.uint32))


@needs_cxx
@pytest.mark.slow
def test_device_code_cannot_redeclare_blockdim(be):
    # Legal CUDA (a local shadows the built-in in its scope), but the emulator keeps the
    # built-ins as macros in device code: the build fails, so nothing faked can pass.
    spec = spec_of("fake", [("out", [32], "output", "uint32")])
    r = be.run(DEVICE_SHADOW, spec, {"out": np.zeros(32, np.uint32)})
    assert r.status == "compile-error", r.detail
