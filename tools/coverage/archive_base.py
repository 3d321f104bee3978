"""What every archive geometry shares: per-bin count, reward sum and best, saved with the frozen
geometry.

The geometries are :class:`structcover.tools.coverage.archive.GridArchive` and
:class:`structcover.tools.coverage.cvt.CVTArchive`; :mod:`structcover.tools.coverage.archive`
builds, saves and loads them. This module imports neither, so the three form no cycle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Self

import numpy as np
import pandas as pd

from structcover.tools.coverage.bins import Bound, Dimension, reward_of
from structcover.tools.data.atomic import write_text

STATUS_NEW, STATUS_IMPROVED, STATUS_NOT_ADDED = "new", "improved", "not_added"


class Archive:
    """Shared bookkeeping: per-bin count, reward sum and best; subclasses define geometry."""

    kind = "base"

    def __init__(self, *, dims: list[Dimension], frozen_round: int = 0) -> None:
        if not dims:
            raise ValueError("an archive needs at least one dimension")
        names = [d.name for d in dims]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate archive features: {names}")
        self.dims = list(dims)
        self.frozen_round = int(frozen_round)
        self.clear()

    # geometry, defined by subclasses -------------------------------------------------------
    @property
    def n_bins(self) -> int:
        """Total number of bins."""
        raise NotImplementedError

    def index(self, table: pd.DataFrame) -> np.ndarray:
        """Bin index of each row (-1: cannot be binned, e.g. a missing feature value)."""
        raise NotImplementedError

    def label(self, i: int) -> str:
        """Human-readable, parseable label of bin ``i``."""
        raise NotImplementedError

    def describe_bin(self, label: str) -> dict[str, Bound]:
        """Per-feature constraints of the bin with this label (for rendering prompts)."""
        raise NotImplementedError

    # shared --------------------------------------------------------------------------------
    @property
    def features(self) -> list[str]:
        """The archive's features, in axis order."""
        return [d.name for d in self.dims]

    def labels(self) -> list[str]:
        """Labels of all bins, by index."""
        return [self.label(i) for i in range(self.n_bins)]

    def clear(self) -> None:
        """Forget every program added; the frozen geometry stays."""
        self.count = np.zeros(0, np.int64)
        self.reward_sum = np.zeros(0, float)
        self.best = np.zeros(0, float)

    def _ensure(self) -> None:
        if len(self.count) != self.n_bins:
            self.count = np.zeros(self.n_bins, np.int64)
            self.reward_sum = np.zeros(self.n_bins, float)
            self.best = np.full(self.n_bins, -np.inf)

    def _check_columns(self, table: pd.DataFrame) -> None:
        missing = [f for f in self.features if f not in table.columns]
        if missing:
            raise ValueError(f"feature table lacks archive features {missing}")

    def add(self, table: pd.DataFrame, reward: np.ndarray | None = None, *,
            with_labels: bool = True) -> pd.DataFrame:
        """Add a batch of programs.

        Status per program, in table order: ``new`` (it opened an empty bin), ``improved``
        (it beat the bin's best so far) or ``not_added`` (neither, or not binnable).

        Args:
            table: A feature table holding the archive's features.
            reward: Per-row reward; default :func:`reward_of` (speedup of correct programs).
            with_labels: Include the ``label`` column (building a million strings costs time).

        Returns:
            DataFrame with ``program_id`` (when present), ``bin``, ``label``, ``status``.
        """
        self._ensure()
        idx = self.index(table)
        r = reward_of(table) if reward is None else np.asarray(reward, float)
        if len(r) != len(idx):
            raise ValueError(f"reward has {len(r)} values for {len(idx)} rows")
        ok = idx >= 0
        status = np.full(len(idx), STATUS_NOT_ADDED, dtype=object)
        if ok.any():
            b, rr = idx[ok], r[ok]
            frame = pd.DataFrame({"b": b, "r": rr})
            grp = frame.groupby("b", sort=False)["r"]
            first = (grp.cumcount() == 0).to_numpy()
            # best before this row = max(best before the batch, earlier rows of the batch)
            prev = grp.cummax().groupby(frame["b"]).shift(1).to_numpy()
            prior = np.fmax(self.best[b], np.nan_to_num(prev, nan=-np.inf))
            was_empty = self.count[b] == 0
            st = np.where(first & was_empty, STATUS_NEW,
                          np.where(rr > prior, STATUS_IMPROVED, STATUS_NOT_ADDED))
            status[ok] = st
            self.count += np.bincount(b, minlength=self.n_bins)
            self.reward_sum += np.bincount(b, weights=rr, minlength=self.n_bins)
            np.maximum.at(self.best, b, rr)
        out = pd.DataFrame({"bin": idx, "status": status})
        if with_labels:
            labels = np.array([*self.labels(), None], dtype=object)
            out.insert(1, "label", labels[idx])  # idx -1 picks the trailing None
        if "program_id" in table.columns:
            out.insert(0, "program_id", table["program_id"].to_numpy())
        return out

    def stats(self) -> pd.DataFrame:
        """Per-bin ``bin``, ``label``, ``count``, ``best`` and ``mean`` reward (NaN if empty)."""
        self._ensure()
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(self.count > 0, self.reward_sum / self.count, np.nan)
        best = np.where(self.count > 0, self.best, np.nan)
        return pd.DataFrame({"bin": np.arange(self.n_bins), "label": self.labels(),
                             "count": self.count, "best": best, "mean": mean})

    def _geometry(self) -> dict[str, Any]:
        return {}

    def to_state(self) -> dict[str, Any]:
        """JSON-ready state: frozen geometry plus the non-empty bins' statistics."""
        self._ensure()
        nz = np.flatnonzero(self.count)
        return {"version": 1, "kind": self.kind, "frozen_round": self.frozen_round,
                "dims": [d.to_dict() for d in self.dims], **self._geometry(),
                "stats": {"bin": nz.tolist(), "count": self.count[nz].tolist(),
                          "sum": self.reward_sum[nz].tolist(), "best": self.best[nz].tolist()}}

    def save(self, path: Path) -> Path:
        """Write the state as JSON, atomically (temp file + rename)."""
        return write_text(json.dumps(self.to_state()), path)

    def _restore_stats(self, stats: dict[str, list]) -> None:
        self._ensure()
        b = np.asarray(stats.get("bin", []), np.int64)
        self.count[b] = stats.get("count", [])
        self.reward_sum[b] = stats.get("sum", [])
        self.best[b] = stats.get("best", [])

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Rebuild an archive of this geometry from :meth:`to_state` output."""
        raise NotImplementedError

    def empty_copy(self) -> Self:
        """Same frozen geometry, no programs."""
        state = self.to_state()
        state["stats"] = {}
        return self.from_state(state)
