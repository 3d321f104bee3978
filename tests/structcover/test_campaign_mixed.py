"""A campaign on a round that mixes CUDA and Triton rollouts adds verified Triton programs.

One archive spans both languages (the pattern features mean the same in each). The round has
a CUDA task (``load_inline`` candidates of an elementwise product) and a Triton task (relu of a
sum, one element per Triton program: every load is a scalar per program, ``broadcast``). The
archive is frozen beforehand over ``pattern.global_access x pattern.sync``, as a user's round 0
would have frozen it, so the Triton task's coalesced bins are gaps. Everything else is real:
features of both languages, the diagnosis, the planner's dry runs of the Triton operators, the
re-written candidate, and its verification in Triton's interpreter inside the sandbox.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"


def _rollouts() -> pd.DataFrame:
    rng = random.Random(3)
    cuda = (DATA / "kernelbench" / "candidates" / "elementwise_mul_cuda.py").read_text()
    triton_scalar = (DATA / "triton_mutation" / "add_relu_scalar.py").read_text()
    # A second Triton rollout of the same structure (another launch option), so the task
    # has two distinct programs in its one bin, as a collapsed policy writes them.
    triton_scalar_w2 = triton_scalar.replace("add_one[(out.numel(),)](a, b, out)",
                                             "add_one[(out.numel(),)](a, b, out, num_warps=2)")
    assert triton_scalar_w2 != triton_scalar
    rows = []
    for task, programs in (("1_mul", [cuda]), ("2_add_relu", [triton_scalar, triton_scalar_w2])):
        for program in programs:
            for _ in range(3):
                rows.append({"task_id": task, "program": program, "round": 0, "correct": True,
                             "speedup": round(1.0 + rng.gauss(0, 0.05), 4)})
    return pd.DataFrame(rows)


@pytest.mark.kernelbench
@pytest.mark.nvcc
@pytest.mark.slow
def test_campaign_on_a_mixed_cuda_and_triton_round_adds_verified_triton_programs(
        tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from structcover.campaign import CampaignOptions, run_campaign
    from structcover.tools.coverage.archive import ARCHIVE_FILE, build_archive
    from structcover.tools.coverage.diagnosis_state import ensure_features
    from structcover.tools.features.extract import extract_features

    problems = tmp_path / "problems"
    problems.mkdir()
    shutil.copy(DATA / "kernelbench" / "problems" / "1_elementwise_mul.py", problems / "1_mul.py")
    shutil.copy(DATA / "triton_mutation" / "p_add_relu_small.py", problems / "2_add_relu.py")
    table = _rollouts()
    data = tmp_path / "rollouts.parquet"
    table.to_parquet(data)
    featured = ensure_features(table)
    assert set(featured["program.language"]) == {"cuda", "triton"}
    state = tmp_path / "state"
    state.mkdir()
    build_archive(featured, ["pattern.global_access", "pattern.sync"]).empty_copy().save(
        state / ARCHIVE_FILE)

    result = run_campaign(data, state, CampaignOptions(
        budget=3, backend="cpu", problems=problems, target_scov=1.0, targets_per_step=4,
        max_retries=0, seed=1))

    triton_added = [a for a in result.added if a.task == "2_add_relu"]
    assert triton_added, result
    parents = set(table["program"])
    out = next((state / "campaign").glob("round_*"))
    new = pd.read_json(out / "added_programs.jsonl", lines=True)
    for record in new[new["task"] == "2_add_relu"].itertuples():
        program = (out / record.path).read_text()
        assert record.path.endswith(".py") and program not in parents  # a mutant, not a copy
        values = extract_features(program).values
        assert values["program.language"] == "triton"
        assert values["pattern.global_access"] == "coalesced"  # it landed in a gap
        assert record.backend == "cpu" and record.operators[0].startswith("triton_")
    # The report says which languages the data and the additions were written in.
    report = (out / "report.html").read_text()
    assert "data cuda 1, triton 2" in report and "triton " in report.split("added ")[-1]
    before = {c.task: c.before for c in result.coverage}
    after = {c.task: c.after for c in result.coverage}
    assert after["2_add_relu"] > before["2_add_relu"]
