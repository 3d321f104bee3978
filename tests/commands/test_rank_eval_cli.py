"""``structcover rank-eval``: the ranking protocol on user-supplied features and labels."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from structcover.cli import app

runner = CliRunner()


def _write(tmp_path):
    feats = pd.DataFrame({"program_id": ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"],
                          "s.x": [1.0, 3.0, 2.0, 4.0, 1.0, 2.0, 3.0, 4.0]})
    labels = pd.DataFrame({"program_id": feats["program_id"],
                           "task_id": ["A"] * 4 + ["B"] * 4,
                           "speedup": [1.0, 2.0, 3.0, 1.01, 1.0, 2.0, 3.0, 4.0]})
    feats.to_parquet(tmp_path / "f.parquet")
    labels.to_csv(tmp_path / "l.csv", index=False)
    return tmp_path / "f.parquet", tmp_path / "l.csv"


def test_rank_eval_same_protocol_as_library(tmp_path):
    f, lab = _write(tmp_path)
    res = runner.invoke(app, ["rank-eval", str(f), str(lab), "--folds", "2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    row = {r["name"]: r for r in out["rows"]}["features"]
    # Same hand computation as tests/tools/test_ranking.py: folds 0.4 and 0.0, 2 of 11 pairs.
    assert row["pooled"] == pytest.approx(2 / 11)
    assert row["mean"] == pytest.approx(0.2)
    assert out["dropped_pairs"]["tie threshold"] == 1
    assert any("no program text" in n for n in out["notes"])


def test_rank_eval_table_and_errors(tmp_path):
    f, lab = _write(tmp_path)
    res = runner.invoke(app, ["rank-eval", str(f), str(lab), "--folds", "2"])
    assert res.exit_code == 0, res.output
    assert "pairwise accuracy" in res.output
    pd.DataFrame({"x": [1]}).to_csv(tmp_path / "bad.csv", index=False)
    res = runner.invoke(app, ["rank-eval", str(f), str(tmp_path / "bad.csv")])
    assert res.exit_code == 2 and "program_id" in res.output
