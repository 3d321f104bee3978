"""Fixed axes (pattern levels, fixed edges), per-task SCov with proofs, and the report's table."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from structcover.tools.coverage.archive import GridArchive, build_archive
from structcover.tools.coverage.axes import COUNT_EDGES, FRACTION_EDGES, fixed_dimension
from structcover.tools.coverage.diagnosis import diagnose
from structcover.tools.coverage.diagnosis_state import archive_features
from structcover.tools.coverage.per_task import (
    per_task_coverage,
    task_bin_counts,
    task_infeasible_bins,
)
from structcover.tools.report.html_report import render_report

REUSE = ("none", "smem_staging", "smem_tiling", "register_tiling", "smem_and_register")


def _rows(task: str, family: str, reuse: list[str], tc: list[str]) -> pd.DataFrame:
    n = len(reuse)
    return pd.DataFrame({"program_id": [f"{task}{i}" for i in range(n)], "task_id": task,
                         "family": family, "correct": True, "speedup": np.linspace(1, 2, n),
                         "pattern.reuse": reuse, "pattern.tensor_cores": tc})


@pytest.fixture
def table() -> pd.DataFrame:
    return pd.concat([
        _rows("vadd", "relu", ["none", "none", "smem_staging"], ["no"] * 3),
        _rows("gemm", "gemm", ["smem_tiling", "smem_and_register", "smem_and_register",
                               "none"], ["no", "no", "yes", "no"]),
    ], ignore_index=True)


def test_pattern_axes_bin_on_every_documented_level() -> None:
    dim = fixed_dimension("pattern.reuse", pd.Series(["none", "none"]))
    assert dim is not None and dim.levels == REUSE  # round 0 saw one level; all five count
    assert fixed_dimension("pattern.tensor_cores", pd.Series(["no"])).levels == ("no", "yes")


def test_numeric_axes_have_fixed_edges_never_quantiles() -> None:
    counts = fixed_dimension("sync.block_barriers", pd.Series([0, 0, 0, 3, 40]))
    assert counts.edges == COUNT_EDGES
    assert counts.label(4) == "[8,inf)"
    assert counts.index(pd.Series([0, 1, 3, 7, 8, 1000])).tolist() == [0, 1, 2, 3, 4, 4]
    assert counts.bound(4).high is None and "sync.block_barriers >= 8" == counts.bound(4).render()
    frac = fixed_dimension("occupancy.theoretical", pd.Series([0.5, 0.52, 0.55]))
    assert frac.edges == FRACTION_EDGES  # not squeezed around round 0's values
    assert fixed_dimension("x.delta", pd.Series([-1.0, 2.0])) is None
    assert fixed_dimension("kernel.kind", pd.Series(["a", "a"])) is None


def test_round_zero_does_not_cover_every_bin_by_construction(table: pd.DataFrame) -> None:
    arch = build_archive(table, ["pattern.reuse", "pattern.tensor_cores"])
    assert isinstance(arch, GridArchive) and arch.n_bins == 10
    d = diagnose(table, arch, round=0)
    assert d.bins_covered == 5 and d.scov == pytest.approx(0.5)
    # A count axis round-trips through the JSON report with its open last bin.
    arch2 = build_archive(table.assign(**{"sync.block_barriers": [0, 1, 9, 2, 3, 0, 12]}),
                          ["pattern.tensor_cores", "sync.block_barriers"])
    json.loads(diagnose(table.assign(**{"sync.block_barriers": [0, 1, 9, 2, 3, 0, 12]}),
                        arch2).to_json())


def test_per_task_scov_removes_only_proven_bins(table: pd.DataFrame) -> None:
    arch = build_archive(table, ["pattern.reuse", "pattern.tensor_cores"])
    per = {t.task_id: t for t in per_task_coverage(table, arch, arch.index(table))}
    vadd, gemm = per["vadd"], per["gemm"]
    # relu has no sum of products: its 5 tensor-core bins are proven infeasible.
    assert vadd.bins_covered == 2 and vadd.bins_feasible == 5
    assert vadd.scov == pytest.approx(2 / 5)
    assert [p.rule for p in vadd.infeasible] == ["tensor-cores-need-a-contraction"]
    assert vadd.infeasible[0].bins == 5 and "sum of products" in vadd.infeasible[0].reason
    # gemm has a contraction: nothing is removed.
    assert gemm.bins_covered == 4 and gemm.bins_feasible == 10 and not gemm.infeasible
    d = diagnose(table, arch)
    assert d.scov_task_mean == pytest.approx((2 / 5 + 4 / 10) / 2)
    assert d.scov == pytest.approx(5 / 10)  # pooled, beside it


def test_a_program_disproves_a_rule_for_its_task(table: pd.DataFrame) -> None:
    hacked = pd.concat([table, _rows("vadd", "relu", ["none"], ["yes"])],
                       ignore_index=True)
    arch = build_archive(hacked, ["pattern.reuse", "pattern.tensor_cores"])
    vadd = next(t for t in per_task_coverage(hacked, arch, arch.index(hacked))
                if t.task_id == "vadd")
    assert vadd.infeasible[0].contradicted_by == 1
    assert vadd.infeasible[0].bins == 4  # the reached bin stays feasible
    assert vadd.bins_feasible == 6 and vadd.bins_covered == 3
    proofs = task_infeasible_bins(hacked, arch)
    assert set(proofs) == {"vadd"} and len(proofs["vadd"]) == 4
    assert "pattern.reuse=none,pattern.tensor_cores=yes" not in proofs["vadd"]
    assert all(r.startswith("tensor-cores-need-a-contraction: ") for r in proofs["vadd"].values())


def test_task_without_family_falls_back_to_task_id(table: pd.DataFrame) -> None:
    bare = table.drop(columns="family")
    arch = build_archive(bare, ["pattern.reuse", "pattern.tensor_cores"])
    per = {t.task_id: t for t in per_task_coverage(bare, arch, arch.index(bare))}
    assert not per["vadd"].infeasible  # "vadd" is no family a rule knows: no proof claimed
    counts = task_bin_counts(bare, arch, arch.index(bare))
    assert counts.loc["gemm"].sum() == 4 and counts.loc["vadd"].sum() == 3


def test_axes_default_to_the_pattern_features_discovery_keeps(table: pd.DataFrame) -> None:
    feats = [SimpleNamespace(name="pattern.reuse", tier="critical", confounded=False,
                             stability=1.0, mi=0.3),
             SimpleNamespace(name="pattern.tensor_cores", tier="marginal", confounded=False,
                             stability=0.0, mi=0.0),
             SimpleNamespace(name="smem.tiled", tier="critical", confounded=False,
                             stability=1.0, mi=0.4)]
    notes: list[str] = []
    disc = SimpleNamespace(features=feats, f_star=["smem.tiled"])
    assert archive_features(disc, table, notes) == ["pattern.reuse"]
    assert "pattern.tensor_cores" in notes[-1]
    disc_none = SimpleNamespace(features=feats[1:], f_star=["smem.tiled"])
    assert archive_features(disc_none, table, notes) == ["pattern.reuse",
                                                         "pattern.tensor_cores"]
    assert "keeps no pattern feature" in notes[-1]


def test_report_shows_the_task_by_bin_table(table: pd.DataFrame) -> None:
    arch = build_archive(table, ["pattern.reuse", "pattern.tensor_cores"])
    d = diagnose(table, arch, round=0)
    page = render_report(d, archive=arch, table=table)
    assert 'id="task-coverage"' in page
    section = page[page.index('id="task-coverage"'):]
    section = section[:section.index("</table>")]
    assert "<th>vadd</th><td>0.400</td><td>2 / 5</td>" in section
    assert "<th>gemm</th><td>0.400</td><td>4 / 10</td>" in section
    assert section.count('<th class="bin"') == 5  # the five reached bins
    assert "tensor_cores=yes" in section  # vadd's proof, with its rule
    assert "SCov per task, mean" in page and not math.isnan(d.scov_task_mean)


def test_pattern_axes_are_capped_by_mi(table: pd.DataFrame) -> None:
    from structcover.config import ArchiveSettings

    wide = table.assign(**{"pattern.sync": "none", "pattern.global_access": "coalesced"})
    feats = [SimpleNamespace(name=n, tier="critical", confounded=False, stability=1.0, mi=mi)
             for n, mi in (("pattern.global_access", 0.1), ("pattern.reuse", 0.3),
                           ("pattern.sync", 0.5), ("pattern.tensor_cores", 0.01))]
    disc = SimpleNamespace(features=feats, f_star=[])
    notes: list[str] = []
    # The two highest-MI kept axes, in MI order; the others are named as left out.
    assert archive_features(disc, wide, notes) == ["pattern.sync", "pattern.reuse"]
    assert "past max_pattern_axes=2" in notes[-1] and "pattern.global_access" in notes[-1]
    assert archive_features(disc, wide, [], ArchiveSettings(max_pattern_axes=3)) == [
        "pattern.sync", "pattern.reuse", "pattern.global_access"]
    # Two axes of 5 levels: 25 bins per task, not thousands.
    assert build_archive(wide, ["pattern.sync", "pattern.reuse"]).n_bins == 25


def test_no_global_access_is_infeasible_for_every_task(table: pd.DataFrame) -> None:
    ga = table.assign(**{"pattern.global_access": "coalesced", "pattern.sync": "none"})
    arch = build_archive(ga, ["pattern.global_access", "pattern.sync"])
    per = {t.task_id: t for t in per_task_coverage(ga, arch, arch.index(ga))}
    for t in per.values():  # 6 x 5 bins; the 5 with global_access=none are proven away
        assert t.bins_feasible == 25 and t.bins_covered == 1
        assert [p.rule for p in t.infeasible] == ["work-reads-global-memory"]
    proofs = task_infeasible_bins(ga, arch)
    assert set(proofs) == {"vadd", "gemm"}
    assert sorted(proofs["gemm"]) == [f"pattern.global_access=none,pattern.sync={s}"
                                      for s in sorted(("none", "block", "warp", "block_and_warp",
                                                       "atomic_or_grid"))]
    # A program the extractor finds with no global access disproves the rule for its task only.
    odd = pd.concat([ga, ga.iloc[[0]].assign(**{"pattern.global_access": "none",
                                                "program_id": "vadd-odd"})], ignore_index=True)
    per = {t.task_id: t for t in per_task_coverage(odd, arch, arch.index(odd))}
    assert per["vadd"].bins_feasible == 26 and per["vadd"].infeasible[0].contradicted_by == 1
    assert per["gemm"].bins_feasible == 25
