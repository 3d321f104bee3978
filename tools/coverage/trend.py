"""Coverage against reward across every round of a state: the trend a training run should watch.

Each diagnosed round leaves ``<state>/rounds/<N>/diagnosis.json`` (and ``discovery.json``).
This module reads them all and lines up, round by round: SCov (pooled and the per-task mean),
structural entropy, collapse, the round's mean reward, and F* with its drift from the round
before. It also reports how coverage gains go with reward gains: the Pearson correlation of
round-to-round changes in per-task SCov (pooled SCov where a round has no task column) and in
mean reward. A positive value says rounds that covered more structure also earned more; with
fewer than three changes it is not computed (two points always correlate perfectly).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

__all__ = ["RoundTrend", "Trend", "build_trend"]

MIN_CHANGES_FOR_CORRELATION = 3


class RoundTrend(BaseModel):
    """One round's headline numbers."""

    round: int
    scov: float
    scov_task_mean: float | None = None
    entropy: float | None = None
    collapse: str | None = Field(None, description="collapse kind when detected, else None")
    reward_mean: float | None = Field(None, description="mean R_perf of the round's programs")
    f_star: list[str] = Field(default_factory=list)
    f_star_added: list[str] = Field(default_factory=list, description="in F*, not last round")
    f_star_removed: list[str] = Field(default_factory=list, description="last round, not now")


class Trend(BaseModel):
    """Every diagnosed round of a state, in order, with the coverage/reward correlation."""

    rounds: list[RoundTrend] = Field(default_factory=list)
    coverage_reward_correlation: float | None = Field(
        None, description="Pearson r of round-to-round changes in coverage and in mean reward")
    changes: int = Field(0, description="round-to-round changes the correlation used")
    note: str = ""


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None  # a torn or foreign file leaves its round out rather than failing the trend


def _round_point(folder: Path, previous_f_star: list[str] | None) -> RoundTrend | None:
    saved = _read_json(folder / "diagnosis.json")
    if saved is None:
        return None
    discovery = _read_json(folder / "discovery.json") or {}
    f_star = list(discovery.get("f_star") or [])
    collapse = saved.get("collapse") or {}
    before = previous_f_star or []
    return RoundTrend(
        round=int(folder.name), scov=float(saved["scov"]),
        scov_task_mean=saved.get("scov_task_mean"),
        entropy=(saved.get("entropy") or {}).get("joint"),
        collapse=collapse.get("kind") if collapse.get("detected") else None,
        reward_mean=saved.get("reward_mean"), f_star=f_star,
        f_star_added=[f for f in f_star if f not in before] if previous_f_star is not None else [],
        f_star_removed=[f for f in before if f not in f_star])


def _correlation(points: list[RoundTrend]) -> tuple[float | None, int, str]:
    pairs = [(p.scov_task_mean if p.scov_task_mean is not None else p.scov, p.reward_mean)
             for p in points if p.reward_mean is not None]
    if len(pairs) < MIN_CHANGES_FOR_CORRELATION + 1:
        return None, max(len(pairs) - 1, 0), (
            f"coverage/reward correlation needs {MIN_CHANGES_FOR_CORRELATION + 1} rounds with "
            f"rewards; {len(pairs)} so far")
    values = np.asarray(pairs, dtype=float)
    d_cov, d_reward = np.diff(values[:, 0]), np.diff(values[:, 1])
    if np.std(d_cov) == 0 or np.std(d_reward) == 0:
        return None, len(d_cov), "coverage or reward did not change between rounds"
    return float(np.corrcoef(d_cov, d_reward)[0, 1]), len(d_cov), ""


def build_trend(state: Path | str) -> Trend:
    """The trend over every diagnosed round of ``state`` (empty before the first diagnosis)."""
    rounds_dir = Path(state) / "rounds"
    folders = sorted((p for p in rounds_dir.glob("*") if p.name.isdigit()),
                     key=lambda p: int(p.name)) if rounds_dir.is_dir() else []
    points: list[RoundTrend] = []
    for folder in folders:
        point = _round_point(folder, points[-1].f_star if points else None)
        if point is not None:
            points.append(point)
    r, changes, note = _correlation(points)
    return Trend(rounds=points, coverage_reward_correlation=r, changes=changes, note=note)
