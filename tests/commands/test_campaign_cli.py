"""``structcover campaign``: JSON summary, approval, errors. The runner is real; planner,
mutation and verification are fast deterministic doubles (the demo test runs the real ones)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import structcover.campaign.bindings as cb
import structcover.campaign.prepare as cs
from structcover.agents.ports import MutantSource
from structcover.cli import app

pytestmark = pytest.mark.slow


class _Planner:
    def plan(self, features, bounds, *, seed, k, family="", operators=None, first_steps=None):  # type: ignore[no-untyped-def]
        target = ",".join(f"{a}={v}" for a, v in sorted(bounds.items()))
        return [[f"toward[{target}]#{i}"] for i in range(2)][:k]


class _Mutate:
    def __init__(self, **kwargs: object) -> None:  # the campaign passes its executor
        pass

    def apply(self, source, chain, *, seed):  # type: ignore[no-untyped-def]
        return [MutantSource(source + "\n// " + " ".join(chain) + "\n", list(chain))]

    def applicable(self, source):  # type: ignore[no-untyped-def]
        return frozenset({"toward"})  # the fake planner ignores the set

    def first_steps(self, source):  # type: ignore[no-untyped-def]
        return None  # landings unknown: the planner predicts every step

    def applies(self, source, chain, *, seed):  # type: ignore[no-untyped-def]
        return bool(self.apply(source, chain, seed=seed))


class _Verify:
    def verify(self, source, task, bin):  # type: ignore[no-untyped-def]
        ok = int(hashlib.sha256(source.encode()).hexdigest()[:8], 16) % 4 != 0
        return {"ok": ok, "stage": "ok" if ok else "equivalence",
                "reason": "" if ok else "2 of 256 outputs differ", "landed_bin": bin,
                "backend": "double", "checks": ["compile", "structure", "anti-hacking",
                                                 "equivalence"], "features": {},
                "gpu_seconds": 0.0}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.simulation.simulate import SimulationSettings, simulate

    tmp = tmp_path_factory.mktemp("campaign")
    fams = [f for f in load_corpus() if f.name in ("saxpy", "vector_add")]
    # The analytic rewards keep this fixture's archive (and so its many open gaps: the budget,
    # not the coverage target, stops the campaign); the tests are about the campaign, not
    # about where rewards come from.
    table = simulate(SimulationSettings(rounds=1, rollouts_per_task=16, mutate_p=0.0, seed=2),
                     families=fams, rewards="analytic")
    data = tmp / "rollouts.parquet"
    table.to_parquet(data)
    run_diagnosis(table, tmp / "template", round=0)  # discovery once, copied per test
    return data, tmp / "template"


@pytest.fixture
def doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cb, "bind_planner", lambda store, archive=None: _Planner())
    monkeypatch.setattr(cb, "bind_verifier", lambda *a, **k: _Verify())
    monkeypatch.setattr(cs, "RegistryMutate", _Mutate)


def _state(prepared: tuple[Path, Path], tmp_path: Path) -> Path:
    state = tmp_path / "state"
    shutil.copytree(prepared[1], state)
    return state


def test_json_summary_and_outputs(prepared, doubles, tmp_path: Path) -> None:
    state = _state(prepared, tmp_path)
    res = CliRunner().invoke(app, ["campaign", str(prepared[0]), "--state", str(state),
                                   "--budget", "6", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert 0 < out["candidates"] <= 6 and out["verified"] == len(out["added"]) > 0
    assert out["scov_after"] > out["scov_before"]
    assert {c["task"] for c in out["coverage"]} == {"saxpy", "vector_add"}
    assert all(a["verification"]["equivalent"] and a["operators"] for a in out["added"])
    assert "budget" in out["stopped"]
    # gaps the budget never let it reach say so; they do not blame the operators
    untouched = [g for g in out["open_gaps"] if "not targeted" in g["reason"]]
    assert untouched and all("stopped first (candidate budget spent" in g["reason"] and
                             "no operator chain" not in g["reason"] for g in untouched)
    added = Path(out["files"]["added_programs"]).read_text().splitlines()
    assert len(added) == len(out["added"])
    weighted = pd.read_parquet(out["files"]["curated_weighted_parquet"])
    assert (weighted["origin"] == "mutant").sum() == len(out["added"])
    assert Path(out["files"]["report"]).is_file()
    # the same state without --resume is refused, with the way out named
    again = CliRunner().invoke(app, ["campaign", str(prepared[0]), "--state", str(state)])
    assert again.exit_code == 2 and "--resume" in again.output
    resumed = CliRunner().invoke(app, ["campaign", str(prepared[0]), "--state", str(state),
                                       "--resume", "--budget", "6", "--json"])
    assert resumed.exit_code == 0
    assert json.loads(resumed.stdout)["candidates"] == out["candidates"]  # nothing re-spent


def test_approve_no_spends_nothing(prepared, doubles, tmp_path: Path) -> None:
    state = _state(prepared, tmp_path)
    res = CliRunner().invoke(app, ["campaign", str(prepared[0]), "--state", str(state),
                                   "--budget", "4", "--approve"], input="n\n")
    assert res.exit_code == 0, res.output
    assert "planned targets" in res.output and "stopped: not approved" in res.output
    assert "0 candidates" in res.output or "from 0 candidates" in res.output


def test_data_without_program_text_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "t", "x.y": 1.0}) + "\n")
    res = CliRunner().invoke(app, ["campaign", str(bad), "--state", str(tmp_path / "s")])
    assert res.exit_code == 2 and "program" in res.output
