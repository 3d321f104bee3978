"""The pairwise ranking protocol pinned on small hand-computed fixtures (issue 8)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from discovery_sim import policy_world  # noqa: E402

from structcover.tools.mining.ranking import (  # noqa: E402
    PredictorSpec,
    evaluate_ranking,
    make_pairs,
    pair_credit,
    standard_specs,
    task_folds,
)


def _two_tasks() -> pd.DataFrame:
    return pd.DataFrame({
        "program_id": ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"],
        "task_id": ["A"] * 4 + ["B"] * 4,
        "speedup": [1.0, 2.0, 3.0, 1.01, 1.0, 2.0, 3.0, 4.0],
        "s.x": [1.0, 3.0, 2.0, 4.0, 1.0, 2.0, 3.0, 4.0],
    })


def test_hand_computed_accuracy():
    r = evaluate_ranking(_two_tasks(), [PredictorSpec("x", columns=["s.x"])], folds=2)
    row = r.rows[0]
    # Pairs: task A has 6, minus (a1, a4): |1.0 - 1.01| / 1.01 = 0.0099 < 2% -> tie, dropped.
    # Task B has 6 pairs, all at least 25% apart. 5 + 6 = 11 pairs.
    assert r.pairs == 11 and r.dropped_pairs["tie threshold"] == 1
    # Fold testing A trains on B, where x rises with speedup -> positive weight, A ranked by x:
    #   a2>a1: x 3>1 ok; a3>a1: 2>1 ok; a3>a2: 2<3 wrong; a2>a4: 3<4 wrong; a3>a4: 2<4 wrong
    #   -> 2/5 = 0.4.
    # Fold testing B trains on A: centered x = (-1.5, .5, -.5, 1.5), centered log speedup =
    #   (-.45, .24, .65, -.44); their products sum to -0.19 < 0 -> negative weight, so all 6
    #   pairs of B come out reversed -> 0/6 = 0.
    assert row.folds == 2 and row.pairs == 11
    assert row.mean == pytest.approx((0.4 + 0.0) / 2)
    assert row.std == pytest.approx(0.2)  # population std of (0.4, 0.0)
    assert row.pooled == pytest.approx(2 / 11)


def test_score_ties_count_half():
    scores = np.array([1.0, 1.0, 2.0])
    credit = pair_credit(scores, np.array([0, 2, 0]), np.array([1, 0, 2]))
    assert credit.tolist() == [0.5, 1.0, 0.0]
    # A predictor that cannot tell programs apart scores exactly 0.5.
    t = _two_tasks().assign(**{"s.flat": 7.0})
    r = evaluate_ranking(t, [PredictorSpec("flat", columns=["s.flat"])], folds=2)
    assert r.rows[0].pooled == 0.5


def test_pairs_orientation_ties_and_spread():
    labels = np.array([1.0, 1.019, 2.0, 2.1])
    spread = np.array([0.0, 0.0, 0.15, 0.0])
    p = make_pairs(labels, spread, np.array([0, 0, 0, 0]), tie=0.02)
    # (0,1): 0.019/1.019 = 1.9% -> tie. (2,3): |2.0-2.1| = 0.1 <= 0.15 + 0 -> within spread.
    assert p.dropped["tie threshold"] == 1 and p.dropped["within spread"] == 1
    assert len(p.i) == 4 and np.all(labels[p.i] > labels[p.j])


def test_repeats_merged_and_their_spread_makes_ties():
    t = pd.DataFrame({"program_id": ["p1", "p1", "p2", "q1", "q2"],
                      "task_id": ["A", "A", "A", "B", "B"],
                      "speedup": [1.0, 1.2, 1.2, 1.0, 2.0], "s.x": [1, 1, 2, 1, 2]})
    r = evaluate_ranking(t, [PredictorSpec("x", columns=["s.x"])], folds=2)
    # p1 -> mean 1.1, std 0.1414; |1.2 - 1.1| = 0.1 <= 0.1414 -> tie within spread.
    assert r.repeats_merged == 1 and r.programs == 4
    assert r.dropped_pairs["within spread"] == 1
    assert r.pairs == 1  # only q2 > q1 is left


def test_groups_never_split_across_folds():
    t = policy_world(driver="structure", n_tasks=12, per_task=10)
    held_out: list[set[str]] = []
    everything = set(t.loc[t["correct"], "task_id"])

    def spy(train: pd.DataFrame) -> list[str]:
        held_out.append(everything - set(train["task_id"]))
        return ["smem.tiled"]

    evaluate_ranking(t, [PredictorSpec("spy", select=spy)], folds=4, shuffled=False)
    assert len(held_out) == 4
    assert set().union(*held_out) == everything
    assert sum(len(h) for h in held_out) == len(everything)  # each task held out exactly once
    folds = task_folds(np.repeat(np.arange(9), 3), 4, seed=1)
    for task in range(9):
        assert len(set(folds[task * 3:(task + 1) * 3])) == 1


def test_device_column_makes_task_by_device_groups():
    t = pd.concat([_two_tasks().assign(gpu="h100"), _two_tasks().assign(gpu="a100")],
                  ignore_index=True)
    r = evaluate_ranking(t, [PredictorSpec("x", columns=["s.x"])], folds=2)
    assert r.group_columns == ["task_id", "gpu"] and r.groups == 4
    assert r.pairs == 22  # 11 per device, never a pair across devices


def test_shuffled_control_near_half_on_large_random_fixture():
    rng = np.random.default_rng(0)
    n_tasks, per = 150, 20
    t = pd.DataFrame({"program_id": np.arange(n_tasks * per).astype(str),
                      "task_id": np.repeat(np.arange(n_tasks), per).astype(str),
                      "speedup": np.exp(rng.normal(size=n_tasks * per)),
                      "s.a": rng.normal(size=n_tasks * per),
                      "s.b": rng.normal(size=n_tasks * per)})
    t["speedup"] = t["speedup"] * np.exp(0.8 * t["s.a"])  # s.a really helps
    r = evaluate_ranking(t, [PredictorSpec("ab", columns=["s.a", "s.b"])], folds=5)
    row = r.rows[0]
    assert row.pooled > 0.65
    assert abs(row.shuffled - 0.5) < 0.02


def test_identity_baseline_beats_structure_when_policy_drives_reward():
    t = policy_world(driver="policy", seed=2)
    t["program"] = [("__global__ void k(float* x) {}\n" * (1 + i % 2)) for i in range(len(t))]
    specs, notes = standard_specs(t, ["smem.tiled", "mem.coalesced_fraction"])
    names = [s.name for s in specs]
    assert names == ["length", "kernels", "tokens", "identity:policy", "F*", "F* + length",
                     "F* + kernels", "F* + tokens", "F* + identity:policy"]
    r = evaluate_ranking(t, specs, notes=notes)
    rows = {row.name: row for row in r.rows}
    assert rows["identity:policy"].pooled > rows["F*"].pooled
    assert rows["F* + identity:policy"].pooled >= rows["identity:policy"].pooled - 0.01
    assert 0.45 < rows["kernels"].pooled < 0.55  # kernel count here is unrelated to reward


def test_non_cuda_programs_are_their_own_slice():
    t = policy_world(driver="structure", n_tasks=10, per_task=20)
    t["program.language"] = np.where(np.arange(len(t)) % 4 == 0, "triton", "cuda")
    r = evaluate_ranking(t, [PredictorSpec("s", columns=["smem.tiled"])], folds=2)
    s = r.rows[0].slices
    assert set(s) == {"cuda", "non_cuda", "mixed"}
    assert s["cuda"].pairs + s["non_cuda"].pairs + s["mixed"].pairs == r.rows[0].pairs
    assert s["non_cuda"].pairs > 0


def test_bad_input():
    with pytest.raises(ValueError, match="two tasks"):
        evaluate_ranking(_two_tasks().assign(task_id="A"), [PredictorSpec("x", ["s.x"])])
    with pytest.raises(ValueError, match="'speedup'"):
        evaluate_ranking(_two_tasks().drop(columns="speedup"), [])


def test_ordered_pattern_places_a_level_the_training_tasks_never_reached():
    """Reuse levels are ordered (none < smem_staging < smem_tiling ...): task C's programs
    reach smem_tiling, which no other task has. As a rank, the fit on A and B (staging beats
    none) still says tiling beats staging; as one indicator per level, the unseen level has
    no weight and the pair comes out reversed."""
    t = pd.DataFrame({
        "program_id": ["a1", "a2", "b1", "b2", "c1", "c2"],
        "task_id": ["A", "A", "B", "B", "C", "C"],
        "speedup": [1.0, 2.0, 1.0, 2.0, 1.0, 2.0],
        "pattern.reuse": ["none", "smem_staging", "none", "smem_staging", "smem_staging",
                          "smem_tiling"],
    })
    t["s.reuse_kind"] = t["pattern.reuse"]  # the same levels, not declared ordered
    r = evaluate_ranking(t, [PredictorSpec("ordered", columns=["pattern.reuse"]),
                             PredictorSpec("kinds", columns=["s.reuse_kind"])], folds=3,
                         shuffled=False)
    rows = {row.name: row for row in r.rows}
    assert rows["ordered"].pooled == 1.0
    assert rows["kinds"].pooled == pytest.approx(2 / 3)  # A and B right, C reversed
