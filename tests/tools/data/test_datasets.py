"""Dataset IO: every bad row kind is quarantined with its reason, and the rest load."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from structcover.tools.data.datasets import (
    DatasetError,
    load_trajectories,
    parse_column_map,
    write_jsonl,
    write_parquet,
    write_records,
)

GOOD = "__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }"


def _jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _row(**kw: object) -> bytes:
    return json.dumps(kw).encode()


def test_each_bad_row_kind_is_quarantined_with_reason_and_rest_load(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [
        _row(id="a", task_id="t1", program=GOOD, correct=True, speedup=1.5, round=3),
        _row(id="b", task_id="t1", correct=True),                        # missing program
        b'{"id": "c", "program": "\xff\xfe bad"}',                      # cp1252: kept
        _row(id="d", task_id="t1", program=GOOD + " ", speedup="fast"),  # wrong type
        _row(id="a", task_id="t2", program=GOOD + "  "),                 # duplicate id
        _row(id="e", task_id="t1", program="x" * 60_000_000),            # 60 MB field
        b"{not json",
        _row(id="f", task_id="t3", program=GOOD + "\n", speedup=0.7, correct=0),
    ])
    result = load_trajectories(path)
    assert list(result.records["task_id"]) == ["t1", "", "t3"]
    assert result.records.iloc[0]["round"] == 3
    assert result.records.iloc[2]["correct"] == False  # noqa: E712 - numpy bool
    # A non-UTF-8 line is read with the cp1252 fallback and says so (issue 12).
    assert result.records.iloc[1]["program"] == "\u00ff\u00fe bad"
    assert result.records.iloc[1]["source_encoding"] == "cp1252"
    reasons = {q.row: q.reason for q in result.quarantined}
    assert reasons[2] == "missing program"
    assert "speedup: expected a number" in reasons[4]
    assert "duplicate id 'a'" in reasons[5] and "row 1" in reasons[5]
    assert "bytes (limit" in reasons[6]
    assert "invalid JSON" in reasons[7]
    assert result.summary == {"loaded": 3, "quarantined": 5}


def test_column_map_reads_kernelbench_style_schema(tmp_path: Path) -> None:
    frame = pd.DataFrame({"custom_code": [GOOD, GOOD + "//2"], "score_default": [2.0, 0.5],
                          "problem": ["p1", "p2"], "model": ["m", "m"]})
    frame.to_parquet(tmp_path / "kb.parquet")
    mapping = parse_column_map(["program=custom_code", "speedup=score_default",
                                "task_id=problem"])
    result = load_trajectories(tmp_path / "kb.parquet", column_map=mapping)
    assert list(result.records["speedup"]) == [2.0, 0.5]
    assert list(result.records["task_id"]) == ["p1", "p2"]
    # Unmapped scalar columns stay as columns (a `model` column can be a control later).
    assert list(result.records["model"]) == ["m", "m"]
    assert "custom_code" not in result.records.columns


def test_nested_extra_values_go_to_meta(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [_row(program=GOOD, policy="p1", info={"step": 3})])
    record = load_trajectories(path).records.iloc[0]
    assert record["policy"] == "p1"
    assert json.loads(record["meta"]) == {"info": {"step": 3}}


def test_column_map_rejects_malformed_items() -> None:
    with pytest.raises(ValueError, match="normalized=source"):
        parse_column_map(["program"])
    with pytest.raises(ValueError, match="unknown field 'colour'"):
        parse_column_map(["colour=red"])


def test_folder_of_cu_and_kernelbench_py_files(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text(GOOD)
    (tmp_path / "b.cu").write_bytes(b"\xff\xfe\x00junk")
    (tmp_path / "sol.py").write_text(
        '"""Docs mention __global__ but this docstring is prose."""\n'
        "import torch\n"
        f'cuda_src = """\n{GOOD}\n"""\n'
        "mod = load_inline(name='k', cuda_sources=cuda_src)\n")
    (tmp_path / "plain.py").write_text("print('no cuda here')\n")
    result = load_trajectories(tmp_path)
    programs = dict(zip(result.records["task_id"], result.records["program"], strict=True))
    assert programs["a"] == GOOD
    assert programs["sol"].strip().startswith("__global__") or GOOD in programs["sol"]
    reasons = " | ".join(q.reason for q in result.quarantined)
    assert "plain.py: no inline CUDA" in reasons
    assert programs["b"] == "\u00ff\u00fe\x00junk"  # kept, read as cp1252 (issue 12)


def test_hugging_face_saved_dataset(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"program": [GOOD, ""], "task_id": ["t", "t"],
                                     "speedup": [1.0, 2.0]})
    ds.save_to_disk(str(tmp_path / "hf"))
    result = load_trajectories(tmp_path / "hf")
    assert len(result.records) == 1 and result.quarantined[0].reason == "missing program"


def test_unreadable_inputs_raise_dataset_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_trajectories(tmp_path / "missing.jsonl")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(DatasetError, match="unknown format"):
        load_trajectories(tmp_path / "x.csv")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(DatasetError, match="bad.parquet"):
        load_trajectories(tmp_path / "bad.parquet")


def test_writes_are_atomic_and_round_trip(tmp_path: Path) -> None:
    frame = pd.DataFrame({"program": [GOOD], "speedup": [1.25]})
    write_parquet(frame, tmp_path / "o" / "x.parquet")
    write_jsonl(frame, tmp_path / "o" / "x.jsonl")
    assert pq.read_table(tmp_path / "o" / "x.parquet").to_pylist()[0]["speedup"] == 1.25
    assert json.loads((tmp_path / "o" / "x.jsonl").read_text())["program"] == GOOD
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["x.jsonl", "x.parquet"]
    with pytest.raises(DatasetError):
        write_records(frame, tmp_path / "x.csv")


def test_failed_write_leaves_previous_file_intact(tmp_path: Path) -> None:
    target = tmp_path / "x.jsonl"
    write_jsonl([{"a": 1}], target)

    class Unserializable:
        def __str__(self) -> str:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl([{"a": Unserializable()}], target)
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.jsonl"]
