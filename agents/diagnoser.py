"""The Diagnoser: runs discovery and per-task diagnosis through the coverage tool and memory,
and returns the gaps worth targeting, prioritized, each with its reasons.

The policy seam: :class:`DiagnosisPolicy` orders the gaps. The offline policy keeps the
coverage tool's priority (zero bins, low bins, collapsed features, high-SRMis bins) within
each task, after the bins another task of the round reaches, and takes the tasks in turn
(each task's best gap, then each task's second...), so a
small budget raises every task's SCov instead of spending itself on the first task's bins;
ties break by task and bin label so that a seed gives one order; an LLM policy may reorder
(a later issue) but never invents a gap the tools did not report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from structcover.agents.ports import GapMemory, Toolbox
from structcover.graphs.state import GapState, TaskCoverageState


class DiagnosisPolicy(Protocol):
    """Orders the gaps the tools reported."""

    def order(self, gaps: list[GapState]) -> list[GapState]:
        """The gaps, most worth targeting first."""


class OfflineDiagnosisPolicy:
    """Tasks in turn; within a task, demonstrated bins first, then by priority; ties by
    (task, bin) for a stable order."""

    def order(self, gaps: list[GapState]) -> list[GapState]:
        """Sort by (rank within the task, not demonstrated, -priority, task, bin).

        SCov is reported per task and as the mean over tasks: the k-th best gap of every task
        comes before any task's (k+1)-th, so the mean rises fastest under a budget. Within a
        task, a bin another task of the round reaches (*demonstrated*: the structure exists
        for this data, often in another language or from another parent) comes before one no
        task reaches, whatever the pooled priority says: it is the likelier to be filled.
        """
        tasks = {g["task"] for g in gaps}
        missing: dict[str, int] = {}
        for g in gaps:
            missing[g["bin"]] = missing.get(g["bin"], 0) + 1

        def within(g: GapState) -> tuple[bool, float, str, str]:
            demonstrated = missing[g["bin"]] < len(tasks)
            return (not demonstrated, -g["priority"], g["task"], g["bin"])

        seen: dict[str, int] = {}
        ranked = []
        for g in sorted(gaps, key=within):
            rank = seen.get(g["task"], 0)
            seen[g["task"]] = rank + 1
            ranked.append(((rank, *within(g)), g))
        return [g for _, g in sorted(ranked, key=lambda r: r[0])]


@dataclass
class Diagnosis:
    """The Diagnoser's answer."""

    f_star: list[str]
    drift: list[str]
    coverage: list[TaskCoverageState]
    gaps: list[GapState]


class Diagnoser:
    """Discovery + diagnosis + memory -> prioritized gaps."""

    def __init__(self, policy: DiagnosisPolicy | None = None, max_failures: int = 3) -> None:
        self.policy = policy or OfflineDiagnosisPolicy()
        self.max_failures = max_failures

    def diagnose(self, tools: Toolbox, added: list[dict[str, Any]]) -> Diagnosis:
        """Diagnose the data plus ``added`` programs.

        Memory overrides the coverage tool's status for gaps an earlier round proved
        infeasible (skipped from now on) and carries over each gap's failure count, so a
        second round neither re-tries a proven-infeasible bin nor forgets its history.
        """
        f_star, drift = tools.coverage.discover()
        coverage = tools.coverage.per_task(added)
        gaps = []
        known = tools.memory.recorded_gaps()  # one read, not one per (task, bin)
        blank = GapMemory()
        for gap in tools.coverage.gaps(added):
            mem = known.get((gap["task"], gap["bin"]), blank)
            gap = GapState(**gap)  # a copy: the tool's list stays untouched
            gap["failures"] = max(gap["failures"], len(mem.failures))
            if mem.status == "filled" and mem.filled_by and gap["status"] == "open":
                # An earlier round filled it; that program is not new to this round's data.
                gap["status"] = "reused"
                gap["reasons"] = [*gap["reasons"], f"filled earlier by {mem.filled_by}: "
                                  "re-used as reweighting, not a new program"]
            elif mem.status == "infeasible" and gap["status"] != "filled":
                gap["status"] = "infeasible"
                gap["reasons"] = [*gap["reasons"], f"proven infeasible: {mem.proof}"]
            elif mem.failures and gap["status"] == "open":
                last = f"{len(mem.failures)} failed attempt(s), last: {mem.failures[-1]}"
                gap["reasons"] = [*gap["reasons"], last]
            if mem.last_stage == "no-candidate" and gap["status"] == "open":
                # Synthesis is deterministic: with no (parent, chain) left, a retry repeats it.
                gap["failures"] = max(gap["failures"], self.max_failures)
                gap["reasons"] = [*gap["reasons"], f"no candidate: {mem.last_reason}"]
            gaps.append(gap)
        return Diagnosis(f_star=f_star, drift=drift, coverage=coverage,
                         gaps=self.policy.order(gaps))

    def remaining(self, gaps: list[GapState]) -> list[GapState]:
        """Open gaps still worth an attempt (not filled, not infeasible, under the failure
        limit), in the policy's order."""
        return [g for g in gaps if g["status"] in ("open", "targeted")
                and g["failures"] < self.max_failures]
