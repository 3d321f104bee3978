"""verify_kernelbench on a real GPU (skipped without one; scripts/gpu_check.sh runs it)."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench.problem import resolve_problem  # noqa: E402
from structcover.tools.kernelbench.verify import verify_kernelbench  # noqa: E402

pytestmark = [pytest.mark.kernelbench, pytest.mark.gpu]
DATA = Path(__file__).parents[2] / "data" / "kernelbench"


@pytest.fixture(scope="module", autouse=True)
def _needs_gpu():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


def _check(candidate: str, problem: str):
    return verify_kernelbench((DATA / "candidates" / candidate).read_text(),
                              resolve_problem(problem, DATA / "problems"), backend="gpu", seed=2)


def test_correct_candidate_passes_timed_with_a_speedup():
    verdict = _check("elementwise_mul_cuda.py", "1")
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"
    assert verdict.backend == "gpu" and verdict.speedup is not None and verdict.speedup > 0
    assert verdict.timing is not None and verdict.timing.trials >= 1


def test_side_stream_is_caught_on_the_device():
    verdict = _check("elementwise_mul_side_stream.py", "1")
    assert verdict.equivalent is False and verdict.failure == "side-stream", verdict.detail
