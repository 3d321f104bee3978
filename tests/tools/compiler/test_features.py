"""Compiler features under their stable names, and the PTX instruction mix."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from structcover.tools.compiler.features import (
    FEATURE_NAMES,
    compiler_feature_values,
    compiler_features,
)
from structcover.tools.compiler.ptx import count_instructions

from .conftest import needs_nvrtc

PROGRAM = """#include <cuda_runtime.h>
#define THREADS 128
__global__ void axpy4(const float4* __restrict__ x, float4* y, float a, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i], w = y[i];
    w.x = fmaf(a, v.x, w.x); w.y = fmaf(a, v.y, w.y);
    w.z = fmaf(a, v.z, w.z); w.w = fmaf(a, v.w, w.w);
    y[i] = w;
  }
}
__global__ void untouched(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 0.f; }
extern "C" int launch(const float* x, float* y, float a, int n, int threads, cudaStream_t s) {
  axpy4<<<(n / 4 + THREADS - 1) / THREADS, THREADS, 0, s>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), a, n / 4);
  untouched<<<1, threads, 0, s>>>(y, n);
  return (int)cudaGetLastError();
}
"""


def test_ptx_counts_and_bytes() -> None:
    body = """
    ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
    ld.global.v4.f32 {%f5, %f6, %f7, %f8}, [%rd2];
    @%p1 bra $L__BB0_2;
    fma.rn.f32 %f9, %f1, %f5, %f10;
    add.f32 %f11, %f9, %f9;
    add.s32 %r1, %r2, %r3;
    ld.shared.f32 %f12, [%r4];
    st.global.f32 [%rd3], %f11;
$L__BB0_2:
    ret;
    """
    mix = count_instructions(body, "k")
    assert (mix.ld_global, mix.st_global, mix.ld_shared, mix.fma) == (2, 1, 1, 1)
    assert mix.global_bytes == 16 + 16 + 4
    assert mix.flops == 3  # fma = 2, add.f32 = 1, integer add = 0
    assert mix.flops_per_global_byte == pytest.approx(3 / 36)


@needs_nvrtc
def test_program_features(tmp_path: Path) -> None:
    feats = compiler_features(PROGRAM, arch="sm_90", cache_dir=tmp_path)
    assert feats.result.ok
    by_kernel = {k.kernel: k for k in feats.kernels}
    assert by_kernel["axpy4"].block_size == 128
    assert by_kernel["axpy4"].block_source == "launch"
    assert by_kernel["untouched"].block_source == "default"  # block is a runtime argument
    assert by_kernel["untouched"].block_size == 256
    axpy = by_kernel["axpy4"].mix
    assert axpy.fma == 4 and axpy.ld_global == 2 and axpy.st_global == 1
    assert axpy.global_bytes == 48  # three float4 accesses

    values = compiler_feature_values(PROGRAM, arch="sm_90", cache_dir=tmp_path)
    assert set(FEATURE_NAMES) <= set(values)
    regs = max(k.stats.registers for k in feats.kernels)
    assert values["ptxas.registers"] == regs
    assert values["ptx.fma"] == 4
    assert values["ptx.st_global"] == 2
    assert 0 < values["occupancy.theoretical"] <= 1
    assert values["occupancy.limiter"] in {"registers", "smem", "threads", "blocks"}
    total_flops = sum(k.mix.flops for k in feats.kernels)
    total_bytes = sum(k.mix.global_bytes for k in feats.kernels)
    assert values["ptx.flops_per_global_byte"] == pytest.approx(total_flops / total_bytes)


@needs_nvrtc
def test_block_size_argument_overrides_launch(tmp_path: Path) -> None:
    feats = compiler_features(PROGRAM, arch="sm_86", block_size=1024, cache_dir=tmp_path)
    assert {k.block_source for k in feats.kernels} == {"argument"}
    values = feats.values()
    assert values["occupancy.theoretical"] == pytest.approx(32 / 48)  # one 1024-thread block
    assert values["occupancy.limiter"] == "threads"


@needs_nvrtc
def test_uncompilable_program_gives_nan_features(tmp_path: Path) -> None:
    values = compiler_feature_values("__global__ void k(float* x) { x[0] = nope; }",
                                     cache_dir=tmp_path)
    assert values["compile.ok"] == 0.0
    assert math.isnan(values["ptxas.registers"])
    assert values["occupancy.limiter"] == "none"
