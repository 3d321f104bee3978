"""Per-feature discretization for the coverage archive: frozen levels or frozen edges.

Tools return raw feature values; only the archive bins (OpenEvolve's rule).
A :class:`Dimension` is fitted once, at round 0, and then frozen: it is saved with the state
so every later round bins identically and coverage is comparable across rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel


class Bound(BaseModel):
    """What a bin demands of one feature: a categorical level, or a numeric ``[low, high)``.

    ``high_closed`` is True for the last numeric bin, whose upper edge is included.
    """

    feature: str
    value: str | None = None
    low: float | None = None
    high: float | None = None
    high_closed: bool = False

    def render(self) -> str:
        """Plain-English constraint, for prompts: ``smem.tiled = 1`` or ``0.5 <= x < 1``."""
        if self.value is not None:
            return f"{self.feature} = {self.value}"
        if self.high is None:  # the open last bin of a fixed-edge axis
            return f"{self.feature} >= {_fmt(self.low)}"
        op = "<=" if self.high_closed else "<"
        return f"{_fmt(self.low)} <= {self.feature} {op} {_fmt(self.high)}"


def _fmt(x: float | None) -> str:
    return "?" if x is None else f"{x:.6g}"


def _norm_level(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, bool | np.bool_):
        return str(int(v))
    if isinstance(v, float | np.floating) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _factor_levels(values: pd.Series) -> tuple[np.ndarray, list[str | None]]:
    """(codes, normalized level per code); code -1 = missing. Python work is per unique value."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes, [_norm_level(u) for u in uniques]


def as_levels(values: pd.Series) -> pd.Series:
    """Categorical view of a column: booleans become "0"/"1", missing stays None."""
    codes, levels = _factor_levels(values)
    table = np.array([*levels, None], dtype=object)
    return pd.Series(table[codes], index=values.index, dtype=object)


def is_categorical(values: pd.Series) -> bool:
    """True for bool, string and category columns (binned by level, not by edges)."""
    return (values.dtype == bool or values.dtype == object
            or isinstance(values.dtype, pd.CategoricalDtype)
            or pd.api.types.is_string_dtype(values))


@dataclass(frozen=True)
class Dimension:
    """One archive axis: a feature binned by frozen levels or frozen numeric edges."""

    name: str
    kind: Literal["categorical", "numeric"]
    levels: tuple[str, ...] = ()
    edges: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.kind == "categorical" and not self.levels:
            raise ValueError(f"dimension {self.name}: a categorical axis needs levels")
        if self.kind == "numeric":
            pairs = zip(self.edges, self.edges[1:], strict=False)
            if len(self.edges) < 2 or any(b < a for a, b in pairs):
                raise ValueError(f"dimension {self.name}: edges must be >= 2 ascending values")
        for level in self.levels:
            if "," in level or "=" in level or "|" in level:
                raise ValueError(f"dimension {self.name}: level {level!r} may not hold , = |")

    @classmethod
    def fit(cls, name: str, values: pd.Series, *, bins: int) -> Dimension:
        """Fit levels (categorical) or quantile edges (numeric) from round-0 values.

        Numeric edges are the ``bins``-quantiles with duplicates removed, so a count feature
        that is mostly zero gets fewer, non-empty-looking bins rather than empty slivers.

        Raises:
            ValueError: ``bins`` < 1 or the column has no non-missing value.
        """
        if bins < 1:
            raise ValueError(f"bins_per_feature must be >= 1, got {bins}")
        present = values.dropna()
        if present.empty:
            raise ValueError(f"feature {name!r} has no values to fit bins on")
        if is_categorical(values):
            levels = sorted(set(as_levels(present)), key=str)
            return cls(name, "categorical", levels=tuple(levels))
        x = present.to_numpy(dtype=float)
        edges = np.unique(np.quantile(x, np.linspace(0.0, 1.0, bins + 1)))
        if len(edges) == 1:
            edges = np.array([edges[0], edges[0]])
        return cls(name, "numeric", edges=tuple(float(e) for e in edges))

    @property
    def n_bins(self) -> int:
        """Number of bins on this axis."""
        return len(self.levels) if self.kind == "categorical" else max(len(self.edges) - 1, 1)

    def index(self, values: pd.Series) -> np.ndarray:
        """Bin index of each value, -1 when missing or an unseen categorical level.

        Numeric values outside the round-0 range are clipped into the end bins (so no program
        is dropped); the end bins' bounds say what round 0 saw.
        """
        if self.kind == "categorical":
            codes, levels = _factor_levels(values)
            known = pd.Index(list(self.levels), dtype=object).get_indexer(
                pd.Index(levels, dtype=object)) if levels else np.zeros(0, np.int64)
            lookup = np.append(np.asarray(known, np.int64), -1)  # code -1 -> last entry -> -1
            return lookup[codes]
        x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
        idx = np.searchsorted(np.asarray(self.edges[1:-1]), x, side="right").astype(np.int64)
        idx = np.minimum(idx, self.n_bins - 1)
        idx[np.isnan(x)] = -1
        return idx

    def label(self, i: int) -> str:
        """Human-readable label of bin ``i``: a level, or ``[low,high)``."""
        if self.kind == "categorical":
            return self.levels[i]
        lo, hi = self.edges[i], self.edges[min(i + 1, len(self.edges) - 1)]
        close = "]" if i == self.n_bins - 1 and math.isfinite(hi) else ")"
        return f"[{_fmt(lo)},{_fmt(hi)}{close}"

    def bound(self, i: int) -> Bound:
        """The constraint bin ``i`` puts on this feature."""
        if self.kind == "categorical":
            return Bound(feature=self.name, value=self.levels[i])
        high = self.edges[min(i + 1, len(self.edges) - 1)]
        return Bound(feature=self.name, low=self.edges[i],
                     high=high if math.isfinite(high) else None,
                     high_closed=i == self.n_bins - 1 and math.isfinite(high))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state."""
        # An open last edge is stored as "inf" (JSON has no infinity; float("inf") reads it).
        return {"name": self.name, "kind": self.kind, "levels": list(self.levels),
                "edges": [e if math.isfinite(e) else "inf" for e in self.edges]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dimension:
        """Inverse of :meth:`to_dict`."""
        return cls(data["name"], data["kind"], tuple(data.get("levels", ())),
                   tuple(float(e) for e in data.get("edges", ())))


def reward_of(table: pd.DataFrame) -> np.ndarray:
    """The archive's quality signal: ``reward`` if given, else speedup of correct programs.

    A wrong program's speed means nothing, so it scores 0; a missing speedup scores 0 too.
    """
    if "reward" in table.columns:
        return pd.to_numeric(table["reward"], errors="coerce").fillna(0.0).to_numpy(float)
    if "speedup" not in table.columns:
        raise ValueError("feature table needs a 'speedup' (or 'reward') column")
    speed = pd.to_numeric(table["speedup"], errors="coerce").fillna(0.0).to_numpy(float)
    if "correct" in table.columns:
        ok = table["correct"].fillna(False).astype(bool).to_numpy()
        speed = np.where(ok, speed, 0.0)
    return speed
