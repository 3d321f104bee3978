"""Every state schema of the campaign graph, in one place.

Values are plain JSON types (str, int, float, bool, lists and dicts of them) so that the
SQLite checkpointer stores them exactly and a resumed campaign reads back what it wrote.
Heavy objects (the data table, the frozen archive, the memory store, backends) never enter
the state: they live in :class:`structcover.graphs.campaign.CampaignContext`, rebuilt from
disk on resume.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

Outcome = Literal["filled", "failed", "skipped"]
#: ``reused``: filled in an earlier round by a program memory holds; re-using it is
#: reweighting, reported apart, never counted as a new program.
GapStatus = Literal["open", "targeted", "filled", "infeasible", "reused"]


class TaskCoverageState(TypedDict):
    """One task's coverage over the frozen archive (feasible bins only in ``scov``)."""

    task: str
    covered: list[str]
    feasible: int
    infeasible: int
    scov: float


class GapState(TypedDict):
    """A (task, bin) the campaign may target, in priority order."""

    task: str
    bin: str
    priority: float
    kind: str
    reasons: list[str]
    bounds: dict[str, str]
    status: GapStatus
    failures: int


class Candidate(TypedDict):
    """A synthesized program, not yet verified."""

    program_id: str
    source: str
    parent_id: str
    operators: list[str]
    kind: Literal["mutant", "reuse", "llm"]  # llm: written by the LLM Synthesizer


class Feedback(TypedDict):
    """Why a candidate failed, for the next synthesis attempt."""

    program_id: str
    parent_id: str
    operators: list[str]
    stage: str
    reason: str
    landed_bin: str


class Verdict(TypedDict):
    """The verifier's answer for one candidate."""

    ok: bool
    stage: str
    reason: str
    landed_bin: str
    backend: str
    checks: list[str]
    features: dict[str, Any]
    gpu_seconds: float


class TargetResult(TypedDict):
    """What one target came to: the added program or every failed attempt with its reason."""

    task: str
    bin: str
    outcome: Outcome
    used: int
    attempts: list[Feedback]
    program: dict[str, Any] | None
    gpu_seconds: float
    note: str


class TargetState(TypedDict):
    """One target's private state while it moves through synthesize -> verify -> record
    (the target subgraph); ``result`` is set by record."""

    task: str
    bin: str
    bounds: dict[str, str]
    seed: int
    allowance: int
    used: int
    tried: list[str]
    feedback: list[Feedback]
    candidate: Candidate | None
    verdict: Verdict | None
    no_candidate: str
    result: TargetResult | None
    #: The task's other open bins no target of this step aims at: a verified candidate that
    #: lands in one of them fills it instead (read with ``.get``: older checkpoints lack it).
    also: NotRequired[list[str]]


class CampaignState(TypedDict, total=False):
    """The campaign graph's shared state."""

    round: int
    f_star: list[str]
    drift: list[str]
    coverage_before: list[TaskCoverageState]
    coverage: list[TaskCoverageState]
    gaps: list[GapState]
    planned: list[TargetState]
    approved: bool
    iteration: int
    candidates: int
    verified: int
    gpu_seconds: float
    started_at: float
    #: Every target result ever returned; parallel branches append (reducer), the update
    #: node consumes ``results[processed:]`` so that nothing is applied twice.
    results: Annotated[list[TargetResult], operator.add]
    processed: int
    added: list[dict[str, Any]]
    reweighted: list[str]
    stopped: str
    files: dict[str, str]
    notes: list[str]
