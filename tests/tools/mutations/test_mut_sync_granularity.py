from mutation_cases import not_applicable, verify_operator


def test_block_to_warp_sync_variants_verify(cpu_backend):
    verify_operator("block_to_warp_sync", [("reduction", "reference"),
                                           ("softmax", "block_smem_tree")], cpu_backend)


def test_warp_to_block_sync_variants_verify(cpu_backend):
    verify_operator("warp_to_block_sync", [("reduction", "reduce_syncwarp")], cpu_backend)


def test_warp_to_block_sync_refuses_divergent_syncwarp():
    # every __syncwarp here sits under `if (warp == 0)` or in a device function
    assert not_applicable("warp_to_block_sync", "reduction", "warp_shuffle_grid_stride")
