"""Triton operators' variants verified equivalent on Triton's CPU interpreter (the sandboxed
``verify_kernelbench`` path), one variant per operator, and a broken variant that is not.

Each verification costs tens of seconds on the shared CPU, so there is one per operator; the
launch options (no effect in the interpreter) share one chained variant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.tools.kernelbench.problem import load_problem
from structcover.tools.kernelbench.verify import verify_kernelbench
from structcover.tools.mutations.embedded import run_operator

pytestmark = [pytest.mark.kernelbench, pytest.mark.slow]

DATA = Path(__file__).parents[2] / "data" / "triton_mutation"

#: (candidate, problem, operator chain, index of the variant taken at each step)
CASES = {
    "block_size": ("row_sum_fp16.py", "p_row_sum.py", [("triton_block_size", 1)]),
    "fp32_accumulate": ("matmul_fp16acc.py", "p_matmul.py", [("triton_fp32_accumulate", 0)]),
    "grouped_ordering": ("matmul_fp16acc.py", "p_matmul.py", [("triton_grouped_ordering", 0)]),
    "fuse_epilogue": ("add_relu.py", "p_add_relu.py", [("triton_fuse_epilogue", 0)]),
    "mask_vectorize": ("add_relu_scalar.py", "p_add_relu_small.py",
                       [("triton_mask_vectorize", 0)]),
    "warps_stages": ("row_sum_fp16.py", "p_row_sum.py",
                     [("triton_num_warps", 1), ("triton_num_stages", 0)]),
}


def _variant(candidate: str, chain: list[tuple[str, int]]) -> str:
    text = (DATA / candidate).read_text()
    for op, index in chain:
        result = run_operator(op, text)
        assert len(result.variants) > index, (op, result.not_applicable)
        text = result.variants[index].source
    return text


@pytest.mark.parametrize("case", sorted(CASES))
def test_variant_is_equivalent_on_the_interpreter(case: str) -> None:
    candidate, problem, chain = CASES[case]
    verdict = verify_kernelbench(_variant(candidate, chain), load_problem(DATA / problem),
                                 backend="cpu")
    assert verdict.equivalent is True, (verdict.failure, verdict.detail)
    assert verdict.backend == "cpu"


def test_a_broken_grouped_ordering_is_not_equivalent() -> None:
    """The tile index mapping with ``%`` for ``//`` repeats some tiles and skips others: the
    verifier must see it (so the equivalence test above can fail)."""
    good = _variant("matmul_fp16acc.py", [("triton_grouped_ordering", 0)])
    line = "    pid_n = (pid % num_pid_in_group) // group_size_m\n"
    assert line in good
    broken = good.replace(line, line.replace("//", "%"))
    verdict = verify_kernelbench(broken, load_problem(DATA / "p_matmul.py"), backend="cpu")
    assert verdict.equivalent is False, (verdict.failure, verdict.detail)
