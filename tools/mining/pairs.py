"""Pairs and folds of the within-group ranking protocol (:mod:`.ranking`).

Programs of the same group are compared in pairs, oriented so the first is the better one; a
pair inside the tie threshold or within the programs' measured spread is dropped and counted.
Folds split by task (seeded), so no task is in both train and test: the one task-fold scheme,
also used by SRMis's out-of-fold predictions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class Pairs:
    """Index pairs (i better than j) within groups, and why others were dropped."""

    i: np.ndarray
    j: np.ndarray
    dropped: dict[str, int]


def merge_repeats(frame: pd.DataFrame, label: str, keys: list[str],
                  spread_col: str | None = None) -> tuple[pd.DataFrame, int]:
    """Merge repeated measurements of one program into its mean label and spread.

    The spread of a program is the sample std of its repeats (0 for one measurement), or the
    given ``spread_col`` when larger.

    Returns:
        One row per program, with ``_spread``, and how many rows were merged away.
    """
    frame = frame.copy()
    frame["_spread"] = (pd.to_numeric(frame[spread_col], errors="coerce").fillna(0.0)
                        if spread_col else 0.0)
    if "program_id" not in frame.columns:
        return frame, 0
    by = keys + ["program_id"]
    grouped = frame.groupby(by, sort=False, dropna=False)
    std = grouped[label].transform("std").fillna(0.0)
    frame["_spread"] = np.maximum(frame["_spread"], std)
    frame[label] = grouped[label].transform("mean")
    merged = frame.drop_duplicates(by).reset_index(drop=True)
    return merged, len(frame) - len(merged)


def make_pairs(labels: np.ndarray, spread: np.ndarray, groups: np.ndarray, *, tie: float,
               max_per_group: int = 20_000, seed: int = 0) -> Pairs:
    """All within-group pairs, oriented so ``labels[i] > labels[j]``, minus ties.

    Dropped: ``tie threshold`` when ``|a-b| / max(|a|,|b|) < tie``; ``within spread`` when
    ``|a-b| <= spread_a + spread_b`` (run-to-run noise). Groups with more than
    ``max_per_group`` pairs are sampled (seeded) and counted under ``sampled out``.
    """
    rng = np.random.default_rng(seed)
    out_i, out_j = [], []
    dropped = {"tie threshold": 0, "within spread": 0, "sampled out": 0}
    order = np.argsort(groups, kind="stable")
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    for idx in np.split(order, bounds):
        n = len(idx)
        total = n * (n - 1) // 2
        if total == 0:
            continue
        if total > max_per_group:
            a = rng.integers(0, n, max_per_group * 2)
            b = rng.integers(0, n, max_per_group * 2)
            keep = a < b
            ab = np.unique(np.stack([a[keep], b[keep]], 1), axis=0)[:max_per_group]
            a, b = ab[:, 0], ab[:, 1]
            dropped["sampled out"] += total - len(a)
        else:
            a, b = np.triu_indices(n, k=1)
        ia, ib = idx[a], idx[b]
        la, lb = labels[ia], labels[ib]
        diff = np.abs(la - lb)
        scale = np.maximum(np.abs(la), np.abs(lb))
        is_tie = diff < tie * scale
        noisy = ~is_tie & (diff <= spread[ia] + spread[ib])
        dropped["tie threshold"] += int(is_tie.sum())
        dropped["within spread"] += int(noisy.sum())
        keep = ~(is_tie | noisy)
        better = la > lb
        out_i.append(np.where(better, ia, ib)[keep])
        out_j.append(np.where(better, ib, ia)[keep])
    def cat(xs: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(xs) if xs else np.zeros(0, dtype=np.int64)
    return Pairs(cat(out_i), cat(out_j), dropped)


def pair_credit(scores: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """1 where the better program scores higher, 0.5 on a score tie, 0 otherwise."""
    return np.where(scores[i] > scores[j], 1.0, np.where(scores[i] == scores[j], 0.5, 0.0))


def task_folds(tasks: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fold per row: tasks shuffled (seeded) and dealt round-robin, so no task is split."""
    uniq = np.unique(tasks)
    perm = np.random.default_rng(seed).permutation(len(uniq))
    fold_of = np.empty(len(uniq), dtype=np.int64)
    fold_of[perm] = np.arange(len(uniq)) % k
    return fold_of[np.searchsorted(uniq, tasks)]
