"""The feature space programs are embedded in, and the Chroma embedding function that applies it.

Chroma's default embedding function downloads an ONNX text model (and fails offline); programs
here are embedded by their *structural feature vector* instead. A :class:`FeatureSpace` fixes
the feature order and a robust per-feature normalisation (signed ``log1p``, then centre and
scale), and :class:`FeatureEmbedding` — registered with Chroma under ``structcover-features`` —
turns a JSON feature mapping (the document stored beside each program) into that vector. The
space is part of the embedding function's config, so a reopened collection embeds queries
exactly as it embedded its programs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function
from pydantic import BaseModel, Field, model_validator

EMBEDDING_NAME = "structcover-features"


def _signed_log1p(x: np.ndarray) -> np.ndarray:
    # Counts span orders of magnitude (a loop count of 3 vs an instruction count of 3000); the
    # log keeps one large feature from deciding every cosine.
    return np.sign(x) * np.log1p(np.abs(x))


class FeatureSpace(BaseModel):
    """Feature order and normalisation: ``v_i = (slog1p(x_i) - center_i) / scale_i``.

    A missing or NaN feature maps to 0 (the centre). A constant 1.0 is appended to every vector
    so that no vector is all-zero: cosine distance is undefined for a zero vector, and a program
    sitting exactly at the centre would otherwise have no neighbours.
    """

    names: list[str] = Field(min_length=1)
    center: list[float]
    scale: list[float]

    @model_validator(mode="after")
    def _check(self) -> FeatureSpace:
        n = len(self.names)
        if len(set(self.names)) != n:
            raise ValueError("feature space has duplicate feature names")
        if len(self.center) != n or len(self.scale) != n:
            raise ValueError(f"feature space has {n} names but {len(self.center)} centres "
                             f"and {len(self.scale)} scales")
        if any(not (s > 0 and math.isfinite(s)) for s in self.scale):
            raise ValueError("feature space scales must be positive and finite")
        return self

    @property
    def dim(self) -> int:
        """Length of an embedded vector (features plus the constant component)."""
        return len(self.names) + 1

    @classmethod
    def fit(cls, rows: Iterable[Mapping[str, float]], names: Sequence[str] | None = None
            ) -> FeatureSpace:
        """Fit centre (median) and scale (IQR / 1.349, floored) over feature mappings.

        Args:
            rows: Feature mappings (e.g. :attr:`ProgramRecord.features`).
            names: Features to keep, in order; default the sorted union of the rows' keys.

        Raises:
            ValueError: If there are no rows or no features.
        """
        rows = list(rows)
        if not rows:
            raise ValueError("cannot fit a feature space on no programs")
        keys = list(names) if names is not None else sorted({k for r in rows for k in r})
        if not keys:
            raise ValueError("cannot fit a feature space: the programs have no features")
        mat = np.array([[float(r.get(k, math.nan)) for k in keys] for r in rows], float)
        t = _signed_log1p(mat)
        center, scale = [], []
        for j in range(t.shape[1]):
            col = t[:, j][~np.isnan(t[:, j])]
            if col.size == 0:
                center.append(0.0)
                scale.append(1.0)
                continue
            q1, med, q3 = np.percentile(col, [25, 50, 75])
            s = (q3 - q1) / 1.349
            if not s > 1e-9:  # constant or near-constant column: fall back to spread or 1
                s = float(col.std()) if col.std() > 1e-9 else 1.0
            center.append(float(med))
            scale.append(float(s))
        return cls(names=keys, center=center, scale=scale)

    def embed(self, features: Mapping[str, float]) -> list[float]:
        """Normalised vector of one feature mapping (see the class docstring)."""
        x = np.array([float(features.get(k, math.nan)) for k in self.names], float)
        v = (_signed_log1p(x) - np.asarray(self.center)) / np.asarray(self.scale)
        v = np.where(np.isnan(v), 0.0, v)
        return [*map(float, v), 1.0]


def numeric_features(values: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """Split extracted feature values into numeric features and categorical levels.

    Numbers stay, booleans become 0/1, None becomes NaN (missing). A categorical value becomes
    one-hot ``name=level`` features; for the documented pattern features every documented level
    gets its key (0 or 1), so programs of levels the first batch never reached still have a
    dimension to land on.

    Returns:
        ``(numeric, levels)``: the numeric mapping for :class:`FeatureSpace`, and the raw
        categorical values (for planning and bin checks).
    """
    from structcover.tools.features.structure import LEVELS  # the documented pattern levels

    documented = {k: tuple(v) for k, v in LEVELS.items()}
    numeric: dict[str, float] = {}
    levels: dict[str, str] = {}
    for name, v in values.items():
        if v is None:
            numeric[name] = math.nan
        elif isinstance(v, bool):
            numeric[name] = float(v)
        elif isinstance(v, int | float):
            numeric[name] = float(v) if math.isfinite(float(v)) else math.nan
        else:
            level = str(v)
            levels[name] = level
            for lv in documented.get(name, (level,)):
                numeric[f"{name}={lv}"] = float(lv == level)
    return numeric, levels


def features_document(features: Mapping[str, float]) -> str:
    """The canonical JSON document a program's features are stored as in Chroma."""
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else float(v))
             for k, v in features.items()}
    return json.dumps(clean, sort_keys=True, separators=(",", ":"))


@register_embedding_function
class FeatureEmbedding(EmbeddingFunction[Documents]):
    """Chroma embedding function: JSON feature mapping → normalised structural feature vector."""

    def __init__(self, space: FeatureSpace) -> None:
        self.space = space

    def __call__(self, input: Documents) -> Embeddings:
        out: Embeddings = []
        for doc in input:
            raw = json.loads(doc)
            feats = {k: (math.nan if v is None else float(v)) for k, v in raw.items()}
            out.append(np.asarray(self.space.embed(feats), np.float32))
        return out

    def embed_features(self, rows: Sequence[Mapping[str, float]]) -> Embeddings:
        """Embed feature mappings directly (what ``__call__`` does after parsing the JSON)."""
        return [np.asarray(self.space.embed(r), np.float32) for r in rows]

    @staticmethod
    def name() -> str:
        return EMBEDDING_NAME

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]

    def get_config(self) -> dict[str, Any]:
        return {"space": self.space.model_dump()}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> FeatureEmbedding:
        return FeatureEmbedding(FeatureSpace.model_validate(config["space"]))

    def validate_config_update(self, old_config: dict[str, Any],
                               new_config: dict[str, Any]) -> None:
        # Changing the space would silently mix two embeddings in one index.
        if old_config.get("space") != new_config.get("space"):
            raise ValueError("the feature space of a program collection cannot change")
