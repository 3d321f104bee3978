"""KernelBench candidates: tensor options and allocations in the extension (``torch::dtype``,
``torch::ones``, ``torch::full``) are not delegation; torch compute reached through an alias,
a namespace alias, a tensor method on an allocation or the C++ sources still is."""

from pathlib import Path

import pytest

from structcover.tools.verify.hacking_py import run_python_checks

DATA = Path(__file__).parents[2] / "data" / "kernelbench"
MATMUL = (DATA / "candidates" / "matmul_cuda.py").read_text()
ALLOC = "auto C = torch::empty({M, N}, A.options());"


def _swap(old: str, new: str, source: str = MATMUL) -> str:
    assert old in source, "the fixture changed"
    return source.replace(old, new)


#: Public-solution spellings of the output allocation.
OPTIONS = _swap(ALLOC, "auto opts = torch::dtype(torch::kFloat32).device(A.device());\n"
                       "    auto C = torch::ones({M, N}, opts) * 0;\n"
                       "    C = torch::full({M, N}, 0.0f, torch::TensorOptions().dtype(torch::kFloat));")

ATTACKS = {
    "function alias": _swap(ALLOC, "auto f = torch::matmul; auto C = torch::empty({M, N}, A.options());\n"
                                   "    return f(A, B);"),
    "namespace alias": _swap(ALLOC, "namespace T = torch; auto C = torch::empty({M, N}, A.options());\n"
                                    "    return T::matmul(A, B);"),
    "method on an allocation": _swap(ALLOC, "auto C = torch::zeros({M, N}, A.options());\n"
                                            "    return C.addmm_(A, B);"),
    "options-looking chain": _swap(ALLOC, "auto C = torch::empty({M, N}, torch::dtype(torch::kFloat32)"
                                          ".device(A.device())).copy_(A.mm(B));\n    return C;"),
    "nested namespace": _swap(ALLOC, "auto C = at::native::mm(A, B);\n    return C;"),
    "argument-dependent lookup": _swap(ALLOC, "auto C = mm(A, B);\n    return C;"),
    # The C++ sources carry no `__global__` or `#include`, so they look like no CUDA at all.
    "in cpp_sources": _swap(
        'cpp_sources="torch::Tensor matmul(torch::Tensor A, torch::Tensor B);"',
        'cpp_sources="torch::Tensor matmul(torch::Tensor A, torch::Tensor B);\\n'
        'torch::Tensor mm2(torch::Tensor A, torch::Tensor B) { return torch::matmul(A, B); }"',
        _swap('functions=["matmul"]', 'functions=["matmul", "mm2"]',
              _swap("return ext.matmul(A.contiguous(), B.contiguous())", "return ext.mm2(A, B)"))),
}


def _delegation(source: str):
    return {r.name: r for r in run_python_checks(source)}["no_library_delegation"]


def test_options_and_allocations_are_not_delegation():
    result = _delegation(OPTIONS)
    assert result.ok, result.reason


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_torch_compute_behind_an_alias_or_options_is_caught(name):
    result = _delegation(ATTACKS[name])
    assert not result.ok, f"{name}: not caught"
    assert "torch op" in result.reason, result.reason


@pytest.mark.kernelbench
def test_attack_is_rejected_before_anything_runs(monkeypatch):
    pytest.importorskip("torch")
    from structcover.tools.kernelbench import verify as kb_verify
    from structcover.tools.kernelbench.problem import resolve_problem

    def no_child(*args, **kwargs):
        raise AssertionError("a statically rejected candidate must not run")

    monkeypatch.setattr(kb_verify, "run_child", no_child)
    verdict = kb_verify.verify_kernelbench(ATTACKS["in cpp_sources"], resolve_problem("5", DATA / "problems"),
                                           backend="cpu")
    assert verdict.failure == "hacking" and "no_library_delegation" in verdict.hacking_flags
    assert "torch::matmul" in verdict.detail


@pytest.mark.kernelbench
@pytest.mark.slow
def test_options_candidate_builds_and_passes():
    pytest.importorskip("torch")
    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench

    verdict = verify_kernelbench(OPTIONS, resolve_problem("5", DATA / "problems"), backend="cpu", seed=1)
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail} {verdict.compile_log}"
    assert set(verdict.hacking_flags) <= {"launch_uses_given_stream"}
