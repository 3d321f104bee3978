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
