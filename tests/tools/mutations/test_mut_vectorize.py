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
