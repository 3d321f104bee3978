"""Memory across two rounds: the second campaign sees what the first filled (re-used, reported
apart as reweighting, not counted as new) and skips the gaps the first proved infeasible."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from campaign_fakes import FakeCoverage, world
from langgraph.checkpoint.sqlite import SqliteSaver

from structcover.graphs.campaign import CampaignContext, Limits, compile_graph


def _campaign(tmp: Path, tools, round_: int) -> dict:
    graph = compile_graph(SqliteSaver(sqlite3.connect(tmp / "cp.sqlite",
                                                      check_same_thread=False)))
    ctx = CampaignContext(tools=tools, limits=Limits(budget=40, target_scov=1.0), round=round_)
    return graph.invoke({}, {"configurable": {"thread_id": f"round-{round_}"}}, context=ctx)


def test_second_round_reuses_filled_and_skips_infeasible(tmp_path: Path) -> None:
    tools, memory, verify = world()
    first = _campaign(tmp_path, tools, 0)
    filled = {(a["task"], a["bin"]) for a in first["added"]}
    infeasible = {k for k, g in memory.gaps.items() if g.status == "infeasible"}
    assert filled and infeasible
    calls_round0 = len(verify.calls)

    # Round 1: the policy's new rollouts are the round-0 data again (nothing learned yet).
    tools.coverage = FakeCoverage(tools.coverage.data)
    second = _campaign(tmp_path, tools, 1)
    gaps = {(g["task"], g["bin"]): g for g in second["gaps"]}
    assert all(gaps[k]["status"] == "reused" for k in filled)
    assert all("filled earlier by" in gaps[k]["reasons"][-1] for k in filled)
    assert all(gaps[k]["status"] == "infeasible" for k in infeasible)
    # Nothing was re-verified: filled bins are re-used, infeasible ones skipped.
    assert len(verify.calls) == calls_round0 and second["candidates"] == 0
    assert second["added"] == []  # re-use is not a new program
    assert second["stopped"] == "no open gap left to target"
