"""The campaign graph node by node (each node called with a runtime over the fake world)."""

from __future__ import annotations

import pytest
from campaign_fakes import world
from langgraph.runtime import Runtime
from langgraph.types import Send

from structcover.graphs import campaign as g
from structcover.graphs.campaign import CampaignContext, Limits


def _rt(**limits) -> tuple[Runtime, object, object]:
    tools, memory, verify = world()
    return Runtime(context=CampaignContext(tools=tools, limits=Limits(**limits))), memory, verify


def _diagnosed(rt: Runtime) -> dict:
    return g.diagnose({}, rt)


def test_diagnose_initialises_counters_once() -> None:
    rt, _, _ = _rt()
    s = _diagnosed(rt)
    assert s["candidates"] == 0 and s["coverage_before"] == s["coverage"]
    again = g.diagnose({**s, "added": [], "coverage_before": s["coverage_before"]}, rt)
    assert "coverage_before" not in again and "candidates" not in again


def test_choose_targets_splits_the_budget_without_overspending() -> None:
    rt, _, _ = _rt(budget=7, max_retries=2, targets_per_step=8)
    s = _diagnosed(rt)
    out = g.choose_targets(s, rt)
    assert sum(t["allowance"] for t in out["planned"]) == 7
    assert [t["allowance"] for t in out["planned"]] == [3, 3, 1]
    targeted = {(t["task"], t["bin"]) for t in out["planned"]}
    assert {(x["task"], x["bin"]) for x in out["gaps"] if x["status"] == "targeted"} == targeted
    assert all(t["bin"] != "reuse=reg|sync=warp" for t in out["planned"])
    assert len({t["seed"] for t in out["planned"]}) == len(out["planned"])


@pytest.mark.parametrize(("patch", "why"), [
    ({"candidates": 7}, "candidate budget spent"),
    ({"gpu_seconds": 5.0}, "GPU-time budget spent"),
])
def test_choose_targets_stops_on_budgets(patch: dict, why: str) -> None:
    rt, _, _ = _rt(budget=7, gpu_seconds=5.0)
    s = {**_diagnosed(rt), **patch}
    out = g.choose_targets(s, rt)
    assert out["planned"] == [] and out["stopped"].startswith(why)


def test_choose_targets_stops_at_the_coverage_target() -> None:
    rt, _, _ = _rt(target_scov=0.3)  # every task starts at 3/8
    out = g.choose_targets(_diagnosed(rt), rt)
    assert out["planned"] == [] and "coverage target reached" in out["stopped"]


def test_route_fans_out_with_send_or_asks_for_approval() -> None:
    rt, _, _ = _rt(budget=4)
    s = _diagnosed(rt)
    s.update(g.choose_targets(s, rt))
    sends = g.route_targets(s, rt)
    assert isinstance(sends, list) and all(isinstance(x, Send) and x.node == "attempt"
                                           for x in sends)
    assert g.route_targets({**s, "planned": []}, rt) == "export"
    rt2, _, _ = _rt(budget=4, approve=True)
    assert g.route_targets(s, rt2) == "approve"
    assert isinstance(g.route_targets({**s, "approved": True}, rt2), list)


def test_synthesize_verify_record_of_one_target() -> None:
    rt, _, verify = _rt(budget=4)
    s = _diagnosed(rt)
    target = next(t for t in g.choose_targets(s, rt)["planned"]
                  if t["bin"] == "reuse=none|sync=warp")
    t1 = {**target, **g.synthesize(target, rt)}
    assert t1["used"] == 1 and t1["candidate"] and g.after_synthesize(t1) == "verify"
    t2 = {**t1, **g.verify(t1, rt)}
    assert t2["verdict"]["stage"] == "equivalence" and len(t2["feedback"]) == 1
    assert g.after_verify(t2, rt) == "synthesize"  # allowance 3 > used 1
    done = g.record({**t2, "used": 3})["result"]
    assert done["outcome"] == "failed" and done["program"] is None
    assert done["attempts"][0]["reason"].startswith("3 of 1024")
    assert len(verify.calls) == 1


def test_update_applies_each_result_once() -> None:
    # Enough targets in one step that every task's gaps are planned (tasks take turns).
    rt, memory, _ = _rt(budget=40, targets_per_step=16)
    s = _diagnosed(rt)
    s.update(g.choose_targets(s, rt))
    target = next(t for t in s["planned"] if t["bin"] == "reuse=smem|sync=none")
    t = {**target, **g.synthesize(target, rt)}
    t = {**t, **g.verify(t, rt)}
    result = g.record(t)["result"]
    assert result["outcome"] == "filled"
    s["results"] = [result]
    s.update(g.update(s, rt))
    assert s["processed"] == 1 and s["candidates"] == 1 and s["verified"] == 1
    assert [a["bin"] for a in s["added"]] == ["reuse=smem|sync=none"]
    cov = {c["task"]: c for c in s["coverage"]}
    assert "reuse=smem|sync=none" in cov["t1"]["covered"] and cov["t1"]["scov"] == 0.5
    again = g.update(s, rt)  # nothing new past processed
    assert again["candidates"] == 1 and len(again["added"]) == 1


def test_export_calls_the_runner_exporter() -> None:
    rt, _, _ = _rt()
    seen = []
    rt.context.export = lambda state: seen.append(state) or {"report": "r.html"}
    assert g.export({"added": []}, rt) == {"files": {"report": "r.html"}} and seen
