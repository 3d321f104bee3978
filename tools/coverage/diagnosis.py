"""Coverage diagnosis of one round over the frozen archive (stage 2 of the loop).

Definitions:

* ``SCov = covered bins / all bins``, pooled over tasks; a feasibility-adjusted
  ``covered / (all − proven infeasible)`` only for bins with an accepted proof.
* Per task (:mod:`per_task`): ``SCov_t = bins task t reaches / (all − bins proven
  infeasible for t)``; ``scov_task_mean`` is their mean over tasks. Pooled SCov counts a bin
  when any task reaches it, so it overstates what each task's policy explores.
* Zero bins: ``count = 0``. Low bins: ``0 < count < ArchiveSettings.low_count``.
* SRMis, structural entropy and collapse: see :mod:`srmis` and :mod:`entropy`.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from structcover.config import ArchiveSettings
from structcover.tools.coverage.archive import Archive, GridArchive
from structcover.tools.coverage.bins import reward_of
from structcover.tools.coverage.entropy import (
    CollapseReport,
    EntropyReport,
    detect_collapse,
    entropy_report,
)
from structcover.tools.coverage.feasibility import InfeasibilityProof, RejectedProof, check_proofs
from structcover.tools.coverage.gaps import Gap, prioritize_gaps
from structcover.tools.coverage.per_task import TaskCoverage, per_task_coverage
from structcover.tools.coverage.srmis import (
    SRMisReport,
    cross_val_predict_structural,
    mismatch_report,
    r_perf,
)
from structcover.tools.coverage.trend import Trend


class FeatureSummary(BaseModel):
    """A feature as discovery saw it (mi/tier/stability are None without a discovery)."""

    name: str
    mi: float | None = None
    tier: str | None = None
    stability: float | None = None
    selected: bool = False
    in_archive: bool = False


class BinStat(BaseModel):
    """One archive bin's coverage and quality."""

    label: str
    count: int
    best: float | None = None
    mean: float | None = None


class Diagnosis(BaseModel):
    """Everything stage 2 learned about one round; ``to_json()`` is the machine-readable form."""

    round: int | None = None
    archive_kind: str
    archive_features: list[str]
    n_programs: int
    n_unbinned: int = Field(description="rows with a missing value or an unseen level")
    scov: float
    scov_adjusted: float | None = Field(
        default=None, description="covered / (total − proven infeasible); None without proofs")
    bins_total: int
    bins_covered: int
    scov_task_mean: float | None = Field(
        default=None, description="mean over tasks of per-task SCov (infeasible bins removed "
                                  "per task); None without a task column")
    task_coverage: list[TaskCoverage] = Field(default_factory=list)
    infeasible: list[InfeasibilityProof] = Field(default_factory=list)
    rejected_proofs: list[RejectedProof] = Field(default_factory=list)
    zero_bins: list[str]
    low_bins: list[str]
    low_count: int
    entropy: EntropyReport
    srmis: SRMisReport
    collapse: CollapseReport
    features: list[FeatureSummary]
    bins: list[BinStat]
    gaps: list[Gap]
    reward_mean: float | None = Field(default=None,
                                      description="mean R_perf of the round's programs")
    trend: Trend | None = Field(default=None,
                                description="every diagnosed round of the state so far")
    notes: list[str] = Field(default_factory=list)

    def to_json(self, indent: int | None = 2) -> str:
        """JSON text (NaN written as null)."""
        return json.dumps(self.model_dump(mode="json"), indent=indent, allow_nan=False,
                          default=str)


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and not np.isfinite(x)) else float(x)


def feature_summaries(discovery: Any | None, archive_features: list[str]) -> list[FeatureSummary]:
    """Feature rows from a discovery result (``.features`` with name/mi/tier/stability and
    ``.f_star``)."""
    if discovery is None:
        return [FeatureSummary(name=f, in_archive=True) for f in archive_features]
    f_star = set(getattr(discovery, "f_star", []) or [])
    out = []
    for f in getattr(discovery, "features", []):
        out.append(FeatureSummary(name=f.name, mi=_num(getattr(f, "mi", None)),
                                  tier=getattr(f, "tier", None),
                                  stability=_num(getattr(f, "stability", None)),
                                  selected=f.name in f_star, in_archive=f.name in archive_features))
    out.sort(key=lambda s: -(s.mi or 0.0))
    return out


def diagnose(table: pd.DataFrame, archive: Archive, *, discovery: Any | None = None,
             predictor_features: list[str] | None = None,
             previous_entropy: EntropyReport | None = None, previous_round: int | None = None,
             proofs: list[InfeasibilityProof] | None = None, min_failed_attempts: int = 3,
             settings: ArchiveSettings | None = None, round: int | None = None,
             srmis_threshold: float = 0.2, seed: int = 0) -> Diagnosis:
    """Diagnose one round's feature table against the frozen archive.

    Args:
        table: Feature table (``task_id``, ``correct``, ``speedup`` and the archive features).
        archive: The frozen archive; it is not modified (an empty copy is filled).
        discovery: This round's discovery result, for the feature list and the predictor.
        predictor_features: Features for the SRMis predictor (default: discovery's F* plus
            the archive features).
        previous_entropy: The previous round's entropy report, for collapse.
        previous_round: That round's number.
        proofs: Candidate infeasibility proofs (checked; rejected ones are reported).
        min_failed_attempts: Attempts a ``failed-attempts`` proof needs.
        settings: Archive settings (``low_count``, ``collapse_rho``).
        round: This round's number.
        srmis_threshold: |signed per-bin mismatch| that names a shortcut / hidden bin.
        seed: Seeds the predictor and sampling.

    Raises:
        ValueError: The table lacks required columns or is empty.
    """
    settings = settings or ArchiveSettings()
    for col in ("task_id", "speedup"):
        if col not in table.columns:
            raise ValueError(f"feature table lacks the {col!r} column")
    if table.empty:
        raise ValueError("feature table is empty")
    notes: list[str] = []
    arch = archive.empty_copy()
    added = arch.add(table, with_labels=False)
    idx = added["bin"].to_numpy()
    st = arch.stats()
    labels = st["label"].tolist()
    covered = st["count"].to_numpy() > 0
    n_cov = int(covered.sum())
    accepted, rejected = check_proofs(proofs or [], labels=set(labels),
                                      covered={labels[i] for i in np.flatnonzero(covered)},
                                      min_attempts=min_failed_attempts)
    adjusted = (n_cov / (arch.n_bins - len(accepted))) if accepted else None
    counts = st["count"].to_numpy()
    infeasible = {p.bin for p in accepted}
    zero = [lab for lab, c in zip(labels, counts, strict=True) if c == 0 and lab not in infeasible]
    low = [lab for lab, c in zip(labels, counts, strict=True) if 0 < c < settings.low_count]

    axes = np.stack([d.index(table[d.name]) for d in arch.dims], axis=1)
    ent = entropy_report(idx, axes, arch.features, arch.n_bins)
    collapse = detect_collapse(previous_entropy, ent, rho=settings.collapse_rho,
                               previous_round=previous_round)
    per_task = per_task_coverage(table, arch, idx)

    srm = _srmis(table, arch, discovery, predictor_features, idx, labels, srmis_threshold,
                 seed, notes)
    bins = [BinStat(label=r.label, count=int(r.count), best=_num(r.best), mean=_num(r.mean))
            for r in st.itertuples()]
    neighbours = _neighbour_best(arch, st["best"].to_numpy()) if isinstance(arch, GridArchive) \
        else None
    gaps = prioritize_gaps(zero=zero, low=low,
                           counts=dict(zip(labels, counts.tolist(), strict=True)),
                           srmis=srm, collapse=collapse, describe=arch.describe_bin,
                           neighbour_best=neighbours, labels=labels)
    if discovery is None:
        notes.append("no discovery for this round: features have no MI/tier; archive uses "
                     "the supplied features")
    return Diagnosis(round=round, archive_kind=arch.kind, archive_features=arch.features,
                     n_programs=len(table), n_unbinned=int((idx < 0).sum()),
                     scov=n_cov / arch.n_bins, scov_adjusted=adjusted, bins_total=arch.n_bins,
                     bins_covered=n_cov, task_coverage=per_task,
                     scov_task_mean=float(np.mean([t.scov for t in per_task])) if per_task
                     else None, infeasible=accepted, rejected_proofs=rejected,
                     zero_bins=zero, low_bins=low, low_count=settings.low_count, entropy=ent,
                     srmis=srm, collapse=collapse,
                     features=feature_summaries(discovery, arch.features), bins=bins,
                     gaps=gaps, notes=notes)


def _srmis(table: pd.DataFrame, arch: Archive, discovery: Any | None,
           predictor_features: list[str] | None, idx: np.ndarray, labels: list[str],
           threshold: float, seed: int, notes: list[str]) -> SRMisReport:
    feats = predictor_features or list(dict.fromkeys(
        [*(getattr(discovery, "f_star", None) or []), *arch.features]))
    feats = [f for f in feats if f in table.columns]
    ok = reward_of(table) > 0  # correct programs with a positive speedup: log is defined
    if ok.sum() < 10:
        notes.append(f"SRMis skipped: only {int(ok.sum())} correct programs with a speedup")
        return SRMisReport(note="fewer than 10 correct programs with a speedup")
    sub = table.loc[ok]
    target = r_perf(sub)
    pred, how = cross_val_predict_structural(sub, feats, target, extra_codes=idx[ok] + 1,
                                             seed=seed)
    lab = np.asarray(labels, dtype=object)[np.maximum(idx[ok], 0)]
    lab[idx[ok] < 0] = None
    return mismatch_report(pred, target, lab, threshold=threshold, seed=seed,
                           predictor=f"{how}; {len(feats)} features; target: log speedup "
                                     f"z-scored within task")


def _neighbour_best(arch: GridArchive, best: np.ndarray) -> dict[int, tuple[int, float]]:
    """For each empty bin, its best non-empty grid neighbour (one step on one axis)."""
    out: dict[int, tuple[int, float]] = {}
    shape = arch.shape
    for i in np.flatnonzero(np.isnan(best)):
        coords = np.array(np.unravel_index(i, shape))
        top: tuple[int, float] | None = None
        for ax in range(len(shape)):
            for step in (-1, 1):
                c = coords.copy()
                c[ax] += step
                if 0 <= c[ax] < shape[ax]:
                    j = int(np.ravel_multi_index(tuple(c), shape))
                    if not np.isnan(best[j]) and (top is None or best[j] > top[1]):
                        top = (j, float(best[j]))
        if top:
            out[int(i)] = top
    return out
