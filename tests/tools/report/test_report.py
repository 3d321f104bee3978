"""The HTML report renders in a real headless browser, plots present, no script errors."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from structcover.tools.coverage.archive import build_archive
from structcover.tools.coverage.diagnosis import diagnose
from structcover.tools.report.html_report import RoundPoint, render_report, write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _diagnosed():
    rng = np.random.default_rng(1)
    n = 60
    t = pd.DataFrame({"program_id": [f"p{i}" for i in range(n)],
                      "task_id": rng.choice(["a", "b", "c"], n), "correct": True,
                      "speedup": rng.uniform(0.5, 4, n), "smem.tiled": rng.random(n) > 0.5,
                      "mem.coalesced_fraction": rng.random(n),
                      "warp.shuffles": rng.integers(0, 4, n)})
    arch = build_archive(t, ["smem.tiled", "mem.coalesced_fraction", "warp.shuffles"])
    d = diagnose(t, arch, round=1)
    return t, arch, d


def test_report_is_self_contained():
    t, arch, d = _diagnosed()
    page = render_report(d, archive=arch, table=t, simulated=True,
                         history=[RoundPoint(round=0, scov=0.9, entropy=2.0)])
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page)  # nothing fetched
    assert "Simulated rewards" in page and 'id="gaps"' in page
    assert "$" + "data" not in page  # every placeholder filled


def test_report_labels_modelled_rewards_and_measured_ones_not_at_all():
    t, arch, d = _diagnosed()
    modelled = render_report(d, archive=arch, table=t, reward_source="modelled")
    assert "Modelled rewards" in modelled and "Simulated rewards" not in modelled
    assert "timing model" in modelled
    measured = render_report(d, archive=arch, table=t)
    assert "Modelled rewards" not in measured and "Simulated rewards" not in measured


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    t, arch, d = _diagnosed()
    path = write_report(tmp_path / "report.html", d, archive=arch, table=t,
                        history=[RoundPoint(round=0, scov=0.9, entropy=2.0)])
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=5000", "--dump-dom", path.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ok="1"' in body, body
    assert "data-error" not in body, body
    # heatmaps for 3 pairs + MI bars + 2 round lines + scatter
    assert int(re.search(r'data-plots="(\d+)"', body).group(1)) == 7
    # smem.tiled 2 levels, the coalesced fraction 4 fixed quarters, warp.shuffles 5 fixed
    # count bins (0 | 1 | 2-3 | 4-7 | 8+): 2x4, 2x5, 4x5 cells
    assert dom.count('class="cell"') == 2 * 4 + 2 * 5 + 4 * 5
    assert dom.count('class="point"') >= 2 * 2 + 10
    console_errors = [ln for ln in proc.stderr.splitlines()
                      if "CONSOLE" in ln and ("Uncaught" in ln or "rror" in ln)]
    assert console_errors == []


def test_campaign_panel_comes_first_and_says_before_and_after():
    from collections import Counter

    from structcover.tools.report.campaign_panel import panel_from_state

    t, arch, d = _diagnosed()
    state = {"coverage_before": [{"task": "a", "scov": 0.1}, {"task": "b", "scov": 0.3}],
             "coverage": [{"task": "a", "scov": 0.9}, {"task": "b", "scov": 0.8}],
             "added": [{"backend": "cpu", "kind": "mutant"}, {"backend": "cpu", "kind": "llm"}],
             "candidates": 7}
    panel = panel_from_state(state, languages=Counter({"cuda": 5, "triton": 2}),
                             added_languages=Counter({"triton": 2}),
                             origin=lambda r: "llm" if r.get("kind") == "llm" else "mutant")
    assert (panel.scov_before, panel.scov_after) == pytest.approx((0.2, 0.85))
    page = render_report(d, archive=arch, table=t, campaign=panel)
    # the campaign's before -> after is the first section, above the round's own numbers
    assert page.index('id="campaign"') < page.index("The round as it came in") \
        < page.index("SCov per task, mean<b>")
    assert "0.200 → 0.850" in page and "candidates judged<b>7</b>" in page
    assert "cpu 2" in page and "llm 1, mutant 1" in page
    assert "cuda 5, triton 2" in page and "added triton 2" in page


def test_a_reason_shared_by_many_rows_is_said_once():
    from structcover.tools.report.footnotes import Footnotes

    texts = ["3 attempts failed equivalence"] * 5 + ["a one-off reason"]
    notes = Footnotes(texts, prefix="r")
    cells = [notes.cell(x) for x in texts]
    assert cells[:5] == ['<a href="#r-1">[1]</a>'] * 5
    assert cells[5] == "a one-off reason"  # unique reasons stay inline
    legend = notes.legend()
    assert legend.count("3 attempts failed equivalence") == 1 and "(5 rows)" in legend
    assert Footnotes(["x", "y"], prefix="r").legend() == ""


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_a_wide_task_by_bin_table_fits_the_page(tmp_path):
    """Twelve tasks over 30 reached bins (the demo's archive has 25-30 per task) stay within the
    page's width at a laptop's 1280 pixels."""
    rng = np.random.default_rng(3)
    n = 900
    t = pd.DataFrame({"program_id": [f"p{i}" for i in range(n)],
                      "task_id": rng.choice([f"task_with_a_long_name_{k}" for k in range(12)], n),
                      "correct": True, "speedup": rng.uniform(0.5, 4, n),
                      "pattern.global_access": rng.choice(
                          ["coalesced", "strided", "broadcast", "indirect", "mixed", "none"], n),
                      "pattern.sync": rng.choice(
                          ["none", "block", "warp", "block_and_warp", "atomic_or_grid"], n)})
    arch = build_archive(t, ["pattern.global_access", "pattern.sync"])
    d = diagnose(t, arch, round=1)
    path = write_report(tmp_path / "report.html", d, archive=arch, table=t)
    assert path.read_text().count('class="bin"') == 30
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
           "--disable-background-networking", "--disable-component-update", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
           path.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    body = re.search(r"<body[^>]*>", proc.stdout).group(0)
    assert 'data-ok="1"' in body, body
    assert 'data-table-overflow="0"' in body, body
