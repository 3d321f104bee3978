"""Thread-mapping operators: chunked, serial and staged variants verify on the CPU emulator,
move the features they promise, and land where the pattern rules say."""

from mutation_cases import not_applicable, program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import pattern_features
from structcover.tools.mutations.base import get_operator


def _levels(source: str) -> tuple[str, str]:
    p = pattern_features(extract_features(source).values)
    return p["pattern.global_access"], p["pattern.sync"]


def test_coarsen_chunked_variants_verify(cpu_backend):
    verify_operator("coarsen_chunked", [("vector_add", "reference"), ("relu_fp16", "reference")],
                    cpu_backend)


def test_serialize_variants_verify(cpu_backend):
    verify_operator("serialize", [("saxpy", "reference"), ("conv1d", "reference")], cpu_backend)


def test_stage_smem_variants_verify(cpu_backend):
    # restrict_ldg reads through __ldg(a + i) with __restrict__ parameters
    verify_operator("stage_smem_block", [("vector_add", "reference"),
                                         ("vector_add", "restrict_ldg")], cpu_backend)
    verify_operator("stage_smem_warp", [("relu_fp16", "reference")], cpu_backend)


def test_each_operator_moves_its_pattern_level():
    source = program("vector_add", "reference")[0]
    assert _levels(source) == ("coalesced", "none")
    landed = {op: _levels(get_operator(op).func(source).variants[0].source)
              for op in ("coarsen_chunked", "serialize", "stage_smem_block", "stage_smem_warp")}
    assert landed == {"coarsen_chunked": ("strided", "none"), "serialize": ("broadcast", "none"),
                      "stage_smem_block": ("coalesced", "block"),
                      "stage_smem_warp": ("coalesced", "warp")}
    staged = get_operator("stage_smem_block").func(source).variants[0].source
    # The barrier sits outside the bounds guard, so every thread of the block reaches it.
    guard, barrier = staged.index("if (i < n)"), staged.index("__syncthreads();")
    assert staged.index("}", guard) < barrier < staged.rindex("if (i < n)")


def test_thread_mapping_not_applicable():
    assert "one-thread-per-element" in not_applicable("coarsen_chunked", "reduction",
                                                      "reference")
    assert "thread indices" in not_applicable("serialize", "gemm", "reference")
    assert "read-only input" in not_applicable("stage_smem_block", "transpose", "reference")
