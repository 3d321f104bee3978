"""Measured profiles: size plan, extrapolation, task work, caches (packaged and user)."""

from __future__ import annotations

import json

import pytest

from structcover.schema import TaskSpec, content_hash
from structcover.tools.data.corpus import load_corpus
from structcover.tools.simulation import profiles
from structcover.tools.simulation.profiles import (
    MeasuredProfile,
    ProfileStore,
    cache_key,
    extrapolate,
    profile_sizes,
    target_scale,
    work_at,
)


def _vec(n: int = 1024) -> TaskSpec:
    return TaskSpec.model_validate({
        "task_id": "vec", "sizes": {"N": n}, "size_ranges": {"N": [1, 4096]},
        "args": [{"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
                 {"name": "N", "kind": "scalar", "value": "N"}]})


def test_profile_sizes_halve_the_ranged_sizes_within_their_range():
    big, small = profile_sizes(_vec(1001))
    assert big == {"N": 1001} and small == {"N": 500}
    corpus = {t.task_id: t for f in load_corpus() for t in f.tasks}
    # unranged sizes stay; csr NNZ follows N (diagonal: NNZ = N)
    assert profile_sizes(corpus["histogram"])[1]["NBINS"] == 256
    assert profile_sizes(corpus["spmv_csr_diagonal"])[1] == {"N": 2048, "NNZ": 2048}


def test_target_scale_gives_the_largest_buffer_the_target_elements():
    # 2^24 / 1024 = 16384 for a 1-D task; a 2-D largest buffer scales each side by the root
    assert target_scale(_vec(1024)) == 16384
    gemm = {t.task_id: t for f in load_corpus() for t in f.tasks}["gemm"]
    k = target_scale(gemm)  # largest buffer C or A: 128 x 120 = 15360 elements
    assert k == pytest.approx((2 ** 24 / (128 * 120)) ** 0.5)


def test_work_of_contractions_reductions_and_gathers():
    corpus = {t.task_id: t for f in load_corpus() for t in f.tasks}
    # GEMM: 2 M N K; bytes: A, B, C once in fp32
    b, f, out = work_at(corpus["gemm"], {"M": 4, "N": 5, "K": 6})
    assert (b, f, out) == (4 * (24 + 30 + 20), 2 * 4 * 5 * 6, 20)
    # reduction to a scalar: 2 N
    assert work_at(corpus["reduction"], {"N": 1000})[1] == 2000
    # histogram is no contraction over its bins: 2 N, not 2 N NBINS
    assert work_at(corpus["histogram"], {"N": 1000, "NBINS": 256})[1] == 2000
    # CSR SpMV: 2 NNZ (NNZ does not multiply with N)
    assert work_at(corpus["spmv_csr_random"], {"N": 100, "NNZ": 1600})[1] == 3200


def _entry(large: dict, small: dict, n: int = 1000) -> MeasuredProfile:
    return MeasuredProfile(program="p", task_id="vec", sizes=[{"N": n}, {"N": n // 2}],
                           kernels=[{"k": large}, {"k": small}])


def test_extrapolation_uses_integer_powers_of_the_size_scale():
    spec = _vec(1000)
    e = _entry({"global_load_sectors": 4000, "blocks": 120, "barriers": 7,
                "divergent_branches": 1, "shared_static_bytes": 1024, "global_atomic_lanes": 5},
               {"global_load_sectors": 2000, "blocks": 120, "barriers": 1,
                "divergent_branches": 0, "shared_static_bytes": 1024, "global_atomic_lanes": 4})
    out = extrapolate(e, spec, 100.0)["k"]
    assert out["global_load_sectors"] == 4000 * 100  # doubled with N: p = 1
    assert out["blocks"] == 120  # fixed grid: p = 0
    assert out["barriers"] == 7 * 100  # log2(7) = 2.8 clamped to 1 ranged size
    assert out["divergent_branches"] == 1  # zero at one size: kept
    assert out["shared_static_bytes"] == 1024  # a footprint, never scaled
    assert out["global_atomic_lanes"] == 5  # 5/4: log2 = 0.32 rounds to 0
    failed = MeasuredProfile(program="p", task_id="vec", sizes=[], error="profile failed: x")
    assert extrapolate(failed, spec, 100.0) == {}


def test_user_cache_round_trip_and_packaged_precedence(tmp_path):
    spec = _vec()
    source = "// not run: the store finds it cached"
    key = cache_key(content_hash(source), spec)
    entry = MeasuredProfile(program=content_hash(source), task_id="vec",
                            sizes=list(profile_sizes(spec)), kernels=[{}, {}], profiler="old")
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / f"{key}.json").write_text(json.dumps(entry.to_json()))
    store = ProfileStore(packaged=None, user=tmp_path / "user")
    assert store.get(source, spec) == entry and store.origin[key] == "user"
    packaged = tmp_path / "packaged.json"
    other = MeasuredProfile(**{**entry.to_json(), "profiler": "packaged-one"})
    packaged.write_text(json.dumps({"entries": {key: other.to_json()}}))
    store = ProfileStore(packaged=packaged, user=tmp_path / "user")
    assert store.get(source, spec).profiler == "packaged-one"
    assert store.origin[key] == "packaged" and store.stale() == 1  # not this profiler's


def test_packaged_cache_covers_every_corpus_program_on_its_tasks():
    store = ProfileStore(user=None)
    missing = [(t.task_id, p.name) for f in load_corpus() for t in f.tasks for p in f.programs
               if store.lookup(content_hash(p.source), t) is None]
    assert not missing, f"regenerate with scripts/build_profile_cache.py: {missing}"
    assert all(not e.error for e in store.packaged.values())


@pytest.mark.slow
def test_packaged_entries_match_a_fresh_measurement():
    """Re-measure a few packaged entries with the current profiler: every stored counter
    (at both sizes) and ptxas' registers must match."""
    store = ProfileStore(user=None)
    fams = {f.name: f for f in load_corpus()}
    for fam, variant in (("saxpy", "reference"), ("transpose", "smem_tile32_conflicts"),
                         ("reduction", "warp_shuffle_grid_stride")):
        prog = next(p for p in fams[fam].programs if p.name == variant)
        spec = fams[fam].tasks[0]
        stored = store.lookup(content_hash(prog.source), spec)
        assert stored is not None
        fresh = profiles.measure_profile(prog.source, spec, arches=("sm_90",))
        assert not fresh.error, fresh.error
        for old_k, new_k in zip(stored.kernels, fresh.kernels, strict=True):
            assert set(old_k) == set(new_k)
            for name, counters in old_k.items():
                assert {k: new_k[name].get(k) for k in counters} == counters, (fam, name)
        assert fresh.ptxas["sm_90"] == stored.ptxas["sm_90"]
