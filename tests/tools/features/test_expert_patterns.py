"""Expert features and structural patterns, each pinned by a hand-written kernel (issue 12)."""

from __future__ import annotations

import expert_kernels as E
import feature_kernels as K
import pytest

from structcover.tools.features.extract import extract_values
from structcover.tools.features.registry import BY_NAME, describe, is_structural
from structcover.tools.features.structure import LEVELS, pattern_features


def v(src: str) -> dict:
    return extract_values(src)


def test_patterns_are_registered_categories_with_documented_levels():
    for name, levels in LEVELS.items():
        spec = BY_NAME[name]
        assert spec.kind == "category" and spec.structural and is_structural(name)
        # The description states every level, so users read the rule where they read the name.
        assert all(level in describe(name) for level in levels), name
    assert describe("pattern.3fa2c0ffee").startswith("occurrences of mined")
    assert not is_structural("pattern.3fa2c0ffee")


@pytest.mark.parametrize("src", [K.COALESCED, E.REGISTER_TILED, E.TORCH_DELEGATE, "", "junk {{"])
def test_pattern_values_are_always_levels(src):
    values = v(src)
    for name, levels in LEVELS.items():
        assert values[name] in levels, (name, values[name])


def test_register_tiling_outputs_and_accumulators():
    tiled, scalar = v(E.REGISTER_TILED), v(E.SCALAR_ACC)
    assert tiled["reg.outputs_per_thread"] == 16 and scalar["reg.outputs_per_thread"] == 1
    assert tiled["reg.accumulators"] == 16 and scalar["reg.accumulators"] == 0
    assert tiled["reg.tiled"] and not scalar["reg.tiled"]
    assert tiled["pattern.reuse"] == "register_tiling" and scalar["pattern.reuse"] == "none"


def test_smem_reuse_counts_reads_per_staged_element():
    gemm = v(K.TILED_GEMM)  # TILE = 16: each staged element is read 16 times
    assert gemm["smem.reads_per_staged"] == pytest.approx(16.0)
    assert gemm["pattern.reuse"] == "smem_tiling"
    red = v(E.ATOMIC_REDUCE)  # a tree reduction stages, but reads each element about once
    assert red["smem.reads_per_staged"] < 2 and red["pattern.reuse"] == "smem_staging"
    assert v(E.ELEMENTWISE)["smem.reads_per_staged"] is None


def test_double_buffering_ping_pong_and_async_pipelines():
    pp = v(E.PING_PONG)
    assert pp["pipeline.double_buffered"] and pp["pipeline.stages"] == 2
    assert not pp["pipeline.async_copy"]
    cp = v(E.CP_ASYNC)
    assert cp["pipeline.async_copy"] and cp["pipeline.double_buffered"]
    single = v(K.TILED_GEMM)
    assert not single["pipeline.double_buffered"] and single["pipeline.stages"] == 0


def test_warp_tiling():
    wt = v(E.WARP_TILED)
    assert wt["warp.tiling"] and wt["reg.tiled"]
    assert wt["pattern.reuse"] == "smem_and_register"
    # A warp id used to store per-warp partial sums is not warp tiling.
    assert not v(E.BLOCK_AND_WARP)["warp.tiling"]
    assert not v(K.TILED_GEMM)["warp.tiling"]


def test_vector_width_global():
    assert v(E.VECTORIZED)["mem.vector_width_global"] == 4
    assert v(E.VECTORIZED)["pattern.vector_width"] == "4"
    assert v(E.HALF8)["pattern.vector_width"] == "4"  # int4 lanes
    assert v(E.ELEMENTWISE)["pattern.vector_width"] == "1"


def test_tensor_cores_wmma_ptx_and_hmma():
    for src in (E.WMMA, E.PTX_MMA, E.HMMA):
        assert v(src)["pattern.tensor_cores"] == "yes"
    assert v(K.TILED_GEMM)["pattern.tensor_cores"] == "no"


def test_launch_bounds():
    assert v(E.LAUNCH_BOUNDS)["kernel.launch_bounds"] == 1
    assert v(E.ELEMENTWISE)["kernel.launch_bounds"] == 0


def test_fusion_stages_and_launches():
    fused = v(E.FUSED_SOFTMAX)
    assert fused["fusion.kernel_stages"] == 3  # max, sum, exp in one kernel
    assert v(E.ELEMENTWISE)["fusion.kernel_stages"] == 0
    three = v(E.THREE_LAUNCHES)
    assert three["fusion.launches_per_forward"] == 3
    assert v(K.TILED_GEMM)["fusion.launches_per_forward"] == 1


def test_library_delegation():
    assert v(E.TORCH_DELEGATE)["lib.delegates_heavy_op"]
    assert v(E.CUBLAS)["lib.delegates_heavy_op"]
    assert not v(K.TILED_GEMM)["lib.delegates_heavy_op"]


def test_sync_pattern_levels():
    assert v(E.ATOMIC_REDUCE)["pattern.sync"] == "atomic_or_grid"
    assert v(E.BLOCK_AND_WARP)["pattern.sync"] == "block_and_warp"
    assert v(E.FUSED_SOFTMAX)["pattern.sync"] == "warp"
    assert v(K.TILED_GEMM)["pattern.sync"] == "block"
    assert v(E.ELEMENTWISE)["pattern.sync"] == "none"


def test_global_access_pattern_levels():
    assert v(K.COALESCED)["pattern.global_access"] == "coalesced"
    assert v(K.INDIRECT)["pattern.global_access"] == "indirect"
    assert v(K.ROW_MAJOR)["pattern.global_access"] == "mixed"  # strided reads, coalesced store
    assert v(E.TORCH_DELEGATE)["pattern.global_access"] == "none"
    assert pattern_features({"mem.global_strided": 2})["pattern.global_access"] == "strided"
    assert pattern_features({"mem.global_broadcast": 1, "mem.global_unknown": 1})[
        "pattern.global_access"] == "broadcast"
    assert pattern_features({"mem.global_unknown": 3})["pattern.global_access"] == "mixed"


def test_intensity_classes_follow_the_stated_thresholds():
    assert v(E.ELEMENTWISE)["pattern.intensity"] == "low"
    assert v(E.SCALAR_ACC)["pattern.intensity"] == "low"  # 2 FLOP per 8 loaded bytes
    tiled = v(K.TILED_GEMM)
    assert 1 <= tiled["intensity.flop_per_byte"] < 8 and tiled["pattern.intensity"] == "medium"
    for value, level in ((0.99, "low"), (1.0, "medium"), (7.9, "medium"), (8.0, "high"),
                         (None, "low")):
        assert pattern_features({"intensity.flop_per_byte": value})["pattern.intensity"] == level


CUDA_MEMCPY_ASYNC = r"""
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void stage2(const float* in, float* out, int n) {
    __shared__ float buf[2][256];
    auto block = cg::this_thread_block();
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    for (int t = 0; t < n / 256; ++t) {
        pipe.producer_acquire();
        cuda::memcpy_async(&buf[t % 2][threadIdx.x], &in[t * 256 + threadIdx.x], sizeof(float),
                           pipe);
        pipe.producer_commit();
        pipe.consumer_wait();
        out[t * 256 + threadIdx.x] = buf[t % 2][threadIdx.x] * 2.0f;
        pipe.consumer_release();
    }
}
"""

PTX_CP_ASYNC = r"""
__global__ void stage_ptx(const float4* in, float4* out) {
    __shared__ float4 buf[128];
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&buf[threadIdx.x]));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(in + threadIdx.x));
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group 0;");
    __syncthreads();
    out[threadIdx.x] = buf[127 - threadIdx.x];
}
"""


def test_async_pipelines_through_cuda_memcpy_async_and_inline_ptx():
    for src in (CUDA_MEMCPY_ASYNC, PTX_CP_ASYNC):
        values = v(src)
        assert values["pipeline.async_copy"] and values["pipeline.double_buffered"], src[:40]
    assert v(CUDA_MEMCPY_ASYNC)["pipeline.stages"] == 2  # buf[t % 2]: two stages
    assert v(PTX_CP_ASYNC)["mem.vector_width_shared"] == 4
    assert v(E.VECTORIZED)["mem.vector_width_shared"] == 1
