"""Why a bin is empty or thin, per task, from the evidence a state folder holds.

For every task the answer is one of: the bin holds programs (thin when only a few), it was
proven infeasible (the proof and its rule), it was targeted and every attempt failed (counts
by stage, examples with the candidate, reason and the bin it landed in instead), or it was
never targeted. Each answer also names the verified programs nearest to the bin and the axes
that separate them from it, and lists the records it used (``sources``) so that an answer can
cite them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

from structcover.tools.explain.binspec import BinSpec, level_text, parse_spec, short_axis
from structcover.tools.explain.state import StateView

Verdict = Literal["covered", "thin", "infeasible", "failed-attempts", "never-targeted"]
#: At most this many programs in the region counts as thin.
THIN = 2


class AttemptExample(BaseModel):
    """One failed attempt, as memory recorded it."""

    bin: str
    stage: str
    outcome: str
    reason: str
    candidate_id: str = ""
    operators: list[str] = Field(default_factory=list)
    landed_bin: str = ""
    round: int = 0


class NearProgram(BaseModel):
    """A verified program near the bin and what separates it from the bin."""

    program_id: str
    bin: str
    axes_apart: int
    differs: dict[str, list[str]] = Field(description="axis -> [program's level, bin's level]")


class TaskEvidence(BaseModel):
    """The evidence for one task."""

    task: str
    verdict: Verdict
    summary: str
    programs: list[str] = Field(default_factory=list, description="programs in the bin(s)")
    attempts: int = 0
    by_stage: dict[str, int] = Field(default_factory=dict)
    examples: list[AttemptExample] = Field(default_factory=list)
    proofs: dict[str, str] = Field(default_factory=dict, description="bin -> reason (rule)")
    nearest: list[NearProgram] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class BinExplanation(BaseModel):
    """The answer of ``structcover explain``."""

    query: str
    levels: dict[str, str]
    bins: int = Field(description="archive bins the query names")
    round: int | None = None
    tasks: list[TaskEvidence] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def explain_bin(view: StateView, spec_text: str, task: str | None = None, *,
                examples: int = 3, nearest: int = 3) -> BinExplanation:
    """Explain bin ``spec_text`` (as users write it) for every task, or for ``task``.

    Raises:
        BinSpecError: The spec names no axis/level of the archive (valid ones listed).
        ValueError: ``task`` is unknown to memory (known ones listed).
    """
    spec = parse_spec(spec_text, view.archive)
    tasks = view.tasks()
    notes = []
    if view.store is None:
        notes.append(f"{view.state_dir} has no memory folder: no attempts or programs are "
                     "known, only the archive and the diagnosis' proofs")
    if task is not None:
        if tasks and task not in tasks:
            raise ValueError(f"--task {task!r}: not in memory; known tasks: {', '.join(tasks)}")
        tasks = [task]
    out = [_task_evidence(view, spec, t, examples, nearest) for t in tasks]
    return BinExplanation(query=spec_text, levels={short_axis(a): v for a, v in
                                                   spec.levels.items()},
                          bins=len(spec.bins), round=view.round, tasks=out, notes=notes)


def _task_evidence(view: StateView, spec: BinSpec, task: str, n_examples: int,
                   n_nearest: int) -> TaskEvidence:
    region = set(spec.bins)
    programs = view.programs(task)
    inside = [p.program_id for p in programs if p.bin_label in region]
    gaps = {b: g for b, g in view.gaps(task).items() if b in region}
    attempts = [(b, a) for b, g in sorted(gaps.items()) for a in g.attempts]
    failed = [(b, a) for b, a in attempts if a.outcome in ("failed", "wrong_bin")]
    proofs = {b: f"{g.proof.reason} ({g.proof.rule or 'memory'})" for b, g in gaps.items()
              if g.status == "infeasible" and g.proof is not None}
    proofs |= {b: f"{p['reason']} ({p['rule']})" for b, p in view.proofs.items() if b in region}
    sources = [f"program:{pid}" for pid in inside]
    sources += [f"gap:{task}|{b}" for b in sorted(gaps)]
    sources += [f"proof:{task}|{b}" for b in sorted(proofs)]
    stages = Counter(a.stage for _, a in failed)
    examples = [AttemptExample(bin=b, stage=a.stage, outcome=a.outcome, reason=a.reason,
                               candidate_id=a.candidate_id or "", operators=list(a.operators),
                               landed_bin=a.landed_bin or "", round=a.round)
                for b, a in failed[-n_examples:]]
    near = _nearest(view, spec, programs, n_nearest)
    sources += [f"program:{n.program_id}" for n in near]
    where = _region(spec)
    if inside:
        verdict: Verdict = "thin" if len(inside) <= THIN else "covered"
        summary = (f"{task}: {len(inside)} verified program(s) in {where}"
                   + (" (thin)" if verdict == "thin" else ""))
    elif proofs and len(proofs) == len(region):
        verdict = "infeasible"
        summary = f"{task}: {where} is proven infeasible: " + "; ".join(
            sorted(set(proofs.values()))[:2])
    elif failed:
        verdict = "failed-attempts"
        summary = (f"{task}: targeted {len(failed)} time(s), every attempt failed ("
                   + ", ".join(f"{s} {n}" for s, n in stages.most_common())
                   + f"); last: {failed[-1][1].reason[:160]}")
    else:
        verdict = "never-targeted"
        skipped = [a for _, a in attempts if a.outcome == "skipped"]
        summary = (f"{task}: no program in {where} and no candidate was ever verified for it"
                   + (f"; synthesis found no candidate: {skipped[-1].reason[:160]}"
                      if skipped else "; it was never targeted"))
    if near and verdict != "covered":
        n = near[0]
        summary += (f". Nearest program {n.program_id[:12]} is {n.axes_apart} axis/axes away ("
                    + ", ".join(f"{a}: {v[0]} -> {v[1]}" for a, v in n.differs.items()) + ")")
    return TaskEvidence(task=task, verdict=verdict, summary=summary, programs=inside,
                        attempts=len(attempts), by_stage=dict(stages), examples=examples,
                        proofs=proofs, nearest=near, sources=sources)


def _nearest(view: StateView, spec: BinSpec, programs: list[Any], k: int) -> list[NearProgram]:
    """Programs ranked by how many of the query's axes they miss (then by id)."""
    ranked = []
    for p in programs:
        if not p.bin_label:
            continue
        try:
            have = {a: level_text(b) for a, b in view.archive.describe_bin(p.bin_label).items()}
        except (KeyError, ValueError):
            continue
        differs = {short_axis(a): [have.get(a, "?"), v] for a, v in spec.levels.items()
                   if have.get(a) != v}
        if differs:
            ranked.append(NearProgram(program_id=p.program_id, bin=p.bin_label,
                                      axes_apart=len(differs), differs=differs))
    ranked.sort(key=lambda n: (n.axes_apart, n.program_id))
    return ranked[:k]


def _region(spec: BinSpec) -> str:
    return (f"bin {spec.short()}" if spec.exact
            else f"the {len(spec.bins)} bins with {spec.short()}")
