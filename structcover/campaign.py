"""The campaign runner: build the campaign graph with a SQLite checkpointer, run it, export.

``run_campaign(data, state_dir, options) -> CampaignResult`` is the typed entry point that
the CLI (``structcover campaign``), the demo and ``structcover.api.between_rounds`` call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class CampaignOptions(BaseModel):
    """Knobs of one campaign (every budget is a hard stop; whichever is hit first ends it)."""

    budget: int = Field(64, ge=1, description="most candidate programs to synthesize")
    wall_time_s: float | None = Field(None, gt=0, description="wall-clock budget, seconds")
    gpu_seconds: float | None = Field(None, gt=0, description="GPU-time budget, seconds")
    target_scov: float = Field(0.85, gt=0, le=1,
                               description="stop when every task's feasible SCov reaches this")
    backend: str = Field("auto", description="equivalence backend: auto, cpu, gpu, compile-only")
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
    reweighted: list[str] = Field(default_factory=list,
                                  description="existing programs re-used (weights), not new")
    open_gaps: list[OpenGap] = Field(default_factory=list)
    candidates: int = 0
    verified: int = 0
    stopped: str = ""
    files: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


def run_campaign(data: Path, state_dir: Path, options: CampaignOptions | None = None,
                 ) -> CampaignResult:
    """Run (or resume) one campaign over ``data`` and export the round's outputs.

    Args:
        data: Rollouts (any format ``structcover ingest`` reads) with a ``task_id`` column.
        state_dir: Campaign state: frozen archive, memory store, checkpoints, exports.
        options: Budgets and knobs (defaults: :class:`CampaignOptions`).

    Returns:
        The campaign's summary.

    Raises:
        ValueError: Bad data or options (the message names the input and why).
    """
    raise NotImplementedError("campaign runner lands with issue 14")
