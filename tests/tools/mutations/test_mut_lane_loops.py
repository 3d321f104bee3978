"""Lane-loop operators: re-assigning a lane-strided loop's iterations (chunked, serial, split)
and atomic output stores verify on the CPU emulator for block-, warp- and grid-cooperative
kernels, and land in the access and synchronization levels they promise."""

import pytest
from mutation_cases import not_applicable, not_applicable_source, program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import pattern_features
from structcover.tools.mutations._tree import kernels, parse
from structcover.tools.mutations.base import get_operator
from structcover.tools.mutations.lane_loops import lane_loops

#: Block per row (shared trees), warp per row (shuffles) and a grid-stride reduction.
_COOPERATIVE = [("softmax", "block_smem_tree"), ("layernorm", "warp_per_row"),
                ("reduction", "warp_shuffle_grid_stride")]


def _levels(source: str) -> tuple[str, str]:
    p = pattern_features(extract_features(source).values)
    return p["pattern.global_access"], p["pattern.sync"]


def _loops(source: str) -> list[tuple[str, str, str]]:
    src = parse(source)
    return [(ll.lane, ll.offset, ll.stride) for k in kernels(src) for ll in lane_loops(src, k)]


@pytest.mark.parametrize("op", ["lanes_chunked", "lanes_serial", "lanes_split"])
def test_lane_loop_variants_verify(op, cpu_backend):
    verify_operator(op, _COOPERATIVE, cpu_backend)


def test_stores_atomic_variants_verify(cpu_backend):
    verify_operator("stores_atomic", [("softmax", "warp_per_row"),
                                      ("layernorm", "block_smem_tree"),
                                      ("gemm", "smem_tiled16"),
                                      ("relu_fp16", "reference")], cpu_backend)


def test_stores_atomic_stores_a_half_with_one_compare_and_swap_helper():
    # atomicExch has no 16-bit overload: a __half output goes through one helper, defined
    # once before its first user even when two kernels store halves.
    kernel = ("__global__ void {name}(const __half* x, __half* y, int n) {{\n"
              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    if (i < n) y[i] = x[i];\n}}\n")
    source = ("#include <cuda_fp16.h>\n" + kernel.format(name="a") + kernel.format(name="b"))
    variant = get_operator("stores_atomic").func(source).variants[0].source
    assert variant.count("void sc_atomic_store_half(") == 1
    assert variant.index("void sc_atomic_store_half(") < variant.index("void a(")
    assert variant.count("sc_atomic_store_half(&y[i], (__half)(x[i]));") == 2
    values = extract_features(variant).values
    assert pattern_features(values)["pattern.sync"] == "atomic_or_grid"
    # applied again, it sees the atomic stores and leaves the program alone
    assert "written otherwise" in not_applicable_source("stores_atomic", variant)


def test_stores_atomic_leaves_doubles_alone():
    source = ("__global__ void k(const double* x, double* y, int n) {\n"
              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    if (i < n) y[i] = x[i];\n}\n")
    assert "double" in not_applicable_source("stores_atomic", source)


@pytest.mark.parametrize(("family", "name", "sync"), [
    ("softmax", "block_smem_tree", "block"), ("layernorm", "warp_per_row", "warp"),
    ("softmax", "block_warp_two_level", "block_and_warp"),
    ("reduction", "warp_shuffle_grid_stride", "atomic_or_grid")])
def test_each_lane_operator_moves_access_and_keeps_sync(family, name, sync):
    source = program(family, name)[0]
    assert _levels(source) == ("coalesced", sync)
    landed = {op: _levels(get_operator(op).func(source).variants[0].source)
              for op in ("lanes_chunked", "lanes_serial", "lanes_split")}
    assert landed == {"lanes_chunked": ("strided", sync), "lanes_serial": ("broadcast", sync),
                      "lanes_split": ("mixed", sync)}


def test_stores_atomic_moves_sync_and_keeps_access():
    for family, name in [("softmax", "warp_per_row"), ("layernorm", "block_smem_tree"),
                         ("conv1d", "coarsened_registers")]:
        source = program(family, name)[0]
        access, _ = _levels(source)
        variant = get_operator("stores_atomic").func(source).variants[0].source
        assert _levels(variant) == (access, "atomic_or_grid"), (family, name)
        assert "atomicExch(&" in variant


def test_lane_loops_finds_block_warp_and_grid_groups():
    block = _loops(program("softmax", "block_smem_tree")[0])
    assert block == [("tid", "0", "BLOCK")] * 3
    warp = _loops(program("layernorm", "warp_per_row")[0])
    assert warp == [("lane", "0", "32")] * 3
    # A warp index (a thread index divided by 32) is the same for the whole warp: the start's
    # row part is the group's offset, not its lane.
    spmv = """
__global__ void k(const int* rowptr, const float* v, float* y, int rows) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const int start = rowptr[warp];
    float s = 0.0f;
    for (int j = start + lane; j < rowptr[warp + 1]; j += 32) s += v[j];
    y[warp] = s;
}
"""
    assert _loops(spmv) == [("lane", "start", "32")]
    grid = """
__global__ void k(const float* x, float* y, int n) {
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = 2.0f * x[i];
}
"""
    # The grid shares the range: the block part of the start is part of the lane.
    assert _loops(grid) == [("blockIdx.x * blockDim.x + threadIdx.x", "0", "stride")]


@pytest.mark.parametrize("body", [
    "{ s[threadIdx.x] = x[i]; __syncthreads(); y[i] = s[0]; }",  # a barrier in the body
    "{ y[i] = __shfl_down_sync(0xffffffffu, x[i], 1); }",  # a warp collective
    "{ if (x[i] < 0.0f) break; y[i] = x[i]; }",  # leaves the loop early
    "{ y[i] = x[i]; i += 1; }",  # moves its own variable
])
def test_lane_loops_rejects_bodies_whose_iterations_cannot_move(body):
    source = ("__global__ void k(const float* x, float* y, int n) {\n"
              "    __shared__ float s[256];\n"
              f"    for (int i = threadIdx.x; i < n; i += blockDim.x) {body}\n}}\n")
    assert _loops(source) == []


@pytest.mark.parametrize(("start", "step", "bound"), [
    ("0", "1", "n"),  # no lane in the start: one thread's own loop
    ("threadIdx.x", "threadIdx.x + 1", "n"),  # a step that differs between lanes
    ("threadIdx.x", "blockDim.x", "n + threadIdx.x"),  # a bound that differs between lanes
])
def test_lane_loops_needs_a_lane_start_and_uniform_step_and_bound(start, step, bound):
    source = ("__global__ void k(const float* x, float* y, int n) {\n"
              f"    for (int i = {start}; i < {bound}; i += {step}) y[i] = x[i];\n}}\n")
    assert _loops(source) == []


def test_lane_loop_operators_not_applicable():
    assert "lane-strided loop" in not_applicable("lanes_chunked", "vector_add", "reference")
    # the scan's loops hold barriers: their iterations cannot move between lanes
    assert "lane-strided loop" in not_applicable("lanes_serial", "prefix_scan", "hillis_steele")
    # the tree reduction accumulates into its output with atomicAdd, not a plain store
    assert "no output element stored" in not_applicable("stores_atomic", "reduction",
                                                        "reference")


def test_loads_indirect_variants_verify(cpu_backend):
    verify_operator("loads_indirect", [("reduction", "two_pass_scratch"),
                                       ("prefix_scan", "hillis_steele"),
                                       ("layernorm", "warp_per_row")], cpu_backend)


@pytest.mark.parametrize(("family", "name", "sync"), [
    ("reduction", "two_pass_scratch", "block"), ("prefix_scan", "reference", "none"),
    ("prefix_scan", "warp_shuffle", "block_and_warp"), ("softmax", "online_warp", "warp"),
    ("histogram", "smem_privatized", "atomic_or_grid")])
def test_loads_indirect_lands_in_indirect_and_keeps_sync(family, name, sync):
    source = program(family, name)[0]
    assert _levels(source)[1] == sync
    variant = get_operator("loads_indirect").func(source).variants[0].source
    assert _levels(variant) == ("indirect", sync)
    # the thread writes its own slot right before the read: no barrier was added
    assert variant.count("__syncthreads") == source.count("__syncthreads")


def test_loads_indirect_leaves_headers_and_writes_alone():
    # the only reads sit in a loop header and a for body without braces: no plain statement
    # to compute the index before, so nothing applies
    source = ("__global__ void k(const int* p, const float* x, float* y, int n) {\n"
              "    for (int j = p[0]; j < n; ++j) y[j] = x[j];\n}\n")
    assert get_operator("loads_indirect").func(source).not_applicable
    source = ("__global__ void k(const float* x, float* y, int n) {\n"
              "    const int i = threadIdx.x;\n    y[i] = 2.0f * x[i];\n}\n")
    variant = get_operator("loads_indirect").func(source).variants[0].source
    assert "y[i] = 2.0f * x[ll_idx_[" in variant  # the read, never the write
