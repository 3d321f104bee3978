"""`structcover compile` and `structcover check` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.compiler import toolchain

ADVERSARIAL = Path(__file__).resolve().parents[1] / "data" / "adversarial"
needs_nvrtc = pytest.mark.skipif(not toolchain.nvrtc_available(),
                                 reason="NVRTC not importable (pip install structcover brings it)")

GOOD = """#include <cuda_runtime.h>
#define BLOCK 128
__global__ void twice(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
  twice<<<(n + BLOCK - 1) / BLOCK, BLOCK, 0, stream>>>(x, y, n);
  return (int)cudaGetLastError();
}
"""


@needs_nvrtc
def test_compile_json_reports_features(tmp_path: Path) -> None:
    src = tmp_path / "good.cu"
    src.write_text(GOOD)
    result = CliRunner().invoke(app, ["compile", str(src), "--arch", "sm_80", "--via", "nvrtc",
                                      "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] and data["via"] == "nvrtc" and data["arch"] == "sm_80"
    assert data["features"]["occupancy.block_source"] == "launch"
    assert data["features"]["occupancy.block_size"] == 128
    assert data["kernels"][0]["kernel"] == "twice"
    assert data["kernels"][0]["registers"] == data["features"]["ptxas.registers"] > 0


@needs_nvrtc
def test_compile_error_exits_nonzero_with_line(tmp_path: Path) -> None:
    src = tmp_path / "bad.cu"
    src.write_text(GOOD.replace("2.f * x[i]", "2.f * nope[i]"))
    result = CliRunner().invoke(app, ["compile", str(src), "--via", "nvrtc", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["errors"][0]["line"] == 5
    assert "nope" in data["errors"][0]["message"]


def test_compile_rejects_bad_options(tmp_path: Path) -> None:
    src = tmp_path / "good.cu"
    src.write_text(GOOD)
    assert CliRunner().invoke(app, ["compile", str(src), "--via", "clang"]).exit_code == 2
    assert CliRunner().invoke(app, ["compile", str(tmp_path / "missing.cu")]).exit_code == 2


def test_check_flags_cheat_and_passes_honest_program(tmp_path: Path) -> None:
    cheat = CliRunner().invoke(app, ["check", str(ADVERSARIAL / "std_thread.cu"), "--json"])
    assert cheat.exit_code == 1
    data = json.loads(cheat.stdout)
    assert not data["passed"]
    assert {c["name"] for c in data["checks"] if not c["ok"]} == {"no_threads"}

    src = tmp_path / "good.cu"
    src.write_text(GOOD)
    honest = CliRunner().invoke(app, ["check", str(src)])
    assert honest.exit_code == 0, honest.output
    assert "no_threads" in honest.stdout
