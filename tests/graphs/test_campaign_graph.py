"""The campaign graph end to end on the fake world, with a SQLite checkpointer."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from campaign_fakes import INFEASIBLE, world
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from structcover.graphs.campaign import CampaignContext, Limits, compile_graph


def _run(tmp: Path, limits: Limits, **kw):
    tools, memory, verify = world()
    ctx = CampaignContext(tools=tools, limits=limits)
    conn = sqlite3.connect(tmp / "cp.sqlite", check_same_thread=False)
    graph = compile_graph(SqliteSaver(conn))
    config = {"configurable": {"thread_id": "c"}, "max_concurrency": 2}
    out = graph.invoke({}, config, context=ctx, **kw)
    return out, memory, verify, graph, config, ctx


def test_fills_every_reachable_bin_and_proves_the_rest(tmp_path: Path) -> None:
    out, memory, verify = _run(tmp_path, Limits(budget=40, target_scov=1.0))[:3]
    # 9 bins - 1 infeasible = 8 feasible; each task starts with 3 covered
    before = {c["task"]: c["scov"] for c in out["coverage_before"]}
    after = {c["task"]: c for c in out["coverage"]}
    assert before == {"t1": 0.375, "t2": 0.375}
    # sync=warp needs to_warp, which the fake verifier always finds not equivalent
    for task in ("t1", "t2"):
        assert "reuse=none|sync=warp" not in after[task]["covered"]
        assert set(after[task]["covered"]) == {f"reuse={r}|sync={s}"
                                               for r in ("none", "smem", "reg")
                                               for s in ("none", "block")}
        for r in ("none", "smem"):
            g = memory.gap(task, f"reuse={r}|sync=warp")
            assert g.status == "infeasible" and len(g.failures) >= 3
            assert "outputs differ" in g.proof
    # the contradiction bin is never targeted
    assert not any(b in INFEASIBLE for _, b, _ in memory.attempts)
    assert out["verified"] == len(out["added"]) == 6
    assert {(a["task"], a["bin"]) for a in out["added"]} == {
        (t, b) for t in ("t1", "t2") for b in after[t]["covered"]} - {
        (t, f"reuse={r}|sync={s}") for t in ("t1", "t2")
        for r, s in (("none", "none"), ("smem", "block"), ("reg", "none"))}
    # every candidate the verifier saw was counted exactly once
    assert out["candidates"] == len(verify.calls)
    assert "no open gap" in out["stopped"]


def test_budget_is_a_hard_stop(tmp_path: Path) -> None:
    out, _, verify = _run(tmp_path, Limits(budget=5, target_scov=1.0))[:3]
    assert out["candidates"] == len(verify.calls) <= 5
    assert "budget" in out["stopped"]


def test_approval_interrupts_before_spending(tmp_path: Path) -> None:
    out, _, verify, graph, config, ctx = _run(tmp_path, Limits(budget=10, approve=True))
    assert "__interrupt__" in out and verify.calls == []
    plan = out["__interrupt__"][0].value
    assert plan["budget"] == 10 and plan["targets"]
    out = graph.invoke(Command(resume=False), config, context=ctx)
    assert out["stopped"] == "not approved" and verify.calls == []
