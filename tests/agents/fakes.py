"""A small fake world for the agents and the campaign graph: programs are one-line sources
that spell their pattern levels, operators rewrite those levels, and the fake verifier reads
them back. Deterministic, no compiler, no emulator."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from structcover.agents.ports import GapMemory, MutantSource, Neighbour, OperatorEvent, Toolbox
from structcover.graphs.state import GapState, TaskCoverageState, Verdict
from structcover.schema import content_hash

REUSE = ("none", "smem", "reg")
SYNC = ("none", "block", "warp")
#: Operator -> (axis, level) it sets.
OPS = {"to_smem": ("reuse", "smem"), "to_reg": ("reuse", "reg"), "to_none": ("reuse", "none"),
       "add_block_sync": ("sync", "block"), "to_warp": ("sync", "warp")}
INFEASIBLE = {"reuse=reg|sync=warp": "register tiling leaves nothing for warp exchange"}


def src(task: str, reuse: str, sync: str, tag: str = "") -> str:
    return f"// task={task} reuse={reuse} sync={sync} {tag}".rstrip()


def feats(source: str) -> dict[str, Any]:
    m = re.search(r"reuse=(\w+) sync=(\w+)", source)
    assert m, source
    return {"reuse": m.group(1), "sync": m.group(2)}


def label(f: dict[str, Any]) -> str:
    return f"reuse={f['reuse']}|sync={f['sync']}"


def bounds(bin_: str) -> dict[str, str]:
    return dict(part.split("=") for part in bin_.split("|"))


@dataclass
class FakeCoverage:
    data: dict[str, list[str]]  # task -> sources

    def discover(self) -> tuple[list[str], list[str]]:
        return ["reuse", "sync"], []

    def _covered(self, added: list[dict[str, Any]]) -> dict[str, set[str]]:
        out = {t: {label(feats(s)) for s in srcs} for t, srcs in self.data.items()}
        for a in added:
            out[a["task"]].add(label(feats(a["source"])))
        return out

    def per_task(self, added: list[dict[str, Any]]) -> list[TaskCoverageState]:
        feasible = len(REUSE) * len(SYNC) - len(INFEASIBLE)
        return [TaskCoverageState(task=t, covered=sorted(c), feasible=feasible,
                                  infeasible=len(INFEASIBLE), scov=round(len(c) / feasible, 6))
                for t, c in sorted(self._covered(added).items())]

    def gaps(self, added: list[dict[str, Any]]) -> list[GapState]:
        out = []
        for task, covered in sorted(self._covered(added).items()):
            for r in REUSE:
                for s in SYNC:
                    b = f"reuse={r}|sync={s}"
                    if b in covered:
                        continue
                    infeasible = b in INFEASIBLE
                    out.append(GapState(task=task, bin=b, priority=1.0 + (s == "warp") * 0.5,
                                        kind="zero", reasons=["no program in this bin"],
                                        bounds=bounds(b), failures=0,
                                        status="infeasible" if infeasible else "open"))
        return out

    def bin_of(self, features: dict[str, Any]) -> str:
        return label(features)


@dataclass
class FakeMemory:
    programs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # task -> (id, src)
    gaps: dict[tuple[str, str], GapMemory] = field(default_factory=dict)
    attempts: list[tuple[str, str, str]] = field(default_factory=list)
    operators: list[tuple[str, bool, str]] = field(default_factory=list)
    events: list[OperatorEvent] = field(default_factory=list)

    def nearest(self, task: str, target: dict[str, Any], k: int) -> list[Neighbour]:
        out = []
        for pid, s in self.programs.get(task, []):
            f = feats(s)
            d = sum(f.get(a) != v for a, v in target.items())
            out.append(Neighbour(pid, s, f, float(d)))
        return sorted(out, key=lambda n: (n.distance, n.program_id))[:k]

    def gap(self, task: str, bin: str) -> GapMemory:
        return self.gaps.get((task, bin), GapMemory())

    def recorded_gaps(self) -> dict[tuple[str, str], GapMemory]:
        return dict(self.gaps)

    def record_attempt(self, task: str, bin: str, attempt: dict[str, Any], round: int) -> None:
        key = (task, bin, attempt["program_id"])
        if key not in self.attempts:
            self.attempts.append(key)
            g = self.gaps.setdefault((task, bin), GapMemory())
            g.last_stage, g.last_reason = attempt["stage"], attempt["reason"]
            if attempt["program_id"]:
                g.tried.append(attempt["program_id"])
            if attempt["stage"] == "ok":
                g.filled_by = attempt["program_id"]
            if attempt["stage"] not in ("ok", "no-candidate"):
                g.failures.append(attempt["reason"])

    def set_status(self, task: str, bin: str, status: str, round: int, proof: str = "") -> None:
        g = self.gaps.setdefault((task, bin), GapMemory())
        g.status, g.proof = status, proof

    def add_program(self, record: dict[str, Any], round: int) -> None:
        rows = self.programs.setdefault(record["task"], [])
        if all(pid != record["program_id"] for pid, _ in rows):
            rows.append((record["program_id"], record["source"]))

    def record_operator(self, event: OperatorEvent) -> None:
        self.operators.append((event.operator, event.ok, event.stage))
        self.events.append(event)


class FakePlanner:
    def plan(self, features: dict[str, Any], bounds: dict[str, str], *, seed: int,
             k: int, family: str = "", operators: frozenset[str] | None = None,
             first_steps: Any = None) -> list[list[str]]:
        need = [op for axis, lvl in sorted(bounds.items()) if features.get(axis) != lvl
                for op, (a, v) in OPS.items() if a == axis and v == lvl]
        return [need] if need else []


class FakeMutate:
    def apply(self, source: str, chain: list[str], *, seed: int) -> list[MutantSource]:
        f = feats(source)
        tag = f"mut:{f['reuse']}/{f['sync']}:" + "+".join(chain)
        for op in chain:
            axis, lvl = OPS[op]
            f[axis] = lvl
        task = re.search(r"task=(\w+)", source).group(1)  # type: ignore[union-attr]
        return [MutantSource(src(task, f["reuse"], f["sync"], tag), list(chain))]

    def applicable(self, source):  # type: ignore[no-untyped-def]
        return frozenset(OPS)

    def first_steps(self, source):  # type: ignore[no-untyped-def]
        return None  # landings unknown: the planner predicts every step

    def applies(self, source: str, chain: list[str], *, seed: int) -> bool:
        return bool(self.apply(source, chain, seed=seed))


@dataclass
class FakeVerify:
    #: Operators whose mutants fail equivalence.
    broken: set[str] = field(default_factory=lambda: {"to_warp"})
    calls: list[str] = field(default_factory=list)

    def verify(self, source: str, task: str, bin: str) -> Verdict:
        self.calls.append(content_hash(source))
        f = feats(source)
        landed = label(f)
        bad = next((op for op in self.broken if op in source), None)
        if bad:
            return Verdict(ok=False, stage="equivalence",
                           reason=f"3 of 1024 outputs differ ({bad})",
                           landed_bin=landed, backend="fake", checks=["compile", "structure"],
                           features=f, gpu_seconds=0.0)
        if landed != bin:
            return Verdict(ok=False, stage="structure", reason=f"landed in {landed}",
                           landed_bin=landed, backend="fake", checks=["compile"], features=f,
                           gpu_seconds=0.0)
        return Verdict(ok=True, stage="ok", reason="", landed_bin=landed, backend="fake",
                       checks=["compile", "structure", "anti-hacking", "equivalence"],
                       features=f, gpu_seconds=0.0)


def world(tasks: tuple[str, ...] = ("t1", "t2")) -> tuple[Toolbox, FakeMemory, FakeVerify]:
    """Each task starts with three programs (none/none, smem/block, reg/none)."""
    data = {t: [src(t, "none", "none"), src(t, "smem", "block"), src(t, "reg", "none")]
            for t in tasks}
    memory = FakeMemory()
    for t, srcs in data.items():
        for s in srcs:
            memory.add_program({"task": t, "program_id": content_hash(s), "source": s}, 0)
    verify = FakeVerify()
    tools = Toolbox(coverage=FakeCoverage(data), memory=memory, planner=FakePlanner(),
                    mutate=FakeMutate(), verify=verify,
                    known_ids=frozenset(content_hash(s) for v in data.values() for s in v))
    return tools, memory, verify
