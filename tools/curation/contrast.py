"""Structure-reward contrast pairs for high-mismatch bins (docs/ARCHITECTURE.md, stage 5).

A pair holds two verified programs of one task where one *looks* optimized (more of the
structures usually credited with speed) but is slow, and the other looks naive but is fast.
Exported as a pairwise dataset (``chosen`` = the faster program, ``rejected`` = the slower)
with both feature vectors and rewards, for pairwise ranking or preference training.
Rewards are taken from the data (measured or given); none is invented.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from structcover.schema import FeatureValue, Trajectory

#: Structural markers that make a program "look optimized", each worth one point.
OPTIMIZED_MARKERS: dict[str, float] = {
    "smem.tiled": 0.5,        # flag: > 0.5 means present
    "mem.vector_loads": 0.5,
    "warp.shuffles": 0.5,
    "loop.unroll_pragmas": 0.5,
    "par.coarsening_loops": 0.5,
    "loop.grid_stride": 0.5,
    "smem.padded": 0.5,
    "mem.coalesced_fraction": 0.9,
}


def optimization_score(features: dict[str, FeatureValue]) -> int:
    """How optimized a program looks: the number of markers above their threshold."""
    score = 0
    for name, threshold in OPTIMIZED_MARKERS.items():
        value = features.get(name)
        if isinstance(value, bool | int | float) and float(value) > threshold - 1e-12 and (
                name == "mem.coalesced_fraction" or float(value) > threshold):
            score += 1
    return score


def performance(traj: Trajectory) -> float | None:
    """Higher is faster: the speedup, else 1 / runtime; None when neither was recorded."""
    if traj.reward.speedup is not None:
        return traj.reward.speedup
    if traj.reward.runtime_ms:
        return 1.0 / traj.reward.runtime_ms
    return None


class ContrastPair(BaseModel):
    """Chosen (naive-looking but fast) vs rejected (optimized-looking but slow)."""

    task_id: str
    chosen: str
    rejected: str
    chosen_id: str
    rejected_id: str
    chosen_score: int
    rejected_score: int
    chosen_reward: float
    rejected_reward: float
    chosen_features: dict[str, FeatureValue] = Field(default_factory=dict)
    rejected_features: dict[str, FeatureValue] = Field(default_factory=dict)
    bin: str | None = None


def contrast_pairs(trajectories: list[Trajectory], *,
                   features: dict[str, dict[str, FeatureValue]] | None = None,
                   bins: dict[str, str] | None = None, target_bins: set[str] | None = None,
                   min_score_gap: int = 2, min_speed_ratio: float = 1.1,
                   max_pairs_per_task: int = 20) -> list[ContrastPair]:
    """Build contrast pairs from verified programs.

    Args:
        trajectories: Rollouts or corpus programs with rewards; only ``correct`` ones are used.
        features: Program id -> feature values (extracted here when missing).
        bins: Program id -> archive bin label (to restrict to high-mismatch bins).
        target_bins: Keep pairs whose optimized-looking program sits in one of these bins.
        min_score_gap: The optimized-looking program must have this many more markers.
        min_speed_ratio: The naive-looking program must be this many times faster.
        max_pairs_per_task: Keep the strongest pairs per task (largest speed ratio).

    Returns:
        Pairs, strongest first within each task.
    """
    features = dict(features or {})
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    for traj in trajectories:
        if traj.reward.correct is True and performance(traj) is not None:
            by_task[traj.task_id].append(traj)
    pairs: list[ContrastPair] = []
    for task_id, group in sorted(by_task.items()):
        found = []
        for t in group:
            if t.program_id not in features:
                from structcover.tools.features.extract import extract_features

                features[t.program_id] = extract_features(t.program).values
        for slow in group:
            for fast in group:
                s_slow = optimization_score(features[slow.program_id])
                s_fast = optimization_score(features[fast.program_id])
                p_slow, p_fast = performance(slow), performance(fast)
                if p_slow is None or p_fast is None:  # filtered above; keeps the types honest
                    continue
                if s_slow - s_fast < min_score_gap or p_fast < p_slow * min_speed_ratio:
                    continue
                label = (bins or {}).get(slow.program_id)
                if target_bins is not None and label not in target_bins:
                    continue
                found.append((p_fast / p_slow, ContrastPair(
                    task_id=task_id, chosen=fast.program, rejected=slow.program,
                    chosen_id=fast.program_id, rejected_id=slow.program_id,
                    chosen_score=s_fast, rejected_score=s_slow, chosen_reward=p_fast,
                    rejected_reward=p_slow, chosen_features=features[fast.program_id],
                    rejected_features=features[slow.program_id], bin=label)))
        found.sort(key=lambda x: -x[0])
        pairs += [p for _, p in found[:max_pairs_per_task]]
    return pairs


def pair_rows(pairs: list[ContrastPair]) -> list[dict[str, Any]]:
    """Flat rows (features as JSON strings so every row has the same columns)."""
    rows = []
    for p in pairs:
        row = p.model_dump()
        row["chosen_features"] = json.dumps(p.chosen_features, sort_keys=True, default=str)
        row["rejected_features"] = json.dumps(p.rejected_features, sort_keys=True, default=str)
        rows.append(row)
    return rows


def export_pairs(pairs: list[ContrastPair], path: Path) -> Path:
    """Write pairs as ``.parquet`` or ``.jsonl`` (by suffix) with ``chosen``/``rejected``.

    Raises:
        ValueError: The suffix is neither.
    """
    path = Path(path)
    rows = pair_rows(pairs)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif path.suffix == ".parquet":
        import pandas as pd

        columns = list(ContrastPair.model_fields)
        pd.DataFrame(rows, columns=columns).to_parquet(path, index=False)
    else:
        raise ValueError(f"{path}: expected a .parquet or .jsonl file")
    return path
