"""The one table/rollout reader: feature tables as they are, rollouts normalized with
quarantine (line numbers), ``--map``, and the CLI's warnings."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from structcover.commands._input import read_input
from structcover.tools.mining.reader import read_table

KERNEL = "__global__ void k(float* x) { x[threadIdx.x] = 1.f; }"


def _rollouts(path: Path, bad_line: bool = True) -> Path:
    rows = [json.dumps({"task_id": "t", "custom_code": KERNEL, "score": 1.5, "policy": "a"}),
            "{not json",
            json.dumps({"task_id": "t", "score": 2.0})]  # no program
    path.write_text("\n".join(rows if bad_line else rows[:1]) + "\n")
    return path


def test_feature_table_is_read_as_it_is(tmp_path: Path) -> None:
    frame = pd.DataFrame({"program_id": ["a", "b"], "task_id": ["t", "t"],
                          "memory.coalesced": [1.0, 0.0], "speedup": [1.0, 2.0]})
    frame.to_parquet(tmp_path / "f.parquet")
    result = read_table(tmp_path / "f.parquet")
    pd.testing.assert_frame_equal(result.records, frame)
    assert result.quarantined == []


def test_rollouts_are_mapped_and_bad_rows_quarantined_with_line_numbers(tmp_path: Path) -> None:
    path = _rollouts(tmp_path / "r.jsonl")
    result = read_table(path, column_map={"program": "custom_code", "speedup": "score"},
                        extract=False)
    assert result.records["program"].tolist() == [KERNEL]
    assert result.records["speedup"].tolist() == [1.5]
    assert result.records["policy"].tolist() == ["a"]  # extra scalar columns survive
    assert sorted(q.row for q in result.quarantined) == [2, 3]


def test_missing_input_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nope.parquet: no such file"):
        read_table(tmp_path / "nope.parquet")


def test_commands_warn_on_quarantine_and_on_zero_rows(tmp_path: Path, capsys) -> None:
    path = _rollouts(tmp_path / "r.jsonl")
    rows = read_input(path, ["program=custom_code", "speedup=score"])
    assert len(rows) == 1
    assert any("." in str(c) for c in rows.columns)  # features were extracted
    err = capsys.readouterr().err
    assert "warning:" in err and "2 rows quarantined" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert len(read_input(empty)) == 0
    assert "0 rows loaded" in capsys.readouterr().err
