"""Rollout simulator: seeded, labelled (modelled / simulated / measured), collapse controllable
and detected."""

from __future__ import annotations

import numpy as np
import pytest

from structcover.schema import TaskSpec, content_hash
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
    # Rewards come from the timing model over each program's measured counters; the corpus
    # and its mutants are all in the packaged profile cache.
    assert set(a["reward_source"]) == {"modelled"}
    assert a.attrs["rewards"].startswith("modelled: timing model") and "H100" in a.attrs["rewards"]
    assert a.attrs["unprofiled"] == {} and a.attrs["profiles"].get("packaged", 0) > 0
    assert len(a) == 2 * 20 * sum(len(f.tasks) for f in families)
    assert (a["speedup"] > 0).all() and a["correct"].dtype == bool


def test_measured_timings_are_used(families):
    ref = families[0].reference
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


def test_analytic_rewards_stay_available_and_labelled_simulated(families):
    t = simulate(SimulationSettings(rounds=1, rollouts_per_task=10, mutate_p=0.0, seed=1),
                 families=families[:2], rewards="analytic")
    assert set(t["reward_source"]) == {"simulated"} and "gpu_model" in t.attrs["rewards"]
    with pytest.raises(ValueError, match="rewards"):
        simulate(SimulationSettings(rounds=1), families=families[:1], rewards="guess")


def test_modelled_rewards_follow_measured_counters(families):
    # The same program pair under the timing model: a strided map moves 8x the sectors of
    # the coalesced reference, so it is modelled slower (speedup < 1) - from its profile.
    saxpy = next(f for f in families if f.name == "saxpy")
    t = simulate(SimulationSettings(rounds=1, rollouts_per_task=200, mutate_p=0.0,
                                    noise_sigma=0.0, seed=4), families=[saxpy])
    by = t.groupby("variant")["speedup"].first()
    assert by["reference"] == pytest.approx(1.0)
    assert by["strided_threads"] < 0.5 and by["float4_tail"] >= 1.0


class _FailingStore:
    """A profile store whose every profile of one variant failed (the reason kept)."""

    def __init__(self, bad_source: str):
        from structcover.tools.simulation.profiles import ProfileStore

        self.inner, self.bad = ProfileStore(user=None), bad_source
        self.origin = self.inner.origin

    def get_many(self, jobs, threads=2):
        return [self.get(s, t) for s, t in jobs]

    def get(self, source, spec):
        from structcover.tools.simulation.profiles import MeasuredProfile

        if source == self.bad:
            return MeasuredProfile(program=content_hash(source), task_id=spec.task_id,
                                   sizes=[], error="profile failed: crash: injected")
        return self.inner.get(source, spec)

    def stale(self):
        return 0


def test_unprofiled_programs_are_never_drawn_and_say_why(families):
    saxpy = next(f for f in families if f.name == "saxpy")
    bad = next(p for p in saxpy.programs if p.name == "grid_stride")
    t = simulate(SimulationSettings(rounds=1, rollouts_per_task=100, mutate_p=0.0, seed=2),
                 families=[saxpy], store=_FailingStore(bad.source))
    assert "grid_stride" not in set(t["variant"]) and len(t) == 100
    (why,) = t.attrs["unprofiled"].values()
    assert "injected" in why


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
