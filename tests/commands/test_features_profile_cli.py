"""`structcover features --profile`: profile.* columns for KernelBench candidates, from
--task or a row's `problem` column, and a reason for a row that cannot run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")

from structcover.cli import app  # noqa: E402
from structcover.tools.simulation import kb_profile  # noqa: E402

pytestmark = pytest.mark.kernelbench
runner = CliRunner()
KB = Path(__file__).parents[1] / "data" / "kernelbench"


def _rows(result) -> dict[str, dict]:
    assert result.exit_code == 0, result.output
    return {r["program_id"]: r["values"] for r in json.loads(result.stdout)}


def test_folder_with_task_fills_profile_columns(tmp_path, monkeypatch):
    monkeypatch.setattr(kb_profile, "CACHE_DIR", tmp_path / "cache")
    folder = tmp_path / "cands"
    folder.mkdir()
    shutil.copy(KB / "candidates" / "relu_cuda.py", folder / "relu.py")
    result = runner.invoke(app, ["features", str(folder), "--profile", "--task",
                                 str(KB / "problems" / "8_relu.py"), "--json"])
    (values,) = _rows(result).values()
    assert values["profile.reason"] == ""
    # One coalesced float load per output element: 1/32 warp requests, 4 sectors each.
    assert values["profile.global_load_requests_per_el"] == pytest.approx(1 / 32)
    assert values["profile.load_sectors_per_request"] == pytest.approx(4.0)
    assert values["profile.model_time_s"] > 0
    assert list((tmp_path / "cache").glob("*.json"))  # cached by content hash


def test_problem_column_and_a_reason_for_rows_without_one(tmp_path, monkeypatch):
    monkeypatch.setattr(kb_profile, "CACHE_DIR", tmp_path / "cache")
    data = tmp_path / "rows.jsonl"
    rows = [{"task_id": "relu", "program": (KB / "candidates" / "relu_cuda.py").read_text(),
             "problem": (KB / "problems" / "8_relu.py").read_text()},
            {"task_id": "relu", "program": (KB / "candidates" / "relu_one_block_cuda.py")
             .read_text()}]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = runner.invoke(app, ["features", str(data), "--profile", "--json"])
    got = sorted(_rows(result).values(), key=lambda v: v["profile.reason"])
    assert got[0]["profile.reason"] == ""
    assert got[0]["profile.threads_per_block"] == pytest.approx(256.0)
    assert got[1]["profile.reason"].startswith("no-problem")
    assert got[1]["profile.model_time_s"] is None  # NaN in the table, null in JSON: never 0
