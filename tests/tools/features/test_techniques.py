"""``opt.refinements``: each named refinement found on a hand-written kernel, and counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.tools.features.extract import extract_values
from structcover.tools.features.techniques import TECHNIQUES, techniques

LADDERS = Path(__file__).parents[2] / "data" / "ladders"

PLAIN = """
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
void launch(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }
"""

#: One kernel per refinement: the plain kernel with that refinement and nothing else added.
REFINED = {
    "warp_shuffle": """
__global__ void wsum(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) y[i / 32] = v;
}
void launch(const float* x, float* y, int n) { wsum<<<(n + 255) / 256, 256>>>(x, y, n); }
""",
    "bank_padding": """
#define T 32
__global__ void tr(const float* x, float* y, int n) {
    __shared__ float tile[T][T + 1];
    int c = blockIdx.x * T + threadIdx.x, r = blockIdx.y * T + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = x[r * n + c];
    __syncthreads();
    y[(blockIdx.x * T + threadIdx.y) * n + blockIdx.y * T + threadIdx.x] =
        tile[threadIdx.x][threadIdx.y];
}
void launch(const float* x, float* y, int n) { tr<<<dim3(n / T, n / T), dim3(T, T)>>>(x, y, n); }
""",
    "work_per_thread": """
__global__ void scale(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i];
}
void launch(const float* x, float* y, int n) { scale<<<120, 256>>>(x, y, n); }
""",
    "read_only_path": PLAIN.replace("const float* x", "const float* __restrict__ x"),
    "constant_memory": """
__constant__ float k_scale[1];
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = k_scale[0] * x[i];
}
void launch(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }
""",
    "unrolling": """
__global__ void poly(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) acc = acc * v + 1.0f;
    y[i] = acc;
}
void launch(const float* x, float* y, int n) { poly<<<(n + 255) / 256, 256>>>(x, y, n); }
""",
    "launch_bounds": PLAIN.replace("__global__ void scale", "__global__ void __launch_bounds__(256) scale"),
    "fast_math": PLAIN.replace("2.0f * x[i]", "__expf(x[i])"),
    "single_launch": PLAIN,
}


def test_plain_kernel_has_only_its_single_launch():
    assert techniques(extract_values(PLAIN)) == ["single_launch"]
    assert extract_values(PLAIN)["opt.refinements"] == 1


@pytest.mark.parametrize("name", sorted(set(REFINED) - {"single_launch"}))
def test_each_refinement_is_found_and_adds_one(name):
    values = extract_values(REFINED[name])
    assert techniques(values) == [name, "single_launch"]
    assert values["opt.refinements"] == 2


@pytest.mark.parametrize(("step", "name"), [("sgemm/07_warptiling.cu", "warp_tiling"),
                                            ("sgemm/08_double_buffer.cu", "pipelining")])
def test_ladder_steps_add_their_refinement(step, name):
    before = sorted((LADDERS / step).parent.glob("*.cu"))
    path = LADDERS / step
    previous = before[before.index(path) - 1]
    assert name in techniques(extract_values(path.read_text()))
    assert name not in techniques(extract_values(previous.read_text()))


def test_three_launches_are_not_a_single_launch():
    three = PLAIN.replace("void launch(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }",
                          "void launch(const float* x, float* y, int n) {\n"
                          "  for (int r = 0; r < 3; ++r) scale<<<(n + 255) / 256, 256>>>(x, y, n);\n"
                          "  scale<<<1, 256>>>(x, y, n); scale<<<2, 256>>>(x, y, n);\n}")
    values = extract_values(three)
    assert values["fusion.launches_per_forward"] > 1
    assert "single_launch" not in techniques(values)


def test_pattern_levels_are_not_counted_again():
    # Coalescing, reuse, vector width and tensor cores have their own pattern features; the
    # count is what lies beyond them (one home per concept).
    assert not {"coalesced_access", "shared_memory", "register_tiling", "vector_access",
                "tensor_cores"} & set(TECHNIQUES)
    tiled = REFINED["bank_padding"].replace("[T + 1]", "[T]")
    assert extract_values(tiled)["opt.refinements"] == 1  # staged, coalesced, one launch


def test_every_rule_reads_registered_features():
    import re

    from structcover.tools.features.registry import NAMES
    for name, (_, reads) in TECHNIQUES.items():
        named = set(re.findall(r"\b[a-z]+\.[a-z_]+\b", reads))
        assert named and named <= set(NAMES), (name, named - set(NAMES))
    assert "opt.refinements" in NAMES
