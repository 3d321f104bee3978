"""``structcover verify CAND.py --task PROBLEM``: KernelBench candidates from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app

runner = CliRunner()
DATA = Path(__file__).parents[1] / "data" / "kernelbench"
CAND = DATA / "candidates"


@pytest.mark.kernelbench
def test_verify_by_problem_file_and_by_id():
    pytest.importorskip("torch")
    res = runner.invoke(app, ["verify", str(CAND / "elementwise_mul_torch.py"), "--task",
                              str(DATA / "problems" / "1_elementwise_mul.py"), "--backend", "cpu",
                              "--seed", "5", "--json"])
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.stdout)
    assert verdict["equivalent"] is True and verdict["backend"] == "cpu"
    assert verdict["task_id"] == "1_elementwise_mul" and verdict["seed"] == 5
    res = runner.invoke(app, ["verify", str(CAND / "elementwise_mul_cached_py.py"), "--task", "1",
                              "--problems", str(DATA / "problems"), "--backend", "cpu",
                              "--seed", "5"])
    assert res.exit_code == 1
    assert "cached-output" in res.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--task", "99", "--problems", str(DATA / "problems")], "error: problem 99: no file in"),
    (["--task", "1"], "pass --problems DIR"),
    (["--task", "1", "--problems", "/nonexistent/kb"], "error: --problems /nonexistent/kb: no "
                                                       "such directory"),
    (["--task", str(DATA / "problems" / "1_elementwise_mul.py"), "--backend", "compile-only"],
     "error: --backend compile-only: a KernelBench task runs on auto, gpu or cpu"),
    (["--task", "1.py", "--executor", "ray"], "error: --executor: not used by KernelBench tasks"),
])
def test_bad_input_is_one_error_line(args, message):
    res = runner.invoke(app, ["verify", str(CAND / "elementwise_mul_torch.py"), *args])
    assert res.exit_code == 2
    assert message in " ".join(res.output.split())
    assert res.output.count("error:") == 1


def test_missing_candidate_file():
    res = runner.invoke(app, ["verify", "/nonexistent/cand.py", "--task", "1"])
    assert res.exit_code == 2 and "error: candidate /nonexistent/cand.py: no such file" in res.output


@pytest.mark.parametrize(("candidate", "code", "flag"), [
    ("matmul_torch_heavy.py", 1, "no_library_delegation"),  # torch.matmul does the work
    ("matmul_cuda.py", 0, None),  # `ext.matmul(...)` is the candidate's own kernel
    ("elementwise_mul_cuda.py", 0, None),
])
def test_check_flags_the_heavy_op_in_torch(candidate, code, flag):
    res = runner.invoke(app, ["check", str(CAND / candidate), "--json"])
    assert res.exit_code == code, res.output
    failed = [c["name"] for c in json.loads(res.stdout)["checks"]
              if not c["ok"] and c["severity"] == "hard"]
    assert failed == ([flag] if flag else [])


def test_check_tensor_clone_in_cpp_is_not_a_thread():
    src = (CAND / "elementwise_mul_cuda.py").read_text().replace(
        "return out;", "return out.clone();")
    from structcover.tools.verify.hacking import run_checks

    assert all(r.ok for r in run_checks(src) if r.name == "no_threads")
    spawn = src.replace("return out.clone();", "clone(nullptr, nullptr, 0, nullptr); return out;")
    assert not next(r for r in run_checks(spawn) if r.name == "no_threads").ok
