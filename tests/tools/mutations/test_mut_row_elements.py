"""Row to elements: a thread-per-row kernel rewritten as a thread per (row, column) that
recomputes its row's statistics verifies on the CPU emulator, and lands coalesced (every row)
or mixed (half the rows) without synchronization."""

import pytest
from mutation_cases import not_applicable, not_applicable_source, program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import pattern_features
from structcover.tools.mutations.base import get_operator


def _levels(source: str) -> tuple[str, str]:
    p = pattern_features(extract_features(source).values)
    return p["pattern.global_access"], p["pattern.sync"]


@pytest.mark.parametrize("op", ["row_elements", "row_elements_mixed"])
def test_row_elements_variants_verify(op, cpu_backend):
    verify_operator(op, [("softmax", "reference"), ("layernorm", "reference")], cpu_backend)


def test_row_elements_lands_coalesced_and_mixed_without_sync():
    for family in ("softmax", "layernorm"):
        source = program(family, "reference")[0]
        assert _levels(source) == ("strided", "none")
        variants = [get_operator(op).func(source).variants[0]
                    for op in ("row_elements", "row_elements_mixed")]
        assert [_levels(v.source) for v in variants] == [("coalesced", "none"),
                                                         ("mixed", "none")], family
        # the grid grows by the column count; the column loop's iteration is the thread's own
        assert "<<<(grid) * (cols), block" in variants[0].source
        assert "const int c = rc_;" in variants[0].source


_ROW = """__global__ void k(const float* x, float* y, int rows, int cols) {{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = 0.0f;
    for (int c = 0; c < cols; ++c) m += x[r * cols + c];
    {last}
}}
extern "C" int launch(const float* x, float* y, int rows, int cols) {{
    k<<<(rows + 63) / 64, 64>>>(x, y, rows, cols);
    return 0;
}}
"""


def test_row_elements_applies_to_a_plain_row_kernel_and_keeps_its_launch_arguments():
    source = _ROW.format(last="for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] - m;")
    variants = get_operator("row_elements").func(source).variants
    assert len(variants) == 1
    assert "k<<<((rows + 63) / 64) * (cols), 64>>>(x, y, rows, cols);" in variants[0].source


def test_row_elements_leaves_loops_that_carry_values_or_jump_and_cooperative_kernels():
    carried = "for (int c = 0; c < cols; ++c) { m = m * 0.5f; y[r * cols + c] = m; }"
    assert "carries a value" in not_applicable_source("row_elements",
                                                      _ROW.format(last=carried))
    jumps = "for (int c = 0; c < cols; ++c) { if (x[c] < 0.0f) break; y[r * cols + c] = m; }"
    assert "may not jump" in not_applicable_source("row_elements", _ROW.format(last=jumps))
    no_store = "for (int c = 0; c < cols; ++c) m += 1.0f;"
    assert "must store" in not_applicable_source("row_elements", _ROW.format(last=no_store))
    barrier = "__syncthreads();\n    for (int c = 0; c < cols; ++c) y[r * cols + c] = m;"
    assert "cooperates" in not_applicable_source("row_elements", _ROW.format(last=barrier))
    # a block-per-row kernel is not in the shape at all
    assert "does not start" in not_applicable("row_elements", "softmax", "block_smem_tree")
    # gemv's row loop accumulates and stores after it: no column loop ends the kernel
    assert not get_operator("row_elements").func(program("gemv", "reference")[0]).variants
