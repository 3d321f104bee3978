"""CLI: ingest, doctor, demo, through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from structcover.cli import app

runner = CliRunner()


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("ingest", "doctor", "demo"):
        assert name in result.output


def test_ingest_json_summary_and_quarantine_file(tmp_path: Path) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps({"task_id": "t", "program": "__global__ void k(){}", "speedup": 2})
                    + "\n" + json.dumps({"task_id": "t"}) + "\n")
    out = tmp_path / "out.parquet"
    result = runner.invoke(app, ["ingest", str(data), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["loaded"] == 1 and summary["quarantined"] == 1
    quarantine = Path(summary["quarantine_file"])
    assert json.loads(quarantine.read_text())["reason"] == "missing program"
    assert out.exists()


def test_ingest_reports_unreadable_input_as_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_doctor_json_names_every_part() -> None:
    result = runner.invoke(app, ["doctor", "--json"])
    names = {c["name"] for c in json.loads(result.stdout)}
    assert names == {"host C++ compiler", "sandbox", "nvcc", "NVRTC", "GPU", "NVML",
                     "LLM endpoint", "LLM client", "Ray", "store", "build cache"}
