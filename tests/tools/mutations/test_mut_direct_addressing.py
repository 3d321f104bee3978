"""Direct addressing: CSR SpMV kernels rewritten so that no address reads memory verify on the
CPU emulator and leave the indirect access level; a lane loop keeps its lanes."""

import re

import pytest
from mutation_cases import not_applicable, program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import pattern_features
from structcover.tools.mutations.base import get_operator


def _levels(source: str) -> tuple[str, str]:
    p = pattern_features(extract_features(source).values)
    return p["pattern.global_access"], p["pattern.sync"]


def test_direct_addressing_variants_verify(cpu_backend):
    verify_operator("direct_addressing", [("spmv_csr", "reference"),
                                          ("spmv_csr", "warp_per_row"),
                                          ("spmv_csr", "block_per_row_smem"),
                                          ("spmv_csr", "grid_stride_rows")], cpu_backend)


@pytest.mark.parametrize(("name", "after"), [("reference", ("coalesced", "none")),
                                             ("warp_per_row", ("coalesced", "warp")),
                                             ("block_per_row_smem", ("coalesced", "block")),
                                             # its gathers' keys come from searches
                                             ("grid_stride_rows", ("coalesced", "none"))])
def test_direct_addressing_leaves_indirect_and_keeps_sync(name, after):
    source = program("spmv_csr", name)[0]
    assert _levels(source)[0] == "indirect"
    variant = get_operator("direct_addressing").func(source).variants[0].source
    assert _levels(variant) == after
    assert extract_features(variant).values["mem.global_indirect"] == 0


def test_direct_addressing_keeps_the_lane_and_searches_the_gather():
    source = program("spmv_csr", "warp_per_row")[0]
    variant = get_operator("direct_addressing").func(source).variants[0].source
    # the lane loop starts at its lane and skips below the loaded offset
    assert "for (int k = lane; k < end; k += 32) if (k >= da_lo0_) {" in variant
    # the gather reads x at a counter equal to the loaded key
    assert "if (da_c0_ == da_key0_) da_val0_ = x[da_c0_];" in variant


def test_a_gather_keyed_by_a_searched_value_is_searched_too():
    # grid_stride_rows reads vals[k] and col_idx[k] at a loaded k: both become searches, and
    # x[col_idx[k]] then gathers through the searched column (a local assigned in the
    # search loop, not in its declaration), so it is searched in the next pass.
    source = program("spmv_csr", "grid_stride_rows")[0]
    variant = get_operator("direct_addressing").func(source).variants[0].source
    assert re.search(r"da_val\d+_ = x\[da_c\d+_\];", variant)
    assert not re.search(r"\bx\[da_val", variant)


def test_the_one_thread_per_element_operators_re_map_a_directly_addressed_kernel():
    from structcover.tools.mutations.base import dry_run

    source = get_operator("direct_addressing").func(program("spmv_csr", "reference")[0])
    variant = source.variants[0].source
    assert _levels(variant) == ("coalesced", "none")
    with dry_run():
        for op in ("map_strided_block", "map_broadcast_warp", "map_mixed_none"):
            assert get_operator(op).func(variant).variants, op


def test_direct_addressing_leaves_barrier_loops_and_dense_kernels_alone():
    source = ("__global__ void k(const int* p, const float* x, float* y) {\n"
              "    __shared__ float s[64];\n"
              "    for (int j = p[0] + threadIdx.x; j < p[1]; j += 64) {\n"
              "        s[threadIdx.x] = x[j];\n        __syncthreads();\n    }\n}\n")
    variant = get_operator("direct_addressing").func(source).variants[0].source
    # another trip count per lane would split the barrier: the loop keeps its start; only the
    # read through the loaded index becomes a search
    assert "for (int j = p[0] + threadIdx.x; j < p[1]; j += 64) {" in variant
    assert "s[threadIdx.x] = da_val0_;" in variant
    assert "no loop starting at a loaded offset" in not_applicable("direct_addressing",
                                                                   "vector_add", "reference")
