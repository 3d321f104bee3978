"""Structure–reward mismatch: ``SRMis = E[|rank(Ŝ(y)) − rank(r)|] / N``.

``Ŝ`` is a structural performance predictor trained out-of-fold (folds grouped by task, so a
program's prediction never saw its own task) on the structural features alone; ``r`` is
R_perf, log speedup normalized within task. Ranks are ascending (higher = faster), with ties
averaged, over the N correct programs. Per bin, the signed mean ``(rank(Ŝ) − rank(r)) / N``
names *shortcut* bins (structure predicts fast, reward is low: > +threshold) and
*hidden-optimization* bins (structure predicts slow, reward is high: < −threshold).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field
from scipy.stats import rankdata


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


def structural_codes(table: pd.DataFrame, features: list[str], *, bins: int = 4) -> np.ndarray:
    """Integer code per feature: categorical levels or quantile bins; missing gets its own code.

    Binning uses the features alone (never the reward), so fitting it on the whole table
    leaks nothing into the cross-validation.
    """
    from structcover.tools.coverage.bins import Dimension

    cols = []
    for f in features:
        s = table[f]
        if s.notna().sum() == 0:
            continue
        dim = Dimension.fit(f, s, bins=bins)
        codes = dim.index(s)
        cols.append(np.where(codes < 0, dim.n_bins, codes))
    return np.column_stack(cols) if cols else np.zeros((len(table), 0), np.int64)


def cross_val_predict_structural(table: pd.DataFrame, features: list[str], target: np.ndarray,
                                 *, extra_codes: np.ndarray | None = None, seed: int = 0,
                                 folds: int = 5) -> tuple[np.ndarray, str]:
    """Out-of-fold predictions of ``target`` from structure alone, folds grouped by task.

    The model is scikit-learn's ridge regression on one-hot structural codes (each feature's
    levels or quantile bins, plus ``extra_codes``, e.g. the joint archive bin, which carries
    the interactions among the critical features). It is single-threaded, deterministic and
    fits a million rows in seconds, which a boosted-tree model did not on a shared 2-core box.

    Returns:
        (predictions, a note on the model and how folds were made).
    """
    from scipy import sparse
    from sklearn.model_selection import KFold
    from threadpoolctl import threadpool_limits

    from structcover.tools.mining.pairs import task_folds

    codes = structural_codes(table, features)
    if extra_codes is not None:
        codes = np.column_stack([codes, np.asarray(extra_codes).reshape(len(table), -1)])
    if codes.shape[1] == 0:
        return np.zeros(len(target)), "no structural features: constant prediction"
    codes = codes.astype(np.int64)
    # Rows with the same structural codes share one design row: fitting ridge on the distinct
    # cells with weight = row count and target = the cell's mean gives the same solution as
    # fitting every row (the within-cell squared error is constant), at a fraction of the cost.
    radix = codes.max(axis=0) + 1
    if float(np.prod(radix.astype(float))) < 2.0 ** 62:
        # Mixed-radix key + hash factorize: O(n), where np.unique(axis=0) sorts rows.
        key = np.zeros(len(codes), np.int64)
        for j in range(codes.shape[1]):
            key = key * int(radix[j]) + codes[:, j]
        inverse = pd.factorize(key)[0]
        # factorize numbers cells in order of first appearance: the first row of each cell
        first = np.flatnonzero(np.r_[True, np.diff(np.maximum.accumulate(inverse)) > 0])
        cells = codes[first]
    else:
        cells, inverse = np.unique(codes, axis=0, return_inverse=True)
        inverse = inverse.ravel()
    offsets = np.concatenate([[0], np.cumsum(codes.max(axis=0) + 1)[:-1]])
    width = int(offsets[-1] + codes[:, -1].max() + 1)
    n_cells, k_cols = cells.shape
    # Sparse one-hot, one 1 per code column. The first column's levels partition the rows,
    # so they play the intercept (fit_intercept=False keeps the sparse Cholesky solver).
    onehot = sparse.csr_matrix(
        (np.ones(n_cells * k_cols), (cells + offsets).ravel(),
         np.arange(0, n_cells * k_cols + 1, k_cols)), shape=(n_cells, width))
    groups = pd.factorize(table["task_id"])[0]
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    if n_groups >= 2:
        k = min(folds, n_groups)
        # The same task folds as the ranking protocol (one fold function for the package).
        fold = task_folds(np.asarray(groups), k, seed)
        splits = [(np.flatnonzero(fold != i), np.flatnonzero(fold == i)) for i in range(k)]
        how = f"{k}-fold cross-validation grouped by task ({n_groups} tasks)"
    else:
        k = min(folds, len(target))
        splits = KFold(n_splits=k, shuffle=True, random_state=seed).split(codes)
        how = f"{k}-fold cross-validation, one task only: folds cannot be grouped by task"
    pred = np.zeros(len(target))
    # The products are small (cells x one-hot width); BLAS threads only spin-wait on a
    # shared machine, so one thread is faster.
    with threadpool_limits(limits=1):
        _fit_folds(splits, inverse, target, cells, onehot, offsets, pred)
    return pred, (f"ridge on one-hot structural codes ({codes.shape[1]} code columns, "
                  f"{len(cells)} distinct cells); {how}")


def _fit_folds(splits, inverse: np.ndarray, target: np.ndarray, cells: np.ndarray,
               onehot: Any, offsets: np.ndarray, pred: np.ndarray) -> None:
    from sklearn.linear_model import Ridge

    for train, test in splits:
        n_cell = np.bincount(inverse[train], minlength=len(cells))
        sums = np.bincount(inverse[train], weights=target[train], minlength=len(cells))
        seen = n_cell > 0
        model = Ridge(alpha=1.0, fit_intercept=False, solver="cholesky").fit(
            onehot[seen], sums[seen] / n_cell[seen], sample_weight=n_cell[seen])
        # A gather of coefficients is the same sum as predict() on the one-hot rows.
        per_cell = model.coef_[cells + offsets].sum(axis=1)
        pred[test] = per_cell[inverse[test]]


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
    # Group on integer codes: a million label strings in a frame cost more than the maths.
    codes, names = pd.factorize(pd.Series(labels, dtype=object), use_na_sentinel=True)
    frame = pd.DataFrame({"code": codes, "abs": np.abs(diff), "signed": diff})
    frame = frame[frame["code"] >= 0]
    agg = frame.groupby("code").agg(count=("abs", "size"), srmis=("abs", "mean"),
                                    signed=("signed", "mean")).reset_index()
    per_bin = [BinMismatch(label=str(names[r.code]), count=int(r.count), srmis=float(r.srmis),
                           signed=float(r.signed)) for r in agg.itertuples()]
    per_bin.sort(key=lambda b: -abs(b.signed))
    big = [b for b in per_bin if b.count >= min_count]
    pick = np.random.default_rng(seed).choice(n, min(n, scatter_points), replace=False)
    return SRMisReport(
        overall=float(np.abs(diff).mean()), n=n, predictor=predictor, per_bin=per_bin,
        shortcut_bins=[b.label for b in big if b.signed > threshold],
        hidden_bins=[b.label for b in big if b.signed < -threshold], threshold=threshold,
        scatter=[(float(rp[i] / n), float(ra[i] / n), str(labels[i])) for i in sorted(pick)])
