from mutation_cases import not_applicable, verify_operator


def test_tree_to_shuffle_variants_verify(cpu_backend):
    verify_operator("tree_to_shuffle", [("reduction", "reference"), ("softmax", "block_smem_tree")],
                    cpu_backend)


def test_tree_to_shuffle_in_device_helpers_verify(cpu_backend):
    # the tree sits in a __device__ helper both kernels call; its first stride is
    # blockDim.x / 2 (two_pass_scratch) or BLOCK / 2 (layernorm)
    verify_operator("tree_to_shuffle", [("reduction", "two_pass_scratch"),
                                        ("layernorm", "block_smem_tree")], cpu_backend)


def test_tree_to_shuffle_moves_two_pass_sync_pattern():
    from mutation_cases import program

    from structcover.tools.features.extract import extract_features
    from structcover.tools.mutations.reduction_strategy import tree_to_shuffle

    source, _ = program("reduction", "two_pass_scratch")
    (variant,) = tree_to_shuffle(source).variants
    assert extract_features(source).values["pattern.sync"] == "block"
    assert extract_features(variant.source).values["pattern.sync"] == "block_and_warp"


def _two_pass(old: str, new: str) -> str:
    from mutation_cases import program

    source, _ = program("reduction", "two_pass_scratch")
    assert old in source
    return source.replace(old, new)


def test_device_helper_tree_needs_power_of_two_blocks_of_64():
    from structcover.tools.mutations.reduction_strategy import tree_to_atomic, tree_to_shuffle

    # blockDim.x / 2 halves a 192-thread block into 96 and then 48 + 48: not a full tree
    for op in (tree_to_shuffle, tree_to_atomic):
        assert op(_two_pass("#define BLOCK 256", "#define BLOCK 192")).not_applicable
    # a 32-thread block has no 64 partials for warp 0
    small = _two_pass("final_sum<<<1, BLOCK,", "final_sum<<<1, 32,")
    assert tree_to_shuffle(small).not_applicable
    # a block size only known at run time
    dynamic = _two_pass("partial_sums<<<grid, BLOCK,", "partial_sums<<<grid, n % 512,")
    assert tree_to_shuffle(dynamic).not_applicable


def test_device_helper_tree_needs_kernel_callers_and_shared_memory():
    from structcover.tools.mutations.reduction_strategy import tree_to_shuffle

    # called from another __device__ function: its launches are not followed
    wrapped = _two_pass("__global__ void partial_sums",
                        "__device__ float wrap(float* s) { return block_tree_sum(1.0f, s); }\n\n"
                        "__global__ void partial_sums")
    assert tree_to_shuffle(wrapped).not_applicable
    # a global buffer instead of a __shared__ array
    global_buf = _two_pass("block_tree_sum(v, s)", "block_tree_sum(v, out)")
    assert tree_to_shuffle(global_buf).not_applicable


def test_tree_to_atomic_variants_verify(cpu_backend):
    verify_operator("tree_to_atomic", [("reduction", "reference"), ("reduction", "two_pass_scratch"),
                                       ("layernorm", "block_smem_tree")], cpu_backend)


def test_shuffle_to_tree_variants_verify(cpu_backend):
    verify_operator("shuffle_to_tree", [("reduction", "warp_shuffle_grid_stride"),
                                        ("softmax", "warp_per_row")], cpu_backend)


def test_reduction_strategy_not_applicable():
    assert "tree reduction" in not_applicable("tree_to_shuffle", "vector_add", "reference")
    assert "shuffle reduction" in not_applicable("shuffle_to_tree", "reduction", "reference")
