"""The campaign keeps every rule proof in memory: the gap is infeasible with the rule's name
and reason, only where no program of the task reaches the bin."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from structcover.campaign.prepare import _store_rule_proofs, task_rule_proofs
from structcover.tools.coverage.archive import build_archive
from structcover.tools.store import MemoryStore


def test_rule_proofs_are_stored_in_memory(tmp_path: Path) -> None:
    rows = pd.DataFrame({"task_id": ["vadd", "vadd", "odd"], "program_id": ["a", "b", "c"],
                         "pattern.global_access": ["coalesced", "strided", "none"],
                         "pattern.sync": ["none", "block", "none"]})
    archive = build_archive(rows, ["pattern.global_access", "pattern.sync"])
    proofs = task_rule_proofs(rows, archive)
    # vadd: the five global_access=none bins; odd reaches one of them, which stays feasible.
    assert len(proofs["vadd"]) == 5 and len(proofs["odd"]) == 4
    assert "pattern.global_access=none,pattern.sync=none" not in proofs["odd"]
    store = MemoryStore.open(tmp_path / "memory")
    try:
        _store_rule_proofs(store, proofs, 2)
        gaps = {(g.task, g.bin_label): g for g in store.gaps(status="infeasible")}
        assert len(gaps) == 9
        g = gaps[("vadd", "pattern.global_access=none,pattern.sync=block")]
        assert g.proof is not None and g.proof.rule == "work-reads-global-memory"
        assert "global memory" in g.proof.reason and g.proof.round == 2
        assert store.gap_history("vadd", "pattern.global_access=coalesced,pattern.sync=block"
                                 ).status == "open"
    finally:
        store.close()
