from mutation_cases import program, verify_operator

from structcover.tools.mutations.launch_config import block_size


def test_block_size_variants_verify(cpu_backend):
    verify_operator("block_size", [("vector_add", "reference"), ("gemm", "reference"),
                                   ("reduction", "reference")], cpu_backend)


def test_block_size_keeps_named_constant_consistent():
    source, _ = program("reduction", "reference")  # smem sized by BLOCK, launched with BLOCK
    result = block_size(source)
    sizes = sorted(v.params["threads"] for v in result.variants)
    assert sizes == [128, 512]
    for variant in result.variants:
        assert f"#define BLOCK {variant.params['threads']}" in variant.source
        assert "__shared__ float s[BLOCK]" in variant.source
