"""How a campaign reports the gaps it left: proven infeasible, or open and why; and the bins
that only re-using an existing program would reach (reweighting, never a fill).

A gap is ``infeasible`` only with a task-rule proof (``tools.coverage.per_task``): a rule that
holds for every program the verifier accepts for the task. A gap that the operators could not
reach — no chain planned, or every candidate failed — stays ``open``: it counts against
SCov, and its reason says that the offline operators do not reach it, which an LLM policy
(writing the program itself) still could. Memory may close such a gap for the campaign's own
bookkeeping after repeated failures; the report does not call that a proof.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from structcover.tools.coverage.archive import Archive

#: The reason an unreached, unproven gap stays open in an offline campaign.
OFFLINE_REACH = "no operator chain reaches it offline; an LLM policy could"
#: The same when the campaign ran with an LLM policy too.
LLM_REACH = "neither the operator chains nor the LLM policy reached it within the budget"


def classify_gap(reasons: Sequence[str], proof: str | None, *, llm: bool = False,
                 untargeted: str = "") -> tuple[str, str]:
    """The reported ``(status, reason)`` of a gap the campaign left unfilled.

    Args:
        reasons: The gap's reasons, first the coverage tool's, then the campaign's
            (attempts, memory).
        proof: The task-rule proof for this (task, bin), ``"rule: reason"``; None without one.
        llm: Whether an LLM policy synthesized too.
        untargeted: Why the campaign never got to the gap (it stopped first), when it made
            no attempt there: then nothing is known about what reaches it, and the reason
            says so instead of blaming the operators.

    Returns:
        ``("infeasible", proof)`` with a rule proof, else ``("open", why)`` where ``why``
        keeps the campaign's reasons and ends with what would still reach the bin.
    """
    if proof:
        return "infeasible", f"proven infeasible by rule {proof}"
    kept = [r for r in reasons[1:] if not r.startswith("proven infeasible:")]
    tried = [r.removeprefix("proven infeasible: ") for r in reasons
             if r.startswith("proven infeasible:")]
    why = "; ".join([*kept, *tried]) or (reasons[0] if reasons else "not reached")
    if untargeted:
        return "open", f"{why}; not targeted: {untargeted}"
    return "open", f"{why}; {LLM_REACH if llm else OFFLINE_REACH}"


def earlier_round_bins(table: pd.DataFrame, archive: Archive, round: int,
                       ) -> dict[str, dict[str, str]]:
    """Per task, bins that round ``round`` leaves empty but an earlier round's correct
    program of the task reaches, with the first such program's id.

    Sampling those programs again is reweighting: it is reported apart and never counts as
    filling the bin (only a new program does).

    Returns:
        ``{task_id: {bin label: program_id}}``; empty when the table has no ``round``
        column or lacks an archive feature.
    """
    if "round" not in table.columns or any(f not in table.columns for f in archive.features):
        return {}
    rnd = pd.to_numeric(table["round"], errors="coerce").to_numpy()
    ok = (table["correct"].fillna(False).astype(bool).to_numpy() if "correct" in table.columns
          else np.ones(len(table), bool))
    idx = archive.index(table)
    labels = archive.labels()
    tasks = table["task_id"].astype(str).to_numpy()
    ids = (table["program_id"].astype(str).to_numpy() if "program_id" in table.columns
           else np.array([str(i) for i in range(len(table))]))
    now: dict[str, set[int]] = {}
    for t, i in zip(tasks[rnd == round], idx[rnd == round], strict=True):
        now.setdefault(t, set()).add(int(i))
    out: dict[str, dict[str, str]] = {}
    order = np.lexsort((ids, rnd))  # earliest round first, then by id: one answer per seed
    for j in order:
        t, i = tasks[j], int(idx[j])
        if rnd[j] < round and ok[j] and i >= 0 and t in now and i not in now[t]:
            out.setdefault(t, {}).setdefault(labels[i], ids[j])
    return out


def reweighting_lines(bins: Mapping[str, Mapping[str, str]]) -> list[str]:
    """``task / bin: re-use program <id> (round < N)`` lines for a summary, sorted."""
    return sorted(f"{t} / {b}: an earlier round's program {pid} lands here; re-using it is "
                  "reweighting, not a new program" for t, bins_ in bins.items()
                  for b, pid in bins_.items())
