"""Triton candidates on the CPU path: Triton's interpreter in the jailed child.

The fast tests read the static parts (`triton_path`, the anti-hacking checks); the
`kernelbench` ones run verify_kernelbench end to end (one jailed candidate child each, ~10 s
wall on the loaded 2-core machine; references are cached per problem, sizes and seed)."""

from pathlib import Path

import pytest

from structcover.tools.kernelbench.triton_path import child_env, unsupported_constructs, uses_triton

DATA = Path(__file__).parents[2] / "data" / "kernelbench"
TRITON = DATA / "triton"


def test_interpreter_env_only_on_the_cpu_path():
    cpu, gpu = child_env("cpu"), child_env("cuda")
    assert cpu["TRITON_INTERPRET"] == "1"
    assert "TRITON_INTERPRET" not in gpu
    for env in (cpu, gpu):  # every Triton folder inside the jail's private /tmp
        assert all(v.startswith("/tmp/") for k, v in env.items() if k.endswith(("DIR", "HOME")))


def test_uses_triton_reads_imports_only():
    assert uses_triton((TRITON / "elementwise_mul_triton.py").read_text())
    assert uses_triton("from triton import language as tl\n")
    assert not uses_triton("s = 'import triton'\n")
    assert not uses_triton((DATA / "candidates" / "elementwise_mul_cuda.py").read_text())


def test_unsupported_constructs_are_named_with_their_line():
    text = ("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n"
            "    y = tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=tl.int32,"
            " is_pure=True, pack=1)\n")
    found = unsupported_constructs(text)
    assert found == ["line 6: tl.inline_asm_elementwise (inline PTX)"]
    assert unsupported_constructs((TRITON / "matmul_triton.py").read_text()) == []


# --- end to end (jailed children) -------------------------------------------------------------

def check(candidate: str, problem: str, **kw):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench

    return verify_kernelbench((TRITON / candidate).read_text(),
                              resolve_problem(problem, DATA / "problems"), backend="cpu",
                              seed=kw.pop("seed", 1), **kw)


@pytest.mark.kernelbench
@pytest.mark.parametrize(("candidate", "problem"), [
    ("elementwise_mul_triton.py", "1"),   # masked 1-D kernel, grid lambda, triton.cdiv
    ("matmul_triton.py", "5"),            # @triton.autotune (first config), tl.dot, K loop
])
def test_correct_triton_candidates_are_equivalent(candidate, problem):
    verdict = check(candidate, problem)
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"
    assert verdict.backend == "cpu" and verdict.hacking_flags == []
    assert any("interpreter" in n for n in verdict.notes)


@pytest.mark.kernelbench
def test_planted_off_by_one_mask_is_out_of_bounds():
    verdict = check("elementwise_mul_off_by_one.py", "1")
    assert verdict.equivalent is False
    assert verdict.failure == "out-of-bounds", verdict.detail
    assert "mul_kernel" in verdict.detail


# --- anti-hacking: the attack first (tests/data/kernelbench/triton/hack_*.py), then the check ---

@pytest.mark.parametrize(("candidate", "check", "why"), [
    ("hack_helper_delegation.py", "no_library_delegation", "called from forward"),
    ("hack_decoy_unlaunched.py", "no_library_delegation", "never launched"),
    ("hack_cached_output.py", "no_cached_outputs", "_CACHE"),
    ("hack_fallback.py", "no_fallback", "try block"),
    ("hack_timing.py", "no_timing_tampering", "triton.testing.do_bench"),
    ("hack_thread.py", "no_threads", "threading"),
])
def test_static_triton_hacks_are_named(candidate, check, why):
    from structcover.tools.verify.hacking_py import run_python_checks

    failed = {r.name: r.reason for r in run_python_checks((TRITON / candidate).read_text())
              if not r.ok}
    assert check in failed and why in failed[check], failed


def test_a_decoy_kernel_does_not_count_as_defining_one():
    from structcover.tools.verify.hacking_py import run_python_checks

    flags = {r.name for r in run_python_checks((TRITON / "hack_decoy_unlaunched.py").read_text())
             if not r.ok}
    assert "defines_kernel" in flags


@pytest.mark.parametrize("candidate", ["elementwise_mul_triton.py", "matmul_triton.py",
                                       "elementwise_mul_off_by_one.py"])
def test_honest_triton_candidates_are_not_flagged(candidate):
    from structcover.tools.verify.hacking_py import run_python_checks

    assert [r.name for r in run_python_checks((TRITON / candidate).read_text()) if not r.ok] == []


@pytest.mark.kernelbench
@pytest.mark.parametrize("candidate", ["hack_helper_delegation.py", "hack_decoy_unlaunched.py",
                                       "hack_cached_output.py", "hack_fallback.py",
                                       "hack_timing.py", "hack_thread.py"])
def test_static_triton_hacks_are_rejected_unrun(candidate):
    # Rejected before any child starts (no jail, no torch import): fast.
    problem = "5" if "matmul" in (TRITON / candidate).read_text() else "1"
    verdict = check(candidate, problem)
    assert verdict.equivalent is False and verdict.failure == "hacking", verdict.detail


@pytest.mark.kernelbench
def test_decoy_behind_a_dead_branch_is_caught_at_run_time():
    verdict = check("hack_decoy_dead_branch.py", "1")
    assert verdict.equivalent is False and verdict.failure == "hacking", verdict.detail
    assert "launched no Triton kernel" in verdict.detail
