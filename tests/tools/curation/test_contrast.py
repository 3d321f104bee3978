import json

import pandas as pd
import pytest

from structcover.schema import Reward, Trajectory
from structcover.tools.curation.contrast import contrast_pairs, export_pairs, optimization_score

NAIVE = """__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""
FANCY = """__global__ void k(const float* x, float* y, int n) {
    __shared__ float t[32][33];
    #pragma unroll 4
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += blockDim.x * gridDim.x) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x = __shfl_xor_sync(0xffffffff, v.x, 1);
        reinterpret_cast<float4*>(y)[i] = v;
    }
}
"""


def _traj(src, speedup, correct=True, task="t"):
    return Trajectory(task_id=task, program=src, reward=Reward(correct=correct, speedup=speedup))


def test_optimization_score_counts_markers():
    assert optimization_score({"smem.tiled": True, "mem.vector_loads": 2, "warp.shuffles": 0}) == 2
    assert optimization_score({"mem.coalesced_fraction": 0.95}) == 1


def test_pairs_optimized_but_slow_against_naive_but_fast(tmp_path):
    data = [_traj(NAIVE, 2.0), _traj(FANCY, 0.5), _traj(NAIVE + "//", 1.0, correct=False)]
    pairs = contrast_pairs(data)
    assert len(pairs) == 1
    p = pairs[0]
    assert p.chosen == NAIVE and p.rejected == FANCY
    assert p.rejected_score - p.chosen_score >= 2 and p.chosen_reward == 2.0
    df = pd.read_parquet(export_pairs(pairs, tmp_path / "pairs.parquet"))
    assert {"chosen", "rejected", "chosen_reward", "rejected_features"} <= set(df.columns)
    assert json.loads(df.loc[0, "rejected_features"])["mem.vector_loads"] >= 1
    lines = export_pairs(pairs, tmp_path / "pairs.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["rejected_reward"] == 0.5


def test_no_pair_when_the_optimized_program_is_also_faster():
    assert contrast_pairs([_traj(NAIVE, 1.0), _traj(FANCY, 3.0)]) == []


def test_programs_without_reward_or_outside_target_bins_are_skipped():
    assert contrast_pairs([_traj(NAIVE, None), _traj(FANCY, 0.5)]) == []
    fancy = _traj(FANCY, 0.5)
    pairs = contrast_pairs([_traj(NAIVE, 2.0), fancy], bins={fancy.program_id: "b1"},
                           target_bins={"b2"})
    assert pairs == []


def test_export_rejects_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match="parquet or .jsonl"):
        export_pairs([], tmp_path / "x.csv")
