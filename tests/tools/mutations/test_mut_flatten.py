"""The flattening of 2-D kernels, and the thread-mapping operators on them: naive GEMM and the
transpose go onto a flat grid and from there into every (access, sync) pair, verified on the
emulator."""

import pytest
from mutation_cases import program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import pattern_features
from structcover.tools.mutations._mapping import pure_index
from structcover.tools.mutations.base import get_operator
from structcover.tools.mutations.flatten import flattened
from structcover.tools.mutations.thread_mapping import MAP_OPERATORS

_OLDER = {("strided", "none"): "coarsen_chunked", ("broadcast", "none"): "serialize",
          ("coalesced", "block"): "stage_smem_block", ("coalesced", "warp"): "stage_smem_warp"}


def _levels(source: str) -> tuple[str, str]:
    p = pattern_features(extract_features(source).values)
    return p["pattern.global_access"], p["pattern.sync"]


@pytest.mark.parametrize(("family", "name"), [("gemm", "reference"),
                                            ("transpose", "reference"),
                                            ("transpose", "naive_write_coalesced")])
def test_flattened_kernel_is_equivalent_and_drops_the_y_index(family, name, cpu_backend):
    from structcover.tools.verify.equivalence import check_equivalence

    source, spec = program(family, name)
    flat = flattened(source)
    assert flat is not None and "threadIdx.y" not in flat.split("extern")[0]
    verdict = check_equivalence(flat, source, spec, backend=cpu_backend)
    assert verdict.equivalent, (verdict.failure, verdict.detail)


def test_flattened_gemm_text():
    flat = flattened(program("gemm", "reference")[0])
    assert flat is not None
    assert "const int row = e_ / N;" in flat and "const int col = e_ % N;" in flat
    assert "<<<(unsigned)(((long long)(M) * (N) + 255) / 256), 256, 0, stream>>>" in flat


def test_flattening_leaves_other_kernels_alone():
    # a tiled kernel synchronizes inside its guard region; a 1-D kernel has no y index
    assert flattened(program("gemm", "smem_tiled16")[0]) is None
    assert flattened(program("vector_add", "reference")[0]) is None


@pytest.mark.parametrize("family", ["gemm", "transpose"])
def test_every_pair_operator_applies_to_2d_kernels(family):
    source = program(family, "reference")[0]
    landed = {}
    for pair, op in {**MAP_OPERATORS, **_OLDER}.items():
        result = get_operator(op).func(source)
        assert result.variants, (op, result.not_applicable)
        landed[pair] = _levels(result.variants[0].source)
    if family == "gemm":  # B and C are read and written along threadIdx.x: every pair lands
        assert all(got == pair for pair, got in landed.items()), landed
    else:  # a transpose writes across rows: one-element-per-thread forms stay mixed, and
        # so does the atomic one (an atomic's address is a store, strided here)
        wrong = {pair for pair, got in landed.items() if got != pair}
        assert wrong == {("coalesced", "block"), ("coalesced", "warp"),
                         ("coalesced", "block_and_warp"), ("coalesced", "atomic_or_grid")}, landed
        assert all(landed[p] == ("mixed", p[1]) for p in wrong)


@pytest.mark.parametrize("family", ["gemm", "transpose"])
def test_2d_pair_variants_verify(family, cpu_backend):
    # one operator per mapping, each with another synchronization; the barrier ones stage the
    # output store C[row * N + col] = acc (its index re-derived after the barrier).
    mixed = "map_mixed_atomic_or_grid" if family == "gemm" else "map_mixed_block"
    for op in ("map_strided_block", "map_broadcast_warp", "map_indirect_block_and_warp", mixed,
               "map_coalesced_atomic_or_grid", "stage_smem_warp"):
        verify_operator(op, [(family, "reference")], cpu_backend)


def test_output_staging_redeclares_the_index_after_the_barrier():
    variant = get_operator("stage_smem_block").func(program("gemm", "reference")[0])
    text = variant.variants[0].source
    after = text[text.index("__syncthreads();"):]
    assert after.index("const int row = e_ / N;") < after.index("C[row * N + col] = s_C_")


def test_pure_index_accepts_arithmetic_only():
    assert pure_index("row * N + col") and pure_index("(int)(i) / 2")
    for expr in ("idx[i]", "f(i)", "i++", "i = 2", "k += 1", "x >>= 1", ""):
        assert not pure_index(expr), expr
