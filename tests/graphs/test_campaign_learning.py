"""Memory that learns across rounds: the operator transitions a campaign observes (round,
parent, bin levels before and after) are stored, and the next round's planner ranks by them.

The store (SQLite ledger + Chroma), the memory port, the recorder and the planner
(``plan_chains`` through ``PlannerBinding``) are real; coverage, mutation and verification
are small doubles over one axis ``reuse`` (none / smem / reg). The corpus-measured effects
say both operators take ``none`` to ``smem``, ``op_a`` more often; in truth ``op_a`` lands
in ``reg``. Round 0 pays for that belief once on task t1; round 1 must not pay again on t2,
a task of the same family it never touched.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from structcover.agents.ports import MutantSource, Toolbox
from structcover.campaign.bindings import PlannerBinding
from structcover.campaign.toolbox import SerialStore, StoreMemory
from structcover.graphs.campaign import CampaignContext, Limits, compile_graph
from structcover.graphs.state import GapState, TaskCoverageState, Verdict
from structcover.schema import content_hash
from structcover.tools.curation.effects_table import EffectsTable, Transition
from structcover.tools.mutations.base import OperatorInfo
from structcover.tools.store import MemoryStore, ProgramRecord

LEVELS = ("none", "smem", "reg")
#: What each operator really does to ``reuse`` (the measured table believes otherwise).
TRUTH = {"op_a": "reg", "op_b": "smem"}
TASKS = ("t1", "t2")


def _src(task: str, reuse: str, tag: str = "") -> str:
    return f"// task={task} reuse={reuse} {tag}".rstrip()


def _level(source: str) -> str:
    m = re.search(r"reuse=(\w+)", source)
    assert m, source
    return m.group(1)


@dataclass
class Coverage:
    """One axis, three bins; smem gaps first (priority 2), then reg."""

    data: dict[str, list[str]]

    def discover(self) -> tuple[list[str], list[str]]:
        return ["reuse"], []

    def _covered(self, added: list[dict[str, Any]]) -> dict[str, set[str]]:
        out = {t: {f"reuse={_level(s)}" for s in srcs} for t, srcs in self.data.items()}
        for a in added:
            out[a["task"]].add(a["bin"])
        return out

    def per_task(self, added: list[dict[str, Any]]) -> list[TaskCoverageState]:
        return [TaskCoverageState(task=t, covered=sorted(c), feasible=3, infeasible=0,
                                  scov=round(len(c) / 3, 6))
                for t, c in sorted(self._covered(added).items())]

    def gaps(self, added: list[dict[str, Any]]) -> list[GapState]:
        return [GapState(task=t, bin=f"reuse={lvl}", priority=2.0 if lvl == "smem" else 1.0,
                         kind="zero", reasons=["empty"], bounds={"reuse": lvl}, failures=0,
                         status="open")
                for t, c in sorted(self._covered(added).items()) for lvl in LEVELS
                if f"reuse={lvl}" not in c]

    def bin_of(self, features: dict[str, Any]) -> str:
        return f"reuse={features['reuse']}"

    def levels(self, label: str) -> dict[str, str]:
        return dict([label.split("=")]) if label else {}

    def bin_distance(self, label: str, target: dict[str, str]) -> int:
        have = self.levels(label)
        return sum(have.get(a) != v for a, v in target.items())


class Mutate:
    def apply(self, source: str, chain: list[str], *, seed: int) -> list[MutantSource]:
        task = re.search(r"task=(\w+)", source).group(1)  # type: ignore[union-attr]
        return [MutantSource(_src(task, TRUTH[chain[-1]], "+".join(chain)), list(chain))]

    def applicable(self, source):  # type: ignore[no-untyped-def]
        return frozenset(TRUTH)

    def first_steps(self, source):  # type: ignore[no-untyped-def]
        return None  # landings unknown: the planner predicts every step

    def applies(self, source: str, chain: list[str], *, seed: int) -> bool:
        return bool(self.apply(source, chain, seed=seed))


@dataclass
class Verify:
    calls: list[tuple[str, str, str]]

    def verify(self, source: str, task: str, bin: str) -> Verdict:
        landed = f"reuse={_level(source)}"
        self.calls.append((task, bin, source.split()[-1]))
        ok = landed == bin
        return Verdict(ok=ok, stage="ok" if ok else "structure",
                       reason="" if ok else f"landed in {landed}", landed_bin=landed,
                       backend="double", checks=["compile", "structure", "equivalence"],
                       features={"reuse": _level(source)}, gpu_seconds=0.0)


def _operators() -> dict[str, OperatorInfo]:
    return {name: OperatorInfo(name=name, func=lambda s: None, moves={}, summary=name)
            for name in TRUTH}


def _effects() -> EffectsTable:
    believed = [("op_a", "p1"), ("op_a", "p2"), ("op_b", "p3")]
    return EffectsTable(transitions=[
        Transition(operator=op, family="fam", program=p, levels_before={"reuse": "none"},
                   levels_after={"reuse": "smem"}) for op, p in believed])


def _world(tmp: Path) -> tuple[Toolbox, SerialStore, list[tuple[str, str, str]]]:
    # Each task's data already covers reg (a program memory does not hold as a parent), so a
    # candidate landing there fills nothing: it is the mistake the planner must learn from.
    data = {t: [_src(t, "none"), _src(t, "reg", "seen")] for t in TASKS}
    coverage = Coverage(data)
    store = SerialStore(lambda: MemoryStore.open(tmp / "memory"))
    store.add_programs([ProgramRecord(task=t, source=s, features={"x": 1.0 + i}, verified=True,
                                      round=0, origin="input", bin_label="reuse=none")
                        for i, (t, srcs) in enumerate(sorted(data.items())) for s in srcs
                        if _level(s) == "none"])
    calls: list[tuple[str, str, str]] = []
    tools = Toolbox(coverage=coverage, memory=StoreMemory(store, coverage),  # type: ignore[arg-type]
                    planner=PlannerBinding(store, {}, operators=_operators(), effects=_effects()),
                    mutate=Mutate(), verify=Verify(calls),
                    known_ids=frozenset(content_hash(s) for v in data.values() for s in v),
                    family_of={t: "fam" for t in TASKS})
    return tools, store, calls


def _campaign(tmp: Path, tools: Toolbox, round_: int, budget: int) -> dict[str, Any]:
    conn = sqlite3.connect(tmp / "cp.sqlite", check_same_thread=False)
    try:
        ctx = CampaignContext(tools=tools, round=round_,
                              limits=Limits(budget=budget, target_scov=1.0, targets_per_step=1))
        return compile_graph(SqliteSaver(conn)).invoke(
            {}, {"configurable": {"thread_id": f"round-{round_}"}}, context=ctx)
    finally:
        conn.close()


def test_round_one_plans_with_the_transitions_round_zero_observed(tmp_path: Path) -> None:
    tools, store, calls = _world(tmp_path)
    try:
        first = _campaign(tmp_path, tools, 0, budget=2)
        # Round 0 believed the measured table: op_a first, which landed in reg; then op_b.
        assert calls == [("t1", "reuse=smem", "op_a"), ("t1", "reuse=smem", "op_b")]
        assert [(a["task"], a["bin"]) for a in first["added"]] == [("t1", "reuse=smem")]

        seed_t1 = next(p.program_id for p in store.programs(task="t1") if p.origin == "input")
        assert {p.origin for p in store.programs(task="t1")} == {"input", "mutant"}
        got = {o.operator: o for o in store.operator_outcomes(family="fam")}
        a, b = got["op_a"], got["op_b"]
        assert (a.success, a.stage, a.round, a.task) == (False, "structure", 0, "t1")
        assert a.program_id == seed_t1 and a.chain == ["op_a"]
        assert a.candidate_id == content_hash(_src("t1", "reg", "op_a"))
        assert (a.levels_before, a.levels_after) == ({"reuse": "none"}, {"reuse": "reg"})
        assert (b.success, b.levels_before, b.levels_after) == (
            True, {"reuse": "none"}, {"reuse": "smem"})

        # Round 1 targets t2/smem first: the planner now knows op_a lands in reg.
        plan = tools.planner.plan({"reuse": "none"}, {"reuse": "smem"}, seed=0, k=4,
                                  family="fam")
        assert plan == [["op_b"]]
        calls.clear()
        second = _campaign(tmp_path, tools, 1, budget=1)
        assert calls == [("t2", "reuse=smem", "op_b")]  # no second wrong try
        assert [(a["task"], a["bin"]) for a in second["added"]] == [("t2", "reuse=smem")]
        gaps = {(g["task"], g["bin"]): g["status"] for g in second["gaps"]}
        assert gaps[("t1", "reuse=smem")] == "reused"  # round 0's fill, not new again
        # One outcome per event: op_a and op_b in round 0, op_b in round 1.
        assert len(store.operator_outcomes(family="fam")) == 3
    finally:
        store.close()


def test_without_round_zero_the_planner_repeats_the_mistake(tmp_path: Path) -> None:
    """The control: the same round-1 target on a fresh memory tries op_a first."""
    tools, store, calls = _world(tmp_path)
    try:
        assert tools.planner.plan({"reuse": "none"}, {"reuse": "smem"}, seed=0, k=4,
                                  family="fam")[0] == ["op_a"]
        tools.coverage.data["t1"].append(_src("t1", "smem"))  # type: ignore[attr-defined]
        _campaign(tmp_path, tools, 1, budget=1)
        assert calls == [("t2", "reuse=smem", "op_a")]
    finally:
        store.close()


def test_plans_are_reused_until_memory_records_an_outcome(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import structcover.tools.curation.planner as planner
    from structcover.tools.store import OperatorOutcome

    calls = []
    real = planner.plan_chains
    monkeypatch.setattr(planner, "plan_chains", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    tools, store, _ = _world(tmp_path)
    try:
        ask = ({"reuse": "none"}, {"reuse": "smem"})
        first = tools.planner.plan(*ask, seed=0, k=4, family="fam")
        assert tools.planner.plan(*ask, seed=0, k=4, family="fam") == first and len(calls) == 1
        tools.planner.plan(*ask, seed=1, k=4, family="fam")  # another seed: planned anew
        assert len(calls) == 2
        store.record_operator_outcome(OperatorOutcome(
            operator="op_a", family="fam", success=False, stage="structure", round=0,
            levels_before={"reuse": "none"}, levels_after={"reuse": "reg"}))
        assert tools.planner.plan(*ask, seed=0, k=4, family="fam") == [["op_b"]]  # re-planned
        assert len(calls) == 3
    finally:
        store.close()
