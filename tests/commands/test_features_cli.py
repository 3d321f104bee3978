"""`structcover features` on a file, a folder and with the --compiler flag."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from structcover.cli import app

runner = CliRunner()

COALESCED = """
__global__ void add(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}
"""
STRIDED = """
__global__ void col(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i * n];
}
"""


def test_single_file_json(tmp_path):
    path = tmp_path / "kernel.cu"
    path.write_text(COALESCED)
    result = runner.invoke(app, ["features", str(path), "--json", "--no-cache"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 1
    assert rows[0]["values"]["mem.global_coalesced"] == 2
    assert rows[0]["values"]["kernel.count"] == 1


def test_folder_to_parquet_one_row_per_program(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cu").write_text(COALESCED)
    (tmp_path / "src" / "b.cu").write_text(STRIDED)
    out = tmp_path / "features.parquet"
    result = runner.invoke(app, ["features", str(tmp_path / "src"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(out)
    assert len(table) == 2
    assert {"program_id", "mem.global_strided", "smem.tiled"} <= set(table.columns)
    assert sorted(table["mem.global_strided"]) == [0, 1]
    assert table["smem.tiled"].dtype == bool


def test_patterns_are_mined_saved_and_counted(tmp_path):
    (tmp_path / "src").mkdir()
    for i in range(4):
        body = COALESCED if i % 2 else STRIDED
        (tmp_path / "src" / f"k{i}.cu").write_text(body + f"// {i}\n")
    pats = tmp_path / "patterns.json"
    result = runner.invoke(app, ["features", str(tmp_path / "src"), "--json", "--no-cache",
                                 "--mine-patterns", str(pats)])
    assert result.exit_code == 0, result.output
    saved = json.loads(pats.read_text())
    rows = json.loads(result.stdout)
    mined = {f"pattern.{p['id']}" for p in saved["patterns"]}
    names = [k for k in rows[0]["values"] if k in mined]
    assert len(names) == len(saved["patterns"]) > 0


def test_missing_input_fails_clearly(tmp_path):
    result = runner.invoke(app, ["features", str(tmp_path / "nope.cu")])
    assert result.exit_code != 0
    assert "nope.cu" in result.output


def test_compiler_flag_adds_compiler_columns(tmp_path):
    pytest.importorskip("structcover.tools.compiler.features")
    from structcover.tools.compiler.toolchain import find_nvcc

    if find_nvcc() is None:
        pytest.skip("nvcc not found (PATH, CUDA_HOME or nvidia-cuda-nvcc wheel)")
    path = tmp_path / "kernel.cu"
    path.write_text(COALESCED)
    result = runner.invoke(app, ["features", str(path), "--json", "--no-cache", "--compiler"])
    assert result.exit_code == 0, result.output
    values = json.loads(result.stdout)[0]["values"]
    assert values["ptxas.registers"] > 0  # the compiler family's stable names
    assert values["compile.ok"] == 1
    assert values["kernel.count"] == 1
