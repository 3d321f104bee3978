"""Tiers calibrated on a within-task permutation null; meta features; confounded duplicates."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

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


def test_thresholds_come_from_the_reported_null() -> None:
    d = discover(planted(), bootstrap=0)
    s = d.settings
    assert set(s.null["mi"]) == {"categorical", "continuous"}
    for kind, null in s.null["mi"].items():
        assert null["draws"] >= 10  # >= 40, or 5 shuffles when a kind has few features
        assert 0 <= null["q50"] <= null["q99"] <= null["max"]
        tau = s.tau_calibrated[kind]
        assert tau["low"] == max(s.tau_low, null["q99"])
        assert tau["high"] == max(s.tau_high, s.critical_factor * null["q99"])
    for f in d.features:  # every tier follows the calibrated thresholds of its kind
        tau = s.tau_calibrated[f.kind]
        mi = f.mi or 0.0
        expected = ("critical" if mi > tau["high"] else "moderate" if mi > tau["low"]
                    else "marginal")
        assert f.tier == expected, f.name
    # The planted drivers are critical, the noise columns are not.
    critical = {f.name for f in d.features if f.tier == "critical"}
    assert critical == {"mem.coalesced_fraction", "smem.tiled"}


def test_a_higher_critical_factor_demotes_weak_signal() -> None:
    table = planted()
    base = discover(table, bootstrap=0)
    strict = discover(table, bootstrap=0, critical_factor=1000.0)
    assert strict.settings.tau_calibrated["continuous"]["high"] > \
        base.settings.tau_calibrated["continuous"]["high"]
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
