"""Memory across two rounds: the second campaign sees what the first filled (re-used, reported
apart as reweighting, not counted as new) and skips the gaps the first proved infeasible."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from campaign_fakes import FakeCoverage, bounds, label, world
from langgraph.checkpoint.sqlite import SqliteSaver

from structcover.graphs.campaign import CampaignContext, Limits, compile_graph


def _campaign(tmp: Path, tools, round_: int) -> dict:
    graph = compile_graph(SqliteSaver(sqlite3.connect(tmp / "cp.sqlite",
                                                      check_same_thread=False)))
    ctx = CampaignContext(tools=tools, limits=Limits(budget=40, target_scov=1.0), round=round_)
    return graph.invoke({}, {"configurable": {"thread_id": f"round-{round_}"}}, context=ctx)


class LevelCoverage(FakeCoverage):
    """The fake coverage with the two look-ups the store-backed memory port uses."""

    def levels(self, bin_label: str) -> dict[str, str]:
        return bounds(bin_label) if bin_label else {}

    def bin_distance(self, bin_label: str, target: dict[str, str]) -> int:
        have = self.levels(bin_label)
        return sum(have.get(a) != v for a, v in target.items())


def _store_world(tmp: Path):  # type: ignore[no-untyped-def]
    """The fake world with the real memory: SQLite ledger + Chroma through the memory port."""
    from campaign_fakes import feats

    from structcover.campaign.toolbox import SerialStore, StoreMemory
    from structcover.tools.store import MemoryStore, ProgramRecord

    tools, _, verify = world()
    coverage = LevelCoverage(tools.coverage.data)  # type: ignore[attr-defined]
    store = SerialStore(lambda: MemoryStore.open(tmp / "memory"))
    store.add_programs([ProgramRecord(task=t, source=s, features={"x": float(i)}, verified=True,
                                      round=0, bin_label=label(feats(s)))
                        for t, srcs in sorted(coverage.data.items())
                        for i, s in enumerate(srcs)])
    tools.coverage, tools.memory = coverage, StoreMemory(store, coverage)  # type: ignore[arg-type]
    return tools, store, verify


@pytest.mark.parametrize("kind", ["fake", "store"])
def test_second_round_reuses_filled_and_skips_infeasible(tmp_path: Path, kind: str) -> None:
    if kind == "fake":
        tools, memory, verify = world()
        store = None
    else:
        tools, store, verify = _store_world(tmp_path)
    first = _campaign(tmp_path, tools, 0)
    filled = {(a["task"], a["bin"]) for a in first["added"]}
    if store is None:
        infeasible = {k for k, g in memory.gaps.items() if g.status == "infeasible"}
    else:  # proven by failed attempts, with their reasons, in the ledger
        proven = store.gaps(status="infeasible")
        infeasible = {(g.task, g.bin_label) for g in proven}
        assert all(g.proof and "targeted attempts failed" in g.proof.reason for g in proven)
        assert {(g.task, g.bin_label) for g in store.gaps(status="filled")} == filled
    assert filled and infeasible
    calls_round0 = len(verify.calls)

    # Round 1: the policy's new rollouts are the round-0 data again (nothing learned yet).
    tools.coverage = type(tools.coverage)(tools.coverage.data)  # type: ignore[attr-defined]
    second = _campaign(tmp_path, tools, 1)
    gaps = {(g["task"], g["bin"]): g for g in second["gaps"]}
    assert all(gaps[k]["status"] == "reused" for k in filled)
    assert all("filled earlier by" in gaps[k]["reasons"][-1] for k in filled)
    assert all(gaps[k]["status"] == "infeasible" for k in infeasible)
    # Nothing was re-verified: filled bins are re-used, infeasible ones skipped.
    assert len(verify.calls) == calls_round0 and second["candidates"] == 0
    assert second["added"] == []  # re-use is not a new program
    assert second["stopped"] == "no open gap left to target"
    if store is not None:
        assert {p.origin for p in store.programs() if p.round == 0} == {"input", "mutant"}
        store.close()
