"""What the campaign writes to memory after each step: every attempt with its outcome and
reason, operator outcomes, verified programs, gap statuses, and failed-attempt proofs.

A gap whose targeted attempts failed ``max_failures`` times (each with its reason) is marked
infeasible with a ``failed-attempts`` proof, the kind ``tools.coverage.feasibility`` accepts;
the next round's Diagnoser reads it back and skips the gap. All writes are idempotent (ids
are content hashes), so a resumed campaign that replays a step writes nothing twice.
"""

from __future__ import annotations

from typing import Any

from structcover.agents.ports import OperatorEvent, Toolbox
from structcover.graphs.state import TargetResult


def record_result(tools: Toolbox, result: TargetResult, round: int, *,
                  max_failures: int) -> None:
    """Write one target's result to memory."""
    task, bin_ = result["task"], result["bin"]
    family = tools.family_of.get(task, task)
    for a in result["attempts"]:
        tools.memory.record_attempt(task, bin_, dict(a), round)
        _operators(tools, dict(a), family, task, round, ok=False)
    if result["outcome"] == "skipped":
        tools.memory.record_attempt(task, bin_, {"program_id": "", "parent_id": "",
                                                 "operators": [], "stage": "no-candidate",
                                                 "reason": result["note"], "landed_bin": ""},
                                    round)
    program = result["program"]
    if program and program["bin"] != bin_:
        # It filled another open bin of the task: a missed attempt here, a fill there.
        tools.memory.record_attempt(task, bin_, {
            "program_id": program["program_id"], "parent_id": program["parent_id"],
            "operators": program["operators"], "stage": "structure",
            "reason": f"landed in bin {program['bin']} instead (it filled that open bin)",
            "landed_bin": program["bin"]}, round)
        _close(tools, task, bin_, round, max_failures, failed=True)
        record_result(tools, TargetResult(**{**result, "bin": program["bin"], "attempts": [],
                                             "outcome": "filled"}), round,
                      max_failures=max_failures)
        return
    if program:
        tools.memory.record_attempt(task, bin_, {"program_id": program["program_id"],
                                                 "parent_id": program["parent_id"],
                                                 "operators": program["operators"],
                                                 "stage": "ok", "reason": "verified",
                                                 "landed_bin": bin_}, round)
        _operators(tools, {**program, "stage": "ok", "landed_bin": bin_}, family, task, round,
                   ok=True)
        tools.memory.add_program(program, round)
        tools.memory.set_status(task, bin_, "filled", round)
        return
    _close(tools, task, bin_, round, max_failures, failed=result["outcome"] == "failed")


def _close(tools: Toolbox, task: str, bin_: str, round: int, max_failures: int, *,
           failed: bool) -> None:
    """Status of a gap left unfilled: infeasible by failed attempts past the limit, else
    open."""
    failures = tools.memory.gap(task, bin_).failures
    if len(failures) >= max_failures and failed:
        proof = (f"{len(failures)} targeted attempts failed: "
                 + "; ".join(f[:120] for f in failures[-max_failures:]))
        tools.memory.set_status(task, bin_, "infeasible", round, proof=proof)
    else:
        tools.memory.set_status(task, bin_, "open", round)


def _operators(tools: Toolbox, attempt: dict[str, Any], family: str, task: str, round: int, *,
               ok: bool) -> None:
    """One operator event per operator of the attempt's chain (none for an LLM-written
    candidate, which has no chain)."""
    chain = tuple(attempt["operators"])
    for op in chain:
        tools.memory.record_operator(OperatorEvent(
            operator=op, family=family, ok=ok, stage=attempt["stage"], round=round, task=task,
            parent_id=attempt["parent_id"], candidate_id=attempt["program_id"], chain=chain,
            landed_bin=attempt.get("landed_bin") or ""))
