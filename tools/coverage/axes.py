"""Archive axes with fixed meaning: pattern levels and fixed numeric edges, never quantiles.

Binning a count on round-0 quantiles makes every bin hold round-0 programs by construction,
so SCov starts at 1.0 and shows no gap. Axes here are fixed before any data is seen:

* **Pattern features** (``pattern.global_access``, ``pattern.reuse``, ``pattern.sync``,
  ``pattern.intensity``, ``pattern.vector_width``, ``pattern.tensor_cores``; their rules are
  in ``tools/features/structure.py``) bin on their full documented level set, including
  levels round 0 never reached: an unreached level is exactly the gap to show.
* **Other categorical features** bin on the levels round 0 saw (they have no documented set).
* **Numeric features** bin on fixed edges chosen by what the numbers mean: fractions in
  ``[0, 1]`` (occupancy, ratios) on quarters; counts on ``0 | 1 | 2-3 | 4-7 | 8+`` (none, one,
  a few, many); other non-negative measures on decades ``0 | 0.01 | 0.1 | 1 | 10 | 100+``.
  The last bin is open
  (``[8,inf)``): larger values land there, and its label says so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from structcover.tools.coverage.bins import Dimension, as_levels, is_categorical
from structcover.tools.features.structure import LEVELS

#: The pattern features in axis order (the seed design's coalescing x reuse x sync x
#: intensity space, then vector width and tensor cores).
PATTERN_AXES: tuple[str, ...] = ("pattern.global_access", "pattern.reuse", "pattern.sync",
                                 "pattern.intensity", "pattern.vector_width",
                                 "pattern.tensor_cores")

#: Count edges: none, one, a few, several, many (the last bin is open).
COUNT_EDGES: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0, math.inf)
#: Fraction edges (occupancy, ratios in [0, 1]).
FRACTION_EDGES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Other non-negative measures (FLOP per byte, bytes, milliseconds): decades.
DECADE_EDGES: tuple[float, ...] = (0.0, 0.01, 0.1, 1.0, 10.0, 100.0, math.inf)


def pattern_levels() -> dict[str, tuple[str, ...]]:
    """Documented levels of each pattern feature (their home: ``tools/features/structure.py``)."""
    return {k: tuple(v) for k, v in LEVELS.items()}


def is_pattern(name: str) -> bool:
    """Whether ``name`` is one of the documented pattern features."""
    return name in pattern_levels()


def fixed_dimension(name: str, values: pd.Series) -> Dimension | None:
    """The axis of feature ``name`` with fixed levels or edges (see the module docstring).

    Args:
        name: The feature.
        values: Its round-0 values: used only for a categorical feature's level set and to
            tell counts from fractions from other measures, never to place edges.

    Returns:
        The dimension, or None when the feature has no value at all, only negative values
        (no meaningful fixed edges) or a single level (a dead axis).
    """
    levels = pattern_levels().get(name)
    if levels is not None:
        return Dimension(name, "categorical", levels=tuple(levels))
    present = values.dropna()
    if present.empty:
        return None
    if is_categorical(values):
        seen = sorted(set(as_levels(present)), key=str)
        return Dimension(name, "categorical", levels=tuple(seen)) if len(seen) >= 2 else None
    x = pd.to_numeric(present, errors="coerce").dropna().to_numpy(float)
    if x.size == 0 or x.min() < 0:
        return None
    if np.all(np.equal(np.mod(x, 1), 0)):
        edges = COUNT_EDGES
    elif x.max() <= 1.0:
        edges = FRACTION_EDGES
    else:
        edges = DECADE_EDGES
    return Dimension(name, "numeric", edges=tuple(float(e) for e in edges))
