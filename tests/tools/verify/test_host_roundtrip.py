"""Host computation through cudaMemcpy (runtime/sc_hostcopy.cpp): a launcher that reads its
inputs back, computes on the host and uploads the result is a ``crash`` naming it, however the
upload reaches the output (in place, through a scratch buffer and a device-to-device copy or a
copy kernel, with a do-nothing kernel after it, or one that nudges every value by a rounding);
honest programs that copy to and from the host (a reduction finished on the host, a host-made
initial value a kernel overwrites, a result read back to check it) pass."""

from __future__ import annotations

import pytest

from structcover.config import VerifySettings
from structcover.tools.data.corpus import find_task
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence
from structcover.tools.verify.select import CpuBackend

SETTINGS = VerifySettings(timeout_s=30.0, seed=20261206)
_CACHE = ReferenceCache(max_entries=64)
_OK, _WHY = CpuBackend(SETTINGS).available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU emulator unavailable: {_WHY}")

_ADD = """#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
__global__ void copy(const float* s, float* d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = s[i];
}
__global__ void nudge(float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = c[i] * 1.0000001f + 1e-30f;
}
__global__ void nothing(float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 0) c[i] = 0.0f;
}
extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    size_t bytes = (size_t)n * sizeof(float);
    int blocks = (n + 255) / 256;
"""

#: The host reads both inputs back and adds them: h[2n..3n) holds the output.
_HOST_SUM = """    float* h = (float*)malloc(3 * bytes);
    cudaMemcpy(h, a, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(h + n, b, bytes, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) h[2 * n + i] = h[i] + h[n + i];
"""

#: vector_add launchers (the body after _ADD's prologue) that compute on the host.
CHEATS = {
    "upload_in_place": _HOST_SUM + """    cudaMemcpy(c, h + 2 * n, bytes, cudaMemcpyHostToDevice);
    free(h);
    return 0;
""",
    "kernel_after_the_upload": _HOST_SUM + """    cudaMemcpy(c, h + 2 * n, bytes, cudaMemcpyHostToDevice);
    nothing<<<blocks, 256, 0, stream>>>(c, n);
    free(h);
    return (int)cudaGetLastError();
""",
    "kernel_nudges_the_upload": _HOST_SUM + """    cudaMemcpy(c, h + 2 * n, bytes, cudaMemcpyHostToDevice);
    nudge<<<blocks, 256, 0, stream>>>(c, n);
    free(h);
    return (int)cudaGetLastError();
""",
    "scratch_then_device_copy": _HOST_SUM + """    float* scratch;
    cudaMalloc(&scratch, bytes);
    cudaMemcpy(scratch, h + 2 * n, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(c, scratch, bytes, cudaMemcpyDeviceToDevice);
    cudaFree(scratch);
    free(h);
    return 0;
""",
    "scratch_then_copy_kernel": _HOST_SUM + """    float* scratch;
    cudaMalloc(&scratch, bytes);
    cudaMemcpy(scratch, h + 2 * n, bytes, cudaMemcpyHostToDevice);
    copy<<<blocks, 256, 0, stream>>>(scratch, c, n);
    cudaDeviceSynchronize();
    cudaFree(scratch);
    free(h);
    return (int)cudaGetLastError();
""",
    "host_does_the_second_half": """    int half = n / 2;
    if (half > 0) add<<<(half + 255) / 256, 256, 0, stream>>>(a, b, c, half);
    int rest = n - half;
    float* h = (float*)malloc(3 * (size_t)rest * sizeof(float));
    cudaMemcpy(h, a + half, rest * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(h + rest, b + half, rest * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < rest; ++i) h[2 * rest + i] = h[i] + h[rest + i];
    cudaMemcpy(c + half, h + 2 * rest, rest * sizeof(float), cudaMemcpyHostToDevice);
    free(h);
    return (int)cudaGetLastError();
""",
}

#: vector_add launchers that copy to and from the host honestly.
HONEST_ADD = {
    "zeros_uploaded_then_computed": """    float* zeros = (float*)calloc(n, sizeof(float));
    cudaMemcpy(c, zeros, bytes, cudaMemcpyHostToDevice);
    free(zeros);
    add<<<blocks, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
""",
    "whole_result_read_back_to_check": """    add<<<blocks, 256, 0, stream>>>(a, b, c, n);
    float* h = (float*)malloc(bytes);
    cudaMemcpy(h, c, bytes, cudaMemcpyDeviceToHost);
    volatile float checksum = 0.0f;  // a host-side look at the result, as a debug build might
    for (int i = 0; i < n; ++i) checksum = checksum + h[i];
    free(h);
    return (int)cudaGetLastError();
""",
    "inputs_read_back_then_computed_on_device": """    float* h = (float*)malloc(bytes);
    cudaMemcpy(h, a, bytes, cudaMemcpyDeviceToHost);
    float* zeros = (float*)calloc(n, sizeof(float));
    cudaMemcpy(c, zeros, bytes, cudaMemcpyHostToDevice);
    free(zeros);
    free(h);
    add<<<blocks, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
""",
}

#: A reduction whose blocks write partial sums that the host adds up and uploads (honest).
HOST_FINISHED_REDUCTION = """#include <cuda_runtime.h>
#include <stdlib.h>
__global__ void partial(const float* x, float* parts, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) parts[blockIdx.x] = s[0];
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    int blocks = (n + 255) / 256;
    float* parts;
    cudaMalloc(&parts, blocks * sizeof(float));
    partial<<<blocks, 256, 0, stream>>>(x, parts, n);
    float* h = (float*)malloc(blocks * sizeof(float));
    cudaMemcpy(h, parts, blocks * sizeof(float), cudaMemcpyDeviceToHost);
    float total = 0.0f;
    for (int b = 0; b < blocks; ++b) total += h[b];
    cudaMemcpy(out, &total, sizeof(float), cudaMemcpyHostToDevice);
    free(h);
    cudaFree(parts);
    return (int)cudaGetLastError();
}
"""


def _verify(source: str, task: str = "vector_add"):
    spec, family = find_task(task)
    return check_equivalence(source, family.reference.source, spec, backend=CpuBackend(SETTINGS),
                             cache=_CACHE, settings=SETTINGS)


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_host_computation_is_a_crash_however_the_upload_reaches_the_output(name: str) -> None:
    verdict = _verify(_ADD + CHEATS[name] + "}\n")
    assert verdict.equivalent is False
    assert verdict.failure == "crash" and "host code computed the output" in verdict.detail


@pytest.mark.parametrize("name", sorted(HONEST_ADD))
def test_honest_copies_to_and_from_the_host_pass(name: str) -> None:
    verdict = _verify(_ADD + HONEST_ADD[name] + "}\n")
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"


def test_a_reduction_finished_on_the_host_passes() -> None:
    verdict = _verify(HOST_FINISHED_REDUCTION, "reduction")
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"
