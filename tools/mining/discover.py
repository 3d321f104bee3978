"""Stage 1 discovery: which structural features carry performance, given what.

``I(S_i; R_perf)`` by scikit-learn's kNN estimator, R_perf = log speedup z-scored within task
(pooled also reported); ``F*`` by greedy forward selection on cross-validated conditional
information (a feature enters only if it adds information given those already in); stability by
resampled selection frequency; controls by residualizing R_perf on them within task.

Tiers are calibrated against a within-task permutation null: R_perf is shuffled among the
programs of each task, and the MI of every feature against the shuffled rewards is measured
(:func:`association.permutation_null`; summaries in ``settings.null``). Each feature gets its
own null level ``m_f``, the mean of its MI over the shuffles. A feature that only identifies
the task reaches a high ``m_f``, because z-scored rewards of a 3-program task take 3 values. The
spread ``s`` is the 99th percentile of (draw - m_f), pooled over the features of a kind. Then

* ``τ_low(f) = max(tau_low, m_f + s)``: the MI is above what shuffled rewards give this
  feature in 99 of 100 draws;
* ``τ_high(f) = max(tau_high, m_f + critical_factor × s)``: the MI clears the feature's null
  by ``critical_factor`` (default 3) times the spread;

critical ``I > τ_high``, moderate ``τ_low < I ≤ τ_high``, marginal otherwise (each feature's
``null_mi``, ``tau_low`` and ``tau_high`` are in its report). With controls, tiers use the
controlled MI and its own null. Meta features (``parse.*``, ``compile.ok``,
``compile.missing_reason``,
``compile.error``) describe the pipeline, not the program, and are never candidates. A
feature that duplicates a confounded one is confounded too.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from structcover.config import DiscoverySettings
from structcover.tools.mining import table as T
from structcover.tools.mining.association import (
    Column,
    NullModel,
    mi_sweep,
    noise_floor,
    permutation_null,
    select_forward,
)
from structcover.tools.mining.reports import (
    Discovery,
    DiscoveryCounts,
    DiscoveryRun,
    FeatureReport,
    tier_of,
)

_DEFAULTS = DiscoverySettings()
#: Rows used per MI estimate. Past this the table is subsampled (uniformly, without
#: replacement, after R_perf is computed on every row): the estimand is unchanged, the
#: estimator's standard error at 10k rows is ~0.005 nats, below τ_low.
MI_MAX_ROWS = 10_000
#: Meta features: how the pipeline saw the program, not its structure; never candidates.
META_PREFIXES: tuple[str, ...] = ("parse.",)
META_NAMES: frozenset[str] = frozenset({"compile.ok", "compile.missing_reason",
                                        "compile.error"})


def is_meta(name: str) -> bool:
    """Whether ``name`` is a meta feature (never a discovery candidate)."""
    return name in META_NAMES or name.startswith(META_PREFIXES)


def _prepare(table: pd.DataFrame, target: str, correct_only: bool
             ) -> tuple[pd.DataFrame, np.ndarray, dict[str, int]]:
    if "task_id" not in table.columns:
        raise ValueError("feature table has no 'task_id' column (R_perf is normalized per task)")
    dropped: dict[str, int] = {}
    frame = table
    if correct_only and "correct" in frame.columns:
        ok = frame["correct"].fillna(False).astype(bool).to_numpy()
        dropped["incorrect"] = int((~ok).sum())
        frame = frame[ok]
    raw = T.reward(frame, target)
    bad = np.isnan(raw)
    dropped[f"no valid {target}"] = int(bad.sum())
    return frame[~bad].reset_index(drop=True), raw[~bad], dropped


Control = tuple[str, Literal["cat", "num"], np.ndarray]


def _controls(frame: pd.DataFrame, controls: tuple[str, ...], length_control: bool
              ) -> tuple[list[Control], list[str], str | None]:
    """Resolve the controls to arrays: (name, kind, values); missing ones; the length source."""
    specs: list[Control] = []
    missing: list[str] = []
    names = list(dict.fromkeys(controls))
    source = None
    if length_control and T.LENGTH_CONTROL not in names:
        names.append(T.LENGTH_CONTROL)
    for name in names:
        if name == T.LENGTH_CONTROL:
            source, length = T.code_length(frame)
            if length is None:
                missing.append(name)
                continue
            # Length effects are multiplicative, like speedups: control on log length.
            specs.append((name, "num", np.log1p(length)))
        elif name not in frame.columns:
            raise ValueError(f"control column {name!r} is not in the table")
        elif T.is_categorical(frame[name]) or frame[name].nunique() <= 20:
            specs.append((name, "cat", T.group_codes(frame, [name])))
        else:
            specs.append((name, "num",
                          pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)))
    return specs, missing, source


def _attribute(columns: list[Column], mi: dict[str, dict[str, float | None]],
               bar: dict[str, dict[str, float]], targets: dict[str, dict[str, np.ndarray]],
               tasks: np.ndarray, *, controls: list[Control], rows: np.ndarray, seed: int,
               within: bool) -> dict[str, str]:
    """Features whose significant signal vanishes under the controls, and which control(s) do it.

    A feature is confounded when its MI clears ``max(τ_low, noise floor)`` but its MI given
    the controls does not. With several controls, each is also tried alone so the reason names
    the ones that explain the signal by themselves ("jointly" when none does alone).
    """
    flagged = [c for c in columns if (mi["mi"][c.name] or 0.0) > bar["mi"][c.name]
               and (mi["mi_controlled"][c.name] or 0.0) <= bar["mi_controlled"][c.name]]
    names = [c[0] for c in controls]
    if not flagged or len(controls) == 1:
        return {c.name: ", ".join(names) for c in flagged}
    groups = tasks if within else np.zeros_like(tasks)
    alone: dict[str, list[str]] = {c.name: [] for c in flagged}
    for name, kind, arr in controls:
        y = T.residualize(targets["all"]["mi"], groups, [arr] if kind == "cat" else [],
                          [arr] if kind == "num" else [])
        for col, v in zip(flagged, mi_sweep(flagged, y, rows, seed=seed), strict=True):
            if (v or 0.0) <= bar["mi_controlled"][col.name]:
                alone[col.name].append(name)
    return {n: ", ".join(v) if v else "jointly " + " + ".join(names) for n, v in alone.items()}


def _dedupe(columns: list[Column], applies: dict[str, str], usable: np.ndarray
            ) -> tuple[list[Column], dict[str, str]]:
    """Drop columns that order the usable rows exactly like an earlier one (e.g. kernel and
    launch counts on one-kernel programs): same information, so they are measured once and
    never compete with each other in F* or split its stability."""
    seen: dict[tuple, str] = {}
    kept, duplicate_of = [], {}
    for col in columns:
        x = col.values[usable]
        _, ranks = np.unique(np.nan_to_num(x, nan=np.inf), return_inverse=True)
        key = (applies[col.name], col.discrete, ranks.astype(np.int64).tobytes())
        if key in seen:
            duplicate_of[col.name] = seen[key]
        else:
            seen[key] = col.name
            kept.append(col)
    return kept, duplicate_of


def discover(table: pd.DataFrame, *, target: str = "speedup",
             normalize_within_task: bool = _DEFAULTS.normalize_within_task,
             correct_only: bool = _DEFAULTS.correct_only, tau_high: float = _DEFAULTS.tau_high,
             tau_low: float = _DEFAULTS.tau_low, bootstrap: int = _DEFAULTS.bootstrap,
             min_gain: float = _DEFAULTS.min_gain,
             critical_factor: float = _DEFAULTS.critical_factor,
             controls: tuple[str, ...] | list[str] = (), length_control: bool = True,
             seed: int = _DEFAULTS.seed, mi_rows: int = MI_MAX_ROWS, n_jobs: int = 0,
             round: int | None = None) -> Discovery:
    """Find the structural features associated with performance, and the minimal set F*.

    Args:
        table: The feature table (see ``tools.mining.table``).
        target: ``speedup`` (log taken), ``runtime_ms`` (minus log) or any numeric column.
        normalize_within_task: R_perf z-scored within task (default) or pooled.
        correct_only: Drop incorrect programs (a wrong program's speed means nothing).
        tau_high: Least critical threshold in nats (raised by the null calibration).
        tau_low: Least marginal threshold in nats (raised by the null calibration).
        bootstrap: Number of resamples for stability (0 = none).
        min_gain: Cross-validated conditional information (nats) a candidate must add,
            given the features already selected, to enter F*.
        critical_factor: A critical feature's MI exceeds this multiple of the null's q99.
        controls: Columns to control for (e.g. ``policy``); their effect is removed from
            R_perf within task before the controlled MI.
        length_control: Add code length (a length column, or the ``program`` text) as a
            control when the table has it.
        seed: Seeds subsampling, resampling and the estimator.
        mi_rows: Rows per MI estimate (subsampled past this).
        n_jobs: Threads for the MI estimates (0 = one per core).
        round: The round this table comes from (default: max of its ``round`` column).

    Returns:
        Per-feature MI (within task, pooled, controlled), tiers, stability, confounding, F*.

    Raises:
        ValueError: No task column, no feature columns, a missing target or control, bad
            thresholds, or too few usable rows.
    """
    if not 0 <= tau_low < tau_high:
        raise ValueError(f"need 0 <= tau_low < tau_high, got tau_low={tau_low}, "
                         f"tau_high={tau_high}")
    if critical_factor < 1:
        raise ValueError(f"critical_factor must be >= 1, got {critical_factor}")
    if bootstrap < 0 or mi_rows < 50:
        raise ValueError(f"bootstrap must be >= 0 and mi_rows >= 50 (got {bootstrap}, {mi_rows})")
    names = [c for c in T.feature_columns(table) if c not in controls]
    meta = [c for c in names if is_meta(c)]
    names = [c for c in names if not is_meta(c)]
    if not names:
        raise ValueError("feature table has no feature columns (names containing a dot)")
    frame, raw, dropped = _prepare(table, target, correct_only)
    if round is None and "round" in table.columns and table["round"].notna().any():
        round = int(pd.to_numeric(table["round"]).max())
    specs, missing, length_source = _controls(frame, tuple(controls), length_control)
    used = [c[0] for c in specs]
    cat = [c[2] for c in specs if c[1] == "cat"]
    num = [c[2] for c in specs if c[1] == "num"]
    if length_source in names:
        names.remove(length_source)  # a control is not also a candidate feature
    tasks = T.group_codes(frame, ["task_id"])
    cuda = T.cuda_mask(frame)
    ones = np.zeros(len(frame), dtype=np.int64)
    # R_perf per slice: CUDA features are compared only among CUDA programs of a task.
    targets: dict[str, dict[str, np.ndarray]] = {}
    for sl, mask in (("all", np.ones(len(frame), dtype=bool)), ("cuda", cuda)):
        r = np.where(mask, raw, np.nan)
        within, pooled = T.zscore_within(r, tasks), T.zscore_within(r, ones)
        primary = within if normalize_within_task else pooled
        targets[sl] = {"mi": primary, "mi_pooled": pooled}
        if used:
            targets[sl]["mi_controlled"] = T.residualize(
                primary, tasks if normalize_within_task else ones, cat, num)
    # Cells (and numeric controls) the selection target was normalized in, for redundancy.
    base = tasks if normalize_within_task else ones
    sel_cells = T.cells_of(base, cat) if used else base
    sel_numeric = np.column_stack(num) if used and num else None
    usable = ~np.isnan(targets["all"]["mi"])
    dropped["alone in its task"] = int((~usable & ~np.isnan(raw)).sum())
    if usable.sum() < 20:
        raise ValueError(f"only {int(usable.sum())} usable rows (correct, valid {target}, "
                         "in a task with another program); discovery needs at least 20")
    columns, applies = [], {}
    for name in names:
        values, discrete = T.encode(frame[name])
        # The slice a feature is measured on; an all-CUDA table is one slice.
        applies[name] = "cuda" if T.is_cuda_feature(name) and not cuda.all() else "all"
        if applies[name] == "cuda":
            values = np.where(cuda, values, np.nan)  # not applicable, never a zero
        columns.append(Column(name, values, discrete))
    everything = columns
    columns, duplicate_of = _dedupe(columns, applies, usable)
    rng = np.random.default_rng(seed)
    pool = np.flatnonzero(usable)
    sub = np.sort(rng.choice(pool, size=min(len(pool), mi_rows), replace=False))
    key = "mi_controlled" if used else "mi"
    # Tiers follow the controls the user asked for; the automatic length control shapes F*
    # (what structure adds beyond length) but not the tiers.
    tier_key = "mi_controlled" if used and [c for c in used if c != T.LENGTH_CONTROL] \
        else "mi"

    def sweep(kind: str, rows: np.ndarray) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for sl in ("all", "cuda"):
            cols = [c for c in columns if applies[c.name] == sl]
            if cols:
                out.update(zip([c.name for c in cols],
                               mi_sweep(cols, targets[sl][kind], rows, seed=seed,
                                        n_jobs=n_jobs), strict=True))
        return out

    mi = {kind: sweep(kind, sub) for kind in targets["all"]}
    for kind in mi:  # a duplicate has its representative's association
        mi[kind].update({d: mi[kind][r] for d, r in duplicate_of.items()})
    shuffle_in = tasks if normalize_within_task else None
    nulls: dict[str, NullModel] = {
        kind: permutation_null(columns, targets["all"][kind], sub, seed=seed,
                               groups=shuffle_in, n_jobs=n_jobs)
        for kind in ("mi", "mi_controlled") if kind in targets["all"]}
    floors = {kind: {k: v["q99"] for k, v in null.summary.items()}
              for kind, null in nulls.items()}
    rep = {c.name: duplicate_of.get(c.name, c.name) for c in everything}

    def limits(kind: str, col: Column) -> tuple[float, float]:
        """(tau_low, tau_high) of ``col`` against the null of target ``kind``."""
        null = nulls[kind]
        return (max(tau_low, null.threshold(rep[col.name], col.discrete)),
                max(tau_high, tau_low, null.threshold(rep[col.name], col.discrete,
                                                      critical_factor)))

    def bar_of(threshold: dict[str, float]) -> dict[str, float]:
        # Per feature: the larger of tau_low and its own null threshold.
        return {c.name: max(tau_low, threshold.get(rep[c.name], 0.0)) for c in everything}

    bar = {kind: {c.name: limits(kind, c)[0] for c in everything} for kind in nulls}

    def select(scores: dict[str, float | None], rows: np.ndarray, threshold: dict[str, float],
               explain: bool = True) -> tuple[list[str], dict[str, tuple[str, float]]]:
        cand = sorted((c for c in columns if (scores[c.name] or 0.0) > threshold[c.name]),
                      key=lambda c: -(scores[c.name] or 0.0))
        kept, red = [], {}
        for sl in ("all", "cuda"):  # redundancy is judged among features of the same slice
            k, r = select_forward([c for c in cand if applies[c.name] == sl],
                                  targets[sl][key], rows, min_gain=min_gain, cells=sel_cells,
                                  groups=tasks, numeric=sel_numeric, seed=seed,
                                  explain=explain)
            kept += k
            red.update(r)
        return kept, red

    f_star, redundant = select(mi[key], sub, bar[key])
    hits = dict.fromkeys(names, 0)
    # Stability selection: subsamples of half the rows of the estimate, without replacement
    # (duplicated rows would bias a kNN estimator upward).
    half = len(sub) // 2
    half_bar = None
    for _ in range(bootstrap):
        rows = np.sort(rng.choice(pool, size=half, replace=False))
        if half_bar is None:  # the noise floor is higher on smaller samples
            half_bar = bar_of(noise_floor(columns, targets["all"][key], rows, seed=seed,
                                          n_jobs=n_jobs, groups=shuffle_in))
        for name in select(sweep(key, rows), rows, half_bar, explain=False)[0]:
            hits[name] += 1
    vanished = _attribute(columns, mi, bar, targets, tasks, controls=specs, rows=sub,
                          seed=seed, within=normalize_within_task) if used else {}
    # A duplicate orders the programs exactly like its representative: same confound.
    vanished.update({d: vanished[r] for d, r in duplicate_of.items() if r in vanished})
    hits.update({d: 0 for d in duplicate_of})
    features = []
    for col in everything:
        n = col.name
        m, mc = mi["mi"][n], mi.get("mi_controlled", {}).get(n)
        t_low, t_high = limits(tier_key, col)
        ftier = tier_of(mi[tier_key][n], t_high, t_low)
        confounded = n in vanished
        score = mi[key][n] or 0.0
        if m is None:
            reason = "not measurable: fewer than 20 rows with a value"
        elif n in f_star:
            reason = "in F*"
        elif n in duplicate_of:
            reason = (f"duplicate of {duplicate_of[n]}: orders every program the same way, so "
                      "it carries the same information and is not a separate candidate")
        elif confounded:
            reason = (f"confounded: I={m:.3g} nats falls to {mc or 0.0:.3g} (noise floor "
                      f"{bar['mi_controlled'][n]:.3g}) after controlling for {vanished[n]} "
                      "within task")
        elif n in redundant:
            reason = (f"redundant given {redundant[n][0]}: adds less than min_gain={min_gain} "
                      f"nats to F* out of fold (in-sample info left {redundant[n][1]:.3g})")
        elif (mi[tier_key][n] or 0.0) <= t_low:
            tscore = mi[tier_key][n] or 0.0
            reason = (f"marginal: I={tscore:.3g} <= tau_low={t_low:.3g} (its within-task "
                      "permutation null plus spread)") if tier_key == "mi" else \
                f"marginal given controls: I={tscore:.3g} <= tau_low={t_low:.3g}"
        else:
            reason = (f"not significant: I={score:.3g} is within the estimator's noise floor "
                      f"{bar[key][n]:.3g} at {len(sub)} rows")
        rows_with = int((~np.isnan(col.values[usable])).sum())
        features.append(FeatureReport(
            name=n, kind="categorical" if col.discrete else "continuous",
            applies_to="cuda" if T.is_cuda_feature(n) else "all", rows=rows_with, mi=m,
            mi_pooled=mi["mi_pooled"][n],
            mi_controlled=mc, tier=ftier,
            tier_controlled=tier_of(mc, *limits("mi_controlled", col)[::-1]) if used else None,
            null_mi=nulls[tier_key].mean.get(rep[n]), tau_low=t_low, tau_high=t_high,
            stability=hits[n] / bootstrap if bootstrap else float(n in f_star),
            selected=n in f_star, confounded=confounded, reason=reason))
    features.sort(key=lambda f: -(f.mi or 0.0))
    langs = T.language_counts(table)  # of the input: how many programs each language had
    return Discovery(
        round=round, features=features, f_star=f_star,
        settings=DiscoveryRun(target=target, normalize_within_task=normalize_within_task,
                              correct_only=correct_only, tau_high=tau_high, tau_low=tau_low,
                              bootstrap=bootstrap, min_gain=min_gain,
                              controls_requested=list(controls),
                              controls_used=used, controls_missing=missing,
                              length_source=length_source, mi_rows=len(sub), seed=seed,
                              noise_floor=floors,
                              null={k: v.summary for k, v in nulls.items()},
                              critical_factor=critical_factor, excluded_meta=meta),
        counts=DiscoveryCounts(rows_in=len(table), rows_used=int(usable.sum()), dropped=dropped,
                               tasks=int(len(np.unique(tasks[usable]))), languages=langs,
                               non_cuda_rows=int((~T.cuda_mask(table)).sum())))
