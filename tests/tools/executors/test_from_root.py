"""The CLI run from the repository root imports the installed package, not a folder of the checkout.

Before the src layout, ``structcover features DIR --executor ray`` started from the root lost every
row: Ray workers (cwd = the root) imported the checkout's partial ``structcover/`` folder, every
program came back quarantined and the command exited 0 with an empty table. These tests run the
real CLI in a subprocess with ``cwd`` = the repository root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "src" / "structcover" / "corpus"
#: A few corpus programs of different shapes (a scan, a map, a reduction, a GEMM).
PROGRAMS = ["prefix_scan/reference.cu", "saxpy/reference.cu", "reduction/reference.cu",
            "gemm/reference.cu"]


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def test_the_package_imports_from_the_repository_root():
    res = _run("-c", "import structcover.tools, structcover.campaign; "
               "print(structcover.tools.__name__)", timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "structcover.tools"


def test_python_m_cli_help_works_from_the_repository_root():
    res = _run("-m", "structcover.cli", "--help", timeout=120)
    assert res.returncode == 0, res.stderr
    assert "features" in res.stdout and "verify" in res.stdout


def _rows(folder: Path, executor: str) -> dict[str, dict[str, object]]:
    res = _run("-m", "structcover.cli", "features", str(folder), "--executor", executor,
               "--workers", "2", "--no-cache", "--json")
    assert res.returncode == 0, f"--executor {executor}: {res.stderr[-2000:]}"
    assert "quarantined" not in res.stderr, res.stderr[-2000:]
    return {row["program_id"]: row["values"] for row in json.loads(res.stdout)}


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_features_on_ray_from_the_root_equal_the_local_rows(tmp_path):
    pytest.importorskip("ray")
    for rel in PROGRAMS:
        shutil.copy(CORPUS / rel, tmp_path / rel.replace("/", "__"))
    local = _rows(tmp_path, "local")
    on_ray = _rows(tmp_path, "ray")
    assert len(local) == len(PROGRAMS), "every program has a row"
    assert sorted(on_ray) == sorted(local), "the same program ids"
    assert on_ray == local, "the same feature values"
    assert any(v["kernel.count"] for v in local.values()), "real rows, not defaults"
