from mutation_cases import not_applicable, verify_operator


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
