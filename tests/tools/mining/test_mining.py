"""Discovery on simulated tables with known ground truth (all rewards SIMULATED)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# The simulator sits beside this file; pytest runs with --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).parent))
from discovery_sim import planted, policy_world  # noqa: E402

from structcover.tools.mining import (  # noqa: E402
    compare_discoveries,
    discover,
    load_discovery,
    save_discovery,
    tier_of,
)

DRIVERS = {"mem.coalesced_fraction", "smem.tiled"}


def test_planted_signal_exactly_two_critical_and_decoy_below():
    d = discover(planted(), bootstrap=5)
    critical = {f.name for f in d.features if f.tier == "critical"}
    assert critical == DRIVERS
    assert set(d.f_star) == DRIVERS
    decoy = d.feature("mem.vector_width")
    assert decoy.mi < min(d.feature(n).mi for n in DRIVERS)
    assert not decoy.selected
    for name in DRIVERS:
        assert d.feature(name).stability == 1.0
    # Pooled MI is reported beside within-task MI, and the task offsets dilute it.
    assert d.feature("mem.coalesced_fraction").mi_pooled < d.feature("mem.coalesced_fraction").mi


def test_strongly_correlated_decoy_is_removed_as_redundant():
    d = discover(planted(decoy_corr=0.8), bootstrap=5)
    decoy = d.feature("mem.vector_width")
    assert decoy.tier != "marginal"  # it does carry information about R_perf...
    assert not decoy.selected  # ...but none beyond the coalescing feature it mirrors
    assert "redundant given mem.coalesced_fraction" in decoy.reason
    assert set(d.f_star) == DRIVERS


def test_tiers_follow_thresholds():
    assert tier_of(0.051, 0.05, 0.01) == "critical"
    assert tier_of(0.05, 0.05, 0.01) == "moderate"
    assert tier_of(0.0101, 0.05, 0.01) == "moderate"
    assert tier_of(0.01, 0.05, 0.01) == "marginal"
    assert tier_of(None, 0.05, 0.01) == "marginal"


def test_policy_confound_is_flagged_under_control():
    d = discover(policy_world(driver="policy"), controls=("policy",), bootstrap=3)
    for name in DRIVERS:
        f = d.feature(name)
        # Without the control it looks predictive; with --control the tier uses the
        # controlled MI, so the confounded feature is marginal.
        assert f.mi > 0.1
        assert f.tier == f.tier_controlled == "marginal"
        assert (f.mi_controlled or 0.0) <= f.tau_low
        assert f.confounded and "policy" in f.reason
        assert not f.selected
    assert d.settings.controls_used == ["policy"]
    assert "length" in d.settings.controls_missing  # no program text, no length column


def test_structure_driving_reward_within_policy_is_kept():
    d = discover(policy_world(driver="structure"), controls=("policy",), bootstrap=3)
    for name in DRIVERS:
        assert not d.feature(name).confounded
        assert d.feature(name).selected


def test_without_control_confound_is_not_flagged():
    d = discover(policy_world(driver="policy"), bootstrap=0)
    assert not any(f.confounded for f in d.features)
    assert d.feature("smem.tiled").mi_controlled is None


def test_length_is_a_default_control_from_program_text():
    t = policy_world(driver="policy", seed=3)
    rng = np.random.default_rng(0)
    # Length follows the policy, as structure does; reward depends only on the policy.
    t["program"] = ["x" * int(n) for n in np.where(t["policy"] == "policy-a", 200, 900)
                    + rng.integers(0, 50, len(t))]
    d = discover(t, bootstrap=0)
    assert d.settings.controls_used == ["length"]
    assert d.settings.length_source == "program (UTF-8 bytes)"
    assert d.feature("smem.tiled").mi_controlled is not None


def test_non_cuda_rows_are_not_applicable_not_zero():
    t = planted(seed=1)
    lang = np.where(np.arange(len(t)) % 10 == 0, "triton", "cuda")
    t["program.language"] = lang
    t.loc[lang == "triton", "mem.coalesced_fraction"] = 0.0  # what a naive extractor would write
    d = discover(t, bootstrap=0)
    assert d.counts.non_cuda_rows == int((lang == "triton").sum())
    assert d.counts.languages == {"cuda": int((lang == "cuda").sum()),
                                  "triton": int((lang == "triton").sum())}
    f = d.feature("mem.coalesced_fraction")
    assert f.applies_to == "cuda"
    used = d.counts.rows_used
    assert f.rows < used  # the Triton rows were excluded, not counted as zeros
    assert d.feature("program.language").applies_to == "all"


def test_correct_only_and_bad_input():
    t = planted()
    d = discover(t, bootstrap=0)
    assert d.counts.dropped["incorrect"] == int((~t["correct"]).sum())
    with pytest.raises(ValueError, match="task_id"):
        discover(t.drop(columns="task_id"))
    with pytest.raises(ValueError, match="no feature columns"):
        discover(t[["program_id", "task_id", "speedup"]])
    with pytest.raises(ValueError, match="control column 'nope'"):
        discover(t, controls=("nope",))
    with pytest.raises(ValueError, match="tau_low"):
        discover(t, tau_high=0.01, tau_low=0.05)


def test_seeded_and_repeatable():
    a = discover(planted(), bootstrap=1, seed=4)
    b = discover(planted(), bootstrap=1, seed=4)
    assert a.model_dump() == b.model_dump()


def test_drift_and_save_load(tmp_path):
    prev = discover(planted(decoy_corr=0.3), bootstrap=0, round=1)
    t = planted(seed=2)
    t["speedup"] = np.exp(np.log(t["speedup"]) * 0 + 3 * t["sync.count"] / 10
                          + np.random.default_rng(0).normal(0, 0.3, len(t)))
    cur = discover(t, bootstrap=0, round=2)
    path = save_discovery(cur, tmp_path / "rounds" / "2" / "discovery.json")
    loaded = load_discovery(path)
    assert loaded == cur
    drift = compare_discoveries(prev, loaded)
    assert drift.previous_round == 1 and drift.current_round == 2
    assert "sync.count" in drift.entered
    assert set(drift.left) == DRIVERS
    assert drift.jaccard == 0.0
    assert any(c.name == "sync.count" and c.current == "critical" for c in drift.tier_changes)
    assert drift.mi_delta["sync.count"] > 0
    with pytest.raises(ValueError, match="no saved discovery"):
        load_discovery(tmp_path / "missing.json")


def test_subsampling_keeps_planted_result():
    big = pd.concat([planted(seed=s) for s in range(3)], ignore_index=True)
    big["task_id"] = big["task_id"] + "-" + (np.arange(len(big)) // 2000).astype(str)
    d = discover(big, bootstrap=2, mi_rows=2000)
    assert d.settings.mi_rows == 2000
    assert set(d.f_star) == DRIVERS


def _few_programs_per_task(seed: int = 0) -> pd.DataFrame:
    """SIMULATED: 30 tasks x 6 programs x 8 rollouts. Every feature separates the programs of a
    task (each program has its own random values); only ``smem.tiled`` drives speed."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(30):
        for p in range(6):
            prog = {f"f.noise{i}": float(rng.integers(0, 6)) for i in range(8)}
            prog["smem.tiled"] = bool(p % 2)
            base = 0.7 * prog["smem.tiled"]
            for _ in range(8):
                rows.append({"program_id": f"t{t}p{p}", "task_id": f"t{t}", "correct": True,
                             "speedup": float(np.exp(base + rng.normal(0, 0.3))), **prog})
    return pd.DataFrame(rows)


def test_forward_selection_keeps_only_features_that_add_information():
    # With few programs per task any feature that tells programs apart has marginal MI with
    # within-task speed; F* must keep only the one that generalises across tasks.
    d = discover(_few_programs_per_task(), bootstrap=4)
    assert d.f_star == ["smem.tiled"]
    assert d.feature("smem.tiled").stability == 1.0
    assert any(f.tier != "marginal" for f in d.features if f.name.startswith("f.noise"))


def test_identical_columns_are_measured_once_and_reported_as_duplicates():
    t = planted()
    t["smem.tiled_copy"] = t["smem.tiled"]
    d = discover(t, bootstrap=2)
    copy = d.feature("smem.tiled_copy")
    assert copy.mi == d.feature("smem.tiled").mi
    assert "duplicate of smem.tiled" in copy.reason and not copy.selected
    assert set(d.f_star) == DRIVERS


def _near_tie(rng: np.random.Generator) -> tuple[list, np.ndarray]:
    """A raw count and a pattern that carry the same signal; the count a hair more of it."""
    from structcover.tools.mining.association import Column

    n = 120
    level = rng.integers(0, 3, n).astype(float)
    y = level + rng.normal(0, 0.3, n)
    raw = level.copy()
    raw[:3] = y[:3].round()  # a little better fit, well under the selection's noise floor
    return [Column("smem.accesses", raw, False), Column("pattern.reuse", level, True)], y


def test_a_named_pattern_wins_a_near_tie_in_forward_selection():
    from structcover.tools.mining.association import Column, select_forward

    cols, y = _near_tie(np.random.default_rng(0))
    rows = np.arange(len(y))
    tasks = rows % 6
    kwargs = {"min_gain": 0.02, "cells": np.zeros(len(y), int), "groups": tasks,
              "explain": False}
    plain, _ = select_forward(cols, y, rows, **kwargs)
    preferred, _ = select_forward(cols, y, rows, preferred=frozenset({"pattern.reuse"}),
                                  **kwargs)
    assert plain == ["smem.accesses"]
    assert preferred == ["pattern.reuse"]
    # A clear winner is never overruled: the pattern only wins within min_gain.
    far, _ = select_forward([Column("smem.accesses", y.round(1), False), cols[1]], y, rows,
                            preferred=frozenset({"pattern.reuse"}), **kwargs)
    assert far[0] == "smem.accesses"
