"""A campaign state folder with known evidence, for explain / chat / why tests: the frozen
archive of a saxpy round, memory seeded with the round's verified programs, a bin with three
failed attempts (compile, equivalence, wrong bin), a bin memory proved infeasible and bins
never targeted."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

AXES = "global_access=coalesced,reuse=none,sync=none,intensity=low"
FAILED = f"{AXES},vector_width=2,tensor_cores=no"
INFEASIBLE = f"{AXES},vector_width=8,tensor_cores=yes"
NEVER = "reuse=smem_tiling,global_access=strided"
PROOF = "3 targeted attempts failed: tensor cores need a matrix product; saxpy has none"


def full(spec: str) -> str:
    return ",".join(f"pattern.{item}" for item in spec.split(","))


def build(root: Path) -> Path:
    """The state folder under ``root`` (returned)."""
    from structcover.config import ArchiveSettings
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.simulation.simulate import SimulationSettings, simulate
    from structcover.tools.store import (
        AttemptRecord,
        InfeasibilityProof,
        MemoryStore,
        ProgramRecord,
    )
    from structcover.tools.store.embedding import numeric_features

    fams = [f for f in load_corpus() if f.name == "saxpy"]
    table = simulate(SimulationSettings(rounds=1, rollouts_per_task=16, mutate_p=0.0, seed=2),
                     families=fams)
    state = root / "state"
    # Every pattern axis, so the evidence bins below name a level of each (the default archive
    # keeps the two with the highest within-task MI).
    run = run_diagnosis(table, state, round=0, settings=ArchiveSettings(max_pattern_axes=6))
    rows = run.table.reset_index(drop=True)
    idx = run.archive.index(rows)
    labels = run.archive.labels()
    feats = [c for c in rows.columns if isinstance(c, str) and "." in c]
    records, seen = [], set()
    for i, r in rows.iterrows():
        if not bool(r.get("correct", True)) or r["program"] in seen or idx[i] < 0:
            continue
        seen.add(r["program"])
        values = {f: r[f] for f in feats
                  if not (r[f] is None or (isinstance(r[f], float) and math.isnan(r[f])))}
        numeric, levels = numeric_features(values)
        records.append(ProgramRecord(task="saxpy", source=str(r["program"]),
                                     features={k: v for k, v in numeric.items() if v == v},
                                     levels=levels, verified=True, round=0, origin="input",
                                     bin_label=labels[int(idx[i])]))
    store = MemoryStore.open(state / "memory")
    try:
        store.add_programs(records)
        vw4 = full(f"{AXES},vector_width=4,tensor_cores=no")
        for n, (outcome, stage, reason, landed) in enumerate([
                ("failed", "compile", "line 7: error: identifier \"float5\" is undefined", None),
                ("failed", "equivalence", "12 of 50000 outputs differ, first at index 49999",
                 None),
                ("wrong_bin", "structure", f"landed in bin {vw4} instead", vw4)]):
            store.record_attempt("saxpy", full(FAILED), AttemptRecord(
                round=0, outcome=outcome, stage=stage, reason=reason,
                candidate_id=f"cand{n}", parent_id=records[0].program_id,
                operators=["vectorize_loads"], landed_bin=landed))
        store.mark_infeasible("saxpy", full(INFEASIBLE), InfeasibilityProof(
            reason=PROOF, rule="failed-attempts", round=0))
    finally:
        store.close()
    return state


def copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest
