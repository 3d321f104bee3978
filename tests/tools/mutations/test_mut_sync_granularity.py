import pytest
from mutation_cases import not_applicable, program, verify_operator

from structcover.tools.mutations.base import get_operator


def test_block_to_warp_sync_variants_verify(cpu_backend):
    verify_operator("block_to_warp_sync", [("reduction", "reference"),
                                           ("softmax", "block_smem_tree")], cpu_backend)


def test_block_to_warp_sync_in_device_helpers_verify(cpu_backend):
    verify_operator("block_to_warp_sync", [("reduction", "two_pass_scratch"),
                                           ("layernorm", "block_smem_tree")], cpu_backend)


def test_block_to_warp_sync_keeps_barrier_after_device_helper_tree():
    from mutation_cases import program

    from structcover.tools.features.extract import extract_features
    from structcover.tools.mutations.sync_granularity import block_to_warp_sync

    # the helper's callers read the array's total in every thread: the warp steps must be
    # followed by a block barrier before `return s[0]`
    source, _ = program("reduction", "two_pass_scratch")
    (variant,) = block_to_warp_sync(source).variants
    tail = variant.source[variant.source.index("__syncwarp"):variant.source.index("return s[0]")]
    assert "__syncthreads();" in tail
    assert extract_features(variant.source).values["pattern.sync"] == "block_and_warp"


def test_warp_to_block_sync_variants_verify(cpu_backend):
    verify_operator("warp_to_block_sync", [("reduction", "reduce_syncwarp")], cpu_backend)


def test_warp_to_block_sync_refuses_divergent_syncwarp():
    # every __syncwarp here sits under `if (warp == 0)` or in a device function
    assert not_applicable("warp_to_block_sync", "reduction", "warp_shuffle_grid_stride")


def test_warp_to_block_sync_on_corpus_warp_smem_trees(cpu_backend):
    verify_operator("warp_to_block_sync", [("reduction", "warp_smem_syncwarp"),
                                           ("prefix_scan", "warp_smem_syncwarp"),
                                           ("softmax", "block_warp_smem_syncwarp")], cpu_backend)


def test_warp_to_block_sync_replaces_every_uniform_syncwarp():
    from mutation_cases import program

    from structcover.tools.mutations.sync_granularity import warp_to_block_sync

    source, _ = program("prefix_scan", "warp_smem_syncwarp")
    out = warp_to_block_sync(source).variants[0].source
    assert "__syncwarp()" not in out
    assert out.count("__syncthreads()") == source.count("__syncthreads()") + source.count("__syncwarp()")


def test_block_to_one_warp_variants_verify(cpu_backend):
    verify_operator("block_to_one_warp", [("reduction", "two_pass_scratch"),
                                          ("prefix_scan", "hillis_steele"),
                                          ("softmax", "block_warp_two_level")], cpu_backend)


@pytest.mark.parametrize(("family", "name", "before"), [
    ("reduction", "two_pass_scratch", ("coalesced", "block")),
    ("softmax", "block_warp_two_level", ("coalesced", "block_and_warp")),
    ("spmv_csr", "block_per_row_smem", ("indirect", "block"))])
def test_block_to_one_warp_lands_in_warp(family, name, before):
    from structcover.tools.features.extract import extract_features
    from structcover.tools.features.structure import pattern_features

    def levels(source: str) -> tuple[str, str]:
        p = pattern_features(extract_features(source).values)
        return p["pattern.global_access"], p["pattern.sync"]

    source = program(family, name)[0]
    assert levels(source) == before
    variant = get_operator("block_to_one_warp").func(source).variants[0].source
    assert levels(variant) == (before[0], "warp")
    assert "__syncthreads" not in variant


def test_block_to_one_warp_edits_the_block_constant_and_needs_1d_blocks():
    variant = get_operator("block_to_one_warp").func(
        program("reduction", "two_pass_scratch")[0]).variants[0].source
    assert "#define BLOCK 32" in variant  # shared arrays, strides and grid math follow it
    # a 16 x 16 tile block is two-dimensional: one warp cannot hold the tile's threads
    assert "1-D" in not_applicable("block_to_one_warp", "gemm", "smem_tiled16")
    assert "no plain __syncthreads" in not_applicable("block_to_one_warp", "vector_add",
                                                      "reference")
