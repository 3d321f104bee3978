"""The campaign graph: diagnose -> choose targets -> (approve) -> synthesize -> verify ->
retry or record -> update archive and memory -> loop, until a budget or the coverage target
stops it -> export.

Targets fan out with LangGraph's ``Send``: each target carries its own
:class:`~structcover.graphs.state.TargetState` through synthesize -> verify (-> synthesize
again with the Verifier's feedback, bounded by the target's candidate allowance) -> record.
``update`` is deferred, so it runs once after every branch of the step has recorded. Nodes
are thin: each calls one agent or the runner's exporter; no analysis and no LLM call lives
here. Concurrency is bounded by the ``max_concurrency`` of the run config.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send, interrupt

from structcover.agents.diagnoser import Diagnoser
from structcover.agents.ports import Toolbox
from structcover.agents.recorder import record_result
from structcover.agents.synthesizer import Synthesizer, feedback_of, tried_keys
from structcover.agents.verifier import Verifier
from structcover.graphs.state import CampaignState, GapState, TargetResult, TargetState


@dataclass(frozen=True)
class Limits:
    """The campaign's budgets and knobs (copied from the runner's options)."""

    budget: int = 64
    target_scov: float = 0.85
    max_retries: int = 2
    targets_per_step: int = 8
    wall_time_s: float | None = None
    gpu_seconds: float | None = None
    approve: bool = False
    seed: int = 0


@dataclass
class CampaignContext:
    """Everything the nodes need that is not state: tools, agents, limits, exporter."""

    tools: Toolbox
    limits: Limits = field(default_factory=Limits)
    diagnoser: Diagnoser = field(default_factory=Diagnoser)
    synthesizer: Synthesizer = field(default_factory=Synthesizer)
    verifier: Verifier = field(default_factory=Verifier)
    export: Callable[[CampaignState], dict[str, str]] = lambda state: {}
    round: int = 0
    deadline: float | None = None  # time.monotonic() value; set by the runner


Ctx = Runtime[CampaignContext]


# nodes ------------------------------------------------------------------------------------

def diagnose(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Diagnose the data (plus programs added by an earlier step of this campaign)."""
    ctx = runtime.context
    d = ctx.diagnoser.diagnose(ctx.tools, state.get("added", []))
    update: dict[str, Any] = {"f_star": d.f_star, "drift": d.drift, "coverage": d.coverage,
                              "gaps": d.gaps, "round": ctx.round}
    if "coverage_before" not in state:
        update.update(coverage_before=d.coverage, iteration=0, candidates=0, verified=0,
                      gpu_seconds=0.0, processed=0, added=[], reweighted=[], notes=[])
    return update


def choose_targets(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Pick this step's targets and their candidate allowances, or say why the campaign
    stops."""
    lim = runtime.context.limits
    stop = _stop_reason(state, runtime.context)
    gaps = runtime.context.diagnoser.remaining(state["gaps"])
    if not stop and not gaps:
        stop = "no open gap left to target"
    if stop:
        return {"planned": [], "stopped": stop}
    left = lim.budget - state["candidates"]
    chosen: list[tuple[GapState, int]] = []
    for gap in gaps[:lim.targets_per_step]:
        allowance = min(lim.max_retries + 1, left)
        if allowance <= 0:
            break
        left -= allowance
        chosen.append((gap, allowance))
    keys = {(g["task"], g["bin"]) for g, _ in chosen}
    # Bins a candidate may fill when it misses its own: open, and no branch of this step aims
    # at them (two branches filling one bin would spend a program on a bin already covered).
    others: dict[str, list[str]] = {}
    for g in state["gaps"]:
        if g["status"] == "open" and (g["task"], g["bin"]) not in keys:
            others.setdefault(g["task"], []).append(g["bin"])
    planned = [TargetState(task=gap["task"], bin=gap["bin"], bounds=gap["bounds"],
                           seed=_seed(lim.seed, gap), allowance=allowance, used=0, tried=[],
                           feedback=[], candidate=None, verdict=None, no_candidate="",
                           result=None, also=others.get(gap["task"], []))
               for gap, allowance in chosen]
    marked = [GapState(**{**g, "status": "targeted"}) if (g["task"], g["bin"]) in keys else g
              for g in state["gaps"]]
    return {"planned": planned, "gaps": marked}


def approve(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Pause with the planned targets and budget; resume with True to spend, False to stop."""
    lim = runtime.context.limits
    answer = interrupt({"targets": [f"{t['task']} / {t['bin']}" for t in state["planned"]],
                        "budget": lim.budget, "candidates_used": state["candidates"],
                        "wall_time_s": lim.wall_time_s, "gpu_seconds": lim.gpu_seconds})
    if answer:
        return {"approved": True}
    return {"approved": False, "planned": [], "stopped": "not approved"}


def synthesize(target: TargetState, runtime: Ctx) -> dict[str, Any]:
    """One candidate for the target (Synthesizer), or the reason there is none."""
    ctx = runtime.context
    proposal = ctx.synthesizer.propose(ctx.tools, target)
    if proposal.candidate is None:
        return {"candidate": None, "no_candidate": proposal.reason}
    cand = proposal.candidate
    return {"candidate": cand, "used": target["used"] + 1, "verdict": None,
            "tried": [*target["tried"], *tried_keys(cand)]}


def verify(target: TargetState, runtime: Ctx) -> dict[str, Any]:
    """Verify the candidate (Verifier); a failure becomes structured feedback."""
    ctx = runtime.context
    cand = target["candidate"]
    assert cand is not None  # routed here only with a candidate
    verdict = ctx.verifier.check(ctx.tools, target, cand)
    if verdict["ok"]:
        return {"verdict": verdict}
    return {"verdict": verdict,
            "feedback": [*target["feedback"], feedback_of(cand, verdict["stage"],
                                                          verdict["reason"],
                                                          verdict["landed_bin"])]}


def record(target: TargetState) -> dict[str, Any]:
    """Turn the target's end state into its result."""
    verdict, cand = target["verdict"], target["candidate"]
    program = None
    if verdict and verdict["ok"] and cand:
        # The bin it verified for: the target's, or another open bin it landed in instead.
        program = {"program_id": cand["program_id"], "task": target["task"],
                   "bin": verdict["landed_bin"] or target["bin"], "parent_id": cand["parent_id"],
                   "operators": cand["operators"], "source": cand["source"],
                   "features": verdict["features"], "backend": verdict["backend"],
                   "checks": verdict["checks"], "kind": cand["kind"]}
    attempts = list(target["feedback"])
    outcome: Literal["filled", "failed", "skipped"] = (
        "filled" if program else ("skipped" if not attempts and target["no_candidate"] else "failed"))
    gpu = sum(float(f.get("gpu_seconds", 0.0)) for f in attempts) + (  # type: ignore[misc,arg-type]
        float(verdict["gpu_seconds"]) if verdict and verdict["ok"] else 0.0)
    return {"result": TargetResult(task=target["task"], bin=target["bin"], outcome=outcome,
                                   used=target["used"], attempts=attempts, program=program,
                                   gpu_seconds=gpu, note=target["no_candidate"])}


def attempt(target: TargetState, config: RunnableConfig, runtime: Ctx) -> dict[str, Any]:
    """Run one target through the target graph (a checkpointed subgraph of this run)."""
    out = TARGET_GRAPH.invoke(target, config, context=runtime.context)
    return {"results": [out["result"]]}


def update(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Apply this step's results to memory and the added programs, then re-diagnose.

    Results are applied in (task, bin) order whatever order the branches finished in, and
    only those past ``processed``: a resumed run never applies one twice.
    """
    ctx = runtime.context
    new = sorted(state["results"][state["processed"]:], key=lambda r: (r["task"], r["bin"]))
    added = list(state["added"])
    reweighted = list(state["reweighted"])
    for result in new:
        record_result(ctx.tools, result, ctx.round, max_failures=ctx.diagnoser.max_failures)
        if result["program"]:
            added.append(result["program"])
        reweighted += [a["program_id"] for a in result["attempts"] if a["stage"] == "novelty"]
    d = ctx.diagnoser.diagnose(ctx.tools, added)
    return {"processed": len(state["results"]), "added": added, "reweighted": reweighted,
            "candidates": state["candidates"] + sum(r["used"] for r in new),
            "verified": state["verified"] + sum(r["program"] is not None for r in new),
            "gpu_seconds": state["gpu_seconds"] + sum(r["gpu_seconds"] for r in new),
            "coverage": d.coverage, "gaps": d.gaps, "iteration": state["iteration"] + 1,
            "approved": state.get("approved", False)}


def export(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Write the round's outputs (curated data, prompts, contrast pairs, report)."""
    return {"files": runtime.context.export(state)}


# routing ----------------------------------------------------------------------------------

def route_targets(state: CampaignState, runtime: Ctx) -> str | list[Send]:
    """Fan the planned targets out (after approval when asked), or finish."""
    if not state.get("planned"):
        return "export"
    if runtime.context.limits.approve and not state.get("approved"):
        return "approve"
    return [Send("attempt", t) for t in state["planned"]]


def after_synthesize(target: TargetState) -> str:
    """To verification with a candidate, else record why there is none."""
    return "verify" if target["candidate"] is not None and not target["no_candidate"] \
        else "record"


def after_verify(target: TargetState, runtime: Ctx) -> str:
    """Back to synthesis while the Verifier's retry policy allows it, else record."""
    verdict = target["verdict"]
    assert verdict is not None
    if not verdict["ok"] and runtime.context.verifier.retry(target, verdict):
        return "synthesize"
    return "record"


#: How a budget stop's reason begins: a campaign stopped by one may be resumed with a larger
#: budget (the runner re-enters the loop at ``choose_targets``).
BUDGET_STOPS = ("candidate budget spent", "wall-time budget spent", "GPU-time budget spent")


def _stop_reason(state: CampaignState, ctx: CampaignContext) -> str:
    lim = ctx.limits
    if state["candidates"] >= lim.budget:
        return f"candidate budget spent ({state['candidates']}/{lim.budget})"
    if ctx.deadline is not None and time.monotonic() >= ctx.deadline:
        return f"wall-time budget spent ({lim.wall_time_s} s)"
    if lim.gpu_seconds is not None and state["gpu_seconds"] >= lim.gpu_seconds:
        return f"GPU-time budget spent ({state['gpu_seconds']:.1f}/{lim.gpu_seconds} s)"
    cov = state["coverage"]
    if cov and all(c["scov"] >= lim.target_scov for c in cov):
        return f"coverage target reached (every task's SCov >= {lim.target_scov:.0%})"
    return ""


def _seed(seed: int, gap: GapState) -> int:
    """A per-target seed from the campaign seed, the gap and its failures so far."""
    text = f"{seed}|{gap['task']}|{gap['bin']}|{gap['failures']}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


# wiring -----------------------------------------------------------------------------------

TARGET_NODES: dict[str, Any] = {"synthesize": synthesize, "verify": verify, "record": record}
NODES: dict[str, Any] = {
    "diagnose": diagnose, "choose_targets": choose_targets, "approve": approve,
    "attempt": attempt, "update": update, "export": export,
}


def build_target_graph() -> StateGraph[Any, CampaignContext, Any, Any]:
    """One target: synthesize -> verify -> (synthesize again | record)."""
    g = StateGraph(TargetState, context_schema=CampaignContext)
    for name, fn in TARGET_NODES.items():
        g.add_node(name, fn)
    g.add_edge(START, "synthesize")
    g.add_conditional_edges("synthesize", after_synthesize, ["verify", "record"])
    g.add_conditional_edges("verify", after_verify, ["synthesize", "record"])
    g.add_edge("record", END)
    return g


def build_graph() -> StateGraph[Any, CampaignContext, Any, Any]:
    """The campaign graph, uncompiled (compile with a checkpointer to run)."""
    g = StateGraph(CampaignState, context_schema=CampaignContext)
    for name, fn in NODES.items():
        g.add_node(name, fn, input_schema=TargetState if name == "attempt" else None)
    # one flat wiring block
    g.add_edge(START, "diagnose")
    g.add_edge("diagnose", "choose_targets")
    g.add_conditional_edges("choose_targets", route_targets, ["approve", "attempt", "export"])
    g.add_conditional_edges("approve", route_targets, ["attempt", "export"])
    g.add_edge("attempt", "update")
    g.add_edge("update", "choose_targets")
    g.add_edge("export", END)
    return g


def compile_graph(checkpointer: Any = None) -> Any:
    """The compiled graph (``langgraph.json`` points at :data:`graph`, which has none)."""
    return build_graph().compile(checkpointer=checkpointer)


#: Runs inside the campaign's checkpointer (``attempt`` passes its config down).
TARGET_GRAPH: Any = build_target_graph().compile()
graph = compile_graph()
