"""Campaign memory: a local store of programs, gaps, operator outcomes and discovered features.

SQLite ledger as the source of truth, a Chroma index (custom structural-feature embedding,
cosine space, telemetry off, fully offline) for nearest-program look-up. See
:class:`structcover.tools.store.store.MemoryStore`.
"""

from structcover.tools.store.embedding import (
    FeatureEmbedding,
    FeatureSpace,
    numeric_features,
)
from structcover.tools.store.ledger import (
    SCHEMA_VERSION,
    StoreError,
    StoreOpenError,
    StoreSchemaError,
)
from structcover.tools.store.models import (
    AttemptRecord,
    DiscoveredFeature,
    GapHistory,
    InfeasibilityProof,
    Neighbor,
    OperatorOutcome,
    OperatorTally,
    ProgramRecord,
    RoundFeatures,
    content_id,
)
from structcover.tools.store.store import MemoryStore

__all__ = [
    "SCHEMA_VERSION", "AttemptRecord", "DiscoveredFeature", "FeatureEmbedding", "FeatureSpace",
    "GapHistory", "InfeasibilityProof", "MemoryStore", "Neighbor", "OperatorOutcome",
    "OperatorTally", "ProgramRecord", "RoundFeatures", "StoreError", "StoreOpenError",
    "StoreSchemaError", "content_id", "numeric_features",
]
