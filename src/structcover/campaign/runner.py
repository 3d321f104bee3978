"""The campaign runner: build the campaign graph with a SQLite checkpointer, run it, export.

``run_campaign(data, state_dir, options) -> CampaignResult`` is the typed entry point that
the CLI (``structcover campaign``), the demo and ``structcover.api.between_rounds`` call.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from structcover.campaign.prepare import Prepared, prepare
from structcover.campaign.toolbox import origin_of


class CampaignOptions(BaseModel):
    """Knobs of one campaign (every budget is a hard stop; whichever is hit first ends it)."""

    budget: int = Field(64, ge=1, description="most candidate programs to synthesize")
    wall_time_s: float | None = Field(None, gt=0, description="wall-clock budget of this run, "
                                                           "seconds (checked between steps)")
    gpu_seconds: float | None = Field(None, gt=0, description="GPU-time budget, seconds")
    target_scov: float = Field(0.85, gt=0, le=1,
                               description="stop when every task's feasible SCov reaches this")
    backend: str = Field("auto", description="equivalence backend: auto, cpu, gpu, compile-only")
    problems: Path | None = Field(None, description="KernelBench problems folder: rollout task "
                                                    "ids name problems in it (kind kernelbench)")
    seed: int = 0
    round: int | None = Field(None, description="round of DATA to diagnose (default: last)")
    resume: bool = Field(False, description="continue the checkpointed campaign in state_dir")
    approve: bool = Field(False, description="pause for approval of the planned targets")
    max_retries: int = Field(2, ge=0, description="re-synthesis attempts per target after a "
                                                  "verification failure")
    concurrency: int = Field(2, ge=1, description="targets synthesized/verified in parallel")
    targets_per_step: int = Field(8, ge=1, description="targets chosen per loop iteration")
    output_dir: Path | None = Field(None, description="where exports go (default: "
                                                      "<state_dir>/campaign/round_<N>)")
    llm_url: str | None = Field(None, description="OpenAI-compatible endpoint for the LLM "
                                                "policies (e.g. vllm serve); offline if none")
    llm_model: str | None = Field(None, description="model name served at llm_url")
    executor: Literal["local", "ray"] = Field(
        "local", description="where candidates are verified: local (this process) or ray")
    address: str | None = Field(None, description="Ray cluster to join (auto = the running "
                                                  "one); default: start a local one")
    tasks: list[str] | None = Field(None, description="fill gaps of these tasks only (default: "
                                                      "every task of the round); coverage and "
                                                      "the SCov target are over these, the "
                                                      "exported data keeps every task")


class Verification(BaseModel):
    """How one added program was verified."""

    backend: str
    equivalent: bool
    checks: list[str] = Field(default_factory=list, description="passed stages, in order")
    detail: str = ""


class AddedProgram(BaseModel):
    """A new program the campaign added to the data."""

    program_id: str
    task: str
    bin: str
    parent_id: str
    operators: list[str]
    origin: Literal["mutant", "llm"] = Field(
        "mutant", description="mutant: an operator chain applied to a verified program; llm: "
                              "written by the LLM Synthesizer")
    verification: Verification


class OpenGap(BaseModel):
    """A targeted bin that stayed empty, and why."""

    task: str
    bin: str
    status: Literal["open", "targeted", "infeasible"]
    reason: str


class TaskCoverage(BaseModel):
    """One task's SCov before and after the campaign (over feasible bins)."""

    task: str
    before: float
    after: float
    bins_feasible: int
    bins_infeasible: int


class CampaignResult(BaseModel):
    """What a campaign did, in numbers and paths."""

    state_dir: str
    round: int
    f_star: list[str] = Field(default_factory=list)
    drift: list[str] = Field(default_factory=list)
    coverage: list[TaskCoverage] = Field(default_factory=list)
    scov_before: float = 0.0
    scov_after: float = 0.0
    added: list[AddedProgram] = Field(default_factory=list)
    added_by_origin: dict[str, int] = Field(default_factory=dict,
                                            description="new programs per origin (mutant, llm)")
    reweighted: list[str] = Field(default_factory=list,
                                  description="existing programs re-used (weights), not new")
    open_gaps: list[OpenGap] = Field(default_factory=list)
    candidates: int = 0
    verified: int = 0
    stopped: str = ""
    files: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    llm: dict[str, Any] = Field(default_factory=dict,
                                description="LLM endpoint, per-agent usage and fallbacks")


Progress = Callable[[dict[str, Any]], None]
Approver = Callable[[dict[str, Any]], bool]


def run_campaign(data: Path, state_dir: Path, options: CampaignOptions | None = None, *,
                 progress: Progress | None = None, approver: Approver | None = None,
                 ) -> CampaignResult:
    """Run (or resume) one campaign over ``data`` and export the round's outputs.

    Args:
        data: Rollouts (any format ``structcover ingest`` reads) with a ``task_id`` column.
        state_dir: Campaign state: frozen archive, memory store, checkpoints, exports.
        options: Budgets and knobs (defaults: :class:`CampaignOptions`).
        progress: Called with the graph state after every step (live progress).
        approver: Asked with the planned targets and budget when ``options.approve``;
            False stops the campaign before it spends anything. Without one, an approval
            request ends the run with ``stopped = "awaiting approval"`` (resume to answer).

    Budgets are checked between steps (a step's targets finish what they started). The wall
    budget counts from this run's start; resuming a campaign that a budget stopped continues
    it under the budgets of the resuming run.

    Returns:
        The campaign's summary.

    Raises:
        ValueError: Bad data or options (the message names the input and why), or a
            campaign for this round already in ``state_dir`` without ``resume``.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    from structcover.graphs.campaign import BUDGET_STOPS, compile_graph

    options = options or CampaignOptions()
    state_dir = Path(state_dir)
    prep = prepare(Path(data), state_dir, options)
    ckpt = state_dir / "campaign" / "checkpoints.sqlite"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(ckpt), check_same_thread=False)
    # A checkpoint is written after every graph step, each a commit under the saver's one
    # lock: with the default rollback journal every commit waited on fsync while the other
    # branches queued for the lock. WAL with synchronous=NORMAL loses nothing when the process
    # is killed (only the last steps on a power loss, which --resume redoes).
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    try:
        graph = compile_graph(SqliteSaver(conn))
        config: dict[str, Any] = {"configurable": {"thread_id": f"round-{prep.round}"},
                                  "max_concurrency": options.concurrency,
                                  "recursion_limit": 10_000}
        existing = graph.get_state(config)
        if existing.values and not options.resume:
            raise ValueError(f"{state_dir}: holds a campaign for round {prep.round} already "
                             "(pass --resume to continue it, or use a new --state folder)")
        if existing.values and not existing.next and \
                str(existing.values.get("stopped", "")).startswith(BUDGET_STOPS):
            # It finished on a budget: go round the loop again under this run's budgets (a
            # budget still spent stops it at once, with the same outputs).
            graph.update_state(config, {"stopped": ""}, as_node="update")
        if options.wall_time_s:
            prep.context.deadline = time.monotonic() + options.wall_time_s
        payload: Any = None if existing.values else {}
        stopped_waiting = False
        while True:
            for values in graph.stream(payload, config, context=prep.context,
                                       stream_mode="values"):
                if progress is not None:
                    progress(values)
            snap = graph.get_state(config)
            if not snap.interrupts:
                break
            if approver is None:
                stopped_waiting = True
                break
            payload = Command(resume=bool(approver(dict(snap.interrupts[0].value))))
        state = graph.get_state(config).values
    finally:
        conn.close()
        prep.close()
    result = summarize(state, prep, options)
    if stopped_waiting:
        result.stopped = "awaiting approval"
    return result


def summarize(state: dict[str, Any], prep: Prepared, options: CampaignOptions) -> CampaignResult:
    """The campaign's summary from its final graph state."""
    before = {c["task"]: c for c in state.get("coverage_before", [])}
    after = {c["task"]: c for c in state.get("coverage", [])}
    coverage = [TaskCoverage(task=t, before=before[t]["scov"], after=after[t]["scov"],
                             bins_feasible=after[t]["feasible"],
                             bins_infeasible=after[t]["infeasible"])
                for t in sorted(before) if t in after]
    added = [AddedProgram(program_id=p["program_id"], task=p["task"], bin=p["bin"],
                          parent_id=p["parent_id"], operators=list(p["operators"]),
                          origin=origin_of(p), verification=Verification(backend=p["backend"], equivalent=True,
                                                    checks=list(p["checks"])))
             for p in state.get("added", [])]
    open_gaps = _open_gaps(state, prep)
    reused = [f"{g['task']} / {g['bin']}: {g['reasons'][-1]}" for g in state.get("gaps", [])
              if g["status"] == "reused"]
    return CampaignResult(
        state_dir=str(prep.state_dir), round=prep.round, f_star=list(state.get("f_star", [])),
        drift=list(state.get("drift", [])), coverage=coverage,
        scov_before=_mean([c.before for c in coverage]),
        scov_after=_mean([c.after for c in coverage]), added=added,
        added_by_origin=dict(sorted(Counter(a.origin for a in added).items())),
        reweighted=sorted({*state.get("reweighted", []), *reused, *prep.reweighting}),
        open_gaps=open_gaps,
        candidates=int(state.get("candidates", 0)), verified=int(state.get("verified", 0)),
        stopped=str(state.get("stopped", "")), files=dict(state.get("files", {})),
        notes=[*prep.notes, *state.get("notes", []), *_llm_lines(prep)],
        llm=prep.llm.summary() if prep.llm is not None else {})


def _open_gaps(state: dict[str, Any], prep: Prepared) -> list[OpenGap]:
    """Unfilled gaps: infeasible only with a task-rule proof; a gap the operators did not
    reach (even one memory closed after failed attempts) is open and says so."""
    from structcover.graphs.campaign import BUDGET_STOPS
    from structcover.tools.curation.gap_report import classify_gap

    proofs: Callable[[str], dict[str, str]] = getattr(prep.context.tools.coverage,
                                                      "infeasible", lambda task: {})
    # (memory is closed by now: the graph's results say which gaps this campaign targeted)
    targeted = {(r["task"], r["bin"]) for r in state.get("results", [])}
    stopped = str(state.get("stopped", ""))
    out = []
    for g in state.get("gaps", []):
        if g["status"] in ("filled", "reused"):
            continue
        attempted = (g["task"], g["bin"]) in targeted or g["failures"] > 0
        status, reason = classify_gap(
            g["reasons"], proofs(g["task"]).get(g["bin"]), llm=prep.llm is not None,
            untargeted="" if attempted or not stopped.startswith(BUDGET_STOPS)
            else f"the campaign stopped first ({stopped})")
        out.append(OpenGap(task=g["task"], bin=g["bin"], reason=reason,
                           status="infeasible" if status == "infeasible" else "open"))
    return out


def _llm_lines(prep: Prepared) -> list[str]:
    """Why LLM decisions fell back to the offline policies (counts and reasons)."""
    if prep.llm is None:
        return []
    from structcover.agents.llm import fallback_lines

    return fallback_lines(prep.llm.summary())


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0


def result_json(result: CampaignResult) -> str:
    """The summary as stable JSON (sorted keys), for files compared across runs."""
    return json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True)
