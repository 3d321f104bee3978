"""CLI: diagnose (frozen archive reused across rounds), curate and simulate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from structcover.cli import app

runner = CliRunner()


def _rounds(path, seed=0):
    rng = np.random.default_rng(seed)
    frames = []
    for rnd, p_tiled in enumerate([0.5, 0.5, 0.03]):  # round 2 collapses on smem.tiled
        n = 300
        tiled = rng.random(n) < p_tiled
        frac = rng.choice([0.25, 1.0], n)
        speed = np.exp(0.8 * tiled + 0.8 * frac + rng.normal(0, 0.2, n))
        frames.append(pd.DataFrame({
            "program_id": [f"r{rnd}p{i}" for i in range(n)], "round": rnd,
            "task_id": rng.choice(["t1", "t2", "t3"], n), "correct": True, "speedup": speed,
            "runtime_ms": 1 / speed, "smem.tiled": tiled, "mem.coalesced_fraction": frac,
            "loop.count": rng.integers(0, 3, n)}))
    table = pd.concat(frames, ignore_index=True)
    table.to_parquet(path)
    return table


@pytest.fixture(autouse=True)
def _fast_discovery(monkeypatch):
    monkeypatch.setenv("STRUCTCOVER_DISCOVERY__BOOTSTRAP", "0")


def test_diagnose_freezes_archive_then_detects_collapse(tmp_path):
    data, state = tmp_path / "rollouts.parquet", tmp_path / "state"
    _rounds(data)
    r0 = runner.invoke(app, ["diagnose", str(data), "--state", str(state), "--round", "0",
                             "--json"])
    assert r0.exit_code == 0, r0.output
    frozen = (state / "archive.json").read_text()
    out = {}
    for n in (1, 2):
        res = runner.invoke(app, ["diagnose", str(data), "--state", str(state), "--round", str(n),
                                  "--json", "--report", str(tmp_path / f"r{n}.html")])
        assert res.exit_code == 0, res.output
        out[n] = json.loads(res.stdout)
    assert (state / "archive.json").read_text() == frozen  # reused, not refitted
    for key in ("scov", "bins_total", "bins_covered", "zero_bins", "low_bins", "entropy",
                "srmis", "collapse", "features"):
        assert key in out[2]
    assert {"name", "mi", "tier", "stability"} <= set(out[2]["features"][0])
    assert out[1]["collapse"]["detected"] is False
    assert out[2]["collapse"]["detected"] is True
    assert out[2]["collapse"]["previous_round"] == 1
    assert "smem.tiled" in [c["feature"] for c in out[2]["collapse"]["key_features"]]
    assert (tmp_path / "r2.html").read_text().count("<svg") == 0  # drawn by the script
    assert 'id="report-data"' in (tmp_path / "r2.html").read_text()


def test_curate_writes_weighted_outputs(tmp_path):
    data, state, out = tmp_path / "r.parquet", tmp_path / "state", tmp_path / "out"
    table = _rounds(data)
    res = runner.invoke(app, ["curate", str(data), "--state", str(state), "-o", str(out),
                              "--round", "0", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    n0 = int((table["round"] == 0).sum())
    weights = pq.read_table(out / "weighted.parquet").column("weight").to_pylist()
    assert len(weights) == n0 and abs(sum(weights) - n0) < 1e-6
    assert summary["weight_sum"] == pytest.approx(n0)
    assert (out / "hf_dataset").is_dir() and (out / "diagnosis.json").is_file()


def test_diagnose_bad_input_names_it(tmp_path):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"task_id": ["a"], "speedup": [1.0]}).to_csv(bad, index=False)
    res = runner.invoke(app, ["diagnose", str(bad), "--state", str(tmp_path / "s")])
    assert res.exit_code != 0
    assert "feature" in res.output


def test_simulate_cli_labels_rewards(tmp_path):
    res = runner.invoke(app, ["simulate", "--rounds", "2", "-o", str(tmp_path), "--rollouts", "8",
                              "--seed", "1", "--json"])
    assert res.exit_code == 0, res.output
    t = pd.read_parquet(tmp_path / "rollouts.parquet")
    assert set(t["round"]) == {0, 1} and set(t["reward_source"]) == {"modelled"}
    assert json.loads(res.stdout)["rewards"].startswith("modelled: timing model")
    assert (tmp_path / "round_1.parquet").is_file()


def test_diagnose_extracts_features_from_program_text(tmp_path):
    from structcover.tools.data.corpus import load_corpus

    fams = load_corpus()
    if not fams:
        pytest.skip("sample corpus is empty")
    rng = np.random.default_rng(0)
    rows = [{"task_id": f.name, "round": 0, "correct": True, "program": p.source,
             "speedup": float(rng.uniform(0.5, 3))} for f in fams for p in f.programs]
    data = tmp_path / "rollouts.jsonl"
    pd.DataFrame(rows).to_json(data, orient="records", lines=True)
    res = runner.invoke(app, ["diagnose", str(data), "--state", str(tmp_path / "s"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n_programs"] == len(rows) and out["bins_total"] > 0
    assert all("." in f for f in out["archive_features"])


def test_curate_with_problems_prompts_kernelbench_tasks_for_model_new(tmp_path):
    data, state, out = tmp_path / "r.parquet", tmp_path / "state", tmp_path / "out"
    table = _rounds(data)
    table["task_id"] = table["task_id"].replace({"t1": "8_relu"})  # a KernelBench problem id
    table.to_parquet(data)
    problems = Path(__file__).parents[1] / "data" / "kernelbench" / "problems"
    res = runner.invoke(app, ["curate", str(data), "--state", str(state), "-o", str(out),
                              "--round", "0", "--problems", str(problems), "--json"])
    assert res.exit_code == 0, res.output
    prompts = pd.read_parquet(out / "prompts.parquet")
    by_task: dict[str, list[str]] = {}
    for info, prompt in zip(prompts["extra_info"], prompts["prompt"], strict=True):
        by_task.setdefault(info["task_id"], []).append(prompt[0]["content"])
    assert by_task["8_relu"] and all("class ModelNew(torch.nn.Module)" in p
                                     for p in by_task["8_relu"])
    assert not any("ModelNew" in p for p in by_task["t2"])  # names no problem: as before
