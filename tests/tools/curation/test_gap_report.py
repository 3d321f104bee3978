"""Gaps left by a campaign: infeasible only with a rule proof; unreached ones open and why;
earlier rounds' programs in gap bins are reweighting, reported apart."""

from __future__ import annotations

import pandas as pd

from structcover.tools.coverage.archive import build_archive
from structcover.tools.curation.gap_report import (
    OFFLINE_REACH,
    classify_gap,
    earlier_round_bins,
    reweighting_lines,
)


def test_only_a_rule_proof_makes_a_gap_infeasible() -> None:
    rule = "work-reads-global-memory: outputs come from global inputs"
    assert classify_gap(["no program lands here", "infeasible: x"], rule) == (
        "infeasible", f"proven infeasible by rule {rule}")
    # Memory closed this gap after three failed candidates: still open, counted against SCov.
    status, why = classify_gap(["no program lands here", "adjacent bin reaches 2.0",
                                "proven infeasible: 3 targeted attempts failed: wrong bin"],
                               None)
    assert status == "open" and why.endswith(OFFLINE_REACH)
    assert "3 targeted attempts failed: wrong bin" in why and "adjacent bin" in why
    assert "proven infeasible" not in why
    status, why = classify_gap(["no program lands here"], None, llm=True)
    assert status == "open" and "LLM policy reached" in why


def test_earlier_round_programs_in_gap_bins_are_reweighting() -> None:
    t = pd.DataFrame({
        "task_id": ["a", "a", "a", "a", "b", "b"],
        "program_id": ["p0", "p1", "p2", "p3", "q0", "q1"],
        "round": [0, 0, 1, 1, 0, 1],
        "correct": [True, True, True, False, False, True],
        "pattern.sync": ["block", "warp", "none", "block", "warp", "none"],
    })
    arch = build_archive(t, ["pattern.sync"])
    bins = earlier_round_bins(t, arch, 1)
    # a: round 1 reaches none and block; round 0's p1 reaches warp (p0's block is covered).
    # b: q0 reached warp but was incorrect, so nothing to re-use.
    assert bins == {"a": {"pattern.sync=warp": "p1"}}
    lines = reweighting_lines(bins)
    assert lines == ["a / pattern.sync=warp: an earlier round's program p1 lands here; re-using "
                     "it is reweighting, not a new program"]
    assert earlier_round_bins(t.drop(columns="round"), arch, 1) == {}


def test_a_gap_the_campaign_never_reached_does_not_blame_the_operators():
    status, why = classify_gap(["no program of this task lands in this bin"], None,
                               untargeted="the campaign stopped first (candidate budget spent)")
    assert status == "open" and why.endswith("not targeted: the campaign stopped first "
                                             "(candidate budget spent)")
    assert OFFLINE_REACH not in why
