"""Diagnosis: SCov, entropy, SRMis and collapse against hand-computed values."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from structcover.config import ArchiveSettings
from structcover.tools.coverage.archive import build_archive
from structcover.tools.coverage.diagnosis import diagnose
from structcover.tools.coverage.entropy import detect_collapse, entropy_of_codes
from structcover.tools.coverage.feasibility import (
    Contradiction,
    InfeasibilityProof,
    contradiction_proofs,
)
from structcover.tools.coverage.srmis import mismatch_report, srmis

FEATS = ["smem.tiled", "mem.pattern"]


def _round(cells: dict[tuple[bool, str], int], rnd: int = 0, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for (tiled, pattern), n in cells.items():
        for _ in range(n):
            rows.append({"smem.tiled": tiled, "mem.pattern": pattern})
    t = pd.DataFrame(rows)
    t["program_id"] = [f"r{rnd}p{i}" for i in range(len(t))]
    t["task_id"] = ["a", "b"] * (len(t) // 2) + ["a"] * (len(t) % 2)
    t["round"] = rnd
    t["correct"] = True
    t["speedup"] = np.exp(rng.normal(size=len(t)) + t["smem.tiled"].astype(float))
    return t


FIXTURE = {(False, "coalesced"): 6, (False, "strided"): 3, (True, "coalesced"): 3,
           (True, "strided"): 0}


def test_scov_entropy_low_zero_match_hand_computation():
    t = _round(FIXTURE)
    settings = ArchiveSettings(low_count=4)
    arch = build_archive(t, FEATS, settings=settings)
    d = diagnose(t, arch, settings=settings, round=0)
    # 2 x 2 grid; 3 of 4 bins hold programs -> SCov = 3/4
    assert (d.bins_total, d.bins_covered, d.scov) == (4, 3, 0.75)
    assert d.zero_bins == ["smem.tiled=1,mem.pattern=strided"]
    # counts 3 and 3 are below low_count = 4; the bin with 6 is not
    assert sorted(d.low_bins) == ["smem.tiled=0,mem.pattern=strided",
                                  "smem.tiled=1,mem.pattern=coalesced"]
    # joint p = (6, 3, 3)/12 = (1/2, 1/4, 1/4): H = 1/2 ln 2 + 2 * 1/4 ln 4 = 1.5 ln 2
    assert d.entropy.joint == pytest.approx(1.5 * math.log(2))
    # tiled: (9, 3)/12 -> H = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.562335...
    h_marg = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert d.entropy.per_feature["smem.tiled"] == pytest.approx(h_marg)
    assert d.entropy.per_feature["mem.pattern"] == pytest.approx(h_marg)
    # H(tiled | pattern) = H(joint) - H(pattern) = 1.5 ln 2 - 0.562335 = 0.477380
    cond = d.entropy.conditional_map()[("smem.tiled", "mem.pattern")]
    assert cond == pytest.approx(1.5 * math.log(2) - h_marg)
    assert d.scov_adjusted is None  # no proofs -> no adjusted value
    assert d.srmis.overall is not None and 0 <= d.srmis.overall <= 0.5
    payload = json.loads(d.to_json())
    for key in ("scov", "bins_total", "bins_covered", "zero_bins", "low_bins", "entropy",
                "srmis", "collapse", "features"):
        assert key in payload
    assert payload["gaps"][0]["bin"] == "smem.tiled=1,mem.pattern=strided"


def test_feasibility_adjusted_only_for_proven_bins():
    t = _round(FIXTURE)
    arch = build_archive(t, FEATS)
    rule = Contradiction(when={"smem.tiled": "1", "mem.pattern": "strided"},
                         reason="test rule: tiling implies a coalesced staging load")
    proofs = contradiction_proofs(arch, [rule])
    assert [p.bin for p in proofs] == ["smem.tiled=1,mem.pattern=strided"]
    weak = InfeasibilityProof(bin="smem.tiled=0,mem.pattern=strided", kind="failed-attempts",
                              reason="tried", attempts=["compile error"])
    d = diagnose(t, arch, proofs=[*proofs, weak])
    # one proven-infeasible bin: 3 covered / (4 - 1) = 1.0; raw SCov unchanged
    assert d.scov == 0.75 and d.scov_adjusted == 1.0
    assert [r.proof.bin for r in d.rejected_proofs] == ["smem.tiled=0,mem.pattern=strided"]
    assert "smem.tiled=1,mem.pattern=strided" not in d.zero_bins


def test_srmis_hand_values():
    # ranks (1,2,3,4) vs (1,2,4,3): |diffs| = 0,0,1,1 -> mean 0.5 -> / N=4 -> 0.125
    assert srmis([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(0.125)
    # ties: predicted ranks (1.5, 1.5, 3) vs (1, 2, 3): |diffs| 0.5, 0.5, 0 -> 1/3 / 3
    assert srmis([1, 1, 2], [1, 2, 3]) == pytest.approx(1 / 9)
    # reversed: ranks (4,3,2,1) vs (1,2,3,4): diffs 3,1,-1,-3 -> mean |.| 2 / 4 = 0.5
    rep = mismatch_report(np.array([4, 3, 2, 1.0]), np.array([1, 2, 3, 4.0]),
                          np.array(["a", "a", "b", "b"], dtype=object), threshold=0.2)
    assert rep.overall == pytest.approx(0.5)
    per = {b.label: b for b in rep.per_bin}
    # bin a: signed (3/4 + 1/4) / 2 = +0.5 -> predicted fast, is slow: shortcut
    assert per["a"].signed == pytest.approx(0.5) and rep.shortcut_bins == ["a"]
    assert per["b"].signed == pytest.approx(-0.5) and rep.hidden_bins == ["b"]


def test_collapse_key_feature_in_right_round_and_none_without():
    uniform = {(a, b): 8 for a in (False, True) for b in ("coalesced", "strided")}
    r0, r1 = _round(uniform, 0), _round(uniform, 1, seed=1)
    r2 = _round({(False, "coalesced"): 16, (False, "strided"): 16}, 2)
    arch = build_archive(r0, FEATS)
    d0 = diagnose(r0, arch, round=0)
    d1 = diagnose(r1, arch, previous_entropy=d0.entropy, previous_round=0, round=1)
    d2 = diagnose(r2, arch, previous_entropy=d1.entropy, previous_round=1, round=2)
    assert not d0.collapse.detected and not d1.collapse.detected
    # ln 2 / ln 4 = 0.5 < 0.8
    assert d2.collapse.detected and d2.collapse.ratio == pytest.approx(0.5)
    assert d2.collapse.kind == "key-feature"
    assert [c.feature for c in d2.collapse.key_features] == ["smem.tiled"]


def test_interaction_collapse_when_marginals_hold():
    uniform = {(a, b): 8 for a in (False, True) for b in ("coalesced", "strided")}
    r0 = _round(uniform, 0)
    # tiled <-> strided locked together: each marginal still 50/50
    r1 = _round({(False, "coalesced"): 16, (True, "strided"): 16}, 1)
    arch = build_archive(r0, FEATS)
    d0 = diagnose(r0, arch)
    d1 = diagnose(r1, arch, previous_entropy=d0.entropy, previous_round=0)
    assert d1.collapse.detected and d1.collapse.kind == "interaction"
    assert d1.collapse.key_features == []
    pairs = {(p.feature, p.given) for p in d1.collapse.interactions}
    assert ("smem.tiled", "mem.pattern") in pairs


def test_entropy_of_codes_and_bad_rho():
    assert entropy_of_codes(np.array([0, 0, 1, 1])) == pytest.approx(math.log(2))
    assert entropy_of_codes(np.array([-1, -1])) == 0.0
    with pytest.raises(ValueError):
        detect_collapse(None, None, rho=1.5)  # type: ignore[arg-type]
