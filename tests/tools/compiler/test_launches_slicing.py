"""Launch block sizes and the NVRTC slicer (tree-sitter, no compiler needed)."""

from __future__ import annotations

from structcover.tools.compiler.launches import block_size_for, find_launches
from structcover.tools.compiler.slicing import slice_device_code

PROGRAM = """#include <cuda_runtime.h>
#include <stdint.h>
#define BLOCK 128
constexpr int TILE = 16;
__constant__ float coef[4];
struct Pair { float a; float b; };
__device__ __forceinline__ float sq(float x) { return x * x; }
template <int N> __global__ void scale(float* x) { x[threadIdx.x] *= N; }
__global__ void add(const float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = sq(a[i]);
}
static int grid_for(int n) { return (n + BLOCK - 1) / BLOCK; }
static float* g_scratch = nullptr;
extern "C" int launch(const float* a, float* b, int n, cudaStream_t stream) {
  dim3 blk(TILE, TILE);
  int dyn = n * 4;
  add<<<grid_for(n), BLOCK, 0, stream>>>(a, b, n);
  scale<4><<<1, blk, 0, stream>>>(b);
  add<<<1, 2 * 64, 64, stream>>>(a, b, n);
  add<<<1, dyn, 0, stream>>>(a, b, n);
  return (int)cudaGetLastError();
}
"""


def test_block_sizes_from_constants() -> None:
    sites = find_launches(PROGRAM)
    assert [(s.kernel, s.block_size) for s in sites] == [
        ("add", 128), ("scale", 256), ("add", 128), ("add", None)]
    assert sites[1].expression == "scale<4>"
    assert sites[2].dynamic_smem == 64
    assert block_size_for("add", sites) == (128, "launch")
    assert block_size_for("missing", sites) == (256, "default")


def test_slice_keeps_device_code_on_its_lines() -> None:
    sliced = slice_device_code(PROGRAM)
    body_lines = sliced.source.splitlines()[sliced.line_map.prelude_lines:]
    original = PROGRAM.splitlines()
    # Every kept line is byte-identical and on the same line number.
    for no in (3, 4, 5, 6, 7, 8, 9, 10):
        assert body_lines[no - 1] == original[no - 1]
    assert "launch" not in sliced.source
    assert "grid_for" not in sliced.source
    assert "g_scratch" not in sliced.source
    assert "cuda_runtime.h" not in sliced.source
    assert "typedef int int32_t" in sliced.source  # stdint.h replaced by the prelude
    assert sliced.name_expressions == ["scale<4>"]
    assert any("launch" in d for d in sliced.dropped)


def test_line_map_round_trip() -> None:
    sliced = slice_device_code(PROGRAM)
    lines = sliced.source.splitlines()
    line_of_add = next(i for i, t in enumerate(lines, 1) if "__global__ void add" in t)
    assert sliced.line_map.to_original(line_of_add) == 9
    assert sliced.line_map.to_original(1) is None  # prelude
