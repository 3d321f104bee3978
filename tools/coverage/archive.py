"""The coverage archive B(F*): bins over the critical features, frozen at round 0.

Two geometries, pyribs-style: :class:`GridArchive` (product of per-feature levels / edges) and
:class:`structcover.tools.coverage.cvt.CVTArchive` (centroids from seeded k-means, used when
the dimension count exceeds
``ArchiveSettings.cvt_above_dims``). Both keep per-bin count, best and mean reward, and both
are saved as JSON with their frozen geometry so later rounds bin identically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from structcover.config import ArchiveSettings
from structcover.tools.coverage.axes import fixed_dimension
from structcover.tools.coverage.bins import Bound, Dimension, reward_of
from structcover.tools.data.atomic import write_text

ARCHIVE_FILE = "archive.json"
STATUS_NEW, STATUS_IMPROVED, STATUS_NOT_ADDED = "new", "improved", "not_added"
_MAX_GRID_BINS = 5_000_000


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

    def empty_copy(self) -> Archive:
        """Same frozen geometry, no programs."""
        state = self.to_state()
        state["stats"] = {}
        return archive_from_state(state)


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
        return ",".join(f"{d.name}={d.label(int(c))}"
                        for d, c in zip(self.dims, coords, strict=True))

    def coords(self, label: str) -> tuple[int, ...]:
        """Per-axis indices of a label (parsed axis by axis, so ranges with commas work)."""
        rest, out = label, []
        for n, d in enumerate(self.dims):
            prefix = f"{d.name}="
            if not rest.startswith(prefix):
                raise ValueError(f"bin label {label!r}: expected {prefix!r}")
            rest = rest[len(prefix):]
            for i in range(d.n_bins):
                lab = d.label(i)
                tail = rest[len(lab):]
                if rest.startswith(lab) and (tail == "" if n == len(self.dims) - 1
                                             else tail.startswith(",")):
                    out.append(i)
                    rest = tail[1:]
                    break
            else:
                raise ValueError(f"bin label {label!r}: unknown value for {d.name}")
        return tuple(out)

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
        from structcover.tools.coverage.cvt import CVTArchive  # cvt imports this module

        return CVTArchive.fit(table, dims=dims, cells=settings.cvt_cells, seed=seed,
                              frozen_round=frozen_round)
    return GridArchive(dims=dims, frozen_round=frozen_round)


def archive_from_state(state: dict[str, Any]) -> Archive:
    """Rebuild an archive from :meth:`Archive.to_state` output."""
    dims = [Dimension.from_dict(d) for d in state["dims"]]
    if state["kind"] == "grid":
        arch: Archive = GridArchive(dims=dims, frozen_round=state.get("frozen_round", 0))
    elif state["kind"] == "cvt":
        from structcover.tools.coverage.cvt import CVTArchive

        arch = CVTArchive(dims=dims, centers=np.asarray(state["centers"]), mean=state["mean"],
                          scale=state["scale"], cell_bounds=state["cell_bounds"],
                          frozen_round=state.get("frozen_round", 0))
    else:
        raise ValueError(f"unknown archive kind {state['kind']!r}")
    arch._restore_stats(state.get("stats") or {})
    return arch


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
