from mutation_cases import not_applicable, verify_operator


def test_unroll_pragma_variants_verify(cpu_backend):
    verify_operator("unroll_pragma", [("gemm", "reference"), ("softmax", "reference")], cpu_backend)


def test_unroll_manual_variants_verify(cpu_backend):
    verify_operator("unroll_manual", [("gemm", "reference"), ("saxpy", "grid_stride")], cpu_backend)


def test_unroll_pragma_remove_variants_verify(cpu_backend):
    verify_operator("unroll_pragma_remove", [("vector_add", "coarsened_unroll")], cpu_backend)


def test_unroll_not_applicable_without_loops():
    assert "no device for-loop" in not_applicable("unroll_pragma", "vector_add", "reference")
    assert "no counted device loop" in not_applicable("unroll_manual", "vector_add", "reference")
