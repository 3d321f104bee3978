from mutation_cases import not_applicable, program, verify_operator

from structcover.tools.mutations.fusion import loop_fission, loop_fusion
from structcover.tools.mutations.stats import check_variant


def test_loop_fission_variants_verify(cpu_backend):
    verify_operator("loop_fission", [("rowstats", "rowstats"), ("layernorm", "one_pass_float4")],
                    cpu_backend)


def test_loop_fusion_undoes_fission(cpu_backend):
    source, spec = program("rowstats", "rowstats")
    split = loop_fission(source).variants[0].source
    fused = loop_fusion(split)
    assert fused.variants, fused.not_applicable
    check = check_variant(fused.variants[0], split, spec, family="rowstats", program="split",
                          backend=cpu_backend)
    assert check.equivalent is True and check.moved, (check.failure, check.misses)


def test_fusion_refuses_dependent_loops():
    # softmax's loops feed each other (max, then sum): fusing or splitting would be wrong
    assert not_applicable("loop_fusion", "softmax", "reference")
    assert not_applicable("loop_fission", "vector_add", "reference")


def test_loop_fission_splits_coarsened_loops(cpu_backend):
    # two accumulators fed in one loop (two rows / two outputs per thread) split into two loops
    verify_operator("loop_fission", [("gemv", "two_rows_per_thread"),
                                     ("conv1d", "two_outputs_per_thread")], cpu_backend)


def test_loop_fusion_variants_verify_on_corpus(cpu_backend):
    verify_operator("loop_fusion", [("gemv", "two_rows_two_loops"),
                                    ("conv1d", "two_outputs_two_loops"),
                                    ("layernorm", "sum_sumsq_two_loops")], cpu_backend)


def test_loop_fusion_fuses_into_one_loop():
    source, _ = program("layernorm", "sum_sumsq_two_loops")
    fused = loop_fusion(source).variants[0].source
    assert fused.count("for (int c = 0; c < cols; ++c)") == source.count(
        "for (int c = 0; c < cols; ++c)") - 1
