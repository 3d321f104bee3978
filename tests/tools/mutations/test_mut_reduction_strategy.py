from mutation_cases import not_applicable, verify_operator


def test_tree_to_shuffle_variants_verify(cpu_backend):
    verify_operator("tree_to_shuffle", [("reduction", "reference"), ("softmax", "block_smem_tree")],
                    cpu_backend)


def test_tree_to_atomic_variants_verify(cpu_backend):
    verify_operator("tree_to_atomic", [("reduction", "reference")], cpu_backend)


def test_shuffle_to_tree_variants_verify(cpu_backend):
    verify_operator("shuffle_to_tree", [("reduction", "warp_shuffle_grid_stride"),
                                        ("softmax", "warp_per_row")], cpu_backend)


def test_reduction_strategy_not_applicable():
    assert "tree reduction" in not_applicable("tree_to_shuffle", "vector_add", "reference")
    assert "shuffle reduction" in not_applicable("shuffle_to_tree", "reduction", "reference")
