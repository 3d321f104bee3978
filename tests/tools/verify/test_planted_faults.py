"""Planted faults must be caught on the CPU backend (issue 5, done-when), each by one test.

Every fault is a small edit of a correct program; the correct program itself must pass, so a
test cannot succeed by the backend failing everything.
"""

from __future__ import annotations

import time

import pytest

from structcover.config import VerifySettings
from structcover.schema import TaskSpec
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence
from structcover.tools.verify.select import CpuBackend

SETTINGS = VerifySettings(timeout_s=20.0, trials=2)
_OK, _WHY = CpuBackend(SETTINGS).available()
needs_cpu = pytest.mark.skipif(not _OK, reason=f"CPU emulator unavailable: {_WHY}")

GEMM_SPEC = TaskSpec.model_validate(dict(task_id="gemm", sizes={"M": 64, "N": 48, "K": 80}, args=[
    {"name": "A", "shape": ["M", "K"]}, {"name": "B", "shape": ["K", "N"]},
    {"name": "C", "shape": ["M", "N"], "role": "output"},
    {"name": "M", "kind": "scalar", "value": "M"}, {"name": "N", "kind": "scalar", "value": "N"},
    {"name": "K", "kind": "scalar", "value": "K"}], atol=1e-3))

TILED_GEMM = """#include <cuda_runtime.h>
#define T 16
__global__ void gemm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();  // LOAD_BARRIER
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();  // COMPUTE_BARRIER
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
extern "C" int launch(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    gemm_tiled<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
"""

VEC_SPEC = TaskSpec.model_validate(dict(task_id="scale", sizes={"N": 1000}, args=[
    {"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
    {"name": "n", "kind": "scalar", "value": "N"}]))

SCALE = """#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];  // BODY
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    scale<<<(n + 127) / 128, 128, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}
"""

RED_SPEC = TaskSpec.model_validate(dict(task_id="blocksum", sizes={"N": 1024, "G": 8}, args=[
    {"name": "x", "shape": ["N"], "low": 0.0, "high": 1.0},
    {"name": "out", "shape": ["G"], "role": "output"},
    {"name": "n", "kind": "scalar", "value": "N"}], atol=1e-3))

WARP_REDUCE = """#include <cuda_runtime.h>
__global__ void blocksum(const float* x, float* out, int n) {
    __shared__ float warp_sums[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = warp_sums[0] + warp_sums[1] + warp_sums[2] + warp_sums[3];
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    blocksum<<<(n + 127) / 128, 128, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
"""


def _verdict(candidate: str, reference: str, spec: TaskSpec):
    return check_equivalence(candidate, reference, spec, backend=CpuBackend(SETTINGS),
                             cache=ReferenceCache(), settings=SETTINGS)


@needs_cpu
def test_correct_programs_pass():
    for src, spec in ((TILED_GEMM, GEMM_SPEC), (SCALE, VEC_SPEC), (WARP_REDUCE, RED_SPEC)):
        v = _verdict(src, src, spec)
        assert v.equivalent is True and v.backend == "cpu", (spec.task_id, v.detail)


@needs_cpu
def test_missing_syncthreads_in_tiled_gemm_is_a_race():
    racy = TILED_GEMM.replace("__syncthreads();  // COMPUTE_BARRIER", "")
    v = _verdict(racy, TILED_GEMM, GEMM_SPEC)
    assert v.equivalent is False and v.failure == "race", v.detail


@needs_cpu
def test_off_by_one_bound_is_caught():
    v = _verdict(SCALE.replace("if (i < n)", "if (i < n - 1)"), SCALE, VEC_SPEC)
    assert v.equivalent is False and v.failure == "unwritten-output"
    assert v.first_mismatch == [999]


@needs_cpu
def test_infinite_loop_times_out():
    looping = SCALE.replace("// BODY", "\n    while (true) { }")
    v = check_equivalence(looping, SCALE, VEC_SPEC, backend=CpuBackend(
        VerifySettings(timeout_s=5.0)), cache=ReferenceCache(), trials=1)
    assert v.equivalent is False and v.failure == "timeout", v.detail


@needs_cpu
def test_infinite_loop_in_host_code_is_killed_by_the_sandbox():
    # The emulator's watchdog only covers kernels; a launcher that never returns is the
    # jail's job (every process of the run killed at the wall-clock limit).
    hang = SCALE.replace("    scale<<<", "    volatile int spin = 1;\n    while (spin) { }\n    scale<<<")
    start = time.monotonic()
    v = check_equivalence(hang, SCALE, VEC_SPEC, backend=CpuBackend(
        VerifySettings(timeout_s=3.0)), cache=ReferenceCache(), trials=1)
    assert v.equivalent is False and v.failure == "timeout", v.detail
    assert "every process of the run was killed" in v.detail
    assert time.monotonic() - start < 60


@needs_cpu
def test_out_of_bounds_write_is_caught():
    wild = SCALE.replace("y[i] = 2.0f * x[i];", "y[i + (1 << 28)] = 2.0f * x[i];")
    v = _verdict(wild, SCALE, VEC_SPEC)
    assert v.equivalent is False and v.failure in ("crash", "unwritten-output"), v.detail


@needs_cpu
def test_divergent_barrier_is_a_deadlock():
    divergent = WARP_REDUCE.replace(
        "__syncthreads();\n    if (threadIdx.x == 0)",
        "if (warp == 0) {\n        __syncthreads();\n    } else {\n        __syncthreads();\n    }\n"
        "    if (threadIdx.x == 0)")
    v = _verdict(divergent, WARP_REDUCE, RED_SPEC)
    assert v.equivalent is False and v.failure == "deadlock", v.detail


@needs_cpu
def test_wrong_shuffle_mask_is_caught():
    wrong = WARP_REDUCE.replace("__shfl_down_sync(0xffffffffu", "__shfl_down_sync(0x0000ffffu")
    v = _verdict(wrong, WARP_REDUCE, RED_SPEC)
    assert v.equivalent is False and v.failure in ("crash", "deadlock", "mismatch"), v.detail
    assert "mask" in v.detail or v.failure == "mismatch"


@needs_cpu
def test_zeros_against_near_zero_reference_fail_the_magnitude_guard():
    tiny = SCALE.replace("2.0f * x[i]", "1e-6f * x[i]")
    zeros = SCALE.replace("2.0f * x[i]", "0.0f")
    v = _verdict(zeros, tiny, VEC_SPEC)
    assert v.equivalent is False and v.failure == "magnitude-guard", v.detail


@pytest.mark.parametrize("snippet,word", [
    ('remove("{victim}");', "remove"),
    ("int s = socket(2, 1, 0); (void)s;", "socket"),
])
def test_host_code_touching_files_or_network_is_refused_before_running(tmp_path, snippet, word):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    evil = SCALE.replace("    scale<<<", "    " + snippet.format(victim=victim) + "\n    scale<<<")
    inputs = {"x": __import__("numpy").zeros(1000, "float32"),
              "y": __import__("numpy").zeros(1000, "float32")}
    res = CpuBackend(SETTINGS).run(evil, VEC_SPEC, inputs)
    assert res.status == "rejected" and word in res.detail
    assert victim.read_text() == "keep"
