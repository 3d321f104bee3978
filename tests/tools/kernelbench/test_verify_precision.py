"""The precision check end to end on the CPU path: float32 problems computed in float16 pass
KernelBench's flat 1e-2 and fail as ``precision``; a problem that allows float16 passes them.

Honest candidates are checked by ``test_verify_cpu.py`` (their verdicts carry a precision
ratio); the rule itself is unit-tested on numpy arrays in ``test_precision.py``. Each
candidate here is one extension build (~20 s on the 2-core machine)."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench.precision import PRECISION_FACTOR  # noqa: E402
from structcover.tools.kernelbench.problem import resolve_problem  # noqa: E402
from structcover.tools.kernelbench.verify import verify_kernelbench  # noqa: E402

pytestmark = pytest.mark.kernelbench
DATA = Path(__file__).parents[2] / "data" / "kernelbench"


def _check(candidate: str, problem: str | Path):
    return verify_kernelbench((DATA / "candidates" / candidate).read_text(),
                              resolve_problem(problem, DATA / "problems"), backend="cpu", seed=1)


@pytest.mark.parametrize(("candidate", "problem"), [
    # GEMM: an honest float32 product cut to float16's mantissa by a bit mask (no half type)
    ("precision_matmul_mantissa_mask.py", "5"),
    # reduction accumulated in __half
    ("precision_row_mean_half.py", "9"),
    # elementwise in __half
    ("precision_elementwise_mul_half.py", "1"),
    # GEMM from half tiles with float accumulation; softmax with hexp
    pytest.param("precision_matmul_half_inputs.py", "5", marks=pytest.mark.slow),
    pytest.param("precision_row_softmax_half.py", "3", marks=pytest.mark.slow)])
def test_float16_work_on_a_float32_problem_fails_as_precision(candidate, problem):
    verdict = _check(candidate, problem)
    assert verdict.equivalent is False and verdict.failure == "precision", verdict.detail
    # "precision" is judged only once every trial passed the flat atol/rtol: before the
    # precision check, this candidate was accepted.
    assert verdict.precision_ratio is not None and verdict.precision_ratio > 4 * PRECISION_FACTOR
    assert "output 0: error" in verdict.detail and "float16" in verdict.detail
    assert verdict.tolerance_rule.startswith("precision:")
    # The response probe confirms it: the outputs ignore small nudges of the inputs.
    assert "did not follow nudges" in verdict.detail


def test_a_float32_approximation_of_the_function_passes():
    # tanh-form GELU: ~2000x the reference's own error, like a float16 computation, but its
    # outputs follow small input nudges (precision_probe.py): the tolerance decides, and passes.
    verdict = _check("gelu_tanh_cuda.py", "10")
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"
    assert verdict.precision_ratio is not None and verdict.precision_ratio > 4 * PRECISION_FACTOR
    assert any("follows nudges" in n for n in verdict.notes), verdict.notes


def test_a_problem_that_allows_float16_accepts_it(tmp_path):
    problem = tmp_path / "1_elementwise_mul_fp16_ok.py"
    problem.write_text((DATA / "problems" / "1_elementwise_mul.py").read_text()
                       + '\nMIN_PRECISION = "float16"\n')
    verdict = _check("precision_elementwise_mul_half.py", problem)
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"
    assert verdict.precision_ratio is not None and verdict.precision_ratio < 1
    assert "u(float16)/u(dtype)" in verdict.tolerance_rule
