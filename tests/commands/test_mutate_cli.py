import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.data.corpus import find_task
from structcover.tools.mutations.stats import OperatorStats, StatsTable, save_stats

runner = CliRunner()
needs_nvcc = pytest.mark.nvcc


def test_list_shows_operators_with_moves_and_recorded_stats(tmp_path):
    table = StatsTable(backend="cpu", trials=2, programs=3, operators={
        "pad_shared": OperatorStats(operator="pad_shared", tried=3, applied=2, variants=2,
                                    compiled=2, equivalent=2, moved_as_promised=2,
                                    families_equivalent=["gemm", "transpose"])})
    save_stats(table, tmp_path / "operator_stats.json")
    res = runner.invoke(app, ["mutate", "--list", "--json", "--state", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = {r["operator"]: r for r in json.loads(res.output)}
    assert rows["pad_shared"]["moves"] == {"smem.padded": "up"}
    assert rows["pad_shared"]["stats"]["families_equivalent"] == ["gemm", "transpose"]
    assert rows["tile_smem"]["stats"] is None
    res = runner.invoke(app, ["mutate", "--list", "--state", str(tmp_path)])
    assert res.exit_code == 0 and "pad_shared" in res.output


@needs_nvcc
def test_mutate_writes_variant(tmp_path):
    src = find_task("vector_add")[1].reference.path
    out = tmp_path / "out.cu"
    res = runner.invoke(app, ["mutate", str(src), "--op", "to_grid_stride", "-o", str(out),
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["result"]["variants"][0]["promised"] == {"loop.grid_stride": "up"}
    assert "gridDim.x" in out.read_text()


def test_mutate_reports_not_applicable_and_bad_input(tmp_path):
    src = find_task("vector_add")[1].reference.path
    res = runner.invoke(app, ["mutate", str(src), "--op", "tile_smem"])
    assert res.exit_code == 1 and "does not apply" in res.output
    res = runner.invoke(app, ["mutate", str(src), "--op", "no_such_op"])
    assert res.exit_code == 2 and "unknown operator" in res.output
    res = runner.invoke(app, ["mutate", str(tmp_path / "missing.cu"), "--op", "pad_shared"])
    assert res.exit_code == 2 and "no such file" in res.output


def test_prompt_command_renders_constraints_from_label():
    res = runner.invoke(app, ["prompt", "smem.tiled=1,mem.vector_loads=[1,4]", "--task", "gemm",
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["constraints"][0].startswith("Stage the reused operand in shared-memory tiles")
    assert 'extern "C" int launch(const float* A' in data["prompt"]
    res = runner.invoke(app, ["prompt", "garbage", "--task", "gemm"])
    assert res.exit_code == 2 and "bin label" in res.output


def test_prompt_command_without_archive_in_state_fails_clearly(tmp_path):
    res = runner.invoke(app, ["prompt", "smem.tiled=1", "--task", "gemm", "--state", str(tmp_path)])
    assert res.exit_code == 2 and "no archive" in " ".join(res.output.split())


def test_prompt_command_for_a_kernelbench_problem_asks_for_model_new():
    problems = Path(__file__).parents[1] / "data" / "kernelbench" / "problems"
    res = runner.invoke(app, ["prompt", "warp.shuffles=[1,3]", "--task", "8_relu",
                              "--problems", str(problems), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert (problems / "8_relu.py").read_text().strip() in data["prompt"]
    assert "class ModelNew(torch.nn.Module)" in data["prompt"] and "launch(" not in data["prompt"]
    res = runner.invoke(app, ["prompt", "warp.shuffles=[1,3]", "--task", "no_such_problem",
                              "--problems", str(problems)])
    assert res.exit_code == 2 and "no_such_problem" in res.output
