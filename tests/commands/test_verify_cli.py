"""``structcover verify``: task/reference resolution, the JSON verdict naming its backend,
exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.verify import select
from structcover.tools.verify.backend import RunResult

runner = CliRunner()

TASK = """task_id: twice
sizes: {N: 64}
args:
  - {name: x, shape: [N]}
  - {name: y, shape: [N], role: output}
  - {name: n, kind: scalar, value: N}
reference: ref.cu
"""
PROGRAM = """#include <cuda_runtime.h>
// fake: {body}
__global__ void k(const float* x, float* y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {{
    k<<<(n + 127) / 128, 128, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}}
"""


class FakeBackend:
    """Executes the numpy statement in the program's ``// fake:`` line."""

    name = "cpu"

    def available(self):
        return True, ""

    def run(self, source, spec, inputs, *, sizes=None, timeout_s=60.0):
        body = next(line.split("fake:", 1)[1].strip() for line in source.splitlines()
                    if "fake:" in line)
        exec(body, {"np": np, **inputs})
        return RunResult(status="ok", backend="cpu",
                         outputs={"y": inputs["y"]}, inputs_after={"x": inputs["x"]})


@pytest.fixture
def task_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(select, "get_backend", lambda kind, settings=None: FakeBackend())
    (tmp_path / "task.yaml").write_text(TASK)
    (tmp_path / "ref.cu").write_text(PROGRAM.format(body="y[:] = 2 * x"))
    return tmp_path


def test_equivalent_candidate_json(task_dir):
    cand = task_dir / "cand.cu"
    cand.write_text(PROGRAM.format(body="y[:] = x + x"))
    res = runner.invoke(app, ["verify", str(cand), "--task", str(task_dir / "task.yaml"),
                              "--json", "--trials", "2"])
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.output)
    assert verdict["equivalent"] is True and verdict["backend"] == "cpu"
    assert verdict["task_id"] == "twice"


def test_wrong_candidate_exits_1_with_first_mismatch(task_dir):
    cand = task_dir / "cand.cu"
    cand.write_text(PROGRAM.format(body="y[:] = 2 * x; y[5] = 0"))
    res = runner.invoke(app, ["verify", str(cand), "--task", str(task_dir / "task.yaml"),
                              "--json"])
    assert res.exit_code == 1
    verdict = json.loads(res.output)
    assert verdict["equivalent"] is False and verdict["first_mismatch"] == [5]


def test_explicit_reference_and_table_output(task_dir):
    other = task_dir / "other_ref.cu"
    other.write_text(PROGRAM.format(body="y[:] = 3 * x"))
    cand = task_dir / "cand.cu"
    cand.write_text(PROGRAM.format(body="y[:] = x * 3"))
    res = runner.invoke(app, ["verify", str(cand), "--task", str(task_dir / "task.yaml"),
                              "--reference", str(other)])
    assert res.exit_code == 0, res.output
    assert "equivalent" in res.output and "True" in res.output


def test_missing_inputs_are_clear_errors(task_dir):
    cand = task_dir / "cand.cu"
    cand.write_text(PROGRAM.format(body="y[:] = 2 * x"))
    res = runner.invoke(app, ["verify", str(task_dir / "nope.cu"), "--task", "x.yaml"])
    assert res.exit_code == 2 and "nope.cu" in res.output
    res = runner.invoke(app, ["verify", str(cand), "--task", "no-such-task-id"])
    assert res.exit_code == 2 and "no-such-task-id" in res.output
    res = runner.invoke(app, ["verify", str(cand), "--task", str(task_dir / "task.yaml"),
                              "--backend", "tpu"])
    assert res.exit_code == 2 and "tpu" in res.output


def test_corpus_task_id_uses_corpus_reference(monkeypatch, tmp_path):
    from structcover.tools.data.corpus import load_corpus

    families = load_corpus()
    if not families:
        pytest.skip("sample corpus not present")
    family = families[0]
    seen = {}

    class Recorder(FakeBackend):
        def run(self, source, spec, inputs, **kw):
            seen.setdefault("sources", []).append(source)
            return RunResult(status="ok", backend="cpu",
                             outputs={a.name: np.zeros_like(inputs[a.name])
                                      for a in spec.tensors if a.role != "input"})

    monkeypatch.setattr(select, "get_backend", lambda kind, settings=None: Recorder())
    cand = tmp_path / "cand.cu"
    cand.write_text(family.variants[0].source)
    res = runner.invoke(app, ["verify", str(cand), "--task", family.tasks[0].task_id,
                              "--json", "--trials", "1"])
    assert json.loads(res.output)["task_id"] == family.tasks[0].task_id
    assert family.reference.source in seen["sources"]


@pytest.mark.nvcc
def test_compile_only_backend_reports_compiled_not_equivalent(tmp_path, monkeypatch):
    (tmp_path / "task.yaml").write_text(TASK)
    (tmp_path / "ref.cu").write_text(PROGRAM.format(body="-"))
    cand = tmp_path / "cand.cu"
    cand.write_text(PROGRAM.format(body="-"))
    monkeypatch.setenv("STRUCTCOVER_COMPILER__CACHE_DIR", str(tmp_path / "cc"))
    res = runner.invoke(app, ["verify", str(cand), "--task", str(tmp_path / "task.yaml"),
                              "--backend", "compile-only", "--json"])
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.output)
    assert verdict["backend"] == "compile-only" and verdict["compiled"] is True
    assert verdict["equivalent"] is None
    broken = tmp_path / "broken.cu"
    broken.write_text(PROGRAM.format(body="-").replace("2.0f * x[i]", "2.0f * nothing[i]"))
    res = runner.invoke(app, ["verify", str(broken), "--task", str(tmp_path / "task.yaml"),
                              "--backend", "compile-only", "--json"])
    assert res.exit_code == 1 and json.loads(res.output)["compiled"] is False


def test_real_cpu_backend_on_a_corpus_variant():
    from structcover.tools.data.corpus import find_task
    from structcover.tools.verify.select import CpuBackend

    ok, why = CpuBackend().available()
    if not ok:
        pytest.skip(f"CPU emulator unavailable: {why}")
    spec, family = find_task("saxpy")
    variant = family.variants[0]
    res = runner.invoke(app, ["verify", str(variant.path), "--task", "saxpy", "--backend", "cpu",
                              "--trials", "1", "--json"])
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.output)
    assert verdict["backend"] == "cpu" and verdict["equivalent"] is True
    assert "network namespace" in verdict["detail"] or "network NOT isolated" in verdict["detail"]
