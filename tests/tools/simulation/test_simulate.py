"""Rollout simulator: seeded, labelled simulated, collapse controllable and detected."""

from __future__ import annotations

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.coverage.archive import build_archive
from structcover.tools.coverage.diagnosis import diagnose
from structcover.tools.data.corpus import load_corpus
from structcover.tools.simulation.gpu_model import GpuSpec, Workload, predict_time_s, workload
from structcover.tools.simulation.simulate import SimulationSettings, simulate

FEATS = ["smem.tiled", "mem.coalesced_fraction", "warp.shuffle_reduction"]


@pytest.fixture(scope="module")
def families():
    fams = load_corpus()
    if not fams:
        pytest.skip("sample corpus is empty")
    return fams


def _diagnose_rounds(table):
    r0 = table[table["round"] == 0]
    arch = build_archive(r0, FEATS)
    prev, out = None, []
    for rnd in sorted(table["round"].unique()):
        d = diagnose(table[table["round"] == rnd], arch, previous_entropy=prev,
                     previous_round=None if prev is None else rnd - 1, round=int(rnd))
        out.append(d)
        prev = d.entropy
    return out


def test_simulation_is_seeded_and_labelled(families):
    s = SimulationSettings(rounds=2, rollouts_per_task=20, seed=3)
    a, b = simulate(s, families=families), simulate(s, families=families)
    assert a.drop(columns=["program"]).equals(b.drop(columns=["program"]))
    assert set(a["reward_source"]) == {"simulated"}
    assert len(a) == 2 * 20 * sum(len(f.tasks) for f in families)
    assert (a["speedup"] > 0).all() and a["correct"].dtype == bool


def test_measured_timings_are_used(families):
    ref = families[0].reference
    from structcover.schema import content_hash
    measured = {content_hash(ref.source): 2.0}
    t = simulate(SimulationSettings(rounds=1, rollouts_per_task=40, mutate_p=0.0, seed=1),
                 families=families[:1], measured=measured)
    rows = t[t["variant"] == "reference"]
    assert len(rows) > 0 and set(rows["reward_source"]) == {"measured-gpu"}
    assert np.allclose(rows["runtime_ms"], 2.0) and np.allclose(rows["speedup"], 1.0)


def test_collapse_detected_on_the_collapsing_feature_and_not_without(families):
    base = dict(rounds=3, rollouts_per_task=120, mutate_p=0.2)
    steady = _diagnose_rounds(simulate(SimulationSettings(collapse=0.0, seed=5, **base),
                                       families=families))
    assert [d.collapse.detected for d in steady] == [False, False, False]
    # collapse onto the corpus-wide most common smem.tiled value: 90 % of the mass by round 1
    col = _diagnose_rounds(simulate(SimulationSettings(collapse=0.9, collapse_feature="smem.tiled",
                                                       seed=5, **base), families=families))
    assert col[0].collapse.detected is False and col[1].collapse.detected is True
    assert col[1].collapse.kind == "key-feature"
    assert col[1].collapse.key_features[0].feature == "smem.tiled"


def test_gpu_model_rewards_structure():
    spec = TaskSpec.model_validate({
        "task_id": "add", "sizes": {"N": 1024},
        "args": [{"name": "a", "shape": ["N"]}, {"name": "c", "shape": ["N"], "role": "output"},
                 {"name": "N", "kind": "scalar", "value": "N"}]})
    w = workload(spec, target_elements=2 ** 24)
    # 2 buffers of 2^24 fp32 = 2^27 bytes; flops = 2 * out elements (elementwise)
    assert w.bytes_min == 2 ** 27 and w.flops == 2 * 2 ** 24 and w.inner == 1
    coalesced = predict_time_s({"mem.coalesced_fraction": 1.0}, w)
    strided = predict_time_s({"mem.coalesced_fraction": 0.0}, w)
    # memory bound: 2^27 B / 3.35e12 B/s = 40.1 us (+3 us launch); strided moves 8x the sectors
    assert coalesced == pytest.approx(3e-6 + 2 ** 27 / 3.35e12, rel=1e-6)
    assert strided == pytest.approx(3e-6 + 8 * 2 ** 27 / 3.35e12, rel=1e-6)
    gemm = Workload(bytes_min=3 * 4 * 4096 ** 2, flops=2 * 4096 ** 3, out_elems=4096 ** 2,
                    inner=4096)
    naive = predict_time_s({}, gemm, GpuSpec())
    tiled = predict_time_s({"smem.tiled": True, "smem.static_bytes": 8192}, gemm)
    assert tiled < naive


def test_bad_settings_rejected():
    with pytest.raises(ValueError):
        SimulationSettings(collapse=1.5)
    with pytest.raises(ValueError):
        SimulationSettings(rounds=0)


def test_mutations_are_real_variants_whose_features_match_their_source(families):
    from structcover.tools.features.extract import extract_features

    t = simulate(SimulationSettings(rounds=1, rollouts_per_task=30, mutate_p=0.5, seed=2),
                 families=families)
    mutated = t[t["origin"] == "mutated"]
    assert len(mutated) > 0 and set(t["origin"]) == {"corpus", "mutated"}
    assert mutated["mutation"].str.startswith("launch_config.block_size threads=").all()
    assert (t.loc[t["origin"] == "corpus", "mutation"] == "").all()
    sources = {s.source for f in families for s in f.programs}
    for _, row in mutated.drop_duplicates("program_id").head(5).iterrows():
        assert row["program"] not in sources and "structcover-sim" not in row["program"]
        real = extract_features(row["program"]).values
        assert row["launch.block_size"] == real["launch.block_size"]
        assert int(row["mutation"].rsplit("=", 1)[1]) == real["launch.block_size"]
