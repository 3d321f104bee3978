"""The README's first command: the offline demo runs end to end and writes every output."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from structcover.cli import app

pytestmark = pytest.mark.slow


def test_demo_simulates_discovers_diagnoses_and_writes_outputs(tmp_path: Path) -> None:
    # Two families and a small budget keep the campaign stage (mutation compiles and CPU
    # emulator runs) to a few minutes on a loaded 2-core machine.
    result = CliRunner().invoke(app, ["demo", "-o", str(tmp_path), "--skip-verify", "--json",
                                      "--family", "softmax", "--family", "vector_add",
                                      "--budget", "6"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert [r["round"] for r in summary["rounds"]] == [0, 1, 2]
    assert all(r["f_star"] for r in summary["rounds"])
    # The simulated policy collapses onto each task's fastest program: structural entropy
    # falls every round. (Whether the pooled drop crosses ρ depends on how the fastest programs
    # spread over the frozen bins, so the flag itself is pinned in tests/tools/test_simulate.py.)
    entropies = [r["entropy"] for r in summary["rounds"]]
    assert entropies[0] > entropies[1] > entropies[2]
    assert summary["rounds"][0]["collapse"] == "none"
    # The archive is frozen at round 0: every round bins on the same axes.
    assert len({tuple(r["archive_axes"]) for r in summary["rounds"]}) == 1
    files = summary["files"]
    weighted = pq.read_table(files["curated_weighted_parquet"]).to_pandas()
    assert abs(weighted["weight"].sum() - len(weighted)) < 1e-6 * len(weighted)
    prompts = pd.read_parquet(files["curated_prompts_parquet"])
    verl_columns = {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert verl_columns <= set(prompts.columns)
    html = Path(files["report"]).read_text()
    assert "<svg" in html or "<script" in html
    rollouts = pd.read_parquet(files["rollouts"])
    # Rewards come from the timing model over each program's measured emulator counters
    # (issue 26: discovery is no longer fed its own static features), and the JSON says so.
    assert set(rollouts["reward_source"]) == {"modelled"}
    assert summary["rewards"].startswith("modelled: timing model")
    assert "measured CPU emulator counters" in summary["rewards"]
    assert summary["unprofiled"] == {}
    assert (tmp_path / "state" / "archive.json").is_file()
    assert set(summary["seconds"]) == {"verify", "simulate", "discover", "campaign"}

    # The campaign on the last round: per-task SCov before/after, every added program new
    # (not a corpus or rollout program), verified equivalent on the CPU emulator and checked
    # to land in its target bin.
    c = summary["campaign"]
    assert c["round"] == 2 and 0 < c["candidates"] <= 6
    # The quick demo fills the gaps of its cheap-to-emulate tasks only (softmax here; the
    # vector_add rollouts stay in the data and in discovery), and says so.
    assert {t["task"] for t in c["coverage"]} == {"softmax"}
    assert {a["task"] for a in c["added"]} == {"softmax"}
    assert any("--full" in n and "1 of 2 tasks" in n for n in summary["notes"])
    assert all(t["after"] >= t["before"] for t in c["coverage"])
    assert c["added"], "the campaign verified no new program"
    assert c["scov_after"] > c["scov_before"]
    from structcover.schema import content_hash
    from structcover.tools.data.corpus import load_corpus

    existing = {content_hash(p) for p in rollouts["program"]}
    existing |= {content_hash(p.source) for f in load_corpus() for p in f.programs}
    lines = [json.loads(x) for x in Path(files["added_programs"]).read_text().splitlines()]
    # The file lists exactly the added programs (sorted by task and bin; the summary keeps the
    # order the campaign's steps added them).
    by_id = {x["program_id"]: x for x in lines}
    assert len(lines) == len(by_id)
    # offline, every new program is a mutant (LLM-written ones are counted apart as llm)
    assert c["added_by_origin"] == {"mutant": len(c["added"])}
    assert {x["origin"] for x in lines} == {"mutant"}
    assert sorted(by_id) == sorted(a["program_id"] for a in c["added"])
    for a in c["added"]:
        line = by_id[a["program_id"]]
        v = a["verification"]
        assert v["equivalent"] and v["backend"] == "cpu"
        assert {"compile", "structure", "anti-hacking", "equivalence"} <= set(v["checks"])
        source = (Path(files["added_programs"]).parent / line["path"]).read_text()
        assert content_hash(source) == a["program_id"] and a["program_id"] not in existing
    gaps = c["open_gaps"]
    assert gaps and all(g["reason"] for g in gaps)
    # Infeasible only with a rule proof; every other unfilled gap is open and says why.
    assert all(g["reason"].startswith("proven infeasible by rule ") for g in gaps
               if g["status"] == "infeasible")
    # ... what the operators did not reach, or that the budget ran out before it got there
    assert all(g["reason"].endswith("an LLM policy could")
               or "not targeted: the campaign stopped first (candidate budget" in g["reason"]
               for g in gaps if g["status"] == "open")
