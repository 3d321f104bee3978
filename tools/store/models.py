"""Typed records the memory store keeps (programs, gaps and attempts, operator outcomes, features).

Every record has a deterministic id (a content hash, :func:`content_id`), so recording the same
thing twice — a campaign node replayed after ``--resume`` — is a no-op rather than a duplicate.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

GapStatus = Literal["open", "targeted", "filled", "infeasible"]
#: Gap statuses, in the order a gap normally moves through them.
GAP_STATUSES: tuple[str, ...] = ("open", "targeted", "filled", "infeasible")
AttemptOutcome = Literal["filled", "wrong_bin", "failed", "skipped"]
#: Where a candidate stopped; ``passed`` when it went through every stage.
Stage = Literal["mutate", "compile", "structure", "hacking", "equivalence", "profile", "passed"]
Origin = Literal["corpus", "input", "mutant", "llm", "contrast"]


def content_id(*parts: Any) -> str:
    """A stable 20-hex-digit id from JSON-serialisable parts (sorted keys, no whitespace)."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class ProgramRecord(BaseModel):
    """One program the campaign knows about, with its structural features.

    ``program_id`` defaults to a hash of (task, source): the same text for the same task is the
    same program, whatever round or metadata it is re-added with.
    """

    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1)
    source: str = Field(min_length=1, description="CUDA source text")
    features: dict[str, float] = Field(description="raw numeric structural features (see "
                                       "embedding.numeric_features for one-hot levels)")
    levels: dict[str, str] = Field(default_factory=dict,
                                   description="categorical features, e.g. pattern levels")
    verified: bool = Field(description="verified equivalent to the task's reference")
    round: int = Field(ge=0, description="round in which it entered the store")
    origin: Origin = "input"
    bin_label: str | None = Field(default=None, description="archive bin it falls in")
    backend: str | None = Field(default=None, description="verification backend, e.g. cpu")
    parent_id: str | None = Field(default=None, description="program it was mutated from")
    operators: list[str] = Field(default_factory=list, description="operator chain applied")
    program_id: str = ""

    @field_validator("features", mode="before")
    @classmethod
    def _none_is_missing(cls, v: Any) -> Any:
        # JSON has no NaN: a missing value is written as null and must read back as NaN.
        if isinstance(v, dict):
            return {k: math.nan if x is None else x for k, x in v.items()}
        return v

    @field_validator("features")
    @classmethod
    def _finite_or_nan(cls, v: dict[str, float]) -> dict[str, float]:
        for name, x in v.items():
            if isinstance(x, bool) or not isinstance(x, int | float):
                raise ValueError(f"feature {name!r} is not numeric: {x!r}")  # noqa: TRY004
            if math.isinf(x):
                raise ValueError(f"feature {name!r} is infinite")
        return v

    def model_post_init(self, context: Any, /) -> None:
        if not self.program_id:
            self.program_id = content_id("program", self.task, self.source)


class AttemptRecord(BaseModel):
    """One try at filling a gap: which candidate, how far it got and why it stopped."""

    model_config = ConfigDict(extra="forbid")

    round: int = Field(ge=0)
    outcome: AttemptOutcome
    stage: Stage = Field(description="stage where it stopped ('passed' when it went through)")
    reason: str = Field(default="", description="human-readable why, e.g. the compile error")
    candidate_id: str | None = Field(default=None, description="program id of the candidate")
    parent_id: str | None = None
    operators: list[str] = Field(default_factory=list)
    landed_bin: str | None = Field(default=None, description="bin the candidate really fell in")

    def attempt_id(self, task: str, bin_label: str) -> str:
        """Deterministic id: the same attempt recorded twice is stored once."""
        return content_id("attempt", task, bin_label, self.model_dump(mode="json"))


class InfeasibilityProof(BaseModel):
    """Why a bin cannot be filled (a feasibility rule, or exhausted operator chains)."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1)
    rule: str | None = Field(default=None, description="name of the rule or check that proved it")
    evidence: dict[str, Any] = Field(default_factory=dict)
    round: int = Field(ge=0)


class GapHistory(BaseModel):
    """A gap's current status and everything tried on it, oldest attempt first."""

    task: str
    bin_label: str
    status: GapStatus
    round: int = Field(description="round of the last status change")
    attempts: list[AttemptRecord] = Field(default_factory=list)
    proof: InfeasibilityProof | None = None


class OperatorOutcome(BaseModel):
    """One application of a mutation operator to a program of some task family."""

    model_config = ConfigDict(extra="forbid")

    operator: str = Field(min_length=1)
    family: str = Field(min_length=1)
    success: bool
    stage: Stage = Field(description="where it failed, or 'passed'")
    round: int = Field(ge=0)
    task: str | None = None
    program_id: str | None = Field(default=None, description="the program it was applied to")
    candidate_id: str | None = Field(default=None, description="the program it produced")
    chain: list[str] = Field(default_factory=list,
                             description="the whole operator chain this step belonged to")
    moved: dict[str, float] = Field(default_factory=dict,
                                    description="feature deltas the application caused")
    levels_before: dict[str, str] = Field(default_factory=dict,
                                          description="pattern / axis levels of the parent")
    levels_after: dict[str, str] = Field(default_factory=dict,
                                         description="pattern / axis levels of the variant "
                                         "(what the planner learns transitions from)")

    def outcome_id(self) -> str:
        """Deterministic id of this outcome."""
        return content_id("operator", self.model_dump(mode="json"))


class OperatorTally(BaseModel):
    """Success counts of one operator (on one family, or all)."""

    operator: str
    family: str | None
    successes: int
    failures: int
    failure_stages: dict[str, int] = Field(default_factory=dict)

    @property
    def trials(self) -> int:
        """Applications recorded."""
        return self.successes + self.failures

    @property
    def success_rate(self) -> float:
        """Laplace-smoothed success rate ((s + 1) / (n + 2)): 0.5 with no evidence."""
        return (self.successes + 1) / (self.trials + 2)


class DiscoveredFeature(BaseModel):
    """What one round's discovery said about one feature."""

    name: str
    mi: float | None
    tier: str
    selected: bool = Field(description="in F* that round")
    stability: float | None = None
    mi_delta: float | None = Field(default=None, description="MI change from the previous round")
    previous_tier: str | None = None


class RoundFeatures(BaseModel):
    """One round's discovered features and its drift summary."""

    round: int
    features: list[DiscoveredFeature]
    f_star: list[str]
    jaccard: float | None = Field(default=None, description="F* overlap with the previous round")
    entered: list[str] = Field(default_factory=list)
    left: list[str] = Field(default_factory=list)


class Neighbor(BaseModel):
    """A program found by nearest look-up, with its cosine distance to the query."""

    program: ProgramRecord
    distance: float
