"""Association between features and R_perf: kNN mutual information and redundancy removal."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from structcover.tools.mining.knn_mi import N_NEIGHBORS, mi_one_column
from structcover.tools.mining.table import fe_residual

#: Fewer rows than this and an MI estimate is not made (reported as None).
MIN_ROWS = 20
#: Quantile bins used to let a linear partial correlation see non-monotonic effects.
REDUNDANCY_BINS = 8
#: Levels of a categorical kept as their own indicator in the redundancy test.
REDUNDANCY_LEVELS = 16


@dataclass
class Column:
    """One encoded feature: values (NaN = missing or not applicable) and its kind."""

    name: str
    values: np.ndarray
    discrete: bool


def _mi_one(x: np.ndarray, y: np.ndarray, discrete: bool, seed: int) -> float | None:
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < MIN_ROWS:
        return None
    x, y = x[ok], y[ok]
    if np.all(x == x[0]):
        return 0.0  # a constant carries no information; the estimator would only add noise
    # scikit-learn's mutual_info_regression, re-implemented exactly (see knn_mi) without its
    # per-call validation and joblib dispatch, which were most of discovery's time.
    return mi_one_column(x, y, discrete=discrete, seed=seed, n_neighbors=N_NEIGHBORS)


def mi_sweep(columns: list[Column], y: np.ndarray, rows: np.ndarray, *, seed: int,
             n_jobs: int = 0) -> list[float | None]:
    """I(S_i; y) for every column on the given rows (kNN estimator, discrete mask per column).

    Sequential by default: an estimate takes about a millisecond, mostly in small numpy calls
    that hold the GIL, and threads were measured slower (bench/RESULTS.md, "MI estimator
    speed"). ``n_jobs > 1`` runs one batch of columns per thread.

    Args:
        columns: The encoded features.
        y: The target, one value per table row (NaN rows are skipped).
        rows: Row indices to use (a subsample or a resample).
        seed: Seeds the estimator's jitter, so results repeat.
        n_jobs: Threads; 0 or 1 means none.

    Returns:
        MI in nats per column; None where fewer than ``MIN_ROWS`` rows have both values.
    """
    yr = y[rows]
    workers = min(max(n_jobs, 1), len(columns))

    def run(cols: list[Column]) -> list[float | None]:
        return [_mi_one(c.values[rows], yr, c.discrete, seed) for c in cols]

    if workers <= 1:
        return run(columns)
    step = -(-len(columns) // workers)
    with ThreadPoolExecutor(workers) as pool:
        parts = pool.map(run, [columns[i:i + step] for i in range(0, len(columns), step)])
        return [v for part in parts for v in part]


def block(col: Column, rows: np.ndarray) -> np.ndarray:
    """Centered design block of a feature: level indicators, or quantile-bin indicators.

    Missing values get the column mean (zero after centering), so they neither help nor
    hurt a linear fit.
    """
    x = col.values[rows]
    present = ~np.isnan(x)
    if col.discrete:
        levels, counts = np.unique(x[present], return_counts=True)
        keep = levels[np.argsort(-counts)][:REDUNDANCY_LEVELS]
    else:
        qs = np.unique(np.quantile(x[present], np.linspace(0, 1, REDUNDANCY_BINS + 1)[1:-1])) \
            if present.any() else np.array([])
        x = np.where(present, np.searchsorted(qs, np.nan_to_num(x), side="right"), np.nan)
        keep = np.unique(x[present])
    if keep.size < 2:
        return np.zeros((len(rows), 0))
    mat = np.stack([(x == level) for level in keep[1:]], axis=1).astype(float)
    mat[~present] = np.nan
    mat -= np.nanmean(mat, axis=0)
    return np.nan_to_num(mat)


def gaussian_info(y: np.ndarray, x: np.ndarray, z: np.ndarray | None) -> float:
    """Linear-Gaussian (conditional) information ``-0.5 log(1 - R²)`` of y on block x given z.

    R² is adjusted for the block's size so that many indicator columns do not manufacture
    information from noise.
    """
    if x.shape[1] == 0:
        return 0.0
    if z is not None and z.shape[1]:
        zb, *_ = np.linalg.lstsq(z, np.column_stack([y, x]), rcond=None)
        resid = np.column_stack([y, x]) - z @ zb
        y, x = resid[:, 0], resid[:, 1:]
    total = float(y @ y)
    if total <= 0:
        return 0.0
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    r2 = 1.0 - float(((y - x @ beta) ** 2).sum()) / total
    n, k = len(y), x.shape[1]
    r2 = 1.0 - (1.0 - r2) * (n - 1) / max(n - k - 1, 1)
    return float(-0.5 * np.log1p(-min(max(r2, 0.0), 0.999999)))


def select_nonredundant(order: list[Column], y: np.ndarray, rows: np.ndarray, *,
                        tau_low: float, cells: np.ndarray, numeric: np.ndarray | None = None
                        ) -> tuple[list[str], dict[str, tuple[str, float]]]:
    """Greedy redundancy removal by partial correlation, strongest candidate first.

    A candidate is redundant when conditioning on the features already kept removes at least
    half of its (binned) linear association with y *and* what is left is at most ``tau_low``
    nats: the same threshold that makes a feature marginal. A feature whose effect a linear
    fit cannot see at all is kept, since this test cannot judge it.

    Args:
        order: Candidates, strongest association first.
        y: Target per table row.
        rows: Row indices to use.
        tau_low: The marginal-tier threshold (nats).
        cells: Per table row, the cell (task, or task x categorical controls) y was
            normalized in; features are compared within the same cells.
        numeric: Per table row, numeric controls y was residualized on (or None).

    Returns:
        The kept names in order, and for each redundant one (the kept feature that explains
        it best, its conditional information).
    """
    yr = y[rows]
    ok = ~np.isnan(yr)
    rows = rows[ok]
    cell, num = cells[rows], (numeric[rows] if numeric is not None else None)
    yr = fe_residual(yr[ok][:, None], cell, num)[:, 0]
    kept: list[str] = []
    blocks: dict[str, np.ndarray] = {}
    redundant: dict[str, tuple[str, float]] = {}
    for col in order:
        b = block(col, rows)
        if b.shape[1]:
            b = fe_residual(b, cell, num)
        z = np.hstack([blocks[k] for k in kept]) if kept else None
        marginal = gaussian_info(yr, b, None)
        partial = gaussian_info(yr, b, z) if z is not None else marginal
        if z is not None and partial <= tau_low and partial < 0.5 * marginal:
            by = min(kept, key=lambda k: gaussian_info(yr, b, blocks[k]))
            redundant[col.name] = (by, partial)
            continue
        kept.append(col.name)
        blocks[col.name] = b
    return kept, redundant


def permute_within(y: np.ndarray, groups: np.ndarray | None, rng: np.random.Generator
                   ) -> np.ndarray:
    """``y`` shuffled within each group (NaNs stay put): the within-task null of R_perf."""
    out = y.copy()
    idx = np.flatnonzero(~np.isnan(y))
    if groups is None:
        out[idx] = y[rng.permutation(idx)]
        return out
    g = groups[idx]
    base = idx[np.argsort(g, kind="stable")]  # positions, grouped
    shuffled = idx[np.lexsort((rng.random(len(idx)), g))]  # same groups, random order inside
    out[base] = y[shuffled]
    return out


@dataclass
class NullModel:
    """MI of every feature against R_perf shuffled within task.

    ``mean[name]`` is the feature's own null level: a feature that identifies the task (a
    size measure unique per program) reaches a high MI against shuffled rewards, because
    rewards z-scored within a task of 3 programs take 3 values and one of 8 programs 8, so
    knowing the task tells the values apart. ``spread[kind]`` is the 99th percentile of
    (draw - the feature's mean) pooled over the features of a kind: how far one estimate
    strays from a feature's null level. ``summary[kind]`` pools the raw draws (q50, q95, q99,
    max, draws) for the report.
    """

    mean: dict[str, float]
    spread: dict[str, float]
    summary: dict[str, dict[str, float]]

    def threshold(self, name: str, discrete: bool, factor: float = 1.0) -> float:
        """``mean + factor x spread`` of feature ``name`` (0 when it was not measured)."""
        kind = "categorical" if discrete else "continuous"
        return self.mean.get(name, 0.0) + factor * self.spread.get(kind, 0.0)


def permutation_null(columns: list[Column], y: np.ndarray, rows: np.ndarray, *, seed: int,
                     groups: np.ndarray | None = None, n_jobs: int = 0, draws: int = 8
                     ) -> NullModel:
    """The MI each feature reaches against rewards shuffled within task.

    Shuffling R_perf among the programs of each task breaks every feature-reward association
    while keeping each task's reward values and every feature's values, so what the kNN
    estimator reports against it is what no association looks like for that feature: the
    estimator's small-sample bias plus what knowing the task says about the shape of its
    rewards (see :class:`NullModel`).

    Args:
        columns: The candidate features.
        y: R_perf (NaN = not used).
        rows: Rows of the estimate.
        seed: Seeds the shuffles and the estimator.
        groups: Task code per row (None: shuffle across all rows).
        n_jobs: Threads for the MI estimates.
        draws: Shuffles (each one MI sweep over every column).

    Returns:
        The per-feature null levels, per-kind spreads and pooled summaries.
    """
    rng = np.random.default_rng(seed + 7919)
    values: dict[str, list[float]] = {c.name: [] for c in columns}
    for _ in range(max(2, draws)):
        shuffled = permute_within(y, groups, rng)
        sweep = mi_sweep(columns, shuffled, rows, seed=seed, n_jobs=n_jobs)
        for col, v in zip(columns, sweep, strict=True):
            if v is not None:
                values[col.name].append(v)
    mean = {n: float(np.mean(v)) for n, v in values.items() if v}
    spread: dict[str, float] = {}
    summary: dict[str, dict[str, float]] = {}
    for kind, discrete in (("categorical", True), ("continuous", False)):
        cols = [c.name for c in columns if c.discrete == discrete and values[c.name]]
        if not cols:
            continue
        raw = np.concatenate([values[n] for n in cols])
        dev = np.concatenate([np.asarray(values[n]) - mean[n] for n in cols])
        spread[kind] = float(np.quantile(dev, 0.99))
        summary[kind] = {"q50": float(np.quantile(raw, 0.5)),
                         "q95": float(np.quantile(raw, 0.95)),
                         "q99": float(np.quantile(raw, 0.99)), "max": float(raw.max()),
                         "spread_q99": spread[kind], "draws": float(len(raw))}
    return NullModel(mean=mean, spread=spread, summary=summary)


def noise_floor(columns: list[Column], y: np.ndarray, rows: np.ndarray, *, seed: int,
                n_jobs: int = 0, groups: np.ndarray | None = None, draws: int = 3
                ) -> dict[str, float]:
    """Per feature, the MI it must beat: its own null level plus the kind's spread.

    See :func:`permutation_null` (``groups`` shuffles within task).

    Returns:
        ``{feature name: threshold}``.
    """
    null = permutation_null(columns, y, rows, seed=seed, groups=groups, n_jobs=n_jobs,
                            draws=draws)
    return {c.name: null.threshold(c.name, c.discrete) for c in columns}


#: Folds of the grouped cross-validation that judges forward selection.
CV_FOLDS = 5
#: Ridge penalty (relative to the mean Gram diagonal) keeping the indicator fits stable.
RIDGE = 1e-3


def _cv_info(gram: list[np.ndarray], xty: list[np.ndarray],
             test: list[tuple[np.ndarray, np.ndarray]],
             cols: np.ndarray, sst: float) -> float:
    """Out-of-fold information ``-0.5 log(1 - R²_cv)`` of a ridge fit on the given columns."""
    if cols.size == 0 or sst <= 0:
        return 0.0
    sse = 0.0
    for g, b, (xt, yt) in zip(gram, xty, test, strict=True):
        a = g[np.ix_(cols, cols)]
        a = a + RIDGE * (np.trace(a) / len(cols) + 1e-12) * np.eye(len(cols))
        beta = np.linalg.solve(a, b[cols])
        sse += float(((yt - xt[:, cols] @ beta) ** 2).sum())
    r2 = 1.0 - sse / sst
    return float(-0.5 * np.log1p(-min(max(r2, 0.0), 0.999999)))


def select_forward(order: list[Column], y: np.ndarray, rows: np.ndarray, *, min_gain: float,
                   cells: np.ndarray, groups: np.ndarray, numeric: np.ndarray | None = None,
                   max_features: int = 12, seed: int = 0, explain: bool = True,
                   preferred: frozenset[str] = frozenset()
                   ) -> tuple[list[str], dict[str, tuple[str, float]]]:
    """Greedy forward selection by cross-validated conditional information, giving F*.

    With few programs per task, almost any feature that separates programs carries marginal
    MI about within-task speed, so removing redundancy pairwise leaves dozens of features. Here
    a feature enters only if it *adds* information given the features already selected: at
    each step the candidate whose binned design block most raises the out-of-fold
    ``-0.5 log(1 - R²)`` of R_perf (folds keep tasks whole, so a gain must generalise to
    unseen tasks) enters, if that gain exceeds ``min_gain`` nats; otherwise selection stops.
    Gains closer than ``min_gain`` are not told apart by the data: among those within
    ``min_gain`` of the best, a ``preferred`` feature (the named patterns users and prompts
    talk about) enters first, the way a one-standard-error rule picks the simpler model.
    Features and target are compared within the cells R_perf was normalised in (Frisch-Waugh).

    Args:
        order: Candidates (already above the marginal MI noise floor), strongest first.
        y: Target per table row.
        rows: Row indices to use.
        min_gain: Smallest cross-validated information gain (nats) that admits a feature.
        cells: Per table row, the cell (task, or task x categorical controls) y was
            normalised in.
        groups: Per table row, the group kept whole across folds (the task).
        numeric: Per table row, numeric controls y was residualised on (or None).
        max_features: Hard cap on F*'s size.
        seed: Seeds the fold assignment of groups.
        explain: Also say, for each candidate left out, which selected feature explains it
            (costs a regression per pair; resamples for stability skip it).
        preferred: Names that win a near tie (within ``min_gain``) against other candidates.

    Returns:
        The selected names in order of entry, and for every other candidate (the selected
        feature that explains it best, its information left given all selected features).
    """
    yr = y[rows]
    ok = ~np.isnan(yr)
    rows = rows[ok]
    cell, num = cells[rows], (numeric[rows] if numeric is not None else None)
    yr = fe_residual(yr[ok][:, None], cell, num)[:, 0]
    blocks = {c.name: fe_residual(b, cell, num) if (b := block(c, rows)).shape[1] else b
              for c in order}
    names = [c.name for c in order if blocks[c.name].shape[1]]
    if not names:
        return [], {}
    spans, start = {}, 0
    for n in names:
        spans[n] = np.arange(start, start + blocks[n].shape[1])
        start += blocks[n].shape[1]
    mat = np.hstack([blocks[n] for n in names])
    g = groups[rows]
    uniq = np.unique(g)
    fold_of = dict(zip(uniq, np.random.default_rng(seed).permutation(len(uniq)) %
                       min(CV_FOLDS, len(uniq)), strict=True))
    fold = np.array([fold_of[v] for v in g])
    gram, xty, test = [], [], []
    for k in np.unique(fold):
        tr, te = fold != k, fold == k
        gram.append(mat[tr].T @ mat[tr])
        xty.append(mat[tr].T @ yr[tr])
        test.append((mat[te], yr[te]))
    sst = float(((yr - yr.mean()) ** 2).sum())
    kept: list[str] = []
    current = 0.0
    while len(kept) < max_features:
        base = np.concatenate([spans[k] for k in kept]) if kept else np.array([], int)
        gains = {n: _cv_info(gram, xty, test, np.concatenate([base, spans[n]]), sst) - current
                 for n in names if n not in kept}
        if not gains:
            break
        best = max(gains, key=lambda n: (gains[n], -names.index(n)))
        near = [n for n in gains if n in preferred and gains[n] >= gains[best] - min_gain]
        if near:
            best = max(near, key=lambda n: (gains[n], -names.index(n)))
        if gains[best] <= min_gain:
            break
        kept.append(best)
        current += gains[best]
    redundant: dict[str, tuple[str, float]] = {}
    if kept and explain:
        z = np.hstack([blocks[k] for k in kept])
        for c in order:
            if c.name in kept:
                continue
            b = blocks[c.name]
            left = gaussian_info(yr, b, z)
            by = min(kept, key=lambda k: gaussian_info(yr, b, blocks[k]))
            redundant[c.name] = (by, left)
    return kept, redundant
