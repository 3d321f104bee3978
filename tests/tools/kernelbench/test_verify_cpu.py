"""verify_kernelbench on the CPU path, end to end in the jail: correct candidates pass, each
planted wrong one fails with its reason.

Candidates with ``load_inline`` CUDA need the CPU extension builder (``cpu_build``); they skip
where it is missing. References are cached per test session (same problem, sizes, seed)."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench import verify as kb_verify  # noqa: E402
from structcover.tools.kernelbench.problem import resolve_problem  # noqa: E402
from structcover.tools.kernelbench.verify import verify_kernelbench  # noqa: E402

pytestmark = pytest.mark.kernelbench
DATA = Path(__file__).parents[2] / "data" / "kernelbench"


def _cpu_build_available() -> bool:
    try:
        from structcover.tools.kernelbench import cpu_build  # noqa: F401
    except ImportError:
        return False
    return True


needs_build = pytest.mark.skipif(not _cpu_build_available(),
                                 reason="the CPU extension builder (cpu_build) is not present")


def check(candidate: str, problem: str, **kw):
    return verify_kernelbench((DATA / "candidates" / candidate).read_text(),
                              resolve_problem(problem, DATA / "problems"), backend="cpu",
                              seed=kw.pop("seed", 1), **kw)


@pytest.mark.parametrize(("candidate", "problem"), [
    ("elementwise_mul_torch.py", "1"), ("fused_chain_torch.py", "2")])
def test_pure_torch_candidates_pass_flagged_as_kernel_free(candidate, problem):
    verdict = check(candidate, problem)
    assert verdict.equivalent is True, verdict.detail
    assert verdict.failure is None and verdict.backend == "cpu"
    assert verdict.hacking_flags == ["defines_kernel"]
    assert verdict.max_abs_error is not None and verdict.max_abs_error < 1e-5


@needs_build
@pytest.mark.parametrize(("candidate", "problem"), [
    # stream look-up and device guard shims; shared-memory reductions with barriers; 2-D tiles
    ("elementwise_mul_cuda.py", "1"), ("row_softmax_cuda.py", "3"), ("matmul_cuda.py", "5"),
    # one extension build each (~10 s on an idle core): the rest of the set as `slow`
    pytest.param("fused_chain_cuda.py", "2", marks=pytest.mark.slow),
    pytest.param("row_sum_cuda.py", "4", marks=pytest.mark.slow),
    pytest.param("layernorm_cuda.py", "7", marks=pytest.mark.slow)])
def test_correct_cuda_candidates_pass(candidate, problem):
    verdict = check(candidate, problem)
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"
    assert verdict.compiled is True
    # The precision check ran: float32 work within a few times the reference's own rounding.
    assert verdict.precision_ratio is not None and verdict.precision_ratio < 8
    # Warnings only (a launch on the default stream); no hard check failed.
    assert set(verdict.hacking_flags) <= {"launch_uses_given_stream"}


def test_output_cached_across_calls_fails_at_run_time():
    verdict = check("elementwise_mul_cached_py.py", "1")
    assert verdict.equivalent is False and verdict.failure == "cached-output"
    assert "trial 1 returned exactly trial 0's outputs" in verdict.detail


def test_cache_in_the_extension_is_rejected_unrun(monkeypatch):
    monkeypatch.setattr(kb_verify, "run_child", _no_child)
    verdict = check("elementwise_mul_cached_cpp.py", "1")
    assert verdict.failure == "hacking" and "no_cached_outputs" in verdict.hacking_flags
    assert "static local" in verdict.detail


def test_heavy_op_in_torch_is_rejected_unrun(monkeypatch):
    monkeypatch.setattr(kb_verify, "run_child", _no_child)
    verdict = check("matmul_torch_heavy.py", "5")
    assert verdict.equivalent is False and verdict.failure == "hacking"
    assert verdict.hacking_flags == ["no_library_delegation", "launch_uses_given_stream"]
    assert "torch.matmul" in verdict.detail


def test_kernel_text_built_at_run_time_is_unsupported_not_wrong(monkeypatch):
    monkeypatch.setattr(kb_verify, "run_child", _no_child)
    src = (DATA / "candidates" / "row_sum_cuda.py").read_text().replace(
        'cuda_sources=source', 'cuda_sources=source.replace("256", str(2 ** 8))')
    verdict = verify_kernelbench(src, resolve_problem("4", DATA / "problems"), backend="cpu")
    assert verdict.equivalent is None and verdict.failure == "unsupported"
    assert verdict.detail.startswith("unsupported: line ") and "`cuda_sources`" in verdict.detail


@needs_build
def test_what_the_emulator_cannot_run_is_unsupported_not_wrong(monkeypatch):
    monkeypatch.setattr(kb_verify, "run_child", _no_child)
    src = (DATA / "candidates" / "row_sum_cuda.py").read_text().replace(
        "part[t] = acc;", 'asm volatile("mov.f32 %0, %1;" : "=f"(part[t]) : "f"(acc));')
    verdict = verify_kernelbench(src, resolve_problem("4", DATA / "problems"), backend="cpu")
    assert verdict.equivalent is None and verdict.failure == "unsupported"
    assert verdict.detail.startswith("unsupported: inline PTX")


@needs_build
def test_race_fails_as_a_race():
    verdict = check("row_sum_race.py", "4")
    assert verdict.equivalent is False and verdict.failure == "race", verdict.detail


@needs_build
def test_skipped_tail_fails_as_unwritten_output():
    verdict = check("elementwise_mul_tail.py", "1")
    assert verdict.equivalent is False and verdict.failure == "unwritten-output"
    assert "the last 139 of 5003 output elements were never written" in verdict.detail


@needs_build
def test_hard_coded_size_fails_on_the_shrunk_problem():
    # A small budget keeps the emulated matmul short (the default one shrinks N to 181).
    verdict = check("matmul_hardcoded.py", "6", work_budget=2.0 ** 11)
    assert verdict.equivalent is False and verdict.failure == "shape-mismatch"
    assert "(1024, 1024)" in verdict.detail and "(32, 32)" in verdict.detail
    assert any("N 1024->32" in n for n in verdict.notes)


@needs_build
def test_uninitialised_output_read_fails_as_such():
    verdict = check("row_sum_uninit.py", "4")
    assert verdict.equivalent is False and verdict.failure == "uninitialised-read"
    assert "32 of 32 output elements are NaN" in verdict.detail


def _no_child(*args, **kwargs):
    raise AssertionError("a statically rejected candidate must not run")


def test_build_error_is_a_compile_error_with_the_log(monkeypatch):
    from structcover.tools.kernelbench import cpu_build

    def fail_build(ext, work_dir, **kw):
        raise cpu_build.ExtensionBuildError("cuda.cu:7:5: error: 'outt' was not declared")

    monkeypatch.setattr(cpu_build, "build_cpu_extension", fail_build)
    monkeypatch.setattr(kb_verify, "run_child", _no_child)
    verdict = check("elementwise_mul_cuda.py", "1")
    assert verdict.compiled is False and verdict.equivalent is False
    assert verdict.failure == "compile-error" and "'outt' was not declared" in verdict.compile_log
    assert "kb_mul" in verdict.detail


def test_a_failing_reference_is_not_the_candidates_fault(monkeypatch, tmp_path):
    from structcover.tools.kernelbench.sandbox import ChildOutcome

    monkeypatch.setenv("STRUCTCOVER_KERNELBENCH_CACHE", str(tmp_path))
    calls = []

    def reference_dies(job, work, out_dir, **kw):
        calls.append(job["mode"])
        return ChildOutcome(result={"status": "error", "failure": "crash",
                                    "detail": "NameError: name 'sizee' is not defined"})

    monkeypatch.setattr(kb_verify, "run_child", reference_dies)
    verdict = check("elementwise_mul_torch.py", "1", seed=12345)
    assert calls == ["reference"]  # the candidate never ran
    assert verdict.failure == "reference-failed" and verdict.equivalent is None
    assert "sizee" in verdict.detail


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_the_candidates_jail_never_holds_the_reference_outputs(monkeypatch, tmp_path, backend):
    import json
    import tempfile

    import numpy as np

    from structcover.tools.kernelbench.sandbox import ChildOutcome

    monkeypatch.setenv("STRUCTCOVER_KERNELBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kb_verify, "pick_backend", lambda b: backend)
    seen = {}

    def fake_child(job, work, out_dir, *, device, ro=(), timeout_s=0):
        out_dir.mkdir(parents=True, exist_ok=True)
        if job["mode"] == "reference":
            meta = [{"kind": "tensor", "dtype": "float32", "shape": [4]}]
            for t in range(job["trials"]):
                np.savez(out_dir / f"in_{t}.npz", a0=np.full(4, t, np.float32))
                np.savez(out_dir / f"out_{t}.npz", a0=np.full(4, 2 * t, np.float32))
            result = {"status": "ok", "trials": [{"inputs": meta, "outputs": meta}] * job["trials"],
                      "timing": {"median_ms": 2.0, "mean_ms": 2.0, "std_ms": 0.0, "trials": 1,
                                 "cv": 0.0} if job["time"] else None}
            (out_dir / "result.json").write_text(json.dumps(result))
            seen["ref"] = out_dir
            return ChildOutcome(result=result, folder=out_dir)
        visible = [Path(work), *map(Path, ro)]
        seen["visible"] = visible
        # Wherever the reference's outputs were published (the cache, or a timed run's own
        # folder), they exist now, while the candidate runs.
        seen["ref_outputs"] = [*(tmp_path / "cache").rglob("out_*.npz"),
                               *Path(tempfile.gettempdir()).glob("structcover-kbref-*/**/out_*.npz")]
        seen["inputs"] = sorted(p.name for p in Path(job["inputs_dir"]).iterdir())
        return ChildOutcome(result={"status": "error", "failure": "crash", "detail": "stop"})

    monkeypatch.setattr(kb_verify, "run_child", fake_child)
    check("elementwise_mul_torch.py", "1")
    ref_files = seen["ref_outputs"]
    assert ref_files, "the fake reference wrote its outputs"
    for out in ref_files:
        assert not any(out.resolve().is_relative_to(v.resolve()) for v in seen["visible"])
    assert seen["inputs"] == ["in_0.npz", "in_1.npz", "in_2.npz", "inputs.json"]
