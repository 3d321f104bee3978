"""The centroidal Voronoi (CVT) archive, for more archive features than a grid can hold."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from structcover.tools.coverage.archive_base import Archive
from structcover.tools.coverage.bins import Bound, Dimension
from structcover.tools.coverage.labels import cell_label, split_cell


class CVTArchive(Archive):
    """Centroidal Voronoi cells over standardized features (one-hot for categories).

    Centroids come from seeded k-means over points drawn uniformly in the round-0 feature box
    (as pyribs does), so cells also exist where the data never went: those are the gaps.
    Label: ``cell=K|f1=v1,f2=[lo,hi]`` with each feature's extent within the cell.
    """

    kind = "cvt"

    def __init__(self, *, dims: list[Dimension], centers: np.ndarray, mean: list[float],
                 scale: list[float], cell_bounds: list[dict[str, dict]],
                 frozen_round: int = 0) -> None:
        centers = np.asarray(centers, float)
        if centers.ndim != 2 or len(centers) < 1:
            raise ValueError("centers must be a non-empty 2-D array")
        if len(cell_bounds) != len(centers):
            raise ValueError("one cell_bounds entry per centroid is required")
        super().__init__(dims=dims, frozen_round=frozen_round)
        self.centers, self.mean, self.scale = centers, list(mean), list(scale)
        self.cell_bounds = cell_bounds

    @classmethod
    def fit(cls, table: pd.DataFrame, *, dims: list[Dimension], cells: int, seed: int,
            frozen_round: int = 0) -> CVTArchive:
        """Fit centroids from the round-0 feature box.

        Raises:
            ValueError: ``cells`` < 1.
        """
        from sklearn.cluster import KMeans

        if cells < 1:
            raise ValueError(f"cvt_cells must be >= 1, got {cells}")
        rng = np.random.default_rng(seed)
        n = max(50 * cells, 2000)
        mean: list[float] = []
        scale: list[float] = []
        cols: list[np.ndarray] = []
        bounds_src: dict[str, np.ndarray] = {}
        for d in dims:
            if d.kind == "numeric":
                lo, hi = d.edges[0], d.edges[-1]
                mean.append((lo + hi) / 2)
                scale.append((hi - lo) / 2 or 1.0)
                cols.append(rng.uniform(lo, hi, n))
                bounds_src[d.name] = cols[-1]
            else:
                mean.append(0.0)
                scale.append(1.0)
                pick = rng.integers(0, d.n_bins, n)
                cols.append(pick)
                bounds_src[d.name] = pick
        raw = pd.DataFrame({d.name: (c if d.kind == "numeric" else np.asarray(d.levels)[c])
                            for d, c in zip(dims, cols, strict=True)})
        probe = cls(dims=dims, centers=np.zeros((1, 1)), mean=mean, scale=scale,
                    cell_bounds=[{}], frozen_round=frozen_round)
        x = probe._encode(raw)
        k = min(cells, len(np.unique(x, axis=0)))
        km = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(x)
        cell_bounds = []
        for c in range(k):
            m = km.labels_ == c
            entry: dict[str, dict[str, float | str]] = {}
            for d in dims:
                v = bounds_src[d.name][m]
                if d.kind == "numeric":
                    entry[d.name] = {"low": float(v.min()), "high": float(v.max())}
                else:
                    entry[d.name] = {"value": d.levels[int(np.bincount(v).argmax())]}
            cell_bounds.append(entry)
        return cls(dims=dims, centers=km.cluster_centers_, mean=mean, scale=scale,
                   cell_bounds=cell_bounds, frozen_round=frozen_round)

    def _encode(self, table: pd.DataFrame) -> np.ndarray:
        parts = []
        for d, mu, sd in zip(self.dims, self.mean, self.scale, strict=True):
            if d.kind == "numeric":
                x = pd.to_numeric(table[d.name], errors="coerce").to_numpy(float)
                parts.append(((x - mu) / sd)[:, None])
            else:
                codes = d.index(table[d.name])
                onehot = np.zeros((len(codes), d.n_bins))
                ok = codes >= 0
                onehot[np.flatnonzero(ok), codes[ok]] = 1.0
                onehot[~ok] = np.nan
                parts.append(onehot)
        return np.hstack(parts)

    @property
    def n_bins(self) -> int:
        return len(self.centers)

    def index(self, table: pd.DataFrame) -> np.ndarray:
        self._check_columns(table)
        x = self._encode(table)
        bad = np.isnan(x).any(axis=1)
        x = np.nan_to_num(x)
        out = np.empty(len(x), np.int64)
        c2 = (self.centers ** 2).sum(1)
        for s in range(0, len(x), 200_000):  # chunks bound the distance matrix's memory
            xs = x[s:s + 200_000]
            out[s:s + len(xs)] = np.argmin(c2[None, :] - 2 * xs @ self.centers.T, axis=1)
        out[bad] = -1
        return out

    def label(self, i: int) -> str:
        items = []
        for d in self.dims:
            b = self.cell_bounds[i][d.name]
            items.append((d.name, str(b["value"]) if "value" in b
                          else f"[{b['low']:.4g},{b['high']:.4g}]"))
        return cell_label(i, items)

    def describe_bin(self, label: str) -> dict[str, Bound]:
        i, _ = split_cell(label)
        if i is None:
            raise ValueError(f"bin label {label!r}: expected 'cell=K|...'")
        if not 0 <= i < len(self.cell_bounds):
            raise ValueError(f"bin label {label!r}: no such cell")
        return {name: Bound(feature=name, value=b.get("value"), low=b.get("low"),
                            high=b.get("high"), high_closed="low" in b)
                for name, b in self.cell_bounds[i].items()}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> CVTArchive:
        arch = cls(dims=[Dimension.from_dict(d) for d in state["dims"]],
                   centers=np.asarray(state["centers"]), mean=state["mean"],
                   scale=state["scale"], cell_bounds=state["cell_bounds"],
                   frozen_round=state.get("frozen_round", 0))
        arch._restore_stats(state.get("stats") or {})
        return arch

    def _geometry(self) -> dict[str, Any]:
        return {"centers": self.centers.tolist(), "mean": self.mean, "scale": self.scale,
                "cell_bounds": self.cell_bounds}
