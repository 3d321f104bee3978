"""``structcover discover`` end to end on simulated tables (rewards SIMULATED)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "mining"))
from discovery_sim import planted, policy_world

from structcover.cli import app

runner = CliRunner()


def _run(*args: str) -> dict:
    res = runner.invoke(app, ["discover", *args, "--json", "--bootstrap", "2"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_json_has_features_fstar_ranking_and_saves_with_drift(tmp_path):
    t1 = planted(n_tasks=20, per_task=40)
    t1["program"] = [("__global__ void k() {}\n" * (1 + i % 2)) + "// " + "x" * (i % 97)
                     for i in range(len(t1))]
    t1.to_parquet(tmp_path / "r1.parquet")
    out = _run(str(tmp_path / "r1.parquet"), "--state", str(tmp_path / "state"))
    assert out["round"] == 1
    assert set(out["f_star"]) == {"mem.coalesced_fraction", "smem.tiled"}
    f = out["features"][0]
    assert {"name", "mi", "tier", "stability", "confounded"} <= set(f)
    names = [r["name"] for r in out["ranking"]["rows"]]
    assert names[:3] == ["length", "kernels", "tokens"] and "F*" in names
    assert "F* + tokens" in names
    rows = {r["name"]: r for r in out["ranking"]["rows"]}
    assert rows["F*"]["pooled"] > rows["length"]["pooled"]  # structure drives this reward
    assert out["settings"]["controls_used"] == ["length"]
    assert out["drift"] is None
    assert (tmp_path / "state" / "rounds" / "1" / "discovery.json").is_file()

    t2 = t1.assign(round=2)
    t2["speedup"] = np.exp(0.3 * t2["sync.count"]
                           + np.random.default_rng(0).normal(0, 0.3, len(t2)))
    t2.to_parquet(tmp_path / "r2.parquet")
    out2 = _run(str(tmp_path / "r2.parquet"), "--state", str(tmp_path / "state"),
                "--no-ranking")
    assert out2["drift"]["previous_round"] == 1
    assert "sync.count" in out2["drift"]["entered"]


def test_control_policy_flags_structure_only_when_policy_drives_reward(tmp_path):
    policy_world(driver="policy").to_parquet(tmp_path / "p.parquet")
    policy_world(driver="structure").to_parquet(tmp_path / "s.parquet")
    confounded = _run(str(tmp_path / "p.parquet"), "--control", "policy", "--no-ranking")
    flagged = {f["name"] for f in confounded["features"] if f["confounded"]}
    assert flagged == {"mem.coalesced_fraction", "smem.tiled"}
    kept = _run(str(tmp_path / "s.parquet"), "--control", "policy", "--no-ranking")
    assert not any(f["confounded"] for f in kept["features"])
    assert {"mem.coalesced_fraction", "smem.tiled"} <= set(kept["f_star"])


def test_identity_baseline_and_non_cuda_counts_reported(tmp_path):
    t = policy_world(driver="policy", n_tasks=12, per_task=30)
    t["program.language"] = np.where(np.arange(len(t)) % 5 == 0, "triton", "cuda")
    t.to_parquet(tmp_path / "t.parquet")
    out = _run(str(tmp_path / "t.parquet"))
    assert out["non_cuda_rows"] == int((t["program.language"] == "triton").sum())
    rows = {r["name"]: r for r in out["ranking"]["rows"]}
    assert rows["identity:policy"]["pooled"] > 0.7
    assert set(rows["identity:policy"]["slices"]) == {"cuda", "non_cuda", "mixed"}


def test_human_output_and_bad_input(tmp_path):
    planted(n_tasks=10, per_task=30).to_parquet(tmp_path / "t.parquet")
    res = runner.invoke(app, ["discover", str(tmp_path / "t.parquet"), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    assert "F*" in res.output and "pairwise accuracy" in res.output
    res = runner.invoke(app, ["discover", str(tmp_path / "missing.parquet")])
    assert res.exit_code == 2 and "no such file" in res.output
    res = runner.invoke(app, ["discover", str(tmp_path / "t.parquet"), "--control", "nope"])
    assert res.exit_code == 2 and "nope" in res.output


def test_baselines_beside_fstar_on_simulated_corpus_rollouts(tmp_path):
    """Issue 8: on the simulator over the sample corpus, the table shows what structure adds."""
    sim = runner.invoke(app, ["simulate", "--rounds", "1", "--rollouts", "16", "-o",
                              str(tmp_path / "sim"), "--json"])
    assert sim.exit_code == 0, sim.output
    out = _run(str(tmp_path / "sim" / "round_0.parquet"))
    rows = {r["name"]: r for r in out["ranking"]["rows"]}
    assert {"length", "kernels", "tokens", "F*", "F* + length", "F* + tokens"} <= set(rows)
    assert out["counts"]["tasks"] >= 12 and out["f_star"]
    for row in rows.values():
        assert 0.0 <= row["pooled"] <= 1.0 and row["pairs"] > 0
