"""The typed tools the agents call, as protocols: coverage, memory, planning, mutation and
candidate verification.

The agents hold no analysis of their own; every number they act on comes through one of
these. The campaign runner (``structcover.campaign``) binds them to the real tools
(``tools.coverage``, ``tools.store``, ``tools.curation.planner``, ``tools.mutations``,
``tools.verify.pipeline``); the tests bind small fakes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from structcover.graphs.state import GapState, TaskCoverageState, Verdict


@dataclass(frozen=True)
class Neighbour:
    """A verified program near a target bin, a starting point for mutation."""

    program_id: str
    source: str
    features: dict[str, Any]
    distance: float


@dataclass(frozen=True)
class MutantSource:
    """A program an operator chain produced from a parent."""

    source: str
    operators: list[str]


@dataclass(frozen=True)
class OperatorEvent:
    """One operator of a candidate's chain and how the candidate fared.

    The memory port turns it into an operator outcome: the parent's bin levels before and
    the levels of the bin the candidate landed in after, when the chain was that one
    operator (a longer chain's end says nothing about each step), so a later round's planner
    learns the transition this campaign observed.
    """

    operator: str
    family: str
    ok: bool
    stage: str
    round: int
    task: str = ""
    parent_id: str = ""
    candidate_id: str = ""
    chain: tuple[str, ...] = ()
    landed_bin: str = ""


@dataclass
class GapMemory:
    """What memory holds about one (task, bin): status, the reason of every failed candidate
    (``failures``; a round without any candidate is not a failure), and the last attempt."""

    status: str = "open"
    failures: list[str] = field(default_factory=list)
    proof: str = ""
    last_stage: str = ""
    last_reason: str = ""
    tried: list[str] = field(default_factory=list)  # program ids attempted, any round
    filled_by: str = ""  # the verified program that filled it, in an earlier step or round


class CoverageTool(Protocol):
    """Per-task coverage over the frozen archive."""

    def discover(self) -> tuple[list[str], list[str]]:
        """F* and the features that drifted since the previous round."""

    def per_task(self, added: list[dict[str, Any]]) -> list[TaskCoverageState]:
        """Coverage per task over the data plus the ``added`` program records."""

    def gaps(self, added: list[dict[str, Any]]) -> list[GapState]:
        """Prioritized (task, bin) gaps, infeasible ones included with status infeasible."""

    def bin_of(self, features: dict[str, Any]) -> str:
        """The archive bin a program with these features lands in ('' when none)."""


class MemoryTool(Protocol):
    """The campaign's long-term memory (programs, gaps, operator outcomes)."""

    def nearest(self, task: str, features_or_bounds: dict[str, Any], k: int) -> list[Neighbour]:
        """Verified programs of ``task`` nearest to the target, nearest first."""

    def gap(self, task: str, bin: str) -> GapMemory:
        """Status and failure history of one gap."""

    def recorded_gaps(self) -> dict[tuple[str, str], GapMemory]:
        """Every gap memory holds a record of, by (task, bin); any other gap is open and
        untried."""

    def record_attempt(self, task: str, bin: str, attempt: dict[str, Any], round: int) -> None:
        """Append one attempt (idempotent on the attempt's program id)."""

    def set_status(self, task: str, bin: str, status: str, round: int, proof: str = "") -> None:
        """Set a gap's status (``infeasible`` needs ``proof``)."""

    def add_program(self, record: dict[str, Any], round: int) -> None:
        """Store a verified program (idempotent on its id)."""

    def record_operator(self, event: OperatorEvent) -> None:
        """Fold one operator outcome into the statistics (idempotent per event)."""


class PlannerTool(Protocol):
    """Operator chains that move a program toward a bin."""

    def plan(self, features: dict[str, Any], bounds: dict[str, str], *, seed: int, k: int,
             family: str = "", operators: frozenset[str] | None = None,
             first_steps: Mapping[str, Mapping[str, Any]] | None = None) -> list[list[str]]:
        """Up to ``k`` chains (1-3 operator names) predicted to reach ``bounds``, best first;
        empty when none does. ``operators`` limits the search to those names (the ones that
        apply to the parent); None: every registered operator. ``first_steps``: the feature
        values each operator's variant of the parent really has (:meth:`MutateTool.first_steps`),
        which replace the first step's prediction."""


class MutateTool(Protocol):
    """Apply an operator chain."""

    def apply(self, source: str, chain: list[str], *, seed: int) -> list[MutantSource]:
        """Every distinct program the chain yields from ``source`` (may be empty)."""

    def applicable(self, source: str) -> frozenset[str]:
        """The operators that yield a program from ``source``, decided cheaply (no compile)."""

    def applies(self, source: str, chain: list[str], *, seed: int) -> bool:
        """Whether :meth:`apply` would yield a program, decided cheaply (no compile): a
        chain that does not apply to a parent is not worth an attempt."""

    def first_steps(self, source: str) -> dict[str, dict[str, Any]]:
        """The feature values of each applicable operator's variant of ``source``, decided
        cheaply (no compile): where one step really lands, for the planner's first step."""


class VerifyTool(Protocol):
    """Verify one candidate for one bin: compile, structure, anti-hacking, equivalence,
    profile."""

    def verify(self, source: str, task: str, bin: str) -> Verdict:
        """The verdict; never raises on a bad candidate."""


@dataclass
class Toolbox:
    """The tools bound for one campaign."""

    coverage: CoverageTool
    memory: MemoryTool
    planner: PlannerTool
    mutate: MutateTool
    verify: VerifyTool
    known_ids: frozenset[str] = frozenset()
    family_of: dict[str, str] = field(default_factory=dict)
