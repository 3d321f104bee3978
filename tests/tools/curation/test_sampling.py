"""Curation export: weights, resampling, Parquet/JSONL/datasets and the verl prompt layout."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from structcover.tools.coverage.archive import build_archive
from structcover.tools.coverage.diagnosis import diagnose
from structcover.tools.curation.sampling import coverage_weights, export_curation, resample


def test_weights_inverse_count_and_sum_to_n():
    bins = np.array([0, 0, 0, 1, -1])
    w = coverage_weights(bins, eps=1.0)
    # raw 1/(3+1) = .25 for bin 0 (x3), 1/(1+1) = .5 for bin 1, .5 for the unbinned row
    # sum raw = .75 + .5 + .5 = 1.75; scaled by N / sum = 5 / 1.75
    assert w == pytest.approx(np.array([.25, .25, .25, .5, .5]) * 5 / 1.75)
    assert w.sum() == pytest.approx(5)
    with pytest.raises(ValueError):
        coverage_weights(bins, eps=0)


def test_resample_is_seeded_and_favours_rare_bins():
    t = pd.DataFrame({"x": [0] * 90 + [1] * 10})
    w = coverage_weights(t["x"].to_numpy())
    a, b = resample(t, w, seed=7), resample(t, w, seed=7)
    assert a.equals(b) and len(a) == 100
    # rare bin: weight share 10/11 / (90/91 + 10/11) ~ 0.48 of draws, vs 0.10 in the input
    assert (a["x"] == 1).mean() > 0.3


def _rollouts(seed: int, n: int, tasks: list[str], p: list[float] | None = None) -> pd.DataFrame:
    """Scored rollouts over two structural features, with a zero bin (nothing tiled is
    strided)."""
    rng = np.random.default_rng(seed)
    patterns = ["coalesced", "strided"] if p else ["coalesced", "strided", "mixed"]
    t = pd.DataFrame({"program_id": [f"p{i}" for i in range(n)],
                      "task_id": rng.choice(tasks, n),
                      "round": 0, "correct": True, "speedup": rng.uniform(0.5, 3, n),
                      "smem.tiled": rng.random(n) > 0.8,
                      "mem.pattern": rng.choice(patterns, n, p=p)})
    t.loc[t["smem.tiled"], "mem.pattern"] = "coalesced"  # leave a zero bin
    return t


def test_export_loads_with_pyarrow_and_datasets(tmp_path):
    datasets = pytest.importorskip("datasets")
    n = 40
    t = _rollouts(0, n, ["vector_add", "unknown_task"], p=[.9, .1])
    arch = build_archive(t, ["smem.tiled", "mem.pattern"])
    d = diagnose(t, arch)
    res = export_curation(t, arch, tmp_path / "out", gaps=d.gaps, diagnosis_json=d.to_json())
    tab = pq.read_table(res.files["weighted_parquet"])
    assert tab.num_rows == n and abs(sum(tab.column("weight").to_pylist()) - n) < 1e-6
    ds = datasets.load_dataset("parquet", data_files=res.files["weighted_parquet"])["train"]
    assert "weight" in ds.column_names and len(ds) == n
    disk = datasets.load_from_disk(res.files["hf_dataset"])
    assert abs(sum(disk["weight"]) - n) < 1e-6
    lines = (tmp_path / "out" / "weighted.jsonl").read_text().splitlines()
    assert len(lines) == n and "weight" in json.loads(lines[0])
    prompts = pq.read_table(res.files["prompts_parquet"]).to_pylist()
    assert prompts and set(prompts[0]) == {"data_source", "prompt", "ability", "reward_model",
                                           "extra_info"}
    first = prompts[0]
    assert first["prompt"][0]["role"] == "user"
    assert first["reward_model"]["style"] == "rule"
    truth = json.loads(first["reward_model"]["ground_truth"])
    assert truth["target_bin"] == first["extra_info"]["target_bin"] == d.zero_bins[0]
    assert "smem.tiled = 1" in first["prompt"][0]["content"]
    assert {"index", "split", "task_id", "target_bin"} <= set(first["extra_info"])
    verl = datasets.load_dataset("parquet", data_files=res.files["prompts_parquet"])["train"]
    assert verl[0]["prompt"][0]["content"] == first["prompt"][0]["content"]
    assert json.loads((tmp_path / "out" / "diagnosis.json").read_text())["scov"] == d.scov
    assert not list((tmp_path / "out").glob(".*tmp"))  # no temp files left behind


def test_prompt_rows_look_each_task_up_in_the_corpus_once(monkeypatch):
    """An export writes a row per (gap, task); a task the corpus lacks (a KernelBench problem)
    was looked up again for every row, each lookup scanning the corpus folder."""
    from structcover.tools.curation import prompting
    from structcover.tools.curation.sampling import prompt_rows

    asked: list[str] = []
    real = prompting.corpus_spec
    monkeypatch.setattr(prompting, "corpus_spec", lambda t: asked.append(t) or real(t))
    t = _rollouts(1, 30, ["vector_add", "19_ReLU"])
    arch = build_archive(t, ["smem.tiled", "mem.pattern"])
    gaps = diagnose(t, arch).gaps
    rows = prompt_rows(gaps, ["vector_add", "19_ReLU"], arch)
    assert len(rows) >= 4 and sorted(asked) == ["19_ReLU", "vector_add"]
    truths = [json.loads(r["ground_truth"]) for r in rows["reward_model"]]
    assert {t["task_id"] for t in truths if t["task_spec"] is None} == {"19_ReLU"}


def test_prompt_rows_ask_kernelbench_tasks_for_model_new(tmp_path):
    from structcover.schema import TaskSpec
    from structcover.tools.curation.sampling import prompt_rows

    problem = tmp_path / "19_ReLU.py"
    problem.write_text("class Model(nn.Module):\n    def forward(self, x):\n"
                       "        return torch.relu(x)\n")
    spec = TaskSpec(task_id="19_ReLU", kind="kernelbench", problem=str(problem), args=[],
                    sizes={}, family="kernelbench")
    t = _rollouts(1, 30, ["19_ReLU", "unknown_task"])
    arch = build_archive(t, ["smem.tiled", "mem.pattern"])
    rows = prompt_rows(diagnose(t, arch).gaps, ["19_ReLU", "unknown_task"], arch,
                       specs={"19_ReLU": spec})
    by_task = {r["task_id"]: p[0]["content"]
               for r, p in zip(rows["extra_info"], rows["prompt"], strict=True)}
    assert "return torch.relu(x)" in by_task["19_ReLU"] and "ModelNew" in by_task["19_ReLU"]
    assert "ModelNew" not in by_task["unknown_task"]  # no spec: the generic prompt
