"""`structcover watch --once` end to end: a trainer's two rounds, the real campaign, run twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app

pytestmark = pytest.mark.slow


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_watch_once_twice_writes_each_round_once(tmp_path: Path):
    runner = CliRunner()
    sim = tmp_path / "sim"
    out = runner.invoke(app, ["simulate", "--rounds", "2", "--rollouts", "6", "--collapse", "0.6",
                              "-o", str(sim)])
    assert out.exit_code == 0, out.output
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    # The trainer's way: the rollouts first, the marker last.
    for n in (0, 1):
        shutil.copy(sim / f"round_{n}.parquet", rollouts / f"round_{n}.parquet")
        (rollouts / f"round_{n}.done").write_text("")
    args = ["watch", str(rollouts), "--state", str(state), "--once", "--budget", "3",
            "--backend", "cpu", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["processed"] == [0, 1]
    curated = state / "curated"
    assert sorted(p.name for p in curated.iterdir()) == ["round_1", "round_2"]
    before = _snapshot(curated)
    assert before, "the campaign wrote no curated files"
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout) == {"processed": [], "skipped": [0, 1], "waiting": [],
                                         "failed": {}}
    assert _snapshot(curated) == before
