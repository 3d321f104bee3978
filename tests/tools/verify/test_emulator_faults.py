"""Planted faults become verdicts on the CPU emulator, never hangs or silent right answers."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, prebuild, session_cache, spec_of, uniform  # noqa: E402

pytestmark = [needs_cxx, pytest.mark.slow]


@pytest.fixture(scope="module")
def be(tmp_path_factory):
    return backend(session_cache(tmp_path_factory))


VEC = spec_of("vec", [("x", ["N"], "input"), ("y", ["N"], "output")], [("n", "N")], {"N": 1024})


def vec_inputs():
    return {"x": uniform(1024), "y": np.zeros(1024, np.float32)}


def program(body: str, grid: str = "(n + 255) / 256", block: str = "256") -> str:
    return f"""
#include <cuda_runtime.h>
#include <cooperative_groups.h>
__global__ void k(const float* x, float* y, int n) {{
{body}
}}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {{
    k<<<{grid}, {block}, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}}
"""


def test_divergent_syncthreads_is_a_fast_deadlock(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 16) {
        __syncthreads();
        y[i] = x[i];
    } else {
        y[i] = -x[i];
        __syncthreads();
    }""")
    prebuild(src, be)
    t0 = time.monotonic()
    r = be.run(src, VEC, vec_inputs(), timeout_s=30)
    assert r.status == "deadlock", r.detail
    assert "divergent __syncthreads" in r.detail and "line" in r.detail
    assert time.monotonic() - t0 < 5  # reported, not waited out


def test_barrier_waiting_on_a_warp_collective_is_a_deadlock(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (threadIdx.x % 32 < 16) v += __shfl_xor_sync(0xffffffffu, v, 1);
    else __syncthreads();
    y[i] = v;""")
    r = be.run(src, VEC, vec_inputs(), timeout_s=30)
    assert r.status == "deadlock", r.detail
    assert "no thread can run" in r.detail and "__shfl_xor_sync" in r.detail


def test_wrong_shuffle_mask_is_reported(be):
    # Lanes 16..31 are named in the mask but exit without joining the shuffle.
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0xffffffffu, v, 8);
    y[i] = v;""")
    r = be.run(src, VEC, vec_inputs(), timeout_s=30)
    assert r.status == "deadlock", r.detail
    assert "exited without joining" in r.detail or "names exited lanes" in r.detail


def test_mask_that_excludes_the_calling_lane_is_reported(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = __shfl_down_sync(0x0000ffffu, x[i], 1);""")
    r = be.run(src, VEC, vec_inputs(), timeout_s=30)
    assert r.status == "crash", r.detail
    assert "not in its mask" in r.detail


def test_shuffle_reading_a_lane_outside_the_mask_gets_poison_not_a_right_answer(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0x0000ffffu, v, 8);
    y[i] = v;""")
    x = uniform(1024)
    r = be.run(src, VEC, {"x": x, "y": np.zeros(1024, np.float32)}, timeout_s=30)
    assert r.status == "ok", r.detail
    lane = np.arange(1024) % 32
    assert np.isnan(r.outputs["y"][(lane >= 8) & (lane < 16)]).all()
    np.testing.assert_array_equal(r.outputs["y"][lane >= 16], x[lane >= 16])
    np.testing.assert_allclose(r.outputs["y"][lane < 8], x[lane < 8] + x[np.arange(1024)[lane < 8] + 8], rtol=1e-6)


TILED_GEMM = r"""
#include <cuda_runtime.h>
#define TILE 16
__global__ void gemm(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
        BARRIER1
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        BARRIER2
    }
    C[row * n + col] = acc;
}
extern "C" int launch(const float* A, const float* B, float* C, int n, cudaStream_t stream) {
    gemm<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE), 0, stream>>>(A, B, C, n);
    return (int)cudaGetLastError();
}
"""
GEMM_SPEC = spec_of("gemm", [("A", ["N", "N"], "input"), ("B", ["N", "N"], "input"), ("C", ["N", "N"], "output")],
                    [("n", "N")], {"N": 64})


def gemm_inputs():
    return {"A": uniform((64, 64), 1), "B": uniform((64, 64), 2), "C": np.zeros((64, 64), np.float32)}


def test_correct_tiled_gemm_passes_every_schedule(be):
    src = TILED_GEMM.replace("BARRIER1", "__syncthreads();").replace("BARRIER2", "__syncthreads();")
    ins = gemm_inputs()
    r = be.run(src, GEMM_SPEC, ins)
    assert r.status == "ok", r.detail
    np.testing.assert_allclose(r.outputs["C"], ins["A"].astype(np.float64) @ ins["B"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("missing", ["BARRIER1", "BARRIER2"])
def test_missing_syncthreads_in_tiled_gemm_is_a_race(be, missing):
    src = TILED_GEMM.replace(missing, "").replace("BARRIER1", "__syncthreads();").replace(
        "BARRIER2", "__syncthreads();")
    r = be.run(src, GEMM_SPEC, gemm_inputs())
    assert r.status == "race", r.detail
    assert "output `C` differs between schedules" in r.detail


def test_grid_sync_is_unsupported_before_compiling(be):
    src = program("""
    namespace cg = cooperative_groups;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
    cg::this_grid().sync();""")
    r = be.run(src, VEC, vec_inputs())
    assert r.status == "unsupported"
    assert r.detail.startswith("unsupported:") and "grid" in r.detail


def test_inline_ptx_is_unsupported(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane; asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    y[i] = x[i] + lane;""")
    r = be.run(src, VEC, vec_inputs())
    assert r.status == "unsupported" and "asm" in r.detail


def test_out_of_bounds_write_names_the_buffer(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i + 1] = x[i];""")
    r = be.run(src, VEC, vec_inputs())
    assert r.status == "crash", r.detail
    assert "past the end of buffer `y`" in r.detail


def test_wild_pointer_write_is_a_crash_not_a_dead_process(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 5) { float* p = (float*)16; *p = x[i]; }
    y[i] = x[i];""")
    r = be.run(src, VEC, vec_inputs())
    assert r.status == "crash", r.detail
    assert "invalid memory access" in r.detail and "block (0,0,0) thread (5,0,0)" in r.detail


def test_device_assert_is_a_crash(be):
    src = program("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(x[i] < 0.99f);
    y[i] = x[i];""")
    x = uniform(1024)
    x[77] = 1.0
    r = be.run(src, VEC, {"x": x, "y": np.zeros(1024, np.float32)})
    assert r.status == "crash" and "assert" in r.detail


@pytest.mark.parametrize("body", [
    # spins without ever reaching a barrier: stopped by the watchdog's signal
    "int i = blockIdx.x * blockDim.x + threadIdx.x; volatile float v = x[i];\n"
    "    while (v < 2.0f) { v = v * 0.5f; }\n    y[i] = v;",
    # loops forever through barriers: stopped by the scheduler's deadline check
    "int i = blockIdx.x * blockDim.x + threadIdx.x; float v = x[i];\n"
    "    while (v < 2.0f) { v = v * 0.5f; __syncthreads(); }\n    y[i] = v;",
])
def test_infinite_loop_is_a_bounded_timeout(be, body):
    src = program(body)
    prebuild(src, be)
    t0 = time.monotonic()
    r = be.run(src, VEC, vec_inputs(), timeout_s=3.0)
    elapsed = time.monotonic() - t0
    assert r.status == "timeout", r.detail
    assert "kernel ran past the time limit" in r.detail
    assert elapsed < 10


def test_compile_error_points_at_the_original_line(be):
    src = "#include <cuda_runtime.h>\n\n__global__ void k(float* y) {\n    y[0] = undefined_name;\n}\n" \
          'extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {\n' \
          "    k<<<1, 1, 0, s>>>(y);\n    return 0;\n}\n"
    r = be.run(src, VEC, vec_inputs())
    assert r.status == "compile-error"
    assert "vec.cu:4" in r.detail.splitlines()[0] and "undefined_name" in r.detail


def test_bad_launch_configuration_is_a_launch_error(be):
    r = be.run(program("y[0] = x[0];", grid="1", block="2048"), VEC, vec_inputs())
    assert r.status == "launch-error" and "9" in r.detail


def test_missing_input_is_a_bad_call(be):
    with pytest.raises(ValueError, match="missing array for tensor argument `y`"):
        be.run(program("y[0] = x[0];"), VEC, {"x": uniform(1024)})


def test_reading_another_blocks_output_in_the_same_launch_is_a_race(be):
    # Block b reads what block b+1 (mod 4) writes in the same launch: only block order decides.
    spec = spec_of("xblock", [("x", [1024], "input"), ("y", [1024], "output"), ("z", [1024], "output")])
    src = """#include <cuda_runtime.h>
__global__ void k(const float* x, float* y, float* z) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
    z[i] = y[(i + 256) % 1024];
}
extern "C" int launch(const float* x, float* y, float* z, cudaStream_t s) {
    k<<<4, 256, 0, s>>>(x, y, z);
    return (int)cudaGetLastError();
}
"""
    r = be.run(src, spec, {"x": uniform(1024), "y": np.zeros(1024, np.float32), "z": np.zeros(1024, np.float32)})
    assert r.status == "race", r.detail
    assert "output `z` differs" in r.detail
