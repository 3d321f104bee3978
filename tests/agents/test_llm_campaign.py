"""``structcover campaign --llm``: against the fake OpenAI server the Diagnoser's tool call
picks an empty bin and the Synthesizer's canned reply (a real saxpy staging x in shared memory)
is verified on the CPU backend and added as an LLM-written program; against a closed port the
campaign completes offline and says why."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import structcover.campaign.bindings as cb
import structcover.campaign.prepare as cs
from structcover.agents.ports import MutantSource
from structcover.cli import app
from structcover.schema import content_hash

pytestmark = pytest.mark.slow
FAKES = Path(__file__).parents[1] / "fakes"
SMEM = (FAKES / "saxpy_smem.cu").read_text()
#: The archive bin SMEM lands in (set by the ``prepared`` fixture from the frozen archive).
TARGET = ""


def _server():  # type: ignore[no-untyped-def]
    if "openai_server" not in sys.modules:
        spec = importlib.util.spec_from_file_location("openai_server",
                                                      FAKES / "openai_server.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules["openai_server"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["openai_server"]


srv = _server()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.simulation.simulate import SimulationSettings, simulate

    tmp = tmp_path_factory.mktemp("llm_campaign")
    fams = [f for f in load_corpus() if f.name == "saxpy"]
    # Analytic rewards keep this fixture's archive, whose gap the scripted reply fills; the
    # test is about the LLM campaign, not about where rewards come from.
    table = simulate(SimulationSettings(rounds=1, rollouts_per_task=16, mutate_p=0.0, seed=2),
                     families=fams, rewards="analytic")
    data = tmp / "rollouts.parquet"
    table.to_parquet(data)
    run = run_diagnosis(table, tmp / "template", round=0)
    global TARGET
    TARGET = _bin_of(SMEM, run.archive)
    covered = {_bin_of(s, run.archive) for s in table["program"].unique()}
    assert TARGET and TARGET not in covered  # the reply fills a real gap
    return data, tmp / "template"


def _bin_of(source: str, archive) -> str:  # type: ignore[no-untyped-def]
    import pandas as pd

    from structcover.tools.features.extract import extract_features

    values = extract_features(source).values
    i = int(archive.index(pd.DataFrame([{f: values.get(f) for f in archive.features}]))[0])
    return archive.labels()[i] if i >= 0 else ""


def _respond(body: dict) -> object:
    """Diagnoser: choose SMEM's bin; Synthesizer: SMEM for saxpy."""
    text = srv.last_user_text(body)
    if body.get("tools"):
        key = re.search(r"- (G\d+): saxpy / " + re.escape(TARGET), text)
        assert key, text[:2000]
        return srv.Reply(tool_calls=[("choose_targets", {
            "keys": [key.group(1)], "rationale": "stage x in shared memory"})])
    if "`saxpy`" in text:
        return srv.Reply(content=f"Here is the program:\n```cuda\n{SMEM}```\n")
    return srv.Reply(content="I cannot help with that task.")


def _state(prepared: tuple[Path, Path], tmp_path: Path) -> Path:
    state = tmp_path / "state"
    shutil.copytree(prepared[1], state)
    return state


def test_llm_writes_a_verified_program(prepared, tmp_path: Path) -> None:  # noqa: ANN001
    state = _state(prepared, tmp_path)
    with srv.FakeOpenAI(_respond) as server:
        res = CliRunner().invoke(app, ["campaign", str(prepared[0]), "--state", str(state),
                                       "--budget", "1", "--backend", "cpu", "--llm",
                                       server.url, "--model", "policy", "--json"])
        assert res.exit_code == 0, res.output
        roles = [bool(b.get("tools")) for b in server.requests]
    out = json.loads(res.stdout)
    assert [a["program_id"] for a in out["added"]] == [content_hash(SMEM.strip() + "\n")]
    added = out["added"][0]
    assert added["bin"] == TARGET and added["task"] == "saxpy"
    assert added["verification"]["backend"] == "cpu" and added["verification"]["equivalent"]
    assert "equivalence" in added["verification"]["checks"]
    # An LLM-written program is its own origin: in the summary, memory and the export.
    assert added["origin"] == "llm" and out["added_by_origin"] == {"llm": 1}
    from structcover.tools.store import MemoryStore

    with MemoryStore.open(state / "memory") as store:
        assert [p.origin for p in store.programs(task="saxpy", round=0)
                if p.bin_label == TARGET and p.origin != "input"] == ["llm"]
    rows = Path(out["files"]["added_programs"]).read_text().splitlines()
    assert [json.loads(r)["origin"] for r in rows] == ["llm"]
    agents = out["llm"]["agents"]
    assert agents["synthesizer"]["ok"] == 1 and agents["synthesizer"]["fallbacks"] == 0
    assert agents["diagnoser"]["ok"] >= 1 and agents["synthesizer"]["input_tokens"] > 0
    assert out["llm"]["rationales"]["diagnoser"][0] == "stage x in shared memory"
    assert True in roles and False in roles  # both agents went through the server


class _Planner:
    def plan(self, features, bounds, *, seed, k, family="", operators=None, first_steps=None):  # type: ignore[no-untyped-def]
        return [["toward"]]


class _Mutate:
    def __init__(self, **kwargs: object) -> None:  # the campaign passes its executor
        pass

    def apply(self, source, chain, *, seed):  # type: ignore[no-untyped-def]
        return [MutantSource(source + f"\n// {seed}\n", list(chain))]

    def applicable(self, source):  # type: ignore[no-untyped-def]
        return frozenset({"toward"})

    def first_steps(self, source):  # type: ignore[no-untyped-def]
        return None

    def applies(self, source, chain, *, seed):  # type: ignore[no-untyped-def]
        return bool(self.apply(source, chain, seed=seed))


class _Verify:
    def verify(self, source, task, bin):  # type: ignore[no-untyped-def]  # noqa: A002
        return {"ok": True, "stage": "ok", "reason": "", "landed_bin": bin, "backend": "double",
                "checks": ["compile"], "features": {}, "gpu_seconds": 0.0}


def test_closed_port_completes_offline_and_says_why(prepared, tmp_path: Path,  # noqa: ANN001
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cb, "bind_planner", lambda store, archive=None: _Planner())
    monkeypatch.setattr(cb, "bind_verifier", lambda *a, **k: _Verify())
    monkeypatch.setattr(cs, "RegistryMutate", _Mutate)
    state = _state(prepared, tmp_path)
    res = CliRunner().invoke(app, ["campaign", str(prepared[0]), "--state", str(state),
                                   "--budget", "3", "--llm", srv.closed_port_url(), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["verified"] == len(out["added"]) > 0  # the offline policies did the work
    assert out["added_by_origin"] == {"mutant": len(out["added"])}
    assert "connection failed" in out["llm"]["disabled"]
    notes = " ".join(out["notes"])
    assert "switched off" in notes and "fell back to the offline policy" in notes
    assert out["llm"]["agents"]["synthesizer"]["fallbacks"] >= 1
    # the report and llm_usage.json carry the same counts and reasons
    usage = json.loads(Path(out["files"]["llm_usage"]).read_text())
    assert usage["agents"]["synthesizer"]["fallbacks"] >= 1 and usage["disabled"]
    report = Path(out["files"]["report"]).read_text()
    assert '<section id="llm">' in report and "connection failed" in report
