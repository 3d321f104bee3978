"""What discovery reports: per-feature MI, tiers and reasons, the run's settings, F*.

The result models of :func:`structcover.tools.mining.discover.discover`, saved per round as
``rounds/<N>/discovery.json`` and read by drift, diagnosis, the campaign and the report.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from structcover.config import DiscoverySettings

Tier = Literal["critical", "moderate", "marginal"]
_DEFAULTS = DiscoverySettings()


class FeatureReport(BaseModel):
    """What discovery found about one feature. MI values are in nats; None = not measurable."""

    name: str
    kind: Literal["categorical", "continuous"]
    applies_to: Literal["all", "cuda"] = Field(
        description="'cuda': not applicable to non-CUDA rows, which are excluded, never zeros")
    rows: int = Field(description="rows with a value, among those analysed")
    mi: float | None = Field(description="I(S_i; R_perf) as configured (within task by default)")
    mi_pooled: float | None = Field(description="I(S_i; log speedup pooled over tasks)")
    mi_controlled: float | None = Field(
        default=None, description="I(S_i; R_perf residualized on the controls within task)")
    tier: Tier
    tier_controlled: Tier | None = None
    stability: float = Field(description="fraction of resamples in which F* kept it")
    selected: bool = Field(description="in F*")
    confounded: bool = False
    null_mi: float | None = Field(default=None, description=(
        "mean MI against R_perf shuffled within task (controlled R_perf with controls)"))
    tau_low: float | None = Field(default=None, description="this feature's moderate bar")
    tau_high: float | None = Field(default=None, description="this feature's critical bar")
    reason: str = Field(default="", description="why it is in F* or not")


class DiscoveryCounts(BaseModel):
    """How many rows went in and why some were left out."""

    rows_in: int
    rows_used: int
    dropped: dict[str, int] = Field(default_factory=dict)
    tasks: int
    languages: dict[str, int] = Field(default_factory=dict)
    non_cuda_rows: int = 0


class DiscoveryRun(BaseModel):
    """The settings a discovery ran with (so a saved result says how it was made)."""

    target: str
    normalize_within_task: bool
    correct_only: bool
    tau_high: float
    tau_low: float
    bootstrap: int
    min_gain: float = Field(default=_DEFAULTS.min_gain, description="cross-validated "
                            "information gain (nats) a feature must add to enter F*")
    resample: str = "subsamples of half the mi_rows rows, without replacement"
    controls_requested: list[str] = Field(default_factory=list)
    controls_used: list[str] = Field(default_factory=list)
    controls_missing: list[str] = Field(default_factory=list)
    length_source: str | None = None
    mi_rows: int
    noise_floor: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="99th percentile of MI against a permuted target, "
        "per target and feature kind; a feature must exceed max(tau_low, floor) to enter F*")
    null: dict[str, dict[str, dict[str, float]]] = Field(
        default_factory=dict, description="MI against R_perf shuffled within task, per target "
        "and feature kind: q50, q95, q99, max of the draws, spread_q99 (99th percentile of a "
        "draw's excess over its feature's null level) and the number of draws")
    critical_factor: float = Field(default=_DEFAULTS.critical_factor, description=(
        "tau_high(f) = max(tau_high, null_mi(f) + critical_factor x spread)"))
    excluded_meta: list[str] = Field(default_factory=list,
                                     description="meta features left out of the candidates")
    estimator: str = "sklearn mutual_info_regression (Kraskov kNN, k=3; discrete mask)"
    seed: int


class Discovery(BaseModel):
    """One round's discovery: every feature's association, tier and stability, and F*."""

    round: int | None = None
    features: list[FeatureReport]
    f_star: list[str] = Field(description="the minimal non-redundant set, in order of entry "
                              "(the most informative first)")
    settings: DiscoveryRun
    counts: DiscoveryCounts

    def feature(self, name: str) -> FeatureReport:
        """The report of feature ``name``."""
        for f in self.features:
            if f.name == name:
                return f
        raise KeyError(f"no feature {name!r} in this discovery")


def tier_of(mi: float | None, tau_high: float, tau_low: float) -> Tier:
    """critical ``I > τ_high``, moderate ``τ_low < I ≤ τ_high``, marginal otherwise."""
    if mi is not None and mi > tau_high:
        return "critical"
    if mi is not None and mi > tau_low:
        return "moderate"
    return "marginal"
