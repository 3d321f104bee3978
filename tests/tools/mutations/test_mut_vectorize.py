from mutation_cases import not_applicable, program, verify_operator

from structcover.tools.mutations.smem_promotion import tile_smem
from structcover.tools.mutations.stats import check_variant
from structcover.tools.mutations.vectorize import vectorize_tile_loads


def test_vectorize_elementwise_variants_verify(cpu_backend):
    verify_operator("vectorize_elementwise", [("vector_add", "reference"), ("saxpy", "reference")],
                    cpu_backend)


def test_vectorize_tile_loads_verifies_on_tiled_gemm(cpu_backend):
    source, spec = program("gemm", "reference")
    tiled = tile_smem(source).variants[0].source
    result = vectorize_tile_loads(tiled)
    assert result.variants, result.not_applicable
    check = check_variant(result.variants[0], tiled, spec, family="gemm", program="tiled",
                          backend=cpu_backend)
    assert check.equivalent is True and check.moved, (check.failure, check.misses)


def test_vectorize_not_applicable():
    assert not_applicable("vectorize_elementwise", "gemm", "reference")
    assert not_applicable("vectorize_tile_loads", "gemm", "reference")


def test_devectorize_variants_verify(cpu_backend):
    verify_operator("devectorize", [("vector_add", "float4_tail"), ("saxpy", "float4_tail")],
                    cpu_backend)


def test_vectorize_tile_loads_on_corpus_tiles(cpu_backend):
    # 2-D tiles (gemm, transpose) and a 1-D x tile (gemv), all filled with guarded selects
    verify_operator("vectorize_tile_loads", [("gemm", "smem_tiled_select"),
                                             ("transpose", "smem_tile_select"),
                                             ("gemv", "x_tile_per_thread")], cpu_backend)


def test_vectorize_tile_loads_refuses_non_unit_stride_and_derived_bounds():
    source, _ = program("gemv", "x_tile_per_thread")
    assert vectorize_tile_loads(source).variants
    strided = source.replace("x[k0 + threadIdx.x]", "x[k0 + 2 * threadIdx.x]")
    assert not vectorize_tile_loads(strided).variants  # four lanes would not be consecutive
    derived = source.replace("xs[threadIdx.x] = (k0 + threadIdx.x < K)",
                             "const int kx = k0 + threadIdx.x;\n        xs[threadIdx.x] = (kx < K)")
    assert derived != source and not vectorize_tile_loads(derived).variants
    other_block = source.replace("gemv_x_tile<<<grid, BLOCK,", "gemv_x_tile<<<grid, 2 * BLOCK,")
    assert other_block != source and not vectorize_tile_loads(other_block).variants


def test_devectorize_vector_pointer_views(cpu_backend):
    # `const float4* q = reinterpret_cast<const float4*>(p + off)` views, loads and stores
    verify_operator("devectorize", [("softmax", "float4_warp"), ("gemv", "float4_warp"),
                                    ("reduction", "float4_xor_shuffle")], cpu_backend)


def test_devectorize_removes_every_vector_access():
    from structcover.tools.mutations.vectorize import devectorize

    source, _ = program("softmax", "float4_warp")
    out = devectorize(source).variants[0].source
    assert "reinterpret_cast<const float4*>" not in out and "reinterpret_cast<float4*>" not in out
    assert "make_float4(x[" in out and "y[((size_t)r * cols) + 4 * (c) + 3] = sv_.w;" in out
