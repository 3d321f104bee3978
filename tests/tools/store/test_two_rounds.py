"""Memory across two campaign rounds: round 2 sees what round 1 filled and proved infeasible."""

from __future__ import annotations

from pathlib import Path

from structcover.tools.mining.discover import (
    Discovery,
    DiscoveryCounts,
    DiscoveryRun,
    FeatureReport,
)
from structcover.tools.mining.drift import compare_discoveries
from structcover.tools.store import (
    AttemptRecord,
    InfeasibilityProof,
    MemoryStore,
    ProgramRecord,
)


def _discovery(rnd: int, mis: dict[str, float], f_star: list[str]) -> Discovery:
    feats = [FeatureReport(name=n, kind="continuous", applies_to="all", rows=100, mi=mi,
                           mi_pooled=mi,
                           tier="critical" if mi > 0.1 else "marginal", stability=0.9,
                           selected=n in f_star) for n, mi in mis.items()]
    run = DiscoveryRun(target="speedup", normalize_within_task=True, correct_only=True,
                       tau_high=0.1, tau_low=0.02, bootstrap=10, mi_rows=100, seed=0)
    return Discovery(round=rnd, features=feats, f_star=f_star, settings=run,
                     counts=DiscoveryCounts(rows_in=100, rows_used=100, tasks=2))


def _round_one(path: Path) -> tuple[str, str]:
    store = MemoryStore.open(path)
    seed = ProgramRecord(task="gemm", source="// naive", features={"smem": 0.0, "loops": 1.0},
                         verified=True, round=0, origin="corpus", bin_label="reuse=none")
    mutant = ProgramRecord(task="gemm", source="// tiled", verified=True, round=1,
                           features={"smem": 4096.0, "loops": 2.0}, origin="mutant",
                           bin_label="reuse=tiled", parent_id=seed.program_id,
                           operators=["smem_promotion"], backend="cpu")
    store.add_programs([seed, mutant])
    store.record_attempt("gemm", "reuse=tiled", AttemptRecord(
        round=1, outcome="wrong_bin", stage="structure", landed_bin="reuse=none",
        reason="landed in reuse=none instead of reuse=tiled", operators=["unroll"]))
    store.record_attempt("gemm", "reuse=tiled", AttemptRecord(
        round=1, outcome="filled", stage="passed", candidate_id=mutant.program_id,
        operators=["smem_promotion"]))
    store.mark_infeasible("gemm", "tensor_cores=yes", InfeasibilityProof(
        reason="fp32 task: mma needs half inputs", rule="tensor_cores_need_half", round=1))
    d1 = _discovery(1, {"smem": 0.3, "loops": 0.05}, ["smem"])
    store.record_features(1, d1)
    store.close()
    return seed.program_id, mutant.program_id


def test_round_two_sees_round_one(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    _, mutant_id = _round_one(path)

    store = MemoryStore.open(path)  # a new process would do exactly this
    assert store.repairs == []
    assert store.gap_history("gemm", "reuse=tiled").status == "filled"
    skip = {g.bin_label for g in store.gaps(task="gemm", status="infeasible")}
    assert skip == {"tensor_cores=yes"}
    proof = store.gap_history("gemm", "tensor_cores=yes").proof
    assert proof is not None and proof.rule == "tensor_cores_need_half"
    # the round-1 mutant is the nearest verified round-1 program to a tiled query
    near = store.nearest({"smem": 3000.0, "loops": 2.0}, k=1, task="gemm", verified=True,
                         round=1)
    assert [n.program.program_id for n in near] == [mutant_id]
    assert near[0].program.operators == ["smem_promotion"]
    # round 2's discovery drifts; the stored drift says what entered
    r1 = store.features_of_round(1)
    assert r1 is not None and r1.f_star == ["smem"] and store.features_of_round(2) is None
    d1 = _discovery(1, {"smem": 0.3, "loops": 0.05}, ["smem"])
    d2 = _discovery(2, {"smem": 0.25, "loops": 0.2}, ["smem", "loops"])
    r2 = store.record_features(2, d2, compare_discoveries(d1, d2))
    assert r2.entered == ["loops"]
    loops = next(f for f in store.features_of_round(2).features if f.name == "loops")
    assert loops.previous_tier == "marginal" and loops.tier == "critical"
    assert abs(loops.mi_delta - 0.15) < 1e-9
    assert store.rounds() == [1, 2]
    store.close()
