"""MemoryStore: programs and nearest look-up, gaps, operators, features, opening errors."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from structcover.tools.store import (
    AttemptRecord,
    FeatureSpace,
    InfeasibilityProof,
    MemoryStore,
    OperatorOutcome,
    ProgramRecord,
    StoreOpenError,
    StoreSchemaError,
)
from structcover.tools.store.embedding import features_document


def _programs(n: int, seed: int = 0) -> list[ProgramRecord]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        f = {"loops": float(rng.integers(0, 6)), "smem_bytes": float(rng.integers(0, 8192)),
             "syncs": float(rng.integers(0, 4)), "vector_width": float(rng.choice([1, 2, 4]))}
        out.append(ProgramRecord(task=f"t{i % 3}", source=f"__global__ void k{i}() {{}}",
                                 features=f, verified=bool(i % 2), round=i % 4))
    return out


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(1 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_add_is_idempotent_and_ids_are_content_hashes(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path / "m")
    recs = _programs(30)
    ids = store.add_programs(recs)
    assert len(set(ids)) == 30
    assert store.add_programs(recs) == ids  # re-adding: same ids, nothing new
    assert store.count_programs() == 30
    same = ProgramRecord(task="t0", source=recs[0].source, features={"loops": 9.0},
                         verified=True, round=3)
    assert same.program_id == recs[0].program_id  # id depends on (task, source) only
    other_task = ProgramRecord(task="t9", source=recs[0].source, features={}, verified=True,
                               round=0)
    assert other_task.program_id != recs[0].program_id
    # new programs by origin: mutants and LLM-written ones are counted apart; a batch that
    # repeats a program stores it once
    new = [ProgramRecord(task="t0", source=f"// {i} {o}", features={"loops": 1.0},
                         verified=True, round=1, origin=o)
           for i, o in enumerate(("mutant", "llm", "llm"))]
    assert store.add_programs([*new, new[0]]) == [r.program_id for r in [*new, new[0]]]
    assert store.summary()["origins"] == {"input": 30, "llm": 2, "mutant": 1}
    assert store.count_programs() == 33
    store.close()


def test_nearest_matches_brute_force_cosine_under_filters(tmp_path: Path) -> None:
    recs = _programs(300)
    store = MemoryStore.open(tmp_path / "m")
    store.add_programs(recs)
    space = store.space
    assert space is not None and space.names == sorted(recs[0].features)
    q = {"loops": 2.0, "smem_bytes": 4096.0, "syncs": 1.0, "vector_width": 4.0}
    got = store.nearest(q, k=5, task="t1", verified=True)
    pool = [r for r in recs if r.task == "t1" and r.verified]
    qv = np.array(space.embed(q))
    want = sorted(pool, key=lambda r: (round(_cosine(qv, np.array(space.embed(r.features))), 6),
                                       r.program_id))[:5]
    assert [n.program.program_id for n in got] == [r.program_id for r in want]
    assert all(n.program.task == "t1" and n.program.verified for n in got)
    assert [n.distance for n in got] == sorted(n.distance for n in got)
    # a raw where clause combines with the keyword filters
    early = store.nearest(q, k=50, task="t1", where={"round": {"$lte": 1}})
    assert early and all(n.program.round <= 1 and n.program.task == "t1" for n in early)
    # a normalised vector works too, and must have the space's length
    by_vec = store.nearest(space.embed(q), k=5, task="t1", verified=True)
    assert [n.program.program_id for n in by_vec] == [r.program_id for r in want]
    with pytest.raises(ValueError, match="vector has 3 values"):
        store.nearest([0.0, 1.0, 2.0], k=1)
    with pytest.raises(ValueError, match="k must be"):
        store.nearest(q, k=0)
    store.close()


def test_empty_store_has_no_neighbours_and_fits_space_on_first_batch(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path / "m")
    assert store.space is None
    assert store.nearest({"a": 1.0}, k=3) == []
    store.add_programs(_programs(5))
    assert store.space is not None
    store.close()
    fixed = FeatureSpace(names=["x"], center=[0.0], scale=[1.0])
    with pytest.raises(StoreOpenError, match="another feature space"):
        MemoryStore.open(tmp_path / "m", space=fixed)


def test_index_rebuilt_from_ledger_when_lost_or_stray(tmp_path: Path) -> None:
    recs = _programs(40)
    store = MemoryStore.open(tmp_path / "m")
    store.add_programs(recs)
    q = recs[7].features
    before = [n.program.program_id for n in store.nearest(q, k=4)]
    store.close()
    shutil.rmtree(tmp_path / "m" / "chroma")
    store = MemoryStore.open(tmp_path / "m")
    assert any("missing from the index" in r for r in store.repairs)
    assert [n.program.program_id for n in store.nearest(q, k=4)] == before
    # a program in the index but not the ledger (a write the ledger never committed) goes
    with sqlite3.connect(tmp_path / "m" / "ledger.sqlite") as db:
        db.execute("DELETE FROM programs WHERE program_id = ?", (recs[7].program_id,))
    store.close()
    store = MemoryStore.open(tmp_path / "m")
    assert any("absent from the ledger" in r for r in store.repairs)
    assert recs[7].program_id not in [n.program.program_id for n in store.nearest(q, k=40)]
    store.close()


def test_open_errors_name_the_path_and_reason(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreOpenError, match=rf"{f}: not a folder"):
        MemoryStore.open(f)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "ledger.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreOpenError, match=rf"{bad}: cannot open its ledger"):
        MemoryStore.open(bad)
    old = tmp_path / "old"
    MemoryStore.open(old).close()
    with sqlite3.connect(old / "ledger.sqlite") as db:
        db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    with pytest.raises(StoreSchemaError, match=rf"{old}: schema version 0 is older"):
        MemoryStore.open(old)


def test_gap_status_moves_with_attempts(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path / "m")
    assert store.gap_history("t", "b1").status == "open"
    a1 = AttemptRecord(round=1, outcome="wrong_bin", stage="structure",
                       reason="landed in b2 instead of b1", landed_bin="b2",
                       operators=["unroll"])
    store.record_attempt("t", "b1", a1)
    store.record_attempt("t", "b1", a1)  # replayed after a resume: stored once
    h = store.gap_history("t", "b1")
    assert h.status == "targeted" and h.attempts == [a1]
    a2 = AttemptRecord(round=1, outcome="filled", stage="passed", candidate_id="c1")
    store.record_attempt("t", "b1", a2)
    h = store.gap_history("t", "b1")
    assert h.status == "filled" and h.attempts == [a1, a2]
    with pytest.raises(ValueError, match="mark_infeasible"):
        store.set_gap_status("t", "b3", "infeasible", 1)
    with pytest.raises(ValueError, match="not one of"):
        store.set_gap_status("t", "b3", "done", 1)  # type: ignore[arg-type]
    store.set_gap_status("t", "b3", "targeted", 2)
    assert store.gap_history("t", "b3").status == "targeted"
    proof = InfeasibilityProof(reason="tensor cores need a matmul", rule="tc_needs_mma",
                               round=2)
    store.mark_infeasible("t", "b4", proof)
    store.record_attempt("t", "b4", AttemptRecord(round=2, outcome="failed", stage="compile"))
    h = store.gap_history("t", "b4")
    assert h.status == "infeasible" and h.proof == proof
    assert [g.bin_label for g in store.gaps(status="infeasible")] == ["b4"]
    assert store.summary()["gaps"] == {"open": 0, "targeted": 1, "filled": 1, "infeasible": 1}
    store.close()


def test_operator_outcomes_and_tallies(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path / "m")
    outs = [OperatorOutcome(operator="unroll", family="gemm", success=True, stage="passed",
                            round=1, moved={"loops.unrolled": 1.0}),
            OperatorOutcome(operator="unroll", family="gemm", success=False, stage="compile",
                            round=1, program_id="p2"),
            OperatorOutcome(operator="vectorize", family="reduce", success=False,
                            stage="equivalence", round=1)]
    store.record_operator_outcomes(outs)
    store.record_operator_outcome(outs[0])  # idempotent
    assert store.operator_outcomes() == outs
    assert store.operator_outcomes(family="reduce") == outs[2:]
    t = store.operator_tallies("gemm")["unroll"]
    assert (t.successes, t.failures, t.failure_stages) == (1, 1, {"compile": 1})
    assert t.success_rate == pytest.approx(0.5)
    assert set(store.operator_tallies()) == {"unroll", "vectorize"}
    store.close()


def test_numeric_features_one_hot_documented_levels() -> None:
    from structcover.tools.store import numeric_features

    num, levels = numeric_features({"pattern.reuse": "smem_tiling", "smem.tiled": True,
                                    "loops": 3, "ratio": None, "lang": "cuda"})
    assert levels == {"pattern.reuse": "smem_tiling", "lang": "cuda"}
    assert num["pattern.reuse=smem_tiling"] == 1.0 and num["pattern.reuse=none"] == 0.0
    assert num["smem.tiled"] == 1.0 and num["loops"] == 3.0 and np.isnan(num["ratio"])
    assert num["lang=cuda"] == 1.0
    with pytest.raises(ValueError, match="valid number"):
        ProgramRecord(task="t", source="s", features={"x": "a"}, verified=True,  # type: ignore[dict-item]
                      round=0)


def test_missing_feature_values_round_trip_as_nan(tmp_path: Path) -> None:
    rec = ProgramRecord(task="t", source="s", features={"a": float("nan"), "b": 2.0},
                        verified=True, round=0)
    store = MemoryStore.open(tmp_path / "m")
    store.add_programs([rec, *_programs(5)])
    back = store.get_program(rec.program_id)
    assert back is not None and np.isnan(back.features["a"]) and back.features["b"] == 2.0
    assert store.nearest({"a": float("nan"), "b": 2.0}, k=1)
    store.close()


def test_collection_carries_its_own_embedding_function_and_cosine_space(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    recs = _programs(20)
    store = MemoryStore.open(tmp_path / "m")
    store.add_programs(recs)
    store.close()
    # A bare Chroma client, given no embedding function, rebuilds ours from the stored config
    # (never Chroma's default ONNX model) and embeds a JSON feature query the same way.
    client = chromadb.PersistentClient(path=str(tmp_path / "m" / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    col = client.get_collection("programs")
    cfg = col.configuration
    assert cfg["embedding_function"].name() == "structcover-features"
    assert cfg["hnsw"]["space"] == "cosine"
    doc = features_document(recs[3].features)
    hit = col.query(query_texts=[doc], n_results=1)
    assert hit["ids"][0] == [recs[3].program_id]
    assert hit["distances"][0][0] == pytest.approx(0.0, abs=1e-5)
    client.close()


def test_unreadable_index_is_rebuilt_from_the_ledger(tmp_path: Path) -> None:
    recs = _programs(30)
    store = MemoryStore.open(tmp_path / "m")
    store.add_programs(recs)
    want = [n.program.program_id for n in store.nearest(recs[4].features, k=3)]
    store.close()
    (tmp_path / "m" / "chroma" / "chroma.sqlite3").write_bytes(b"not sqlite" * 500)
    store = MemoryStore.open(tmp_path / "m")
    assert any("index unreadable" in r for r in store.repairs)
    assert [n.program.program_id for n in store.nearest(recs[4].features, k=3)] == want
    store.close()
