"""Within-group pairwise ranking evaluation, with the trivial baselines beside F* (issue 8).

Protocol: programs of the same group (task, or task x device) are compared in pairs; a pair
whose rewards differ by less than the tie threshold (relative, default 2%) or lie within
their measured spread is dropped and counted; a predictor is fit on the training tasks and
scores the test programs; a pair counts 1 when the faster program scores higher, 0.5 when
the scores tie, 0 otherwise. Folds split by task, so no task is in both train and test.
Reported: mean ± std over folds (population std), pooled accuracy over all test pairs, group
and pair counts, and the same protocol with labels shuffled within groups (about 0.5).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from pydantic import BaseModel, Field
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import Ridge

from structcover.tools.mining import table as T

#: Columns that name a device; with one, groups are task x device.
DEVICE_COLUMNS = ("device", "gpu", "hardware")
#: Code tokens for the bag-of-tokens baseline: identifiers, numbers, single punctuation.
TOKEN_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]"
HASH_FEATURES = 2**14
MAX_LEVELS = 32


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


@dataclass
class PredictorSpec:
    """A predictor: feature columns, named baselines, or columns chosen per fold.

    ``baselines`` holds ``length``, ``kernels``, ``tokens`` or ``identity:<column>``.
    ``select`` receives the training rows and returns feature columns, so a feature
    selection (F*) never sees the test tasks.
    """

    name: str
    columns: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)
    select: Callable[[pd.DataFrame], list[str]] | None = None


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


def _standardize(mat: np.ndarray, groups: np.ndarray) -> np.ndarray:
    df = pd.DataFrame(mat)
    g = df.groupby(groups)
    mean, std = g.transform("mean"), g.transform("std", ddof=0)
    out = ((df - mean) / std.where(std > 0, 1.0)).to_numpy(dtype=float)
    return np.nan_to_num(out)  # a missing or not-applicable value sits at its group mean


def _dense(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    parts = []
    for name in columns:
        series = frame[name]
        if T.is_categorical(series):
            top = series.astype("string").value_counts().index[:MAX_LEVELS]
            parts.append(np.stack([(series.astype("string") == lv).fillna(False).to_numpy()
                                   for lv in top], 1).astype(float) if len(top) else
                         np.zeros((len(frame), 0)))
        else:
            parts.append(pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)[:, None])
    return np.hstack(parts) if parts else np.zeros((len(frame), 0))


def _baseline(frame: pd.DataFrame, name: str) -> np.ndarray | sp.csr_matrix:
    if name == "length":
        _, length = T.code_length(frame)
        if length is None:
            raise ValueError("the length baseline needs a length column or program text")
        return np.log1p(length)[:, None]
    if name == "kernels":
        if "kernel.count" in frame.columns:
            return pd.to_numeric(frame["kernel.count"], errors="coerce").to_numpy(float)[:, None]
        text = frame["program"].fillna("").astype(str)
        return text.map(lambda s: len(re.findall(r"__global__", s))).to_numpy(float)[:, None]
    if name == "tokens":
        vec = HashingVectorizer(n_features=HASH_FEATURES, token_pattern=TOKEN_PATTERN,
                                lowercase=False, alternate_sign=False, norm="l2")
        return vec.transform(frame["program"].fillna("").astype(str))
    if name.startswith("identity:"):
        return _dense(frame, [name.split(":", 1)[1]])
    raise ValueError(f"unknown baseline {name!r}")


def available_baselines(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Baselines this table supports, and notes on those it cannot."""
    have, notes = [], []
    if T.code_length(frame)[1] is not None:
        have.append("length")
    else:
        notes.append("code length baseline skipped: no program text or length column")
    if "kernel.count" in frame.columns or "program" in frame.columns:
        have.append("kernels")
    else:
        notes.append("kernel-count baseline skipped: no program text or kernel.count column")
    if "program" in frame.columns:
        have.append("tokens")
    else:
        notes.append("bag-of-tokens baseline skipped: no program text")
    ident = [c for c in T.IDENTITY_COLUMNS if c in frame.columns and frame[c].nunique() > 1]
    if ident:
        have.append(f"identity:{ident[0]}")
    else:
        notes.append("identity baseline skipped: no policy/model/source column with 2+ values")
    return have, notes


def standard_specs(frame: pd.DataFrame, f_star: list[str] | None = None,
                   select: Callable[[pd.DataFrame], list[str]] | None = None, *,
                   name: str = "F*") -> tuple[list[PredictorSpec], list[str]]:
    """The issue-8 rows: each baseline, F* (or ``name``), and F* plus each baseline."""
    base, notes = available_baselines(frame)
    specs = [PredictorSpec(name=b, baselines=[b]) for b in base]
    fs = list(f_star or [])
    specs.append(PredictorSpec(name=name, columns=fs, select=select))
    specs += [PredictorSpec(name=f"{name} + {b}", columns=fs, baselines=[b], select=select)
              for b in base]
    return specs, notes


def _design(frame: pd.DataFrame, spec: PredictorSpec, columns: list[str], groups: np.ndarray):
    dense = _dense(frame, columns)
    parts: list = [_standardize(dense, groups)] if dense.shape[1] else []
    for b in spec.baselines:
        m = _baseline(frame, b)
        parts.append(m if sp.issparse(m) else _standardize(m, groups))
    if not parts:
        return np.zeros((len(frame), 0))
    if any(sp.issparse(p) for p in parts):
        return sp.hstack([sp.csr_matrix(p) for p in parts]).tocsr()
    return np.hstack(parts)


def _scores(x, target: np.ndarray, train: np.ndarray) -> np.ndarray:
    fit = train & ~np.isnan(target)
    if x.shape[1] == 0 or fit.sum() < 2:
        return np.zeros(x.shape[0])  # nothing to rank with: every pair is a tie (0.5)
    model = Ridge(alpha=1.0).fit(x[fit], target[fit])
    return model.predict(x)


def _run(frame: pd.DataFrame, spec: PredictorSpec, target: np.ndarray, pairs: Pairs,
         fold: np.ndarray, groups: np.ndarray, k: int, slice_of_pair: np.ndarray | None
         ) -> tuple[list[float], float | None, int, dict[str, SliceScore]]:
    fixed = None if spec.select else _design(frame, spec, spec.columns, groups)
    pair_fold = fold[pairs.i]
    per_fold, credits, slices = [], [], []
    for f in range(k):
        train = fold != f
        if fixed is not None:
            x = fixed
        else:
            assert spec.select is not None  # fixed is None only when select is given
            x = _design(frame, spec, spec.select(frame[train].reset_index(drop=True)), groups)
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
