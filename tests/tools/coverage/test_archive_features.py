"""Which features span the archive: F*'s stable, structural, critical ones, capped."""

from __future__ import annotations

import pandas as pd

from structcover.config import ArchiveSettings
from structcover.tools.coverage.diagnosis_state import archive_features
from structcover.tools.features.registry import BY_NAME, is_structural
from structcover.tools.mining import Discovery, DiscoveryCounts, DiscoveryRun, FeatureReport


def _discovery(specs: list[tuple[str, float, str, float]]) -> Discovery:
    feats = [FeatureReport(name=n, kind="continuous", applies_to="all", rows=100, mi=mi,
                           mi_pooled=mi, tier=tier, stability=st, selected=True)
             for n, mi, tier, st in specs]
    run = DiscoveryRun(target="speedup", normalize_within_task=True, correct_only=True,
                       tau_high=0.05, tau_low=0.01, bootstrap=10, mi_rows=100, seed=0)
    return Discovery(features=feats, f_star=[f.name for f in feats], settings=run,
                     counts=DiscoveryCounts(rows_in=100, rows_used=100, tasks=5))


def test_size_and_meta_features_are_not_structural():
    assert not BY_NAME["ast.nodes"].structural and not is_structural("ast.nodes")
    assert not is_structural("program.language") and not is_structural("parse.error_nodes")
    assert not is_structural("pattern.3fa2") and not is_structural("code.length")
    assert is_structural("smem.tiled") and is_structural("mem.coalesced_fraction")
    assert is_structural("compiler.registers")  # unregistered, structural by prefix rule


def test_archive_spans_stable_structural_critical_features_ranked_and_capped():
    d = _discovery([("ast.nodes", 1.2, "critical", 1.0),          # size: never an axis
                    ("branch.count", 0.9, "critical", 0.3),       # unstable
                    ("smem.tiled", 0.3, "critical", 1.0),         # 0.30
                    ("mem.coalesced_fraction", 0.6, "critical", 0.7),  # 0.42
                    ("warp.shuffles", 0.5, "critical", 0.9),      # 0.45
                    ("loop.count", 0.2, "critical", 0.8),         # 0.16: past max_dims
                    ("mem.ldg", 0.04, "moderate", 1.0)])          # not critical
    table = pd.DataFrame({f.name: [0.0, 1.0, 2.0, 3.0] for f in d.features})
    notes: list[str] = []
    dims = archive_features(d, table, notes, ArchiveSettings(max_dims=3, min_stability=0.6))
    assert dims == ["warp.shuffles", "mem.coalesced_fraction", "smem.tiled"]
    text = " ".join(notes)
    assert "ast.nodes (not structural)" in text and "branch.count (stability 0.30" in text
    assert "loop.count (past max_dims=3)" in text
    assert archive_features(d, table, [], ArchiveSettings(max_dims=1)) == ["warp.shuffles"]


def test_a_feature_that_fits_to_one_bin_is_not_an_axis():
    d = _discovery([("branch.ternary", 0.4, "critical", 1.0), ("smem.tiled", 0.3, "critical", 1.0)])
    table = pd.DataFrame({"branch.ternary": [2.0] * 10,
                          "smem.tiled": [0.0, 1.0, 2.0, 3.0, 4.0] * 2})
    notes: list[str] = []
    assert archive_features(d, table, notes, ArchiveSettings(bins_per_feature=3)) == ["smem.tiled"]
    assert "branch.ternary (one bin only)" in " ".join(notes)
