"""The CPU emulator runs each class of CUDA construct correctly (checked against numpy)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of, uniform

pytestmark = [needs_cxx, pytest.mark.slow]


@pytest.fixture(scope="module")
def be(tmp_path_factory):
    return backend(session_cache(tmp_path_factory))


BLOCK_SUM = r"""
#include <cuda_runtime.h>
template <int BLOCK>
__global__ void block_sum(const float* __restrict__ x, float* out, float* total, int n) {
    __shared__ float s[BLOCK];
    int t = threadIdx.x, i = blockIdx.x * BLOCK + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int o = BLOCK / 2; o > 0; o >>= 1) {
        if (t < o) s[t] += s[t + o];
        __syncthreads();
    }
    if (t == 0) { out[blockIdx.x] = s[0]; atomicAdd(total, s[0]); }
}
extern "C" int launch(const float* x, float* out, float* total, int n, cudaStream_t stream) {
    cudaMemsetAsync(total, 0, sizeof(float), stream);
    block_sum<256><<<(n + 255) / 256, 256, 0, stream>>>(x, out, total, n);
    return (int)cudaGetLastError();
}
"""


def test_shared_memory_tree_reduction_with_barriers(be):
    n = 1000
    spec = spec_of("block_sum", [("x", ["N"], "input"), ("out", [4], "output"), ("total", [1], "output")],
                   [("n", "N")], {"N": n})
    x = uniform(n)
    r = be.run(BLOCK_SUM, spec, {"x": x, "out": np.zeros(4, np.float32), "total": np.zeros(1, np.float32)})
    assert r.status == "ok", r.detail
    want = np.array([x[k * 256:(k + 1) * 256].sum(dtype=np.float64) for k in range(4)])
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r.outputs["total"][0], x.sum(dtype=np.float64), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(r.inputs_after["x"], x)


SHUFFLES = r"""
#include <cuda_runtime.h>
__global__ void shuffles(const int* x, int* down, int* up, int* xr, int* idx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    down[i] = __shfl_down_sync(0xffffffff, v, 1, 8);
    up[i] = __shfl_up_sync(0xffffffff, v, 2, 8);
    xr[i] = __shfl_xor_sync(0xffffffff, v, 4, 16);
    idx[i] = __shfl_sync(0xffffffff, v, 3, 8);
}
extern "C" int launch(const int* x, int* down, int* up, int* xr, int* idx, cudaStream_t stream) {
    shuffles<<<2, 64, 0, stream>>>(x, down, up, xr, idx);
    return (int)cudaGetLastError();
}
"""


def test_shuffles_with_sub_warp_widths(be):
    spec = spec_of("shfl", [("x", [128], "input", "int32")] +
                   [(n, [128], "output", "int32") for n in ("down", "up", "xr", "idx")])
    x = np.arange(128, dtype=np.int32) * 7 + 3
    zeros = {n: np.zeros(128, np.int32) for n in ("down", "up", "xr", "idx")}
    r = be.run(SHUFFLES, spec, {"x": x, **zeros})
    assert r.status == "ok", r.detail
    lane = np.arange(128) % 32
    base = np.arange(128) - lane
    seg8 = lane - lane % 8
    down = np.where(lane % 8 < 7, x[np.minimum(np.arange(128) + 1, 127)], x)
    np.testing.assert_array_equal(r.outputs["down"], down)
    up = np.where(lane % 8 >= 2, x[np.maximum(np.arange(128) - 2, 0)], x)
    np.testing.assert_array_equal(r.outputs["up"], up)
    np.testing.assert_array_equal(r.outputs["xr"], x[base + (lane ^ 4)])
    np.testing.assert_array_equal(r.outputs["idx"], x[base + seg8 + 3])


VOTES = r"""
#include <cuda_runtime.h>
__global__ void votes(const float* x, int* count, int* any, int* all, unsigned* mask) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned active = __activemask();
    unsigned b = __ballot_sync(active, x[i] > 0.0f);
    count[i] = __popc(b);
    any[i] = __any_sync(active, x[i] > 0.9f);
    all[i] = __all_sync(active, x[i] > -2.0f);
    mask[i] = active;
}
extern "C" int launch(const float* x, int* count, int* any, int* all, unsigned* mask, cudaStream_t stream) {
    votes<<<2, 48, 0, stream>>>(x, count, any, all, mask);   // warps of 32 and 16 lanes
    return (int)cudaGetLastError();
}
"""


def test_ballot_any_all_on_partial_final_warp(be):
    spec = spec_of("votes", [("x", [96], "input"), ("count", [96], "output", "int32"),
                             ("any", [96], "output", "int32"), ("all", [96], "output", "int32"),
                             ("mask", [96], "output", "uint32")])
    x = uniform(96, seed=3)
    outs = {n: np.zeros(96, np.int32) for n in ("count", "any", "all")}
    r = be.run(VOTES, spec, {"x": x, **outs, "mask": np.zeros(96, np.uint32)})
    assert r.status == "ok", r.detail
    for blk in range(2):
        for lo, hi in ((0, 32), (32, 48)):
            seg = slice(blk * 48 + lo, blk * 48 + hi)
            assert (r.outputs["count"][seg] == (x[seg] > 0).sum()).all()
            assert (r.outputs["any"][seg] == int((x[seg] > 0.9).any())).all()
            assert (r.outputs["all"][seg] == 1).all()
            assert (r.outputs["mask"][seg] == (0xFFFFFFFF if hi - lo == 32 else 0xFFFF)).all()


WARP_REDUCE = r"""
#include <cuda_runtime.h>
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
__global__ void reduce(const float* x, float* out, int n) {
    extern __shared__ float partial[];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += __ldg(&x[i]);
    v = warp_sum(v);
    int lane = threadIdx.x % warpSize, w = threadIdx.x / warpSize;
    if (lane == 0) partial[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < blockDim.x / warpSize ? partial[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    reduce<<<16, 256, 8 * sizeof(float), stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
"""


def test_warp_shuffle_reduction_with_dynamic_shared(be):
    n = 50_000
    spec = spec_of("wred", [("x", ["N"], "input"), ("out", [1], "output")], [("n", "N")], {"N": n})
    x = uniform(n, seed=1)
    r = be.run(WARP_REDUCE, spec, {"x": x, "out": np.zeros(1, np.float32)})
    assert r.status == "ok", r.detail
    np.testing.assert_allclose(r.outputs["out"][0], x.sum(dtype=np.float64), rtol=1e-4, atol=1e-3)


INDICES_3D = r"""
#include <cuda_runtime.h>
struct Params { int nx, ny; };
__device__ int flat(int x, int y, int z, Params p) { return (z * p.ny + y) * p.nx + x; }
__global__ void ids(int* out, Params p) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    out[flat(x, y, z, p)] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z
                            + 1000 * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
}
extern "C" int launch(int* out, cudaStream_t stream) {
    Params p{8, 6};
    ids<<<dim3(2, 3, 2), dim3(4, 2, 3), 0, stream>>>(out, p);
    return (int)cudaGetLastError();
}
"""


def test_three_dimensional_indices_structs_and_device_functions(be):
    spec = spec_of("ids", [("out", [6, 6, 8], "output", "int32")])
    r = be.run(INDICES_3D, spec, {"out": np.full((6, 6, 8), -1, np.int32)})
    assert r.status == "ok", r.detail
    z, y, x = np.meshgrid(np.arange(6), np.arange(6), np.arange(8), indexing="ij")
    tx, ty, tz = x % 4, y % 2, z % 3
    bx, by, bz = x // 4, y // 2, z // 3
    want = tx + 10 * ty + 100 * tz + 1000 * (bx + 2 * (by + 3 * bz))
    np.testing.assert_array_equal(r.outputs["out"], want)


VECTOR_MATH = r"""
#include <cuda_runtime.h>
#include <math.h>
__global__ void vmath(const float* x, float* y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 v = reinterpret_cast<const float4*>(x)[i];
    float4 r = make_float4(__expf(v.x), sqrtf(fabsf(v.y)), fmaxf(v.z, 0.0f) + rsqrtf(2.0f), tanhf(v.w));
    reinterpret_cast<float4*>(y)[i] = r;
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    vmath<<<(n / 4 + 127) / 128, 128, 0, stream>>>(x, y, n / 4);
    return (int)cudaGetLastError();
}
"""


def test_float4_and_math_intrinsics_on_serial_path(be):
    spec = spec_of("vmath", [("x", ["N"], "input"), ("y", ["N"], "output")], [("n", "N")], {"N": 4096})
    x = uniform(4096, seed=2)
    r = be.run(VECTOR_MATH, spec, {"x": x, "y": np.zeros(4096, np.float32)})
    assert r.status == "ok", r.detail
    v = x.reshape(-1, 4).astype(np.float64)
    want = np.stack([np.exp(v[:, 0]), np.sqrt(np.abs(v[:, 1])), np.maximum(v[:, 2], 0) + 2 ** -0.5,
                     np.tanh(v[:, 3])], axis=1).reshape(-1)
    np.testing.assert_allclose(r.outputs["y"], want, rtol=1e-5, atol=1e-6)


ATOMICS = r"""
#include <cuda_runtime.h>
__global__ void atomics(const int* v, int* hist, int* mm, unsigned* bits, unsigned* inc, double* dsum,
                        float* fmax, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = v[i];
    atomicAdd(&hist[x & 7], 1);
    atomicSub(&hist[8], 1);
    atomicMax(&mm[0], x);
    atomicMin(&mm[1], x);
    atomicOr(&bits[0], 1u << (x & 31));
    atomicAnd(&bits[1], ~(1u << (x & 15)));
    atomicXor(&bits[2], (unsigned)x);
    atomicInc(&inc[0], 1000000u);
    atomicAdd(&dsum[0], (double)x * 0.5);
    float f = (float)x, old = *fmax;
    while (old < f) {
        int prev = atomicCAS((int*)fmax, __float_as_int(old), __float_as_int(f));
        if (prev == __float_as_int(old)) break;
        old = __int_as_float(prev);
    }
    if (i == 0) atomicExch(&mm[2], 42);
}
extern "C" int launch(const int* v, int* hist, int* mm, unsigned* bits, unsigned* inc, double* dsum,
                      float* fmax, int n, cudaStream_t stream) {
    atomics<<<(n + 127) / 128, 128, 0, stream>>>(v, hist, mm, bits, inc, dsum, fmax, n);
    return (int)cudaGetLastError();
}
"""


def test_atomics_are_atomic_across_worker_threads(be):
    n = 20_000
    spec = spec_of("atomics", [("v", ["N"], "input", "int32"), ("hist", [9], "inout", "int32"),
                               ("mm", [3], "inout", "int32"), ("bits", [3], "inout", "uint32"),
                               ("inc", [1], "inout", "uint32"), ("dsum", [1], "inout", "float64"),
                               ("fmax", [1], "inout")], [("n", "N")], {"N": n})
    v = np.random.default_rng(5).integers(0, 5000, n).astype(np.int32)
    ins = {"v": v, "hist": np.zeros(9, np.int32), "mm": np.array([-1, 1 << 30, 0], np.int32),
           "bits": np.array([0, 0xFFFFFFFF, 0], np.uint32), "inc": np.zeros(1, np.uint32),
           "dsum": np.zeros(1, np.float64), "fmax": np.array([-1.0], np.float32)}
    r = be.run(ATOMICS, spec, ins)
    assert r.status == "ok", r.detail
    o = r.outputs
    np.testing.assert_array_equal(o["hist"][:8], np.bincount(v & 7, minlength=8))
    assert o["hist"][8] == -n
    assert list(o["mm"]) == [v.max(), v.min(), 42]
    assert o["bits"][0] == np.bitwise_or.reduce(np.uint32(1) << (v & 31).astype(np.uint32))
    assert o["bits"][1] == 0xFFFFFFFF & ~np.bitwise_or.reduce(np.uint32(1) << (v & 15).astype(np.uint32))
    assert o["bits"][2] == np.bitwise_xor.reduce(v.astype(np.uint32))
    assert o["inc"][0] == n
    assert o["dsum"][0] == pytest.approx(v.sum() * 0.5)
    assert o["fmax"][0] == v.max()


COOP = r"""
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void tiles(const float* x, float* sums, int* ranks, unsigned* ballots) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int o = tile.size() / 2; o > 0; o /= 2) v += tile.shfl_down(v, o);
    tile.sync();
    block.sync();
    if (tile.thread_rank() == 0) sums[i / 16] = v;
    ranks[i] = (int)(tile.thread_rank() + 100 * tile.meta_group_rank() + 10000 * block.thread_rank());
    ballots[i] = tile.ballot(x[i] > 0.0f) | (tile.any(x[i] > 0.5f) ? 0x10000u : 0u);
}
extern "C" int launch(const float* x, float* sums, int* ranks, unsigned* ballots, cudaStream_t stream) {
    tiles<<<2, 64, 0, stream>>>(x, sums, ranks, ballots);
    return (int)cudaGetLastError();
}
"""


def test_cooperative_groups_tiles(be):
    spec = spec_of("coop", [("x", [128], "input"), ("sums", [8], "output"), ("ranks", [128], "output", "int32"),
                            ("ballots", [128], "output", "uint32")])
    x = uniform(128, seed=7)
    r = be.run(COOP, spec, {"x": x, "sums": np.zeros(8, np.float32), "ranks": np.zeros(128, np.int32),
                            "ballots": np.zeros(128, np.uint32)})
    assert r.status == "ok", r.detail
    np.testing.assert_allclose(r.outputs["sums"], x.reshape(8, 16).sum(1), rtol=1e-5, atol=1e-5)
    t = np.arange(128) % 64
    np.testing.assert_array_equal(r.outputs["ranks"], t % 16 + 100 * (t // 16) + 10000 * t)
    for k in range(8):
        seg = x[16 * k:16 * (k + 1)]
        want = int(sum(1 << j for j in range(16) if seg[j] > 0)) | (0x10000 if (seg > 0.5).any() else 0)
        assert (r.outputs["ballots"][16 * k:16 * (k + 1)] == want).all()


BARRIER_PREDICATES = r"""
#include <cuda_runtime.h>
__global__ void preds(const float* x, int* out) {
    float v = x[threadIdx.x];
    int c = __syncthreads_count(v > 0.0f);
    int a = __syncthreads_and(v > -0.5f);
    int o = __syncthreads_or(v > 0.99f);
    if (threadIdx.x == 0) { out[0] = c; out[1] = a; out[2] = o; }
}
extern "C" int launch(const float* x, int* out, cudaStream_t stream) {
    preds<<<1, 200, 0, stream>>>(x, out);
    return (int)cudaGetLastError();
}
"""


def test_syncthreads_count_and_or(be):
    spec = spec_of("preds", [("x", [200], "input"), ("out", [3], "output", "int32")])
    x = uniform(200, seed=11)
    r = be.run(BARRIER_PREDICATES, spec, {"x": x, "out": np.zeros(3, np.int32)})
    assert r.status == "ok", r.detail
    assert list(r.outputs["out"]) == [(x > 0).sum(), int((x > -0.5).all()), int((x > 0.99).any())]


HALF_AND_PRINTF = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdio.h>
__global__ void halves(const __half* a, const __half* b, __half* c, float* f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = __hadd(a[i], __hmul(b[i], __float2half(2.0f)));
        __half2 p = __halves2half2(a[i], b[i]);
        float2 q = __half22float2(__hmul2(p, p));
        f[i] = q.x + q.y;
    }
    if (i == 0) printf("emulated printf from thread %d of %d\n", i, n);
}
extern "C" int launch(const __half* a, const __half* b, __half* c, float* f, int n, cudaStream_t stream) {
    halves<<<(n + 63) / 64, 64, 0, stream>>>(a, b, c, f, n);
    return (int)cudaGetLastError();
}
"""


def test_half_precision_and_printf(be, capfd):
    n = 300
    spec = spec_of("halves", [("a", ["N"], "input", "float16"), ("b", ["N"], "input", "float16"),
                              ("c", ["N"], "output", "float16"), ("f", ["N"], "output")],
                   [("n", "N")], {"N": n})
    a, b = uniform(n, 1, np.float16), uniform(n, 2, np.float16)
    r = be.run(HALF_AND_PRINTF, spec, {"a": a, "b": b, "c": np.zeros(n, np.float16), "f": np.zeros(n, np.float32)})
    assert r.status == "ok", r.detail
    want = (a + (b * np.float16(2))).astype(np.float16)
    np.testing.assert_array_equal(r.outputs["c"], want)
    sq = lambda h: (h * h).astype(np.float16).astype(np.float32)  # noqa: E731
    np.testing.assert_allclose(r.outputs["f"], sq(a) + sq(b), rtol=1e-6)
    assert "emulated printf from thread 0 of 300" in capfd.readouterr().out


MULTI_KERNEL = r"""
#include <cuda_runtime.h>
__global__ void scale(const float* x, float* tmp, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tmp[i] = x[i] * s;
}
__global__ void shift(const float* tmp, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = tmp[i] + 1.0f;
}
extern "C" int launch(const float* x, float* y, int n, float s, cudaStream_t stream) {
    float* tmp = nullptr;
    if (cudaMalloc(&tmp, n * sizeof(float)) != cudaSuccess) return 1;
    scale<<<(n + 127) / 128, 128, 0, stream>>>(x, tmp, s, n);
    shift<<<(n + 127) / 128, 128, 0, stream>>>(tmp, y, n);
    cudaMemcpyAsync(y, y, sizeof(float), cudaMemcpyDeviceToDevice, stream);
    cudaStreamSynchronize(stream);
    cudaFree(tmp);
    return (int)cudaGetLastError();
}
"""


def test_host_api_scratch_buffers_and_two_kernels(be):
    spec = spec_of("multi", [("x", ["N"], "input"), ("y", ["N"], "output")],
                   [("n", "N"), ("s", 2.5, "float")], {"N": 777})
    x = uniform(777, seed=4)
    r = be.run(MULTI_KERNEL, spec, {"x": x, "y": np.zeros(777, np.float32)})
    assert r.status == "ok", r.detail
    np.testing.assert_allclose(r.outputs["y"], x * np.float32(2.5) + 1, rtol=1e-6)


DIVERGENT_ACTIVEMASK = r"""
#include <cuda_runtime.h>
__global__ void k(const float* x, float* y, unsigned* mm) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    unsigned m = 0;
    if (threadIdx.x % 32 < 16) { m = __activemask(); v += __shfl_xor_sync(m, v, 1); }
    y[i] = v;
    mm[i] = m;
}
extern "C" int launch(const float* x, float* y, unsigned* m, cudaStream_t s) {
    k<<<2, 64, 0, s>>>(x, y, m);
    return (int)cudaGetLastError();
}
"""


def test_activemask_in_a_divergent_branch_names_only_the_lanes_there(be):
    spec = spec_of("am", [("x", [128], "input"), ("y", [128], "output"), ("m", [128], "output", "uint32")])
    x = uniform(128, seed=9)
    r = be.run(DIVERGENT_ACTIVEMASK, spec, {"x": x, "y": np.zeros(128, np.float32), "m": np.zeros(128, np.uint32)})
    assert r.status == "ok", r.detail
    lane = np.arange(128) % 32
    assert (r.outputs["m"][lane < 16] == 0xFFFF).all() and (r.outputs["m"][lane >= 16] == 0).all()
    np.testing.assert_allclose(r.outputs["y"], np.where(lane < 16, x + x[np.arange(128) ^ 1], x), rtol=1e-6)
