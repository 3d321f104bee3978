"""The memory store's per-round discovered features (MI, tier, F*, drift). A mixin of
:class:`structcover.tools.store.store.MemoryStore` over its SQLite ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING

from structcover.tools.store.ledger import Ledger
from structcover.tools.store.models import DiscoveredFeature, RoundFeatures

if TYPE_CHECKING:  # only for annotations: importing mining pulls in scikit-learn
    from structcover.tools.mining.discover import Discovery
    from structcover.tools.mining.drift import Drift


class RoundLedger:
    """Discovered features per round (the ledger's ``round_features`` table)."""

    _ledger: Ledger

    def record_features(self, round: int, discovery: Discovery,
                        drift: Drift | None = None) -> RoundFeatures:
        """Store one round's discovered features (MI, tier, F*, drift); replaces that round."""
        if round < 0:
            raise ValueError(f"record_features: round must be >= 0, got {round}")
        prev = {c.name: c.previous for c in drift.tier_changes} if drift else {}
        feats = [DiscoveredFeature(
            name=f.name, mi=f.mi, tier=f.tier, selected=f.selected, stability=f.stability,
            mi_delta=drift.mi_delta.get(f.name) if drift else None,
            previous_tier=prev.get(f.name)) for f in discovery.features]
        rf = RoundFeatures(round=round, features=feats, f_star=list(discovery.f_star),
                           jaccard=drift.jaccard if drift else None,
                           entered=list(drift.entered) if drift else [],
                           left=list(drift.left) if drift else [])
        with self._ledger.transaction() as db:
            db.execute("INSERT OR REPLACE INTO round_features VALUES (?, ?)",
                       (round, rf.model_dump_json()))
        return rf

    def features_of_round(self, round: int) -> RoundFeatures | None:
        """The features recorded for ``round``, or None if that round was never recorded."""
        rows = self._ledger.rows("SELECT record FROM round_features WHERE round = ?", (round,))
        return RoundFeatures.model_validate_json(rows[0][0]) if rows else None

    def rounds(self) -> list[int]:
        """Rounds with recorded features, ascending."""
        return [int(r[0]) for r in self._ledger.rows(
            "SELECT round FROM round_features ORDER BY round")]
