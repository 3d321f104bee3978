"""Coverage tracked against reward over every round of a state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.coverage.trend import build_trend


def _round(state: Path, n: int, *, scov: float, task_mean: float, reward: float,
           f_star: list[str], collapse: str | None = None) -> None:
    folder = state / "rounds" / str(n)
    folder.mkdir(parents=True)
    (folder / "diagnosis.json").write_text(json.dumps({
        "scov": scov, "scov_task_mean": task_mean, "reward_mean": reward,
        "entropy": {"joint": 1.0 - 0.1 * n},
        "collapse": {"detected": collapse is not None, "kind": collapse}}))
    (folder / "discovery.json").write_text(json.dumps({"f_star": f_star}))


def test_trend_lines_up_rounds_with_drift_and_correlation(tmp_path: Path):
    covs, rewards = [0.5, 0.4, 0.3, 0.35], [1.0, 0.8, 0.7, 0.75]
    for n, (c, r) in enumerate(zip(covs, rewards, strict=True)):
        _round(tmp_path, n, scov=c, task_mean=c / 2, reward=r,
               f_star=["pattern.reuse"] if n < 2 else ["pattern.reuse", "pattern.sync"],
               collapse="key-feature" if n == 2 else None)
    (tmp_path / "rounds" / "junk").mkdir()  # not a round
    trend = build_trend(tmp_path)
    assert [p.round for p in trend.rounds] == [0, 1, 2, 3]
    assert trend.rounds[2].f_star_added == ["pattern.sync"] and trend.rounds[2].collapse
    assert trend.rounds[0].f_star_added == []  # nothing to drift from
    assert trend.changes == 3
    # Coverage and reward moved in the same direction every round (changes of -0.05, -0.05,
    # +0.025 against -0.2, -0.1, +0.05): r = 0.918 by hand.
    assert trend.coverage_reward_correlation == pytest.approx(0.918, abs=1e-3)


def test_too_few_rounds_say_why(tmp_path: Path):
    _round(tmp_path, 0, scov=0.5, task_mean=0.2, reward=1.0, f_star=[])
    _round(tmp_path, 1, scov=0.4, task_mean=0.1, reward=0.9, f_star=[])
    trend = build_trend(tmp_path)
    assert trend.coverage_reward_correlation is None and "needs" in trend.note


@pytest.mark.slow
def test_diagnose_json_and_report_track_all_rounds(tmp_path: Path):
    runner = CliRunner()
    sim = tmp_path / "sim"
    out = runner.invoke(app, ["simulate", "--rounds", "3", "--rollouts", "8", "-o", str(sim)])
    assert out.exit_code == 0, out.output
    state = tmp_path / "state"
    for n in range(3):
        out = runner.invoke(app, ["diagnose", str(sim / f"round_{n}.parquet"), "--state",
                                  str(state), "--json", "--report", str(tmp_path / "r.html")])
        assert out.exit_code == 0, out.output
    trend = json.loads(out.stdout)["trend"]
    assert [p["round"] for p in trend["rounds"]] == [0, 1, 2]
    assert all(p["reward_mean"] is not None and p["scov_task_mean"] is not None
               for p in trend["rounds"])
    html = (tmp_path / "r.html").read_text()
    assert 'id="trend"' in html and "mean reward" in html
