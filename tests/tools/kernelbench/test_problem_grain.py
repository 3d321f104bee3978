"""Problem.shrunk keeps the power-of-two divisibility of the original sizes (up to 64).

Regression: a public Triton matmul (KernelBench level 1, 2_Standard_matrix_multiplication_,
judged correct at M, K, N = 2048, 8192, 4096) masks only K, relying on M and N being multiples
of its 64-wide blocks; on the sizes the old shrink chose (74, 295, 147) it read out of bounds.
"""

from __future__ import annotations

from pathlib import Path

from structcover.tools.kernelbench.problem import load_problem

_MATMUL = '''import torch
class Model(torch.nn.Module):
    def forward(self, A, B):
        return A @ B
M = {m}
K = {k}
N = {n}
def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]
'''


def _problem(tmp_path: Path, m: int, k: int, n: int):
    f = tmp_path / "mm.py"
    f.write_text(_MATMUL.format(m=m, k=k, n=n))
    return load_problem(f)


def test_power_of_two_sizes_stay_multiples_of_64(tmp_path: Path) -> None:
    p = _problem(tmp_path, 2048, 8192, 4096)
    sizes = p.shrunk(2.0 ** 16)
    assert all(v % 64 == 0 for v in sizes.values()), sizes
    assert p.work(sizes) <= 2.0 ** 16
    assert all(sizes[k] < v for k, v in p.sizes.items())


def test_a_size_keeps_only_the_power_of_two_its_original_had(tmp_path: Path) -> None:
    # 3104 = 32 * 97 keeps 32 (not 64); odd sizes are plainly rounded.
    p = _problem(tmp_path, 32 * 97, 8205, 2949)
    sizes = p.shrunk(2.0 ** 16)
    assert sizes["M"] % 32 == 0 and sizes["M"] % 64 != 0 and p.work(sizes) <= 2.0 ** 16
    # K and N scale by the common factor, unrounded to any multiple: their ratio holds.
    assert abs(sizes["K"] / sizes["N"] - 8205 / 2949) < 0.02


def test_grain_relaxes_when_multiples_of_64_cannot_fit(tmp_path: Path) -> None:
    # 2 * 64 * 64 = 8192 elements exceed 2048: the grain halves to 32 and the budget holds.
    p = _problem(tmp_path, 1024, 1024, 1024)
    sizes = p.shrunk(2.0 ** 11)
    assert p.work(sizes) <= 2.0 ** 11
    assert sizes == {"M": 32, "K": 32, "N": 32}
