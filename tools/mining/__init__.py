"""Feature discovery: association, redundancy, tiers, stability, drift."""

from structcover.tools.mining.discover import (
    MI_MAX_ROWS,
    Discovery,
    DiscoveryCounts,
    DiscoveryRun,
    FeatureReport,
    discover,
    tier_of,
)
from structcover.tools.mining.drift import (
    Drift,
    TierChange,
    compare_discoveries,
    load_discovery,
    save_discovery,
)

__all__ = ["MI_MAX_ROWS", "Discovery", "DiscoveryCounts", "DiscoveryRun", "Drift",
           "FeatureReport", "TierChange", "compare_discoveries", "discover", "load_discovery",
           "save_discovery", "tier_of"]
