"""The campaign runner killed at several points (mid-verification, mid-memory-write, mid-export)
resumes to the same outputs as an uninterrupted run; two runs with one seed are identical.

The runner is real (data, diagnosis, archive, Chroma memory, LangGraph with the SQLite
checkpointer, export); planner, mutation and verification are replaced by fast deterministic
doubles so each run takes seconds. Runs happen in child processes that SIGKILL themselves
at the chosen point.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DRIVER = r'''
import hashlib, json, os, signal, sys
from pathlib import Path
import structcover.campaign.bindings as cb
import structcover.campaign.prepare as cs
import structcover.agents.recorder as rec
from structcover.agents.ports import MutantSource
from structcover.campaign import CampaignOptions, result_json, run_campaign

data, state, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
kill = {k: int(v) for k, v in (p.split("=") for p in os.environ.get("KILL", "").split(",") if p)}
calls = {"verify": 0, "record": 0}

def maybe_die(point):
    calls[point] = calls.get(point, 0) + 1
    if kill.get(point) == calls[point]:
        os.kill(os.getpid(), signal.SIGKILL)

class Planner:
    def plan(self, features, bounds, *, seed, k, family="", operators=None, first_steps=None):
        target = ",".join(f"{a}={v}" for a, v in sorted(bounds.items()))
        return [[f"toward[{target}]#{i}"] for i in range(3)][:k]

class Mutate:
    def __init__(self, **kwargs):  # the campaign passes its executor
        pass
    def apply(self, source, chain, *, seed):
        return [MutantSource(source + "\n// " + " ".join(chain) + "\n", list(chain))]

    def applicable(self, source):  # type: ignore[no-untyped-def]
        return frozenset({"toward"})  # the fake planner ignores the set

    def first_steps(self, source):  # type: ignore[no-untyped-def]
        return None  # landings unknown: the planner predicts every step

    def applies(self, source, chain, *, seed):
        return bool(self.apply(source, chain, seed=seed))

class Verify:
    def __init__(self, coverage):
        self.coverage = coverage
    def verify(self, source, task, bin):
        maybe_die("verify")
        h = int(hashlib.sha256(source.encode()).hexdigest()[:8], 16)
        ok = h % 3 != 0
        return {"ok": ok, "stage": "ok" if ok else "equivalence",
                "reason": "" if ok else f"{h % 7 + 1} of 256 outputs differ",
                "landed_bin": bin, "backend": "double", "checks": ["compile", "structure",
                "anti-hacking", "equivalence"] if ok else ["compile", "structure"],
                "features": {}, "gpu_seconds": 0.0}

cb.bind_planner = lambda store, archive=None: Planner()
cb.bind_verifier = lambda coverage, archive, backend, settings: Verify(coverage)
cs.RegistryMutate = Mutate
orig = rec.record_result
def record(*a, **kw):
    maybe_die("record")
    return orig(*a, **kw)
import structcover.graphs.campaign as gc
gc.record_result = record

# Kill point "write": the Nth file the export node writes (after the curated data is out).
import structcover.campaign.export as ce
import structcover.tools.data.atomic as atomic
orig_write, orig_exporter, exporting = atomic.write_text, ce.exporter, [False]
def write_text(*a, **kw):
    if exporting[0]:
        maybe_die("write")
    return orig_write(*a, **kw)
def exporter(*a, **kw):
    export = orig_exporter(*a, **kw)
    def run(state):
        exporting[0] = True
        try:
            return export(state)
        finally:
            exporting[0] = False
    return run
atomic.write_text, ce.exporter = write_text, exporter

wall = float(os.environ["WALL"]) if os.environ.get("WALL") else None
opts = CampaignOptions(budget=int(os.environ.get("BUDGET", "24")), target_scov=1.0,
                       resume=(mode == "resume"), targets_per_step=4, seed=3, wall_time_s=wall)
res = run_campaign(data, state, opts)
Path(state, "summary.json").write_text(result_json(res))
'''


def _data(tmp: Path) -> tuple[Path, Path]:
    """Rollouts of three small tasks, and a state folder holding their round-0 discovery and
    frozen archive (copied for every run, so discovery runs once)."""
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.simulation.simulate import SimulationSettings, simulate

    fams = [f for f in load_corpus() if f.name in ("saxpy", "vector_add", "reduction")]
    table = simulate(SimulationSettings(rounds=1, rollouts_per_task=24, mutate_p=0.0, seed=1),
                     families=fams)
    path = tmp / "rollouts.parquet"
    table.to_parquet(path)
    run_diagnosis(table, tmp / "template", round=0)
    return path, tmp / "template"


def _run(driver: Path, data: Path, state: Path, mode: str, kill: str = "",
         template: Path | None = None, **env_extra: str) -> int:
    if template is not None:
        shutil.copytree(template, state)
    env = {**os.environ, "KILL": kill, **env_extra}
    proc = subprocess.run([sys.executable, str(driver), str(data), str(state), mode], env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode not in (0, -9):
        raise AssertionError(proc.stderr[-3000:])
    return proc.returncode


def _outputs(state: Path) -> dict[str, str]:
    summary = json.loads((state / "summary.json").read_text().replace(str(state), "<state>"))
    summary.pop("state_dir")
    summary["files"] = sorted(summary["files"])
    out = next((state / "campaign").glob("round_*"))
    return {"summary": json.dumps(summary, sort_keys=True),
            "added": (out / "added_programs.jsonl").read_text(),
            "weighted": (out / "curated" / "weighted.jsonl").read_text(),
            "pairs": (out / "contrast_pairs.jsonl").read_text()}


def test_killed_campaign_resumes_to_the_same_outputs(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    data, template = _data(tmp_path)
    _run(driver, data, tmp_path / "ref", "fresh", template=template)
    ref = _outputs(tmp_path / "ref")
    summary = json.loads(ref["summary"])
    assert summary["verified"] > 0 and summary["candidates"] > summary["verified"]
    assert summary["scov_after"] > summary["scov_before"]

    _run(driver, data, tmp_path / "again", "fresh", template=template)
    assert _outputs(tmp_path / "again") == ref  # one seed, identical outputs

    for kill in ("verify=1", "verify=9", "record=3", "write=2"):
        state = tmp_path / kill.replace("=", "-")
        assert _run(driver, data, state, "fresh", kill, template) == -9, f"{kill} never fired"
        assert not (state / "summary.json").exists()
        if kill.startswith("write"):  # killed mid-export: some outputs written, not all
            out = state / "campaign" / "round_0"
            assert (out / "curated").is_dir() and not (out / "report.html").exists()
        assert _run(driver, data, state, "resume") == 0
        got = _outputs(state)
        assert got == ref, f"resumed after kill at {kill} differs"
    # without --resume, an existing campaign is not silently redone
    proc = subprocess.run([sys.executable, str(driver), str(data), str(tmp_path / "ref"),
                           "fresh"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "--resume" in proc.stderr


def test_wall_time_budget_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    """A wall budget spent before the first step: the campaign stops, exports and says why;
    resumed without it, it ends where an uninterrupted run ends."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    data, template = _data(tmp_path)
    _run(driver, data, tmp_path / "ref", "fresh", template=template)
    ref = _outputs(tmp_path / "ref")

    state = tmp_path / "wall"
    assert _run(driver, data, state, "fresh", template=template, WALL="0.000001") == 0
    stopped = json.loads((state / "summary.json").read_text())
    assert stopped["stopped"].startswith("wall-time budget spent")
    assert stopped["candidates"] == 0 and stopped["added"] == []
    assert Path(stopped["files"]["report"]).is_file()  # stopped cleanly: outputs exported
    assert _run(driver, data, state, "resume") == 0
    assert _outputs(state) == ref
