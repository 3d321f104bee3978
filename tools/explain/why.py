"""Why one program is predicted fast or slow, from its structural features.

The prediction is the analytical model of ``tools.simulation.gpu_model`` (SIMULATED, a
roofline with structural corrections, not a measurement) on the task's workload. Each
structural factor the model reads is explained by a counterfactual: the same program with
that one feature changed (coalescing made perfect or fully strided, vector loads on or off,
shared-memory tiling on or off, divergent branches removed, ...). A factor whose worse
setting would slow the program by at least ``min_effect`` is a reason it is fast; one whose
better setting would speed it up by that much is a reason it is slow.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

#: (feature, label when good, label when bad, is it good?, good value, bad value); "good"
#: is what the model rewards (e.g. it only asks whether any vector load exists).
FACTORS: list[tuple[str, str, str, Callable[[float], bool], Any, Any]] = [
    ("mem.coalesced_fraction", "coalesced global accesses", "uncoalesced global accesses",
     lambda v: v >= 0.9, 1.0, 0.0),
    ("mem.vector_loads", "vector loads", "scalar loads", lambda v: v > 0, 4, 0),
    ("smem.tiled", "shared-memory tiling", "no shared-memory tiling", lambda v: v > 0,
     True, False),
    ("par.coarsening_loops", "register coarsening", "one output per thread", lambda v: v > 0,
     1, 0),
    ("branch.divergent", "no divergent branches", "divergent branches", lambda v: v == 0, 0, 10),
    ("launch.block_size", "a block size that fills the SMs", "a small block size",
     lambda v: v >= 128, 256, 32),
    ("sync.barriers_in_loops", "no barriers in loops", "barriers in loops", lambda v: v == 0,
     0, 8),
    ("atomics.global", "no global atomics", "global atomics", lambda v: v == 0, 0, 4),
    ("launch.count", "a single kernel launch", "several kernel launches", lambda v: v <= 1,
     1, 4),
]


#: Factors that only ever cost time (their good setting is their absence).
COSTS = frozenset({"branch.divergent", "sync.barriers_in_loops", "atomics.global",
                   "launch.count"})


class Factor(BaseModel):
    """One feature's effect on the predicted time."""

    feature: str
    value: Any
    says: str = Field(description="what the feature's value means, e.g. 'coalesced accesses'")
    effect: float = Field(description="predicted time with the other setting / now "
                                      "(>1: the current value helps)")


class ProgramWhy(BaseModel):
    """The answer of ``structcover why``."""

    program_id: str
    task: str
    bin: str = ""
    predicted_us: float
    fast_because: list[Factor] = Field(default_factory=list)
    slow_because: list[Factor] = Field(default_factory=list)
    summary: str
    model: str = "tools.simulation.gpu_model (analytical, simulated; not a measurement)"
    sources: list[str] = Field(default_factory=list)


def find_program(view: Any, ref: str) -> Any:
    """The memory program whose id is or starts with ``ref``.

    Raises:
        ValueError: None or several match (the message says which, or lists a few ids).
    """
    progs = view.programs() if view.store is not None else []
    hits = [p for p in progs if p.program_id == ref] or \
        [p for p in progs if p.program_id.startswith(ref)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        some = ", ".join(p.program_id[:12] for p in progs[:5]) or "(memory holds none)"
        raise ValueError(f"program {ref!r}: no verified program in memory has this id "
                         f"(a few ids: {some})")
    raise ValueError(f"program {ref!r}: {len(hits)} programs start with it; give more "
                     "characters")


def explain_program(view: Any, ref: str, *, min_effect: float = 1.05) -> ProgramWhy:
    """Explain the predicted performance of program ``ref`` (an id or unique id prefix in
    memory, or a ``.cu`` file whose task is given as ``TASK:path``).

    Raises:
        ValueError: Unknown program or task, or an unreadable file.
    """
    prog_id, task, bin_, values = _resolve(view, ref)
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.simulation.gpu_model import predict_time_s, workload

    specs = {t.task_id: t for f in load_corpus() for t in f.tasks}
    if task not in specs:
        raise ValueError(f"program {ref!r}: task {task!r} has no task spec in the corpus, so "
                         "no workload to predict on")
    work = workload(specs[task])
    now = predict_time_s(values, work)
    fast, slow = [], []
    for feature, good_txt, bad_txt, judge, good, bad in FACTORS:
        cur = _num(values.get(feature))
        if cur is None:
            continue
        is_good = judge(cur)
        alt = bad if is_good else good
        t_alt = predict_time_s({**values, feature: alt}, work)
        ratio = t_alt / now if now > 0 else 1.0
        f = Factor(feature=feature, value=cur, says=good_txt if is_good else bad_txt,
                   effect=round(ratio, 3))
        # An absent cost (no atomics, no divergence) is no reason to be fast: only a present
        # optimization is; a cost is a reason only when present.
        if is_good and ratio >= min_effect and feature not in COSTS:
            fast.append(f)
        elif not is_good and ratio <= 1 / min_effect:
            slow.append(f)
    fast.sort(key=lambda f: -f.effect)
    slow.sort(key=lambda f: f.effect)
    parts = []
    if fast:
        parts.append("fast because " + " and ".join(
            f"{f.says} (x{f.effect:.2f} slower without)" for f in fast[:3]))
    if slow:
        parts.append("slow because " + " and ".join(
            f"{f.says} (x{1 / f.effect:.2f} faster with the fix)" for f in slow[:3]))
    if not parts:
        parts.append("no structural factor the model reads moves its time by "
                     f"{(min_effect - 1):.0%} or more (bound by the task's minimum traffic)")
    return ProgramWhy(program_id=prog_id, task=task, bin=bin_, predicted_us=round(now * 1e6, 3),
                      fast_because=fast, slow_because=slow,
                      summary=f"{prog_id[:12]} ({task}), predicted {now * 1e6:.1f} us: "
                              + "; ".join(parts),
                      sources=[f"program:{prog_id}"] if view is not None and prog_id else [])


def _resolve(view: Any, ref: str) -> tuple[str, str, str, dict[str, Any]]:
    if ":" in ref and ref.endswith(".cu"):
        task, path = ref.split(":", 1)
        try:
            source = Path(path).read_text()
        except OSError as exc:
            raise ValueError(f"program {ref!r}: cannot read {path} ({exc})") from exc
        from structcover.schema import content_hash
        from structcover.tools.features.extract import extract_values

        return content_hash(source), task, "", dict(extract_values(source))
    p = find_program(view, ref)
    return p.program_id, p.task, p.bin_label or "", {**p.features, **p.levels}


def _num(v: Any) -> float | None:
    """A feature value as a number (None when missing or not numeric)."""
    if v is None or isinstance(v, str):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if x != x else x
