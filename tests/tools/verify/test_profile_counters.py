"""Profile counters of the CPU emulator (issue 26): small kernels counted by hand.

Each test's comment derives the expected figures as Nsight Compute would count them: one
request per warp-level execution of an access, 32-byte sectors per global request, bank
wavefronts per shared request (32 banks x 4 bytes), same-address lanes per atomic request.
The runs go through ``profile.profile_program`` (the profile build, in the jail).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import needs_cxx, session_cache, spec_of

from structcover.config import VerifySettings
from structcover.tools.verify.jailed_cpu import run_many
from structcover.tools.verify.profile import profile_program

pytestmark = [needs_cxx, pytest.mark.slow]


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return VerifySettings(cache_dir=session_cache(tmp_path_factory))


# y[i] = x[i * stride] over n threads in blocks of 128.
STRIDED = r"""
#include <cuda_runtime.h>
__global__ void copy(const float* x, float* y, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i * stride];
}
extern "C" int launch(const float* x, float* y, int n, int stride, cudaStream_t s) {
    copy<<<(n + 127) / 128, 128, 0, s>>>(x, y, n, stride);
    return (int)cudaGetLastError();
}
"""


def _strided(settings, stride: int):
    n = 256
    spec = spec_of("copy", [("x", [max(1, n * stride)], "input"), ("y", [n], "output")],
                   [("n", n), ("stride", stride)])
    return profile_program(STRIDED, spec, settings=settings)


def test_coalesced_copy(settings):
    # 256 threads in 2 blocks of 128 = 8 warps. Each warp loads 32 consecutive floats (128 B,
    # 128-aligned) = 1 request of 4 sectors, and stores likewise: 8 requests and
    # 256 * 4 / 32 = 32 sectors per array. The `if (i < n)` is 8 warp branches, none divergent.
    t = _strided(settings, 1).total
    assert (t["global_load_requests"], t["global_load_sectors"]) == (8, 32)
    assert (t["global_store_requests"], t["global_store_sectors"]) == (8, 32)
    assert (t["global_load_bytes"], t["global_store_bytes"]) == (1024, 1024)
    # Every sector is loaded once: each misses L1.
    assert t["global_load_l1_miss_sectors"] == 32
    assert (t["branch_requests"], t["divergent_branches"]) == (8, 0)
    assert (t["blocks"], t["threads"], t["warps"], t["launches"]) == (2, 256, 8, 1)


def test_strided_and_broadcast_reads(settings):
    # Stride 2: a warp's 32 floats span 32 * 8 = 256 B = 8 sectors per request (8 requests:
    # 64 sectors). Stride 32: every lane in its own 128-B line = 32 sectors per request (256).
    # Stride 0 (all lanes read x[0]): 1 sector per request (8). Stores stay 4 per request.
    # L1 misses: strides 2 and 32 never touch a sector twice, so every sector misses; stride 0
    # misses once per block (its first warp), the block's other 3 warps hit: 2.
    for stride, per_request, misses in ((2, 8, 64), (32, 32, 256), (0, 1, 2)):
        r = _strided(settings, stride)
        t = r.total
        assert t["global_load_requests"] == 8, stride
        assert t["global_load_sectors"] == 8 * per_request, stride
        assert t["global_load_l1_miss_sectors"] == misses, stride
        assert t["global_store_sectors"] == 32, stride
        assert r.output_elements == 256
        assert r.per_output_element["global_load_sectors"] == pytest.approx(8 * per_request / 256)


# One warp: each lane stores s[t * ws], then reads s[t * rs].
SHARED = r"""
#include <cuda_runtime.h>
__global__ void banks(float* y, int ws, int rs) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t * ws] = (float)t;
    __syncthreads();
    y[t] = s[t * rs];
}
extern "C" int launch(float* y, int ws, int rs, cudaStream_t s) {
    banks<<<1, 32, 0, s>>>(y, ws, rs);
    return (int)cudaGetLastError();
}
"""


@pytest.mark.parametrize(("ws", "rs", "store_ways", "load_ways"), [
    # stride 1: word t in bank t, one word per bank: 1 wavefront, no conflict.
    (1, 1, 1, 1),
    # stride 2: words 0, 2, ..., 62: banks 0, 2, ..., 30 each get 2 distinct words: 2-way.
    (2, 2, 2, 2),
    # stride 32: words 0, 32, ..., 992 all in bank 0: 32 distinct words, 32-way.
    (32, 32, 32, 32),
    # broadcast: all lanes read word 0 (one word, delivered once): 1-way.
    (1, 0, 1, 1),
])
def test_shared_bank_conflicts(settings, ws, rs, store_ways, load_ways):
    spec = spec_of("banks", [("y", [32], "output")], [("ws", ws), ("rs", rs)])
    t = profile_program(SHARED, spec, settings=settings).total
    assert (t["shared_store_requests"], t["shared_store_wavefronts"]) == (1, store_ways)
    assert t["shared_store_bank_conflicts"] == store_ways - 1
    assert (t["shared_load_requests"], t["shared_load_wavefronts"]) == (1, load_ways)
    assert t["shared_load_bank_conflicts"] == load_ways - 1
    assert t["barriers"] == 1
    assert t["shared_static_bytes"] == 4096


ATOMIC = r"""
#include <cuda_runtime.h>
__global__ void count(int* c) { atomicAdd(&c[0], 1); }
extern "C" int launch(int* c, cudaStream_t s) {
    count<<<1, 64, 0, s>>>(c);
    return (int)cudaGetLastError();
}
"""


def test_atomic_contention(settings):
    # 64 threads = 2 warps, each one atomic request whose 32 lanes all hit c[0]: contention 32
    # per request (max 32), 64 lanes serialized; the counter ends at 64.
    spec = spec_of("count", [("c", [1], "inout", "int32")])
    r = profile_program(ATOMIC, spec, settings=settings, inputs={"c": np.zeros(1, np.int32)})
    t = r.total
    assert (t["global_atomic_requests"], t["global_atomic_lanes"]) == (2, 64)
    assert (t["global_atomic_max_contention"], t["global_atomic_serialized"]) == (32, 64)
    assert t["global_load_requests"] == t["global_store_requests"] == 0
    site = next(s for s in r.launches[0]["sites"] if s["kind"] == "atomic")
    assert (site["line"], site["worst"]) == (3, 32)


BARRIERS = r"""
#include <cuda_runtime.h>
__global__ void loop(float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = 0.0f;
    for (int k = 0; k < 5; ++k) {
        s[t] = s[t] + 1.0f;
        __syncthreads();
    }
    y[blockIdx.x * 64 + t] = s[63 - t];
}
extern "C" int launch(float* y, cudaStream_t s) {
    loop<<<3, 64, 0, s>>>(y);
    return (int)cudaGetLastError();
}
"""


def test_barriers_in_a_loop(settings):
    # 5 __syncthreads per block, 3 blocks: 15. Each of the 2 warps of a block evaluates the loop
    # condition 6 times (k = 0..5), uniformly: 3 * 2 * 6 = 36 branches, none divergent.
    spec = spec_of("loop", [("y", [192], "output")])
    t = profile_program(BARRIERS, spec, settings=settings).total
    assert t["barriers"] == 15
    assert (t["branch_requests"], t["divergent_branches"]) == (36, 0)
    # Shared: per warp 1 + 5 stores and 5 + 1 loads, 6 warps: 36 each, all conflict-free.
    assert (t["shared_store_requests"], t["shared_load_requests"]) == (36, 36)
    assert t["shared_load_bank_conflicts"] == t["shared_store_bank_conflicts"] == 0


DIVERGE = r"""
#include <cuda_runtime.h>
__global__ void branchy(float* y, float* z) {
    int t = threadIdx.x;
    if (t % 2) y[t] = 1.0f; else y[t] = 2.0f;
    if (t < 32) z[t] = 3.0f; else z[t] = 4.0f;
}
extern "C" int launch(float* y, float* z, cudaStream_t s) {
    branchy<<<1, 64, 0, s>>>(y, z);
    return (int)cudaGetLastError();
}
"""


def test_divergent_branch(settings):
    # 2 warps x 2 branch sites = 4 warp branches of 32 lanes; `t % 2` splits both warps (2
    # divergent), `t < 32` is uniform within each warp. Stores: y is written by 2 requests per
    # warp (odd lanes, even lanes: 16 lanes over 128 B = 4 sectors each), z by 1 per warp
    # (4 sectors): 6 requests, 24 sectors.
    spec = spec_of("branchy", [("y", [64], "output"), ("z", [64], "output")])
    r = profile_program(DIVERGE, spec, settings=settings)
    t = r.total
    assert (t["branch_requests"], t["branch_lanes"], t["divergent_branches"]) == (4, 128, 2)
    assert (t["global_store_requests"], t["global_store_sectors"]) == (6, 24)
    by_line = {s["line"]: s["units"] for s in r.launches[0]["sites"] if s["kind"] == "branch"}
    assert by_line == {5: 2, 6: 0}  # line 1 of the source is empty


SGEMM = r"""
#include <cuda_runtime.h>
#define T 16
__global__ void sgemm(const float* A, const float* B, float* C, int n) {
    __shared__ float As[T][T], Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int t = 0; t < n / T; ++t) {
        As[ty][tx] = A[row * n + t * T + tx];
        Bs[ty][tx] = B[(t * T + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
extern "C" int launch(const float* A, const float* B, float* C, int n, cudaStream_t s) {
    sgemm<<<dim3(n / T, n / T), dim3(T, T), 0, s>>>(A, B, C, n);
    return (int)cudaGetLastError();
}
"""


def test_tiled_sgemm_counts_and_results_unchanged(settings):
    # N = 64, 16x16 tiles: 16 blocks of 8 warps, 4 tile steps. A warp covers 2 rows x 16
    # columns, so each A or B tile load is 2 x 64 B = 4 sectors: 16 * 8 * 4 * 2 = 1024 requests,
    # 4096 sectors; C: 128 requests, 512 sectors. Shared: As[ty][k] is 2 words in 2 banks and
    # Bs[k][tx] 16 words in 16 banks (each read by both rows: broadcast), so no conflicts;
    # 16 * 8 * 4 * 32 = 16384 load requests, 16 * 8 * 4 * 2 = 1024 store requests. Barriers:
    # 2 per step = 8 per block, 128 in all.
    n = 64
    spec = spec_of("sgemm", [("A", [n, n], "input"), ("B", [n, n], "input"),
                             ("C", [n, n], "output")], [("n", n)])
    rng = np.random.default_rng(0)
    inputs = {"A": rng.uniform(-1, 1, (n, n)).astype(np.float32),
              "B": rng.uniform(-1, 1, (n, n)).astype(np.float32),
              "C": np.zeros((n, n), np.float32)}
    r = profile_program(SGEMM, spec, settings=settings, inputs=inputs, flops=2.0 * n ** 3)
    t = r.total
    assert (t["global_load_requests"], t["global_load_sectors"]) == (1024, 4096)
    assert (t["global_store_requests"], t["global_store_sectors"]) == (128, 512)
    assert (t["shared_load_requests"], t["shared_store_requests"]) == (16384, 1024)
    assert t["shared_load_bank_conflicts"] == t["shared_store_bank_conflicts"] == 0
    assert t["barriers"] == 128 and t["divergent_branches"] == 0
    assert r.per_flop["global_load_sectors"] == pytest.approx(4096 / (2.0 * n ** 3))
    assert list(r.kernels) == ["sgemm"]
    # Counting never changes results: the plain build's forward run gives the same bits.
    from structcover.tools.verify.jailed_cpu import run_profiled

    prof, _, _ = run_profiled(SGEMM, spec, inputs, settings=settings)
    plain = run_many(SGEMM, spec, [inputs], settings=settings, schedules=("forward",))[0]
    assert prof.status == plain.status == "ok"
    np.testing.assert_array_equal(prof.outputs["C"], plain.outputs["C"])
    np.testing.assert_allclose(plain.outputs["C"], inputs["A"] @ inputs["B"], rtol=1e-4, atol=1e-4)


def test_verify_cli_profile_json(tmp_path):
    # The corpus saxpy (N = 50000 floats, y = a * x + y in place) under `verify --profile
    # --json`: ceil(50000 / 32) = 1563 warps each load x and y and store y once; each array is
    # 50000 * 4 / 32 = 6250 sectors, so loads 2 * 6250 = 12500 sectors, stores 6250.
    import json

    from typer.testing import CliRunner

    from structcover.cli import app

    root = Path(__file__).resolve().parents[3]
    cand = root / "src" / "structcover" / "corpus" / "saxpy" / "reference.cu"
    out = CliRunner().invoke(app, ["verify", str(cand), "--task", "saxpy", "--backend", "cpu",
                                   "--trials", "1", "--profile", "--json"])
    assert out.exit_code == 0, out.output
    verdict = json.loads(out.output[out.output.index("{"):])
    total = verdict["profile"]["total"]
    assert verdict["equivalent"] is True
    assert (total["global_load_requests"], total["global_load_sectors"]) == (2 * 1563, 12500)
    assert (total["global_store_requests"], total["global_store_sectors"]) == (1563, 6250)
    assert verdict["profile"]["output_elements"] == 50000


# Row per thread: thread t sums row t of a 64 x 16 float matrix (one block of 64 threads).
ROWS = r"""
#include <cuda_runtime.h>
__global__ void rowsum(const float* a, float* y) {
    int t = threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < 16; ++k) s += a[t * 16 + k];
    y[t] = s;
}
extern "C" int launch(const float* a, float* y, cudaStream_t s) {
    rowsum<<<1, 64, 0, s>>>(a, y);
    return (int)cudaGetLastError();
}
"""


def test_rows_walked_by_lanes_hit_l1_after_their_first_sector(settings):
    # 2 warps x 16 iterations = 32 load requests. At iteration k a warp's 32 lanes read 32
    # rows 64 B apart: 32 sectors per request, 1024 in all (uncoalesced). But row t is 2
    # sectors (64 B: k = 0..7 in the first, 8..15 in the second), so only each row's first
    # touch of a sector misses L1: 64 rows x 2 = 128 misses, the other 896 sector reads hit.
    spec = spec_of("rowsum", [("a", [64 * 16], "input"), ("y", [64], "output")], [])
    t = profile_program(ROWS, spec, settings=settings).total
    assert (t["global_load_requests"], t["global_load_sectors"]) == (32, 1024)
    assert t["global_load_l1_miss_sectors"] == 128
