"""Tiers calibrated on a within-task permutation null; meta features; confounded duplicates."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from discovery_sim import planted, policy_world  # noqa: E402

from structcover.tools.mining import discover  # noqa: E402
from structcover.tools.mining.association import permute_within  # noqa: E402


def test_permute_within_keeps_each_task_its_own_rewards() -> None:
    rng = np.random.default_rng(0)
    y = np.array([1.0, 2.0, 3.0, np.nan, 10.0, 20.0, 30.0, 40.0])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    seen = set()
    for _ in range(20):
        out = permute_within(y, groups, rng)
        assert np.isnan(out[3])
        assert sorted(out[:3]) == [1.0, 2.0, 3.0]
        assert sorted(out[4:]) == [10.0, 20.0, 30.0, 40.0]
        seen.add(tuple(out[4:]))
    assert len(seen) > 1  # it does shuffle


def test_thresholds_come_from_each_features_null() -> None:
    d = discover(planted(), bootstrap=0, length_control=False)
    s = d.settings
    assert set(s.null["mi"]) == {"categorical", "continuous"}
    for null in s.null["mi"].values():
        assert null["draws"] >= 8
        assert 0 <= null["q50"] <= null["q99"] <= null["max"]
        assert null["spread_q99"] > 0
    for f in d.features:
        spread = s.null["mi"][f.kind]["spread_q99"]
        assert f.null_mi is not None
        assert f.tau_low == pytest.approx(max(s.tau_low, f.null_mi + spread))
        assert f.tau_high == pytest.approx(max(s.tau_high, f.null_mi
                                               + s.critical_factor * spread))
        mi = f.mi or 0.0
        expected = ("critical" if mi > f.tau_high else "moderate" if mi > f.tau_low
                    else "marginal")
        assert f.tier == expected, f.name
    # The planted drivers are critical, the noise columns are not.
    critical = {f.name for f in d.features if f.tier == "critical"}
    assert critical == {"mem.coalesced_fraction", "smem.tiled"}


def test_a_feature_that_only_names_the_task_has_a_high_null() -> None:
    # Task t has 2 + t % 6 distinct programs, each written 8 times (as a collapsing policy
    # repeats itself): z-scored within task, a task's rewards take as many values as it has
    # programs, so knowing the task tells something about the reward's *values* even though
    # it cannot order the task's programs.
    rng = np.random.default_rng(0)
    rows = []
    for t in range(24):
        for prog in range(2 + t % 6):
            for _ in range(8):
                rows.append({"task_id": f"t{t}", "correct": True,
                             "speedup": float(np.exp(0.3 * prog + rng.normal(0, 0.01))),
                             "task.size": float(t * 7), "kernel.order": float(prog),
                             "loop.noise": float(rng.integers(0, 4))})
    d = discover(pd.DataFrame(rows), bootstrap=0, length_control=False)
    named = d.feature("task.size")
    assert named.null_mi > 2 * d.feature("loop.noise").null_mi
    assert named.tier == "marginal"  # its MI is no more than its null
    assert d.feature("kernel.order").tier == "critical"


def test_a_higher_critical_factor_demotes_weak_signal() -> None:
    table = planted()
    strict = discover(table, bootstrap=0, critical_factor=1000.0, length_control=False)
    assert not [f for f in strict.features if f.tier == "critical"]
    assert strict.feature("mem.coalesced_fraction").tier == "moderate"


def test_meta_features_are_never_candidates() -> None:
    table = planted()
    # Perfectly informative copies under meta names: still not candidates.
    table["parse.error_nodes"] = table["mem.coalesced_fraction"]
    table["compile.ok"] = (table["smem.tiled"].astype(float) > 0).astype(float)
    d = discover(table, bootstrap=0)
    names = {f.name for f in d.features}
    assert "parse.error_nodes" not in names and "compile.ok" not in names
    assert set(d.settings.excluded_meta) == {"parse.error_nodes", "compile.ok"}
    assert not {"parse.error_nodes", "compile.ok"} & set(d.f_star)


def test_duplicate_of_a_confounded_feature_is_confounded() -> None:
    table = policy_world(driver="policy")
    table["mem.coalesced_copy"] = table["mem.coalesced_fraction"] * 2.0 + 1.0
    d = discover(table, controls=("policy",), bootstrap=0)
    assert d.feature("mem.coalesced_fraction").confounded
    dup = d.feature("mem.coalesced_copy")
    assert dup.confounded and dup.tier == "marginal"
    assert not dup.selected


def _small_round(seed: int, signal: float) -> pd.DataFrame:
    """A round the size of a real small one: 70 rollouts over 12 tasks, 48 features of the
    kinds extraction gives (flags, small counts, fractions, power-of-two sizes). Rewards are
    noise plus ``signal`` times the flag ``f.00`` plus a task offset (SIMULATED)."""
    rng = np.random.default_rng(seed)
    n, n_tasks = 70, 12
    task = rng.integers(0, n_tasks, n)
    feats: dict[str, np.ndarray] = {}
    for j in range(48):
        kind = j % 4
        feats[f"f.{j:02d}"] = (rng.integers(0, 2, n).astype(float) if kind == 0
                               else rng.poisson(rng.uniform(0.5, 6), n).astype(float)
                               if kind == 1 else rng.random(n) if kind == 2
                               else rng.choice([0.0, 1.0, 2.0, 4.0, 8.0], n))
    log_speed = rng.normal(0, 1, n) + signal * feats["f.00"] + rng.normal(0, 1, n_tasks)[task]
    return pd.DataFrame({"program_id": [f"p{i}" for i in range(n)],
                         "task_id": [f"t{t}" for t in task], "correct": True,
                         "speedup": np.exp(log_speed), **feats})


def test_tiers_stay_honest_at_small_n() -> None:
    # 48 features tested on 70 rows: with rewards that no feature drives, the per-feature
    # null (99th percentile of its shuffles) lets about 1 % of null features per run past
    # tau_low, and none past the critical bar (null + 3x spread). Measured over seeds 0-7:
    # 0-3 moderate, never a critical.
    moderate = 0
    for seed in range(4):
        d = discover(_small_round(seed, 0.0), length_control=False)
        assert not [f.name for f in d.features if f.tier == "critical"], seed
        moderate += sum(f.tier == "moderate" for f in d.features)
    assert moderate <= 0.05 * 48 * 4
    # A real driver (log speed +2 SD when the flag is set) is found at this size.
    d = discover(_small_round(100, 2.0), length_control=False)
    assert "f.00" in d.f_star
    assert d.feature("f.00").tier != "marginal"
