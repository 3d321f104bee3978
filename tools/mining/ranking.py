"""Within-group pairwise ranking evaluation, with the trivial baselines beside F* (issue 8).

Protocol: programs of the same group (task, or task x device) are compared in pairs; a pair
whose rewards differ by less than the tie threshold (relative, default 2%) or lie within
their measured spread is dropped and counted; a predictor is fit on the training tasks and
scores the test programs; a pair counts 1 when the faster program scores higher, 0.5 when
the scores tie, 0 otherwise. Folds split by task, so no task is in both train and test.
Reported: mean ± std over folds (population std), pooled accuracy over all test pairs, group
and pair counts, and the same protocol with labels shuffled within groups (about 0.5).

The pairs and task folds live in :mod:`.pairs`, the predictors and baselines in
:mod:`.predictors`; this module fits, scores and reports.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field
from sklearn.linear_model import Ridge

from structcover.tools.mining import table as T
from structcover.tools.mining.pairs import Pairs, make_pairs, merge_repeats, pair_credit, task_folds
from structcover.tools.mining.predictors import (
    PredictorSpec,
    available_baselines,
    design,
    standard_specs,
)

__all__ = ["DEVICE_COLUMNS", "Pairs", "PredictorSpec", "RankingReport", "RankingRow",
           "SliceScore", "available_baselines", "evaluate_ranking", "make_pairs",
           "merge_repeats", "pair_credit", "standard_specs", "task_folds"]

#: Columns that name a device; with one, groups are task x device.
DEVICE_COLUMNS = ("device", "gpu", "hardware")


class SliceScore(BaseModel):
    """Pooled accuracy on the test pairs of one program-language slice."""

    pairs: int
    accuracy: float | None


class RankingRow(BaseModel):
    """One predictor under the protocol."""

    name: str
    features: list[str] = Field(default_factory=list)
    mean: float | None = Field(description="mean accuracy over folds with test pairs")
    std: float | None = Field(description="population std over those folds")
    pooled: float | None = Field(description="correct / all test pairs")
    folds: int
    pairs: int
    shuffled: float | None = Field(default=None, description="pooled, labels shuffled in group")
    slices: dict[str, SliceScore] = Field(default_factory=dict)


class RankingReport(BaseModel):
    """Every predictor's row and how the pairs were formed."""

    label: str
    group_columns: list[str]
    tie_threshold: float
    folds: int
    groups: int
    tasks: int
    programs: int
    repeats_merged: int = Field(description="rows merged into another measurement")
    pairs: int = Field(description="pairs evaluated (after drops)")
    dropped_pairs: dict[str, int] = Field(default_factory=dict)
    dropped_rows: dict[str, int] = Field(default_factory=dict)
    rows: list[RankingRow]
    notes: list[str] = Field(default_factory=list)


def _scores(x, target: np.ndarray, train: np.ndarray) -> np.ndarray:
    fit = train & ~np.isnan(target)
    if x.shape[1] == 0 or fit.sum() < 2:
        return np.zeros(x.shape[0])  # nothing to rank with: every pair is a tie (0.5)
    model = Ridge(alpha=1.0).fit(x[fit], target[fit])
    return model.predict(x)


def _run(frame: pd.DataFrame, spec: PredictorSpec, target: np.ndarray, pairs: Pairs,
         fold: np.ndarray, groups: np.ndarray, k: int, slice_of_pair: np.ndarray | None
         ) -> tuple[list[float], float | None, int, dict[str, SliceScore]]:
    fixed = None if spec.select else design(frame, spec, spec.columns, groups)
    pair_fold = fold[pairs.i]
    per_fold, credits, slices = [], [], []
    for f in range(k):
        train = fold != f
        if fixed is not None:
            x = fixed
        else:
            assert spec.select is not None  # fixed is None only when select is given
            x = design(frame, spec, spec.select(frame[train].reset_index(drop=True)), groups)
        in_fold = pair_fold == f
        if not in_fold.any():
            continue
        credit = pair_credit(_scores(x, target, train), pairs.i[in_fold], pairs.j[in_fold])
        per_fold.append(float(credit.mean()))
        credits.append(credit)
        if slice_of_pair is not None:
            slices.append(slice_of_pair[in_fold])
    allc = np.concatenate(credits) if credits else np.zeros(0)
    out: dict[str, SliceScore] = {}
    if slice_of_pair is not None and credits:
        labels = np.concatenate(slices)
        for name in ("cuda", "non_cuda", "mixed"):
            sel = labels == name
            out[name] = SliceScore(pairs=int(sel.sum()),
                                   accuracy=float(allc[sel].mean()) if sel.any() else None)
    return per_fold, (float(allc.mean()) if len(allc) else None), len(allc), out


def _fit_target(raw: np.ndarray, groups: np.ndarray, sign: int) -> np.ndarray:
    # Rewards such as speedup multiply, so models fit their log, z-scored within group.
    values = np.log(raw) if np.all(raw > 0) else raw
    return sign * T.zscore_within(values, groups)


def evaluate_ranking(frame: pd.DataFrame, specs: list[PredictorSpec], *,
                     label: str = "speedup", group_columns: list[str] | None = None,
                     tie: float = 0.02, folds: int = 5, seed: int = 0,
                     spread_col: str | None = None, correct_only: bool = True,
                     higher_is_better: bool | None = None, max_pairs_per_group: int = 20_000,
                     shuffled: bool = True, notes: list[str] | None = None) -> RankingReport:
    """Evaluate predictors by within-group pairwise accuracy under task-grouped CV.

    Args:
        frame: One row per measurement: ``task_id``, ``label``, optionally ``program_id``
            (repeats are merged), ``correct``, a device column, feature columns, ``program``.
        specs: The predictors (see ``standard_specs``).
        label: The reward column; higher is better unless it is ``runtime_ms``.
        group_columns: Pair groups; default task, plus the device column when there is one.
        tie: Relative difference under which a pair is a tie and dropped.
        folds: Folds over tasks (fewer when there are fewer tasks).
        seed: Seeds fold assignment, pair sampling and the shuffled control.
        spread_col: A column giving each measurement's run-to-run spread (std).
        correct_only: Drop rows whose ``correct`` is false.
        higher_is_better: Override the label's direction.
        max_pairs_per_group: Pairs sampled per group past this.
        shuffled: Also run each predictor with labels shuffled within groups.
        notes: Extra notes to carry into the report.

    Raises:
        ValueError: Missing task or label column, fewer than two tasks, or a bad tie.
    """
    for col in ("task_id", label):
        if col not in frame.columns:
            raise ValueError(f"ranking table has no {col!r} column")
    if not 0 <= tie < 1:
        raise ValueError(f"tie threshold must be in [0, 1), got {tie}")
    group_columns = group_columns or (["task_id"] + [c for c in DEVICE_COLUMNS
                                                     if c in frame.columns][:1])
    dropped_rows: dict[str, int] = {}
    if correct_only and "correct" in frame.columns:
        ok = frame["correct"].fillna(False).astype(bool)
        dropped_rows["incorrect"] = int((~ok).sum())
        frame = frame[ok]
    values = pd.to_numeric(frame[label], errors="coerce")
    dropped_rows["missing label"] = int(values.isna().sum())
    frame = frame[values.notna()].assign(**{label: values[values.notna()]})
    frame, merged = merge_repeats(frame, label, group_columns, spread_col)
    tasks = T.group_codes(frame, ["task_id"])
    n_tasks = len(np.unique(tasks))
    if n_tasks < 2:
        raise ValueError(f"ranking needs at least two tasks to cross-validate, got {n_tasks}")
    k = min(folds, n_tasks)
    groups = T.group_codes(frame, group_columns)
    direction = higher_is_better if higher_is_better is not None else label != "runtime_ms"
    sign = 1 if direction else -1
    raw = frame[label].to_numpy(float)
    labels = raw * sign
    spread = frame["_spread"].to_numpy(float)
    fold = task_folds(tasks, k, seed)
    pairs = make_pairs(labels, spread, groups, tie=tie, max_per_group=max_pairs_per_group,
                       seed=seed)
    cuda = T.cuda_mask(frame)
    slice_of = None
    if not cuda.all():
        both = cuda[pairs.i].astype(int) + cuda[pairs.j].astype(int)
        slice_of = np.array(["non_cuda", "mixed", "cuda"])[both]
    target = _fit_target(raw, groups, sign)
    rng = np.random.default_rng(seed + 1)
    by_group = np.argsort(groups, kind="stable")
    shuffle = by_group[np.lexsort((rng.random(len(groups)), groups))]
    s_raw, s_spread = raw.copy(), spread.copy()
    s_raw[by_group], s_spread[by_group] = raw[shuffle], spread[shuffle]
    s_pairs = make_pairs(s_raw * sign, s_spread, groups, tie=tie,
                         max_per_group=max_pairs_per_group, seed=seed)
    s_target = _fit_target(s_raw, groups, sign)
    rows = []
    for spec in specs:
        per_fold, pooled, n_pairs, slices = _run(frame, spec, target, pairs, fold, groups, k,
                                                 slice_of)
        control = _run(frame, spec, s_target, s_pairs, fold, groups, k, None)[1] \
            if shuffled else None
        rows.append(RankingRow(
            name=spec.name, features=spec.columns + spec.baselines,
            mean=float(np.mean(per_fold)) if per_fold else None,
            std=float(np.std(per_fold)) if per_fold else None, pooled=pooled,
            folds=len(per_fold), pairs=n_pairs, shuffled=control, slices=slices))
    return RankingReport(
        label=label, group_columns=group_columns, tie_threshold=tie, folds=k,
        groups=len(np.unique(groups)), tasks=n_tasks, programs=len(frame),
        repeats_merged=merged, pairs=len(pairs.i), dropped_pairs=pairs.dropped,
        dropped_rows=dropped_rows, rows=rows, notes=list(notes or []))
