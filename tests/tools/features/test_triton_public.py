"""The Triton reader on public kernels against hand labels (tests/data/triton/public)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.features.extract import extract_table, extract_values

DATA = Path(__file__).parents[2] / "data" / "triton" / "public"
LABELS = yaml.safe_load((DATA / "labels.yaml").read_text())["files"]
FIELDS = ("global_access", "tensor_cores", "sync", "reduces", "grouped", "block_pointers",
          "kernels")


def reading(values: dict) -> dict:
    """The extractor's answer to each labelled question."""
    return {"global_access": values["pattern.global_access"],
            "tensor_cores": values["pattern.tensor_cores"], "sync": values["pattern.sync"],
            "reduces": values["triton.reductions"] > 0,
            "grouped": bool(values["triton.grouped_ordering"]),
            "block_pointers": values["triton.block_pointers"] > 0,
            "kernels": values["kernel.count"]}


def agreement(split: str) -> tuple[int, int, list[str]]:
    ok = total = 0
    misses = []
    for name, label in LABELS.items():
        if label["split"] != split:
            continue
        got = reading(extract_values((DATA / name).read_text()))
        for f in FIELDS:
            total += 1
            ok += got[f] == label[f]
            if got[f] != label[f]:
                misses.append(f"{name}:{f} label={label[f]} got={got[f]}")
    return ok, total, misses


def test_labels_cover_enough_files_with_a_held_out_third() -> None:
    assert len(LABELS) >= 30
    held = sum(1 for v in LABELS.values() if v["split"] == "heldout")
    assert 0.25 <= held / len(LABELS) <= 0.4
    assert all((DATA / n).exists() for n in LABELS)


def test_tuning_split_agreement() -> None:
    ok, total, misses = agreement("tune")
    # 188 of 189 answers; the miss is flaggems_cumsum's access (labelled strided: the
    # scanned axis has stride K; two run-time strides, no unit axis -> the documented rule
    # says unknown, read as "mixed").
    assert misses == ["flaggems_cumsum.py:global_access label=strided got=mixed"], misses
    assert ok == total - 1


def test_every_public_file_reads_as_triton_without_errors() -> None:
    files = sorted(DATA.glob("*.py"))
    assert len(files) >= 40
    table = extract_table([(f.name, f.read_text()) for f in files], workers=1)
    assert len(table) == len(files)
    assert set(table["program.language"]) == {"triton"}
    assert not table["parse.extract_error"].any()
    assert (table["parse.error_nodes"] == 0).all()
    assert (table["kernel.count"] >= 1).all()
    assert (table["mem.global_accesses"] >= 1).all()


@pytest.mark.slow
def test_cli_features_reads_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    res = CliRunner().invoke(app, ["features", str(DATA), "--json", "--no-cache",
                                   "--workers", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    start = res.output.index("[")
    rows = json.loads(res.output[start:])
    assert len(rows) == len(list(DATA.glob("*.py")))
    assert {r["values"]["program.language"] for r in rows} == {"triton"}
    assert out.exists()


def test_held_out_split_as_measured() -> None:
    # Measured once, after the extractor was written against the tuning split (90/91,
    # bench/RESULTS.md). The miss: flaggems_bmm writes the GROUP_M swizzle but its
    # heuristic fixes GROUP_M = 1; the rule reads the source, not the heuristic.
    ok, total, misses = agreement("heldout")
    assert (ok, total) == (90, 91)
    assert misses == ["flaggems_bmm.py:grouped label=False got=True"]
