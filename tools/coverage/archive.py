"""The coverage archive B(F*): bins over the critical features, frozen at round 0.

Two geometries, pyribs-style: :class:`GridArchive` (product of per-feature levels / edges) and
:class:`structcover.tools.coverage.cvt.CVTArchive` (centroids from seeded k-means, used when
the dimension count exceeds
``ArchiveSettings.cvt_above_dims``). Both keep per-bin count, best and mean reward
(:class:`~structcover.tools.coverage.archive_base.Archive`), and both are saved as JSON with
their frozen geometry so later rounds bin identically. This module is the one that builds and
loads either: it imports both geometries, neither imports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from structcover.config import ArchiveSettings
from structcover.tools.coverage.archive_base import (
    STATUS_IMPROVED,
    STATUS_NEW,
    STATUS_NOT_ADDED,
    Archive,
)
from structcover.tools.coverage.axes import fixed_dimension
from structcover.tools.coverage.bins import Bound, Dimension
from structcover.tools.coverage.cvt import CVTArchive
from structcover.tools.coverage.labels import join_label, label_items

__all__ = ["ARCHIVE_FILE", "STATUS_IMPROVED", "STATUS_NEW", "STATUS_NOT_ADDED", "Archive",
           "CVTArchive", "GridArchive", "archive_from_state", "build_archive", "load",
           "load_archive"]

ARCHIVE_FILE = "archive.json"
_MAX_GRID_BINS = 5_000_000


class GridArchive(Archive):
    """Product grid over per-feature levels / edges. Label: ``f1=v1,f2=[lo,hi)``."""

    kind = "grid"

    def __init__(self, *, dims: list[Dimension], frozen_round: int = 0) -> None:
        shape = [d.n_bins for d in dims]
        if int(np.prod(shape, dtype=float)) > _MAX_GRID_BINS:
            raise ValueError(f"grid of {shape} bins is too large; use a CVT archive")
        super().__init__(dims=dims, frozen_round=frozen_round)
        self.shape = tuple(shape)

    @property
    def n_bins(self) -> int:
        return int(np.prod(self.shape))

    def axis_indices(self, table: pd.DataFrame) -> np.ndarray:
        """Per-axis bin index, shape (rows, dims); -1 where not binnable."""
        self._check_columns(table)
        return np.stack([d.index(table[d.name]) for d in self.dims], axis=1)

    def index(self, table: pd.DataFrame) -> np.ndarray:
        axes = self.axis_indices(table)
        bad = np.asarray((axes < 0).any(axis=1), dtype=bool)
        flat = np.ravel_multi_index(tuple(np.where(bad[:, None], 0, axes).T), self.shape)
        return np.where(bad, -1, flat).astype(np.int64)

    def label(self, i: int) -> str:
        coords = np.unravel_index(i, self.shape)
        return join_label((d.name, d.label(int(c)))
                          for d, c in zip(self.dims, coords, strict=True))

    def coords(self, label: str) -> tuple[int, ...]:
        """Per-axis indices of a label (items read by :func:`labels.label_items`).

        Raises:
            ValueError: The label's axes are not the archive's, in order, or a level is not
                one of its axis's.
        """
        items = label_items(label)
        names = [name for name, _ in items]
        if names != self.features:
            raise ValueError(f"bin label {label!r}: expected the axes {self.features} in order, "
                             f"got {names}")
        out = []
        for d, (_, level) in zip(self.dims, items, strict=True):
            found = [i for i in range(d.n_bins) if d.label(i) == level]
            if not found:
                raise ValueError(f"bin label {label!r}: unknown value {level!r} for {d.name}")
            out.append(found[0])
        return tuple(out)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> GridArchive:
        arch = cls(dims=[Dimension.from_dict(d) for d in state["dims"]],
                   frozen_round=state.get("frozen_round", 0))
        arch._restore_stats(state.get("stats") or {})
        return arch

    def describe_bin(self, label: str) -> dict[str, Bound]:
        return {d.name: d.bound(c) for d, c in zip(self.dims, self.coords(label), strict=True)}


def build_archive(table: pd.DataFrame, features: list[str], *,
                  settings: ArchiveSettings | None = None, seed: int = 0,
                  frozen_round: int = 0) -> Archive:
    """Freeze an archive at round 0: a grid over fixed levels and edges, or a CVT.

    Axes never take their edges from round-0 quantiles (that makes round 0 cover every bin by
    construction): see :mod:`structcover.tools.coverage.axes`. Round-0 data only gives a
    non-pattern categorical feature its level set (and seeds a CVT's centroids, used above
    ``settings.cvt_above_dims`` axes when some are numeric).

    Raises:
        ValueError: No features, or a feature missing from the table.
    """
    settings = settings or ArchiveSettings()
    if not features:
        raise ValueError("build_archive: no features to bin on")
    missing = [f for f in features if f not in table.columns]
    if missing:
        raise ValueError(f"build_archive: feature table lacks {missing}")
    dims = []
    for f in features:
        dim = fixed_dimension(f, table[f])
        if dim is None:
            raise ValueError(f"build_archive: feature {f!r} has no fixed bins (no values, "
                             "negative values, or a single level)")
        dims.append(dim)
    # Level combinations stay a grid (bins are named by their levels); a CVT only for many
    # numeric axes.
    if len(dims) > settings.cvt_above_dims and any(d.kind == "numeric" for d in dims):
        return CVTArchive.fit(table, dims=dims, cells=settings.cvt_cells, seed=seed,
                              frozen_round=frozen_round)
    return GridArchive(dims=dims, frozen_round=frozen_round)


#: Archive geometries by the ``kind`` their state records.
GEOMETRIES: dict[str, type[GridArchive] | type[CVTArchive]] = {"grid": GridArchive,
                                                               "cvt": CVTArchive}


def archive_from_state(state: dict[str, Any]) -> Archive:
    """Rebuild an archive from :meth:`Archive.to_state` output.

    Raises:
        ValueError: An unknown archive kind.
    """
    kind = state["kind"]
    if kind not in GEOMETRIES:
        raise ValueError(f"unknown archive kind {kind!r}")
    return GEOMETRIES[kind].from_state(state)


def load(path: Path) -> Archive:
    """Read an archive saved by :meth:`Archive.save`."""
    try:
        return archive_from_state(json.loads(Path(path).read_text()))
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a saved archive: {exc}") from exc


def load_archive(state_dir: Path) -> Archive | None:
    """The frozen archive of a state folder, or None before round 0 created it."""
    path = Path(state_dir) / ARCHIVE_FILE
    return load(path) if path.exists() else None
