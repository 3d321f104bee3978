"""Bindings of the campaign's tool ports (``structcover.agents.ports``) to the real tools:
per-task coverage over the frozen archive, the Chroma memory store, the operator-chain
planner and the candidate verification pipeline (the mutation operators: ``structcover.campaign.mutate``).

Adapters only translate types; every analysis stays in ``tools``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from structcover.agents.ports import GapMemory, Neighbour, OperatorEvent
from structcover.graphs.state import GapState, TaskCoverageState
from structcover.tools.coverage.archive import Archive
from structcover.tools.coverage.bins import Bound


def bound_text(bound: Bound) -> str:
    """A bin bound as the level the planner and prompts name (categories as is)."""
    return str(bound.value) if bound.value is not None else bound.render()


@dataclass
class ArchiveCoverage:
    """Per-task coverage of a table over a frozen archive.

    A bin counts for a task unless a proof says it cannot hold a program of that task
    (``proofs``: task -> bin -> reason; bin-level proofs of the diagnosis apply to every
    task). SCov of a task = covered feasible bins / feasible bins.
    """

    table: pd.DataFrame
    archive: Archive
    proofs: dict[str, dict[str, str]] = field(default_factory=dict)
    f_star: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    priority: dict[str, tuple[float, str, list[str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.labels = self.archive.labels()
        self.tasks = sorted(self.table["task_id"].astype(str).unique())
        idx = self.archive.index(self.table)
        self._base: dict[str, set[str]] = {t: set() for t in self.tasks}
        for task, i in zip(self.table["task_id"].astype(str), idx, strict=True):
            if i >= 0:
                self._base[task].add(self.labels[int(i)])
        self._bounds = {lab: {f: bound_text(b) for f, b in self.archive.describe_bin(lab).items()}
                        for lab in self.labels}

    def discover(self) -> tuple[list[str], list[str]]:
        """F* and drift as the diagnosis found them."""
        return list(self.f_star), list(self.drift)

    def infeasible(self, task: str) -> dict[str, str]:
        """Bins proven impossible for ``task``, with the reason."""
        return {**self.proofs.get("*", {}), **self.proofs.get(task, {})}

    def covered(self, added: list[dict[str, Any]]) -> dict[str, set[str]]:
        """Bins each task's programs land in (data plus ``added``)."""
        out = {t: set(s) for t, s in self._base.items()}
        for a in added:
            if a.get("bin"):
                out.setdefault(a["task"], set()).add(a["bin"])
        return out

    def per_task(self, added: list[dict[str, Any]]) -> list[TaskCoverageState]:
        """Coverage of every task (covered bins, feasible count, SCov over feasible bins)."""
        out = []
        for task, cov in sorted(self.covered(added).items()):
            bad = self.infeasible(task)
            feasible = len(self.labels) - len(bad)
            hit = sorted(b for b in cov if b not in bad)
            out.append(TaskCoverageState(task=task, covered=hit, feasible=feasible,
                                         infeasible=len(bad),
                                         scov=round(len(hit) / feasible, 6) if feasible else 1.0))
        return out

    def gaps(self, added: list[dict[str, Any]]) -> list[GapState]:
        """Every empty (task, bin); priority from the diagnosis' gap list when it ranks the
        bin, else the zero-bin base 1.0; proven-infeasible bins come back as infeasible."""
        out = []
        for task, cov in sorted(self.covered(added).items()):
            bad = self.infeasible(task)
            for lab in self.labels:
                if lab in cov:
                    continue
                prio, kind, why = self.priority.get(lab, (1.0, "zero", []))
                reasons = ["no program of this task lands in this bin", *why]
                if lab in bad:
                    reasons.append(f"infeasible: {bad[lab]}")
                out.append(GapState(task=task, bin=lab, priority=float(prio), kind=kind,
                                    reasons=reasons, bounds=self._bounds[lab], failures=0,
                                    status="infeasible" if lab in bad else "open"))
        return out

    def levels(self, label: str) -> dict[str, str]:
        """``{axis: level}`` of a bin label (empty for an unknown label)."""
        return dict(self._bounds.get(label, {}))

    def bin_distance(self, label: str, target: dict[str, str]) -> int:
        """How many archive axes separate bin ``label`` from the target's levels."""
        have = self._bounds.get(label)
        if have is None:
            return len(target) + 1
        return sum(have.get(axis) != level for axis, level in target.items())

    def bin_of(self, features: dict[str, Any]) -> str:
        """The bin of one program's features ('' when it cannot be binned)."""
        row = pd.DataFrame([{f: features.get(f) for f in self.archive.features}])
        i = int(self.archive.index(row)[0])
        return self.labels[i] if i >= 0 else ""

    def bins_of(self, table: pd.DataFrame) -> list[str]:
        """The bin of every row of ``table`` ('' for a row that cannot be binned)."""
        cols = table.reindex(columns=self.archive.features)  # a missing feature: unbinnable
        return [self.labels[int(i)] if i >= 0 else "" for i in self.archive.index(cols)]


def origin_of(record: dict[str, Any]) -> str:
    """The memory origin of an added program: ``llm`` when the LLM Synthesizer wrote it,
    else ``mutant`` (records from before the kind was kept are mutants)."""
    return "llm" if record.get("kind") == "llm" else "mutant"


def finite(values: dict[str, float]) -> dict[str, float]:
    """Numeric features without the missing ones (NaN): a missing feature is left out of a
    memory record rather than stored as NaN, which does not survive a JSON round trip."""
    return {k: v for k, v in values.items() if v == v}


class SerialStore:
    """Runs every call on a store in one dedicated thread.

    The memory store keeps SQLite connections that belong to the thread that opened them,
    while LangGraph runs the fanned-out targets in a thread pool; routing every call through
    one worker keeps the store single-threaded (and its writes in one order).
    """

    def __init__(self, opener: Any) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory")
        self._store = self._pool.submit(opener).result()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return self._pool.submit(getattr, self._store, name).result()

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._pool.submit(attr, *args, **kwargs).result()

        return call

    def close(self) -> None:
        """Close the store in its thread, then stop the thread."""
        try:
            self._pool.submit(self._store.close).result()
        finally:
            self._pool.shutdown(wait=True)


#: Parents reserved for programs the campaign did not write (see :meth:`StoreMemory.nearest`).
ORIGINAL_PARENTS = 2


@dataclass
class StoreMemory:
    """The memory port over :class:`structcover.tools.store.MemoryStore`."""

    store: Any
    coverage: ArchiveCoverage

    def nearest(self, task: str, target: dict[str, Any], k: int) -> list[Neighbour]:
        """Verified programs of ``task`` ranked by how many archive axes separate their bin
        from the target, ties broken by feature-space distance (Chroma) to the best one."""
        progs = self.store.programs(task=task, verified=True)
        if not progs:
            return []
        # One entry per program text: a round holds a program once per rollout that wrote
        # it, and copies would take the places the originals are kept for below.
        first: dict[str, Any] = {}
        for p in progs:
            first.setdefault(p.source, p)
        progs = list(first.values())
        ranked = sorted(progs, key=lambda p: (self.coverage.bin_distance(p.bin_label or "", target),
                                              p.program_id))
        near = {n.program.program_id: n.distance
                for n in self.store.nearest(ranked[0].features, k=max(k * 4, 8), task=task,
                                            verified=True)}
        ranked.sort(key=lambda p: (self.coverage.bin_distance(p.bin_label or "", target),
                                   near.get(p.program_id, 2.0), p.program_id))
        chosen = ranked[:k]
        # Keep a few programs the campaign did not write among the parents: the mutants it adds
        # crowd the nearest places (a staged or chunked variant sits one axis from every
        # neighbouring gap), while the operators that move an axis apply to the plain shapes
        # the originals have and those mutants no longer do.
        have = sum(p.origin != "mutant" for p in chosen)
        extra = [p for p in ranked[k:] if p.origin != "mutant"][:max(0, ORIGINAL_PARENTS - have)]
        if extra and k > ORIGINAL_PARENTS:
            # Room made by the farthest mutants; the originals come last, after every nearer one.
            farthest = [i for i in reversed(range(len(chosen)))
                        if chosen[i].origin == "mutant"][:len(extra)]
            chosen = [p for i, p in enumerate(chosen) if i not in farthest] + extra[:len(farthest)]
        return [Neighbour(p.program_id, p.source,
                          dict(p.features) | dict(p.levels)
                          | self.coverage.levels(p.bin_label or ""),
                          float(self.coverage.bin_distance(p.bin_label or "", target)))
                for p in chosen]

    def gap(self, task: str, bin: str) -> GapMemory:
        """Status, failures and tried candidates of one gap."""
        return _gap_memory(self.store.gap_history(task, bin))

    def recorded_gaps(self) -> dict[tuple[str, str], GapMemory]:
        """Every gap memory holds anything about, by (task, bin), in one read."""
        return {(h.task, h.bin_label): _gap_memory(h) for h in self.store.gaps()}

    def record_attempt(self, task: str, bin: str, attempt: dict[str, Any],
                       round: int) -> None:
        """Store one attempt (stage names mapped onto the store's)."""
        from structcover.tools.store import AttemptRecord

        stage = attempt["stage"]
        outcome = ("filled" if stage == "ok" else "skipped" if stage == "no-candidate"
                   else "wrong_bin" if stage == "structure" else "failed")
        self.store.record_attempt(task, bin, AttemptRecord(
            round=round, outcome=outcome, stage=_STAGES.get(stage, "mutate"),
            reason=attempt["reason"] or stage, candidate_id=attempt["program_id"] or None,
            parent_id=attempt["parent_id"] or None, operators=list(attempt["operators"]),
            landed_bin=attempt["landed_bin"] or None))

    def set_status(self, task: str, bin: str, status: str, round: int,
                   proof: str = "") -> None:
        """Set a gap's status; ``infeasible`` stores ``proof``."""
        from structcover.tools.store import InfeasibilityProof

        if status == "infeasible":
            self.store.mark_infeasible(task, bin, InfeasibilityProof(
                reason=proof, rule="failed-attempts", round=round))
        elif self.store.gap_history(task, bin).status != status:
            self.store.set_gap_status(task, bin, status, round)

    def add_program(self, record: dict[str, Any], round: int) -> None:
        """Store a verified new program (origin ``mutant`` or ``llm``)."""
        from structcover.tools.store import ProgramRecord
        from structcover.tools.store.embedding import numeric_features

        numeric, levels = numeric_features(record["features"])
        self.store.add_programs([ProgramRecord(
            task=record["task"], source=record["source"],
            features=finite(numeric), levels=levels, verified=True, round=round,
            origin=origin_of(record), bin_label=record["bin"], backend=record["backend"],
            parent_id=record["parent_id"], operators=list(record["operators"]))])

    def record_operator(self, event: OperatorEvent) -> None:
        """Store one operator outcome with its round, parent and bin levels.

        ``levels_before`` are the parent's bin levels; ``levels_after`` those of the bin the
        candidate landed in, recorded only for a one-operator chain whose candidate was
        re-extracted (a longer chain's end is not one step's effect). These are the
        transitions the planner (``tools.curation.effects.EffectModel``) learns from.
        """
        from structcover.tools.store import OperatorOutcome

        before: dict[str, str] = {}
        after: dict[str, str] = {}
        if len(event.chain) == 1 and event.landed_bin and event.parent_id:
            parent = self.store.get_program(event.parent_id)
            if parent is not None and parent.bin_label:
                before = self.coverage.levels(parent.bin_label)
                after = self.coverage.levels(event.landed_bin)
        self.store.record_operator_outcome(OperatorOutcome(
            operator=event.operator, family=event.family, success=event.ok,
            stage=_STAGES.get(event.stage, "mutate"), round=event.round,
            task=event.task or None, program_id=event.parent_id or None,
            candidate_id=event.candidate_id or None, chain=list(event.chain),
            levels_before=before, levels_after=after if before else {}))


def _gap_memory(h: Any) -> GapMemory:
    """A store ``GapHistory`` as the memory port's ``GapMemory``."""
    failed = [a for a in h.attempts if a.outcome in ("failed", "wrong_bin")]
    last = h.attempts[-1] if h.attempts else None
    return GapMemory(status=h.status, failures=[a.reason for a in failed],
                     proof=h.proof.reason if h.proof else "",
                     last_stage=("no-candidate" if last and last.outcome == "skipped"
                                 else (last.stage if last else "")),
                     last_reason=last.reason if last else "",
                     tried=[a.candidate_id for a in h.attempts if a.candidate_id],
                     filled_by=next((a.candidate_id or "" for a in h.attempts
                                     if a.outcome == "filled"), ""))


#: Campaign stage names -> the store's.
_STAGES = {"ok": "passed", "novelty": "mutate", "no-candidate": "mutate", "compile": "compile",
           "structure": "structure", "anti-hacking": "hacking", "hacking": "hacking",
           "equivalence": "equivalence", "profile": "profile", "mutate": "mutate"}
