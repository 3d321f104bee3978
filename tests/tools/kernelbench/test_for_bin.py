"""KernelBench tasks in verify_for_bin: problem specs, the embedded-CUDA compile stage, Python
anti-hacking, and equivalence routed to verify_kernelbench on the CPU path (faked here; the
campaign test runs the real one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from structcover.schema import Verdict
from structcover.tools.coverage.archive import build_archive
from structcover.tools.features.extract import extract_features
from structcover.tools.kernelbench.for_bin import problem_specs
from structcover.tools.verify.pipeline import verify_for_bin

DATA = Path(__file__).parents[2] / "data" / "kernelbench_mutation"

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


rows = 16
cols = 100


def get_inputs():
    return [torch.randn(rows, cols)]
'''


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    folder = tmp_path / "problems" / "level1"
    folder.mkdir(parents=True)
    (folder / "23_Softmax.py").write_text(PROBLEM)
    return tmp_path / "problems"


def test_problem_specs_resolve_ids_and_name_the_rest(problems: Path) -> None:
    specs, notes = problem_specs(["23", "level1/23_Softmax", "99_Missing"], problems)
    assert sorted(specs) == ["23", "level1/23_Softmax"]
    spec = specs["23"]
    assert spec.kind == "kernelbench" and spec.task_id == "23"
    assert Path(spec.problem or "").name == "23_Softmax.py" and spec.sizes == {"rows": 16,
                                                                              "cols": 100}
    assert len(notes) == 1 and "99_Missing" in notes[0]


class _FakeVerify:
    def __init__(self, equivalent: bool | None) -> None:
        self.equivalent = equivalent
        self.calls: list[dict[str, Any]] = []

    def __call__(self, text: str, problem: Any, **kw: Any) -> Verdict:
        self.calls.append({"text": text, "problem": problem, **kw})
        return Verdict(program_id="p", task_id=problem.id, backend=kw["backend"],
                       equivalent=self.equivalent,
                       failure=None if self.equivalent else "mismatch",
                       detail="" if self.equivalent else "3 of 1600 outputs differ")


def _archive(source: str) -> tuple[Any, str]:
    """A two-axis archive over ``source``'s features, and the label of its bin."""
    row = dict(extract_features(source).values)
    archive = build_archive(pd.DataFrame([row, row]), ["pattern.global_access", "pattern.reuse"])
    return archive, archive.labels()[int(archive.index(pd.DataFrame([row]))[0])]


@pytest.mark.nvcc
@pytest.mark.parametrize("equivalent", [True, False])
def test_a_kernelbench_task_is_verified_by_the_kernelbench_protocol(
        problems: Path, monkeypatch: pytest.MonkeyPatch, equivalent: bool) -> None:
    import structcover.tools.kernelbench.verify as kv

    fake = _FakeVerify(equivalent)
    monkeypatch.setattr(kv, "verify_kernelbench", fake)
    source = (DATA / "softmax_row.py").read_text()
    spec = problem_specs(["23"], problems)[0]["23"]
    archive, label = _archive(source)
    verdict = verify_for_bin(source, spec, label, archive, backend=None)
    assert [s.stage for s in verdict.stages][:3] == ["compile", "structure", "hacking"]
    assert verdict.compile_stats, "the embedded kernel was compiled"
    assert fake.calls and fake.calls[0]["backend"] == "cpu"
    assert fake.calls[0]["text"] == source
    assert fake.calls[0]["problem"].path.name == "23_Softmax.py"
    assert verdict.passed is equivalent
    if not equivalent:
        assert verdict.stage_failed == "equivalence" and "3 of 1600" in verdict.feedback


@pytest.mark.nvcc
def test_a_kernel_that_does_not_compile_fails_the_compile_stage(problems: Path) -> None:
    source = (DATA / "softmax_row.py").read_text().replace("m = sdata[0];", "m = sdata[0] +;")
    spec = problem_specs(["23"], problems)[0]["23"]
    archive, label = _archive((DATA / "softmax_row.py").read_text())
    verdict = verify_for_bin(source, spec, label, archive, backend=None)
    assert verdict.stage_failed == "compile"
    assert "softmax_row.cuda_sources[0]" in verdict.feedback


def test_a_torch_fallback_is_rejected_before_it_runs(problems: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import structcover.tools.kernelbench.for_bin as fb

    monkeypatch.setattr(fb, "_compile", lambda source, verdict: None)
    source = (DATA / "softmax_row.py").read_text().replace(
        "return self.ext.softmax_cuda(*args)",
        "try:\n            return self.ext.softmax_cuda(*args)\n        except RuntimeError:\n"
        "            return torch.softmax(args[0], dim=1)")
    spec = problem_specs(["23"], problems)[0]["23"]
    archive, label = _archive((DATA / "softmax_row.py").read_text())
    verdict = verify_for_bin(source, spec, label, archive, backend=None)
    assert verdict.stage_failed == "hacking", verdict.feedback
    assert "anti-hacking" in verdict.feedback and verdict.equivalence is None
