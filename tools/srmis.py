"""Structure–reward mismatch: ``SRMis = E[|rank(Ŝ(y)) − rank(r)|] / N`` (DESIGN.md §5).

``Ŝ`` is a structural performance predictor trained out-of-fold (folds grouped by task, so a
program's prediction never saw its own task) on the structural features alone; ``r`` is
R_perf, log speedup normalized within task. Ranks are ascending (higher = faster), with ties
averaged, over the N correct programs. Per bin, the signed mean ``(rank(Ŝ) − rank(r)) / N``
names *shortcut* bins (structure predicts fast, reward is low: > +threshold) and
*hidden-optimization* bins (structure predicts slow, reward is high: < −threshold).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field
from scipy.stats import rankdata

from structcover.tools.bins import as_levels, is_categorical


def srmis(predicted: np.ndarray, actual: np.ndarray) -> float:
    """``mean |rank(predicted) − rank(actual)| / N`` (average ranks for ties); 0 for N = 0."""
    predicted, actual = np.asarray(predicted, float), np.asarray(actual, float)
    if len(predicted) != len(actual):
        raise ValueError(f"srmis: {len(predicted)} predictions for {len(actual)} rewards")
    if len(actual) == 0:
        return 0.0
    return float(np.abs(rankdata(predicted) - rankdata(actual)).mean() / len(actual))


def r_perf(table: pd.DataFrame) -> np.ndarray:
    """Log speedup z-scored within task (0 where a task has one value or no spread)."""
    logs = np.log(pd.to_numeric(table["speedup"], errors="coerce").clip(lower=1e-12))
    grp = logs.groupby(table["task_id"].to_numpy())
    std = grp.transform("std").fillna(0.0)
    z = (logs - grp.transform("mean")) / std.where(std > 0, 1.0)
    return z.where(std > 0, 0.0).to_numpy(float)


def encode_features(table: pd.DataFrame, features: list[str]) -> tuple[np.ndarray, list[bool]]:
    """Numeric matrix for the predictor: categories as integer codes (flagged), NaN kept."""
    cols, cat = [], []
    for f in features:
        s = table[f]
        if is_categorical(s):
            codes = pd.Categorical(as_levels(s)).codes.astype(float)
            codes[codes < 0] = np.nan
            cols.append(codes)
            cat.append(True)
        else:
            cols.append(pd.to_numeric(s, errors="coerce").to_numpy(float))
            cat.append(False)
    return np.column_stack(cols), cat


def cross_val_predict_structural(table: pd.DataFrame, features: list[str], target: np.ndarray,
                                 *, seed: int = 0, max_fit_rows: int = 100_000,
                                 folds: int = 5) -> tuple[np.ndarray, str]:
    """Out-of-fold predictions of ``target`` from ``features``, folds grouped by task.

    A gradient-boosted tree model (scikit-learn's HistGradientBoostingRegressor) handles
    categories and missing values natively; each fold fits on at most ``max_fit_rows``
    sampled rows so a million-program table stays within the time budget.

    Returns:
        (predictions, a note on how folds were made).
    """
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.model_selection import GroupKFold, KFold

    x, cat = encode_features(table, features)
    groups = table["task_id"].astype(str).to_numpy()
    n_groups = len(np.unique(groups))
    if n_groups >= 2:
        k = min(folds, n_groups)
        splits = GroupKFold(n_splits=k).split(x, target, groups)
        note = f"{k}-fold cross-validation grouped by task ({n_groups} tasks)"
    else:
        k = min(folds, len(target))
        splits = KFold(n_splits=k, shuffle=True, random_state=seed).split(x)
        note = f"{k}-fold cross-validation, one task only: folds cannot be grouped by task"
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(seed)
    pred = np.zeros(len(target))
    # OpenMP threads spin-wait on small fits: one thread is much faster below ~50k rows.
    with threadpool_limits(limits=1 if len(target) < 50_000 else None):
        for train, test in splits:
            if len(train) > max_fit_rows:
                train = rng.choice(train, max_fit_rows, replace=False)
            model = HistGradientBoostingRegressor(max_iter=60, categorical_features=cat or None,
                                                  random_state=seed)
            model.fit(x[train], target[train])
            pred[test] = model.predict(x[test])
    return pred, note


class BinMismatch(BaseModel):
    """SRMis restricted to one bin."""

    label: str
    count: int
    srmis: float = Field(description="mean |rank(Ŝ) − rank(r)| / N within the bin")
    signed: float = Field(description="mean (rank(Ŝ) − rank(r)) / N: > 0 shortcut, < 0 hidden")


class SRMisReport(BaseModel):
    """Structure–reward mismatch of one round."""

    overall: float | None = None
    n: int = 0
    predictor: str = ""
    per_bin: list[BinMismatch] = Field(default_factory=list)
    shortcut_bins: list[str] = Field(default_factory=list)
    hidden_bins: list[str] = Field(default_factory=list)
    threshold: float = 0.2
    scatter: list[tuple[float, float, str]] = Field(
        default_factory=list, description="sample of (predicted rank / N, actual rank / N, bin)")
    note: str = ""


def mismatch_report(predicted: np.ndarray, actual: np.ndarray, labels: np.ndarray, *,
                    threshold: float = 0.2, min_count: int = 2, predictor: str = "",
                    scatter_points: int = 1500, seed: int = 0) -> SRMisReport:
    """Overall and per-bin SRMis from predictions, rewards and each program's bin label."""
    n = len(actual)
    if n == 0:
        return SRMisReport(note="no correct programs with a speedup: SRMis undefined")
    rp, ra = rankdata(predicted), rankdata(actual)
    diff = (rp - ra) / n
    frame = pd.DataFrame({"label": labels, "abs": np.abs(diff), "signed": diff})
    frame = frame[frame["label"].notna()]
    agg = frame.groupby("label").agg(count=("abs", "size"), srmis=("abs", "mean"),
                                     signed=("signed", "mean")).reset_index()
    per_bin = [BinMismatch(label=r.label, count=int(r.count), srmis=float(r.srmis),
                           signed=float(r.signed)) for r in agg.itertuples()]
    per_bin.sort(key=lambda b: -abs(b.signed))
    big = [b for b in per_bin if b.count >= min_count]
    pick = np.random.default_rng(seed).choice(n, min(n, scatter_points), replace=False)
    return SRMisReport(
        overall=float(np.abs(diff).mean()), n=n, predictor=predictor, per_bin=per_bin,
        shortcut_bins=[b.label for b in big if b.signed > threshold],
        hidden_bins=[b.label for b in big if b.signed < -threshold], threshold=threshold,
        scatter=[(float(rp[i] / n), float(ra[i] / n), str(labels[i])) for i in sorted(pick)])
