"""``structcover explain``: why a bin is empty, from memory, for a never-targeted bin, a bin
with failed attempts and an infeasible bin; bins as users write them; clear errors."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app

pytestmark = pytest.mark.slow


def _fakes():  # type: ignore[no-untyped-def]
    if "explain_state" not in sys.modules:
        path = Path(__file__).parents[1] / "fakes" / "explain_state.py"
        spec = importlib.util.spec_from_file_location("explain_state", path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules["explain_state"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["explain_state"]


es = _fakes()


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return es.build(tmp_path_factory.mktemp("explain"))


def _explain(state: Path, *args: str) -> dict:
    res = CliRunner().invoke(app, ["explain", *args, "--state", str(state), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [t["task"] for t in out["tasks"]] == ["saxpy"]
    return out["tasks"][0]


def test_failed_attempts_by_stage_with_examples(state: Path) -> None:
    t = _explain(state, es.FAILED)
    assert t["verdict"] == "failed-attempts" and t["attempts"] == 3
    assert t["by_stage"] == {"compile": 1, "equivalence": 1, "structure": 1}
    assert [e["candidate_id"] for e in t["examples"]] == ["cand0", "cand1", "cand2"]
    assert "float5" in t["examples"][0]["reason"]
    assert t["examples"][2]["landed_bin"].endswith("vector_width=4,pattern.tensor_cores=no")
    assert "targeted 3 time(s)" in t["summary"]
    assert f"gap:saxpy|{es.full(es.FAILED)}" in t["sources"]
    # the nearest programs are one axis away: only vector_width separates them
    assert t["nearest"] and t["nearest"][0]["axes_apart"] == 1
    assert list(t["nearest"][0]["differs"]) == ["vector_width"]


def test_infeasible_bin_names_the_proof(state: Path) -> None:
    t = _explain(state, es.INFEASIBLE, "--task", "saxpy")
    assert t["verdict"] == "infeasible" and es.PROOF in t["summary"]
    assert t["proofs"] == {es.full(es.INFEASIBLE): f"{es.PROOF} (failed-attempts)"}


def test_never_targeted_region_as_users_write_it(state: Path) -> None:
    t = _explain(state, es.NEVER)
    assert t["verdict"] == "never-targeted" and t["attempts"] == 0 and not t["programs"]
    assert "never targeted" in t["summary"] and t["nearest"]
    assert set(t["nearest"][0]["differs"]) <= {"reuse", "global_access"}
    # the pattern. prefix and | separators are accepted too; a unique axis prefix as well
    same = _explain(state, "pattern.global_access=strided|pattern.reuse=smem_tiling")
    assert same["verdict"] == "never-targeted"
    assert _explain(state, "reuse=smem_tiling,global=strided")["verdict"] == "never-targeted"


def test_covered_bin_lists_its_programs(state: Path) -> None:
    t = _explain(state, f"{es.AXES},vector_width=1,tensor_cores=no")
    assert t["verdict"] in ("covered", "thin") and t["programs"]
    assert all(f"program:{p}" in t["sources"] for p in t["programs"])


def test_human_output(state: Path) -> None:
    res = CliRunner().invoke(app, ["explain", es.FAILED, "--state", str(state)])
    assert res.exit_code == 0, res.output
    assert "failed-attempts" in res.output and "float5" in res.output


@pytest.mark.parametrize(("spec", "needle"), [
    ("reuse=smem_tilling", "did you mean 'smem_tiling'"),
    ("reuze=none", "valid axes: global_access = coalesced|"),
    ("reuse", "is not axis=level"),
    ("reuse=none,reuse=smem_tiling", "given twice"),
])
def test_bad_bins_are_refused_with_the_valid_axes(state: Path, spec: str, needle: str) -> None:
    res = CliRunner().invoke(app, ["explain", spec, "--state", str(state)])
    assert res.exit_code == 2 and needle in res.output, res.output


def test_unknown_task_and_missing_state(state: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["explain", "reuse=none", "--state", str(state),
                                   "--task", "gemm"])
    assert res.exit_code == 2 and "known tasks: saxpy" in res.output
    res = CliRunner().invoke(app, ["explain", "reuse=none", "--state", str(tmp_path)])
    assert res.exit_code == 2 and "no frozen archive" in res.output
