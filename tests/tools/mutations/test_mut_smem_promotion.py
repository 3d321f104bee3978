from mutation_cases import not_applicable, program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.mutations.smem_promotion import tile_smem
from structcover.tools.mutations.unroll import unroll_pragma
from structcover.tools.mutations.vectorize import vectorize_tile_loads
from structcover.tools.verify.equivalence import check_equivalence


def test_tile_smem_variants_verify(cpu_backend):
    verify_operator("tile_smem", [("gemm", "reference")], cpu_backend)


def test_cache_in_register_variants_verify(cpu_backend):
    verify_operator("cache_in_register", [("rowstats", "rowstats")], cpu_backend)


def test_tile_smem_not_applicable_to_non_dot_product():
    assert "dot-product" in not_applicable("tile_smem", "vector_add", "reference")


def test_chain_of_three_operators_on_naive_gemm(cpu_backend):
    """tile_smem -> vectorize_tile_loads -> unroll_pragma on the naive GEMM: the result is
    equivalent to the reference and its features show tiling, coalesced and vector loads."""
    source, spec = program("gemm", "reference")
    before = extract_features(source).values
    assert before["smem.tiled"] is False and before["mem.vector_loads"] == 0
    current = source
    for op in (tile_smem, vectorize_tile_loads, unroll_pragma):
        result = op(current)
        assert result.variants, f"{result.operator}: {result.not_applicable}"
        current = result.variants[0].source
    verdict = check_equivalence(current, source, spec, backend=cpu_backend, trials=2, seed=7)
    assert verdict.equivalent is True, verdict.failure
    after = extract_features(current).values
    assert after["smem.tiled"] is True
    assert after["mem.coalesced_fraction"] >= 0.99
    assert after["mem.global_strided"] == 0
    assert after["mem.vector_loads"] >= 1
    assert after["loop.unroll_pragmas"] >= 1


def test_tile_smem_stages_broadcast_operand_in_1d(cpu_backend):
    # GEMV's x[k] and a stencil's w[j + R]: one tile of blockDim values per step
    verify_operator("tile_smem", [("gemv", "reference"), ("conv1d", "zero_pad_select")],
                    cpu_backend)


def test_tile_smem_1d_keeps_barriers_out_of_the_guard():
    source, _ = program("gemv", "reference")
    out = tile_smem(source).variants[0].source
    assert "return;" not in out  # an early exit before a barrier would deadlock the block
    assert "__shared__ float x_tile_[128]" in out
    guard = out.index("if (r < M)")
    assert out.index("__syncthreads()") < guard < out.rindex("__syncthreads()")


def test_tile_smem_refuses_conditionally_read_operand():
    # conv1d's reference reads w[j + radius] only under `if (k >= 0 && k < n)`: staging it
    # would read values the original did not
    assert "broadcast operand" in not_applicable("tile_smem", "conv1d", "reference")


def test_cache_in_register_on_corpus(cpu_backend):
    verify_operator("cache_in_register", [("gemv", "two_rows_per_thread"),
                                          ("conv1d", "two_outputs_per_thread"),
                                          ("layernorm", "sum_sumsq_two_loops")], cpu_backend)
