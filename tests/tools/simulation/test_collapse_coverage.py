"""The simulated collapsing policy through the demo's diagnosis path: low per-task SCov over
the pattern axes, tiers that discriminate, and the report's task x bin table (SIMULATED)."""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.config import DiscoverySettings
from structcover.tools.coverage.axes import PATTERN_AXES
from structcover.tools.coverage.diagnosis_state import run_diagnosis
from structcover.tools.report.html_report import render_report
from structcover.tools.simulation.simulate import SimulationSettings, simulate


@pytest.mark.slow
def test_collapsed_round_has_low_per_task_scov_on_pattern_axes(tmp_path: Path) -> None:
    # The demo's policy (collapse 0.6, three rounds); fewer rollouts, no launch-config mutants
    # and fewer stability resamples keep the test to minutes. Same run_diagnosis as the demo.
    table = simulate(SimulationSettings(rounds=3, collapse=0.6, rollouts_per_task=32,
                                        mutate_p=0.0, seed=0))
    runs = [run_diagnosis(table[table["round"] == n], tmp_path, round=n, seed=0,
                          discovery_settings=DiscoverySettings(bootstrap=3))
            for n in range(3)]
    last = runs[-1].diagnosis
    axes = last.archive_features
    assert axes and set(axes) <= set(PATTERN_AXES), axes  # the pattern axes, named
    assert last.bins_total >= 2 ** len(axes)
    # Per task, and on average over tasks, the collapsed round covers under 30 % of the bins.
    assert last.scov_task_mean is not None and last.scov_task_mean < 0.30
    assert len(last.task_coverage) == table["task_id"].nunique()
    assert all(t.scov < 0.30 for t in last.task_coverage)
    # Pooled over tasks it covers at least as much as the mean task.
    assert last.scov >= last.scov_task_mean
    # Collapse: no task covers more bins in the last round than in round 0.
    first = {t.task_id: t.bins_covered for t in runs[0].diagnosis.task_coverage}
    assert all(t.bins_covered <= first[t.task_id] for t in last.task_coverage)
    # Tiers discriminate: a minority of features is critical, meta features are absent.
    critical = [f for f in last.features if f.tier == "critical"]
    assert 0 < len(critical) <= len(last.features) // 3, (len(critical), len(last.features))
    assert not [f for f in last.features if f.name.startswith("parse.")]
    page = render_report(last, archive=runs[-1].archive, table=runs[-1].table,
                         history=runs[-1].history, simulated=True)
    assert 'id="task-coverage"' in page and "SCov per task, mean" in page
    for t in last.task_coverage:
        assert f"<th>{t.task_id}</th><td>{t.scov:.3f}</td>" in page
