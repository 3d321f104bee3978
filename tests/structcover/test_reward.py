"""The verl reward hook: loaded the way verl loads it, gate and coverage bonus."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

import structcover.reward as reward_module
from structcover.tools.coverage.archive import GridArchive
from structcover.tools.coverage.bins import Dimension
from structcover.tools.data.corpus import corpus_root
from structcover.tools.features.extract import extract_values

ADVERSARIAL = Path(__file__).resolve().parents[1] / "data" / "adversarial"
GEMM = corpus_root() / "gemm" / "variants"


def _verl_load(path: str, name: str):
    """A stand-in for verl's get_custom_reward_fn: import a file by path, take a function."""
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _reply(source: str) -> str:
    return f"Here is the optimized kernel.\n```cuda\n{source}\n```\n"


def _state_with_counts(tmp_path: Path, common: str, rare: str, feature: str) -> Path:
    """A frozen archive over one feature where ``common`` fills its bin and ``rare`` does not."""
    common_v, rare_v = extract_values(common)[feature], extract_values(rare)[feature]
    assert common_v != rare_v, "fixture programs must differ on the archive feature"
    table = pd.DataFrame({feature: [common_v] * 9 + [rare_v], "reward": [1.0] * 10})
    # Fixed edges: [0,1) holds kernels without shared arrays, [1,64] those with some.
    archive = GridArchive(dims=[Dimension(feature, "numeric", edges=(0.0, 1.0, 64.0))])
    archive.add(table.iloc[:9])  # the rare program's bin stays empty
    archive.save(tmp_path / "archive.json")
    return tmp_path


def test_verl_loader_scores_flagged_program_zero():
    compute_score = _verl_load(reward_module.__file__, "compute_score")
    cheat = (ADVERSARIAL / "try_fallback.cu").read_text()
    out = compute_score("kernels", _reply(cheat), "", {"score": 1.7})
    assert out["score"] == 0.0
    assert out["base_score"] == 1.7
    assert out["hacking_flags"] and out["hacking_reason"]


def test_rare_bin_scores_above_common_bin_with_bonus(tmp_path: Path):
    compute_score = _verl_load(reward_module.__file__, "compute_score")
    common = (GEMM / "naive_strided.cu").read_text()
    rare = (GEMM / "smem_tiled16.cu").read_text()
    state = _state_with_counts(tmp_path, common, rare, "smem.arrays")
    kwargs = {"state_dir": str(state), "coverage_weight": 0.5}
    common_out = compute_score("kernels", _reply(common), "", {"score": 1.0}, **kwargs)
    rare_out = compute_score("kernels", _reply(rare), "", {"score": 1.0}, **kwargs)
    assert rare_out["bin_count"] == 0 and common_out["bin_count"] == 9
    assert rare_out["score"] > common_out["score"] == 1.0
    off = compute_score("kernels", _reply(rare), "", {"score": 1.0}, state_dir=str(state))
    assert off["score"] == 1.0 and off["coverage_bonus"] == 0.0


def test_wrong_program_earns_no_bonus(tmp_path: Path):
    common = (GEMM / "naive_strided.cu").read_text()
    rare = (GEMM / "smem_tiled16.cu").read_text()
    state = _state_with_counts(tmp_path, common, rare, "smem.arrays")
    out = reward_module.compute_score("k", _reply(rare), "", {"score": 0.0}, state_dir=state,
                                      coverage_weight=0.5)
    assert out["score"] == 0.0


def test_base_score_function_by_path(tmp_path: Path):
    scorer = tmp_path / "my_rewards.py"
    scorer.write_text("def kernel_score(ds, sol, gt, info):\n    return {'score': 0.25}\n")
    src = (GEMM / "naive_strided.cu").read_text()
    out = reward_module.compute_score("k", _reply(src), "", {}, base_score=f"{scorer}:kernel_score")
    assert out["score"] == 0.25


def test_missing_trainer_score_is_a_clear_error():
    with pytest.raises(ValueError, match="trainer's score"):
        reward_module.compute_score("k", "```cuda\n__global__ void f(){}\n```", "", {})


def test_extract_program_takes_last_code_block():
    text = "ref:\n```python\nprint(1)\n```\nmine:\n```cuda\nKERNEL\n```"
    assert reward_module.extract_program(text).strip() == "KERNEL"
