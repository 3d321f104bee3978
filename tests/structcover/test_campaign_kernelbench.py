"""A campaign on KernelBench-format rollouts adds verified mutants offline.

Rollouts are Python candidates (``ModelNew`` with load_inline CUDA) of two small problems
(``tools/simulation/kernelbench_sample.py``), with simulated rewards; the task ids are
problem ids within ``--problems DIR``. Every
part is real: diagnosis and archive, the planner, the operators applied inside the embedded
CUDA and re-embedded, and the Verifier's pipeline, which routes a ``kernelbench`` task to
``verify_kernelbench`` on the CPU backend (the load_inline sources built for the CPU).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest


@pytest.mark.kernelbench
@pytest.mark.nvcc
@pytest.mark.slow
def test_campaign_on_kernelbench_rollouts_adds_verified_mutants(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from structcover.campaign import CampaignOptions, run_campaign
    from structcover.tools.kernelbench.candidate import find_inline_extensions
    from structcover.tools.simulation.kernelbench_sample import write_sample

    data, problems = write_sample(tmp_path, seed=5)
    table = pd.read_parquet(data)

    result = run_campaign(data, tmp_path / "state", CampaignOptions(
        budget=2, backend="cpu", problems=problems, target_scov=1.0, targets_per_step=2,
        max_retries=0, seed=1))

    assert result.candidates > 0, result
    assert result.verified >= 1, result
    parents = set(table["program"])
    for added in result.added:
        assert added.task in ("1_mul", "2_scale")
        assert added.verification.backend == "cpu" and added.verification.equivalent
        assert added.verification.checks[:2] == ["compile", "structure"]
    out = next((tmp_path / "state" / "campaign").glob("round_*"))
    new = pd.read_json(out / "added_programs.jsonl", lines=True)
    assert len(new) == result.verified
    for rel in new["path"]:
        assert rel.endswith(".py")
        program = (out / rel).read_text()
        assert program not in parents  # a mutant, not a copy
        ext = find_inline_extensions(program)[0]  # a valid candidate with a CUDA kernel
        assert "__global__" in ext.cuda_sources[0]

    # The round's gap prompts ask for a ModelNew file against each problem (not for a .cu).
    prompts = pd.read_parquet(out / "curated" / "prompts.parquet")
    assert len(prompts) > 0
    for prompt, truth in zip(prompts["prompt"], prompts["reward_model"], strict=True):
        assert "class ModelNew(torch.nn.Module)" in prompt[0]["content"]
        assert "class Model(" in json.loads(truth["ground_truth"])["problem_source"]

    # The verified mutant's ModelNew runs the embedded kernel: break it there and it fails.
    from structcover.tools.kernelbench.embed import embedded_sources, replace_source
    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench

    first = new.iloc[0]
    program = (out / first["path"]).read_text()
    src = embedded_sources(program)[0]
    assert "b[i]" in src.text
    broken = replace_source(program, src, src.text.replace("b[i]", "(b[i] + 1.0f)"))
    verdict = verify_kernelbench(broken, resolve_problem(first["task"], problems), backend="cpu")
    assert verdict.equivalent is False, verdict


def test_campaign_problems_option_reaches_the_run(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import structcover.campaign as campaign
    from structcover.cli import app

    seen: dict[str, object] = {}

    class Stop(Exception):
        pass

    def fake_run(data, state, options, **kw):  # type: ignore[no-untyped-def]
        seen["problems"] = options.problems
        raise Stop

    monkeypatch.setattr(campaign, "run_campaign", fake_run)
    res = CliRunner().invoke(app, ["campaign", str(tmp_path / "d.parquet"), "--state",
                                   str(tmp_path / "s"), "--problems", str(tmp_path), "--json"])
    assert "Stop" in res.output  # the CLI reached the run, which stopped here
    assert seen["problems"] == tmp_path


def test_kernelbench_tasks_get_specs_from_the_problems_folder(tmp_path: Path) -> None:
    from structcover.campaign.prepare import _kernelbench_specs
    from structcover.tools.simulation.kernelbench_sample import problem_source

    (tmp_path / "1_mul.py").write_text(problem_source("1_mul"))

    class Port:
        specs: dict[str, object] = {"saxpy": object()}  # a corpus task keeps its spec

    port = Port()
    rows = pd.DataFrame({"task_id": ["saxpy", "1_mul", "1", "9_nothing"]})
    notes = _kernelbench_specs(port, rows, tmp_path)
    assert sorted(port.specs) == ["1", "1_mul", "saxpy"]
    spec = port.specs["1_mul"]
    assert spec.kind == "kernelbench" and spec.sizes == {"size": 4099}  # type: ignore[attr-defined]
    assert len(notes) == 1 and "9_nothing" in notes[0]
    # Without --problems, unknown ids are no KernelBench tasks and leave no notes.
    assert _kernelbench_specs(Port(), pd.DataFrame({"task_id": ["9_nothing"]}), None) == []


def test_a_campaign_run_prunes_the_build_cache(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from typer.testing import CliRunner

    import structcover.campaign as campaign
    from structcover.cli import app

    cache = tmp_path / "emulator"
    cache.mkdir()
    old = cache / "kbext-old.so"
    old.write_bytes(b"x" * 2000)
    os.utime(old, (1e9, 1e9))  # 2001: built and last used long ago
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_DIR", str(cache))
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_MAX_GB", "0.000001")  # 1000 bytes
    monkeypatch.setattr(campaign, "run_campaign", lambda *a, **kw: {"stopped": "done"})
    res = CliRunner().invoke(app, ["campaign", str(tmp_path / "d.parquet"), "--state",
                                   str(tmp_path / "s"), "--json"])
    assert res.exit_code == 0, res.output
    assert not old.exists()
