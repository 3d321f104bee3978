"""Structural entropy and collapse across rounds (stage 2 of the loop).

All entropies are in nats over the archive's frozen bins: ``H(S(D)) = -Σ p(s) log p(s)``
over the joint bins, ``H(S_i)`` over one feature's frozen levels / edges, and
``H(S_i | S_j) = H(S_i, S_j) - H(S_j)``. Collapse between rounds t and t+1 is
``H_{t+1} / H_t < ρ``; it is split into key-feature collapse (a feature's own entropy ratio
is below ρ) and interaction collapse (the joint drops while every marginal holds; the pairs
whose conditional entropy ratio fell below ρ are named). A feature whose own entropy falls
below ρ is a key-feature collapse even when the joint holds: a policy can drop a structure
while spreading along another axis, and on fixed bins the joint then barely moves. Features
with less than :data:`MIN_KEY_ENTROPY` nats before are not judged alone (a ratio of two
near-zero entropies is noise).
"""

from __future__ import annotations

from itertools import permutations

import numpy as np
from pydantic import BaseModel, Field

#: Least previous-round entropy (nats) of a feature judged alone for key-feature collapse.
MIN_KEY_ENTROPY = 0.1


def entropy_of_codes(codes: np.ndarray) -> float:
    """Shannon entropy (nats) of the empirical distribution of integer codes (>= 0 only)."""
    codes = np.asarray(codes)
    codes = codes[codes >= 0]
    if len(codes) == 0:
        return 0.0
    counts = np.bincount(codes.astype(np.int64))
    p = counts[counts > 0] / len(codes)
    return float(-(p * np.log(p)).sum())


class ConditionalEntropy(BaseModel):
    """``H(feature | given)`` in nats."""

    feature: str
    given: str
    value: float


class EntropyReport(BaseModel):
    """Structural entropy of one round's data over the frozen archive."""

    joint: float = Field(description="H(S(D)) over archive bins, nats")
    joint_max: float = Field(description="log(bins_total): the entropy of uniform coverage")
    per_feature: dict[str, float] = Field(default_factory=dict)
    conditional: list[ConditionalEntropy] = Field(default_factory=list)

    def conditional_map(self) -> dict[tuple[str, str], float]:
        """``{(feature, given): H}`` for look-ups."""
        return {(c.feature, c.given): c.value for c in self.conditional}


def entropy_report(bins: np.ndarray, axes: np.ndarray, names: list[str],
                   n_bins_total: int, max_pairs_features: int = 8) -> EntropyReport:
    """Entropies of one round.

    Args:
        bins: Joint bin index per program (-1 = unbinned, ignored).
        axes: Per-feature frozen bin index, shape (rows, features), -1 = missing.
        names: Feature names, one per column of ``axes``.
        n_bins_total: Number of archive bins (for the uniform maximum).
        max_pairs_features: Conditional entropies are computed for pairs among the first
            this many features (the archive's features are few; this bounds the cost).
    """
    per = {n: entropy_of_codes(axes[:, i]) for i, n in enumerate(names)}
    cond = []
    k = min(len(names), max_pairs_features)
    for i, j in permutations(range(k), 2):
        ok = (axes[:, i] >= 0) & (axes[:, j] >= 0)
        a, b = axes[ok, i], axes[ok, j]
        pair = a * (int(b.max()) + 1 if len(b) else 1) + b
        h = entropy_of_codes(pair) - entropy_of_codes(b)
        cond.append(ConditionalEntropy(feature=names[i], given=names[j], value=max(h, 0.0)))
    return EntropyReport(joint=entropy_of_codes(bins),
                         joint_max=float(np.log(max(n_bins_total, 1))),
                         per_feature=per, conditional=cond)


class FeatureCollapse(BaseModel):
    """A feature whose own entropy fell below ρ times its previous value."""

    feature: str
    previous: float
    current: float
    ratio: float


class PairCollapse(BaseModel):
    """An interaction that collapsed: ``H(feature | given)`` fell below ρ of its previous value."""

    feature: str
    given: str
    previous: float
    current: float
    ratio: float


class CollapseReport(BaseModel):
    """Collapse between the previous round and this one (None fields before round 1)."""

    previous_round: int | None = None
    rho: float = 0.8
    joint_previous: float | None = None
    joint_current: float | None = None
    ratio: float | None = Field(default=None, description="H_t+1 / H_t")
    detected: bool = False
    kind: str | None = Field(default=None, description="key-feature | interaction | None")
    key_features: list[FeatureCollapse] = Field(default_factory=list)
    interactions: list[PairCollapse] = Field(default_factory=list)
    feature_ratios: dict[str, float | None] = Field(default_factory=dict)
    note: str = ""


def _ratio(cur: float, prev: float) -> float | None:
    # A ratio to zero entropy is undefined: nothing left to collapse.
    return None if prev <= 1e-12 else cur / prev


def detect_collapse(previous: EntropyReport | None, current: EntropyReport, *,
                    rho: float = 0.8, previous_round: int | None = None) -> CollapseReport:
    """Compare two rounds' entropies.

    Raises:
        ValueError: ``rho`` not in (0, 1].
    """
    if not 0 < rho <= 1:
        raise ValueError(f"collapse rho must be in (0, 1], got {rho}")
    if previous is None:
        return CollapseReport(rho=rho, joint_current=current.joint,
                              note="no previous round: collapse needs two rounds")
    ratios = {f: _ratio(current.per_feature.get(f, 0.0), h)
              for f, h in previous.per_feature.items()}
    ratio = _ratio(current.joint, previous.joint)
    report = CollapseReport(previous_round=previous_round, rho=rho,
                            joint_previous=previous.joint, joint_current=current.joint,
                            ratio=ratio, feature_ratios=ratios)
    alone = [f for f, r in ratios.items() if r is not None and r < rho
             and previous.per_feature[f] >= MIN_KEY_ENTROPY]
    if (ratio is None or ratio >= rho) and not alone:
        return report
    report.detected = True
    report.key_features = [
        FeatureCollapse(feature=f, previous=previous.per_feature[f],
                        current=current.per_feature.get(f, 0.0), ratio=r)
        for f, r in ratios.items() if r is not None and r < rho]
    report.key_features.sort(key=lambda c: c.ratio)
    if report.key_features:
        report.kind = "key-feature"
        return report
    report.kind = "interaction"
    cur = current.conditional_map()
    for (f, g), h in previous.conditional_map().items():
        r = _ratio(cur.get((f, g), 0.0), h)
        if r is not None and r < rho:
            report.interactions.append(PairCollapse(feature=f, given=g, previous=h,
                                                    current=cur.get((f, g), 0.0), ratio=r))
    report.interactions.sort(key=lambda c: c.ratio)
    return report
