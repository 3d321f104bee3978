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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from structcover.config import DiscoverySettings
from structcover.tools.features.structure import PATTERN_RULES
from structcover.tools.mining import table as T
from structcover.tools.mining.association import (
    Column,
    NullModel,
    mi_sweep,
    noise_floor,
    permutation_null,
    select_forward,
)
from structcover.tools.mining.problem import (
    Control,
    Prepared,
    Problem,
    Targets,
    build_problem,
    prepare_table,
)
from structcover.tools.mining.reports import (
    Discovery,
    DiscoveryCounts,
    DiscoveryRun,
    FeatureReport,
    tier_of,
)

__all__ = ["MI_MAX_ROWS", "Discovery", "DiscoveryCounts", "DiscoveryRun", "FeatureReport",
           "discover", "tier_of"]

_DEFAULTS = DiscoverySettings()
#: The named patterns: they win a near tie in forward selection (``select_forward``).
_PATTERNS = frozenset(PATTERN_RULES)
#: Rows used per MI estimate. Past this the table is subsampled (uniformly, without
#: replacement, after R_perf is computed on every row): the estimand is unchanged, the
#: estimator's standard error at 10k rows is ~0.005 nats, below τ_low.
MI_MAX_ROWS = 10_000
#: MI per feature (None where fewer than 20 rows have a value), by target kind.
Scores = dict[str, float | None]
#: Per feature, the least MI that counts as a signal, by target kind.
Bars = dict[str, dict[str, float]]


@dataclass
class Thresholds:
    """The permutation nulls of one run and the per-feature bars they give (module doc).

    Attributes:
        nulls: Null model per target kind (``mi``, and ``mi_controlled`` with controls).
        rep: Per feature, the column measured for it (itself, or what it duplicates).
        tau_low: Least marginal threshold (nats).
        tau_high: Least critical threshold (nats).
        critical_factor: Multiple of the null's spread a critical feature clears.
    """

    nulls: dict[str, NullModel]
    rep: dict[str, str]
    tau_low: float
    tau_high: float
    critical_factor: float

    def limits(self, kind: str, col: Column) -> tuple[float, float]:
        """``(tau_low, tau_high)`` of ``col`` against the null of target ``kind``."""
        null, name = self.nulls[kind], self.rep[col.name]
        return (max(self.tau_low, null.threshold(name, col.discrete)),
                max(self.tau_high, self.tau_low,
                    null.threshold(name, col.discrete, self.critical_factor)))

    def bars(self, columns: list[Column]) -> Bars:
        """Per target kind and feature, the bar its MI must clear (its ``tau_low``)."""
        return {kind: {c.name: self.limits(kind, c)[0] for c in columns} for kind in self.nulls}

    def bar_of(self, threshold: dict[str, float], columns: list[Column]) -> dict[str, float]:
        """Per feature: the larger of ``tau_low`` and its own entry of ``threshold``."""
        return {c.name: max(self.tau_low, threshold.get(self.rep[c.name], 0.0)) for c in columns}


@dataclass
class Outcome:
    """What the measurement, selection and stability steps found, for the per-feature reports.

    Attributes:
        mi: MI per target kind and feature (duplicates carry their representative's).
        bar: Per target kind and feature, the bar its MI had to clear.
        f_star: The selected features, in selection order.
        redundant: Per candidate left out as redundant: (what it is redundant given, the
            in-sample information it had left).
        vanished: Per confounded feature, the control(s) its signal vanishes under.
        hits: Per feature, how many resamples selected it.
        rows: Rows per MI estimate.
    """

    mi: dict[str, Scores]
    bar: Bars
    f_star: list[str]
    redundant: dict[str, tuple[str, float]]
    vanished: dict[str, str]
    hits: dict[str, int]
    rows: int


def check_settings(*, tau_low: float, tau_high: float, critical_factor: float, bootstrap: int,
                   mi_rows: int) -> None:
    """Reject thresholds and sizes discovery cannot run with.

    Raises:
        ValueError: Naming the setting and its value.
    """
    if not 0 <= tau_low < tau_high:
        raise ValueError(f"need 0 <= tau_low < tau_high, got tau_low={tau_low}, "
                         f"tau_high={tau_high}")
    if critical_factor < 1:
        raise ValueError(f"critical_factor must be >= 1, got {critical_factor}")
    if bootstrap < 0 or mi_rows < 50:
        raise ValueError(f"bootstrap must be >= 0 and mi_rows >= 50 (got {bootstrap}, {mi_rows})")


def sweep(p: Problem, kind: str, rows: np.ndarray) -> Scores:
    """MI of every measured column with target ``kind`` on ``rows``, each on its own slice."""
    out: Scores = {}
    for sl in ("all", "cuda"):
        cols = [c for c in p.columns if p.applies[c.name] == sl]
        if cols:
            out.update(zip([c.name for c in cols],
                           mi_sweep(cols, p.targets[sl][kind], rows, seed=p.seed,
                                    n_jobs=p.n_jobs), strict=True))
    return out


def measure(p: Problem, rows: np.ndarray) -> dict[str, Scores]:
    """Step 3: MI of every feature with every target kind; a duplicate gets its
    representative's association."""
    mi = {kind: sweep(p, kind, rows) for kind in p.targets["all"]}
    for kind in mi:
        mi[kind].update({d: mi[kind][r] for d, r in p.duplicate_of.items()})
    return mi


def calibrate(p: Problem, rows: np.ndarray, *, tau_low: float, tau_high: float,
              critical_factor: float) -> Thresholds:
    """Step 4: the within-task permutation null of each target kind (module doc)."""
    nulls: dict[str, NullModel] = {
        kind: permutation_null(p.columns, p.targets["all"][kind], rows, seed=p.seed,
                               groups=p.shuffle_in, n_jobs=p.n_jobs)
        for kind in ("mi", "mi_controlled") if kind in p.targets["all"]}
    rep = {c.name: p.duplicate_of.get(c.name, c.name) for c in p.everything}
    return Thresholds(nulls=nulls, rep=rep, tau_low=tau_low, tau_high=tau_high,
                      critical_factor=critical_factor)


def select(p: Problem, scores: Scores, rows: np.ndarray, threshold: dict[str, float],
           explain: bool = True) -> tuple[list[str], dict[str, tuple[str, float]]]:
    """Step 5: F* by forward selection among the candidates whose score clears its bar.

    Redundancy is judged among features of the same slice. Returns the selected features and,
    with ``explain``, why each other candidate was left out as redundant.
    """
    cand = sorted((c for c in p.columns if (scores[c.name] or 0.0) > threshold[c.name]),
                  key=lambda c: -(scores[c.name] or 0.0))
    kept: list[str] = []
    red: dict[str, tuple[str, float]] = {}
    for sl in ("all", "cuda"):
        k, r = select_forward([c for c in cand if p.applies[c.name] == sl],
                              p.targets[sl][p.key], rows, min_gain=p.min_gain, cells=p.cells,
                              groups=p.tasks, numeric=p.numeric, seed=p.seed, explain=explain,
                              preferred=_PATTERNS)
        kept += k
        red.update(r)
    return kept, red


def stability(p: Problem, th: Thresholds, pool: np.ndarray, size: int,
              rng: np.random.Generator, bootstrap: int) -> dict[str, int]:
    """Step 6: how often each feature is selected on ``bootstrap`` resamples.

    Resamples hold half of the ``size`` rows of the estimate, drawn from ``pool`` without
    replacement (duplicated rows would bias a kNN estimator upward). The bars are the noise
    floor measured on the first resample: it is higher on smaller samples.
    """
    hits = dict.fromkeys((c.name for c in p.everything), 0)
    half = size // 2
    half_bar = None
    for _ in range(bootstrap):
        rows = np.sort(rng.choice(pool, size=half, replace=False))
        if half_bar is None:
            half_bar = th.bar_of(noise_floor(p.columns, p.targets["all"][p.key], rows,
                                             seed=p.seed, n_jobs=p.n_jobs, groups=p.shuffle_in),
                                 p.everything)
        for name in select(p, sweep(p, p.key, rows), rows, half_bar, explain=False)[0]:
            hits[name] += 1
    hits.update({d: 0 for d in p.duplicate_of})
    return hits


def confounded(p: Problem, mi: dict[str, Scores], bar: Bars, controls: list[Control],
               rows: np.ndarray, within: bool) -> dict[str, str]:
    """Step 7: features whose significant signal vanishes under the controls, and which
    control(s) do it.

    A feature is confounded when its MI clears ``max(τ_low, noise floor)`` but its MI given
    the controls does not. With several controls, each is also tried alone so the reason names
    the ones that explain the signal by themselves ("jointly" when none does alone). A
    duplicate orders the programs exactly like its representative: same confound.
    """
    if not controls:
        return {}
    vanished = _attribute(p.columns, mi, bar, p.targets, p.tasks, controls=controls, rows=rows,
                          seed=p.seed, within=within)
    vanished.update({d: vanished[r] for d, r in p.duplicate_of.items() if r in vanished})
    return vanished


def _attribute(columns: list[Column], mi: dict[str, Scores], bar: Bars, targets: Targets,
               tasks: np.ndarray, *, controls: list[Control], rows: np.ndarray, seed: int,
               within: bool) -> dict[str, str]:
    """Per measured feature whose signal vanishes under the controls: the control(s) that
    explain it alone, or ``jointly a + b`` when none does alone (see :func:`confounded`)."""
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


def reason(col: Column, p: Problem, th: Thresholds, out: Outcome) -> str:
    """Why feature ``col`` is, or is not, in F* (the first reason that applies)."""
    n = col.name
    m, mc = out.mi["mi"][n], out.mi.get("mi_controlled", {}).get(n)
    t_low = th.limits(p.tier_key, col)[0]
    if m is None:
        return "not measurable: fewer than 20 rows with a value"
    if n in out.f_star:
        return "in F*"
    if n in p.duplicate_of:
        return (f"duplicate of {p.duplicate_of[n]}: orders every program the same way, so it "
                "carries the same information and is not a separate candidate")
    if n in out.vanished:
        return (f"confounded: I={m:.3g} nats falls to {mc or 0.0:.3g} (noise floor "
                f"{out.bar['mi_controlled'][n]:.3g}) after controlling for {out.vanished[n]} "
                "within task")
    if n in out.redundant:
        given, left = out.redundant[n]
        return (f"redundant given {given}: adds less than min_gain={p.min_gain} nats to F* out "
                f"of fold (in-sample info left {left:.3g})")
    tscore = out.mi[p.tier_key][n] or 0.0
    if tscore <= t_low:
        return (f"marginal: I={tscore:.3g} <= tau_low={t_low:.3g} (its within-task "
                "permutation null plus spread)") if p.tier_key == "mi" else \
            f"marginal given controls: I={tscore:.3g} <= tau_low={t_low:.3g}"
    return (f"not significant: I={out.mi[p.key][n] or 0.0:.3g} is within the estimator's noise "
            f"floor {out.bar[p.key][n]:.3g} at {out.rows} rows")


def feature_report(col: Column, p: Problem, th: Thresholds, out: Outcome, bootstrap: int
                   ) -> FeatureReport:
    """Step 8: one feature's MI, tiers, thresholds, stability and reason."""
    n = col.name
    mc = out.mi.get("mi_controlled", {}).get(n)
    t_low, t_high = th.limits(p.tier_key, col)
    controlled = "mi_controlled" in th.nulls
    return FeatureReport(
        name=n, kind="categorical" if col.discrete else "continuous",
        applies_to="cuda" if T.is_cuda_feature(n) else "all",
        rows=int((~np.isnan(col.values[p.usable])).sum()), mi=out.mi["mi"][n],
        mi_pooled=out.mi["mi_pooled"][n], mi_controlled=mc,
        tier=tier_of(out.mi[p.tier_key][n], t_high, t_low),
        tier_controlled=tier_of(mc, *th.limits("mi_controlled", col)[::-1])
        if controlled else None,
        null_mi=th.nulls[p.tier_key].mean.get(th.rep[n]), tau_low=t_low, tau_high=t_high,
        stability=out.hits[n] / bootstrap if bootstrap else float(n in out.f_star),
        selected=n in out.f_star, confounded=n in out.vanished, reason=reason(col, p, th, out))


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

    The steps: prepare the table (:func:`~structcover.tools.mining.problem.prepare_table`),
    build the problem (:func:`~structcover.tools.mining.problem.build_problem`), subsample,
    :func:`measure`, :func:`calibrate`, :func:`select`, :func:`stability`, :func:`confounded`,
    then one :func:`feature_report` per feature.

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
        n_jobs: Threads for the MI estimates (0 or 1: sequential, measured fastest).
        round: The round this table comes from (default: max of its ``round`` column).

    Returns:
        Per-feature MI (within task, pooled, controlled), tiers, stability, confounding, F*.

    Raises:
        ValueError: No task column, no feature columns, a missing target or control, bad
            thresholds, or too few usable rows.
    """
    check_settings(tau_low=tau_low, tau_high=tau_high, critical_factor=critical_factor,
                   bootstrap=bootstrap, mi_rows=mi_rows)
    prep = prepare_table(table, target=target, correct_only=correct_only,
                         controls=tuple(controls), length_control=length_control, round=round)
    p = build_problem(prep, target=target, within_task=normalize_within_task, seed=seed,
                      n_jobs=n_jobs, min_gain=min_gain)
    # One generator: the estimate's subsample first, then the stability resamples.
    rng = np.random.default_rng(seed)
    pool = np.flatnonzero(p.usable)
    sub = np.sort(rng.choice(pool, size=min(len(pool), mi_rows), replace=False))
    mi = measure(p, sub)
    th = calibrate(p, sub, tau_low=tau_low, tau_high=tau_high, critical_factor=critical_factor)
    bar = th.bars(p.everything)
    f_star, redundant = select(p, mi[p.key], sub, bar[p.key])
    hits = stability(p, th, pool, len(sub), rng, bootstrap)
    vanished = confounded(p, mi, bar, prep.controls, sub, normalize_within_task)
    out = Outcome(mi=mi, bar=bar, f_star=f_star, redundant=redundant, vanished=vanished,
                  hits=hits, rows=len(sub))
    features = [feature_report(col, p, th, out, bootstrap) for col in p.everything]
    features.sort(key=lambda f: -(f.mi or 0.0))
    settings = DiscoveryRun(
        target=target, normalize_within_task=normalize_within_task, correct_only=correct_only,
        tau_high=tau_high, tau_low=tau_low, bootstrap=bootstrap, min_gain=min_gain,
        controls_requested=list(controls), controls_used=prep.used,
        controls_missing=prep.missing, length_source=prep.length_source, mi_rows=len(sub),
        seed=seed, noise_floor={kind: {k: v["q99"] for k, v in null.summary.items()}
                                for kind, null in th.nulls.items()},
        null={k: v.summary for k, v in th.nulls.items()}, critical_factor=critical_factor,
        excluded_meta=prep.meta)
    return Discovery(round=prep.round, features=features, f_star=f_star, settings=settings,
                     counts=_counts(table, prep, p))


def _counts(table: pd.DataFrame, prep: Prepared, p: Problem) -> DiscoveryCounts:
    """Rows in and used, drops by reason, tasks and languages of the input."""
    return DiscoveryCounts(rows_in=len(table), rows_used=int(p.usable.sum()),
                           dropped=prep.dropped, tasks=int(len(np.unique(p.tasks[p.usable]))),
                           languages=T.language_counts(table),
                           non_cuda_rows=int((~T.cuda_mask(table)).sum()))
