"""A KernelBench solution whose launcher names its dim3s ``blockDim``/``gridDim`` (as public
solutions do) builds and passes on the CPU path; the names only change host code."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench.problem import resolve_problem  # noqa: E402
from structcover.tools.kernelbench.verify import verify_kernelbench  # noqa: E402

pytestmark = pytest.mark.kernelbench
DATA = Path(__file__).parents[2] / "data" / "kernelbench"


def _host_named(source: str) -> str:
    out = source.replace("dim3 block(TILE, TILE);", "dim3 blockDim(TILE, TILE);")
    out = out.replace("dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);",
                      "dim3 gridDim((N + blockDim.x - 1) / blockDim.x, (M + TILE - 1) / TILE);")
    out = out.replace("matmul_tiled<<<grid, block>>>", "matmul_tiled<<<gridDim, blockDim>>>")
    # The C++ prototype's parameter names are host names too.
    out = out.replace('cpp_sources="torch::Tensor matmul(torch::Tensor A, torch::Tensor B);"',
                      'cpp_sources="torch::Tensor matmul(torch::Tensor blockDim, torch::Tensor gridDim);"')
    assert out.count("blockDim") == source.count("blockDim") + 5, "the fixture changed"
    return out


@pytest.mark.slow
def test_launcher_locals_named_like_builtins_pass():
    src = _host_named((DATA / "candidates" / "matmul_cuda.py").read_text())
    verdict = verify_kernelbench(src, resolve_problem("5", DATA / "problems"), backend="cpu", seed=1)
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail} {verdict.compile_log}"
    assert verdict.compiled is True
