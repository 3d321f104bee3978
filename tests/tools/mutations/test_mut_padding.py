from mutation_cases import not_applicable, verify_operator


def test_pad_shared_variants_verify(cpu_backend):
    verify_operator("pad_shared", [("transpose", "smem_tile32_conflicts"), ("gemm", "smem_tiled16")],
                    cpu_backend)


def test_unpad_shared_variants_verify(cpu_backend):
    verify_operator("unpad_shared", [("transpose", "smem_padded_coarsened")], cpu_backend)


def test_padding_not_applicable_without_2d_shared():
    assert "2-D __shared__" in not_applicable("pad_shared", "vector_add", "reference")


def test_unpad_shared_on_padded_gemm_and_histogram(cpu_backend):
    verify_operator("unpad_shared", [("gemm", "smem_tiled32_unroll"),
                                     ("histogram", "warp_private_padded")], cpu_backend)
