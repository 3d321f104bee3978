"""Kraskov / Ross kNN mutual information of one feature column, exactly as scikit-learn does it.

:func:`mi_one_column` returns what
``sklearn.feature_selection.mutual_info_regression(x[:, None], y, discrete_features=[discrete],
n_neighbors=k, random_state=seed)[0]`` returns (scikit-learn 1.9), bit for bit on the data we
checked, without scikit-learn's per-call validation and joblib dispatch: the one-dimensional
searches (marginal counts, the discrete case) are sorting and ``searchsorted``; the joint
two-dimensional search of the continuous case is a proven window in sorted order, with a scipy
KD-tree for the points the window does not settle. scipy replaces scikit-learn's tree there
because an all-numpy window search was measured 10-60 ms per column on features with few
levels (bench/RESULTS.md, "MI estimator speed"). Jitter draws and the jittered target are
cached across the columns of a sweep (same rows, same seed).

What is replicated, because the estimate depends on it:

* the preprocessing: ``scale(with_mean=False)`` of a continuous x and of y (``np.nanstd``; a
  zero scale becomes 1), then 1e-10 x ``max(1, mean|v|)`` Gaussian jitter from
  ``RandomState(seed)`` (x's column first, then y, in the same shapes);
* the strict radius: the k-th neighbour distance ``r`` is replaced by ``nextafter(r, 0)`` and
  points with distance ``<=`` that are counted, so exact ties at ``r`` are left out;
* distances: ``|fl(a - b)|`` (tree searches and Chebyshev brute force), except the within-class
  searches of classes of at most ``2k + 1`` points, where scikit-learn's brute force computes
  Euclidean distances as ``sqrt(max(0, (|a|² - 2ab) + |b|²))``; that rounding is copied;
* the discrete case: classes of one point are dropped, ``k`` is clamped to ``n_c - 1``;
* the digamma formula with the same array order (so the means sum the same way) and the final
  ``max(0, mi)``.

The one place it can differ: scikit-learn's KD-tree prunes nodes with bounds computed through
``pow(pow(d, 2), 0.5)``, which may round a node's farthest distance by one ulp; a point lying
exactly one ulp from the strict radius could then be counted differently. The property tests
(tests/tools/mining/test_knn_mi.py) compare with scikit-learn directly on ties, duplicates and
tiny classes.
"""

from __future__ import annotations

import threading

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma

#: Neighbours of the Kraskov estimator (scikit-learn's default).
N_NEIGHBORS = 3


def _std(a: np.ndarray) -> np.ndarray:
    """``np.nanstd(a, axis=0)`` of finite ``a``, by the same operations without the NaN masks.

    The sums reduce the same shape along the same axis as ``nanvar``'s, so they round alike.
    """
    n = a.shape[0]
    avg = np.sum(a, axis=0, keepdims=True) / n
    dev = a - avg
    return np.sqrt(np.sum(dev * dev, axis=0) / n)


def _scale_column(x: np.ndarray) -> np.ndarray:
    """``scale(x[:, None], with_mean=False)`` of scikit-learn: an (n, 1) copy divided by its std."""
    col = np.array(x, dtype=np.float64)[:, None]
    std = _std(col)
    std[std < 10 * np.finfo(std.dtype).eps] = 1.0
    col /= std
    return col


def _scale_target(y: np.ndarray) -> np.ndarray:
    """``scale(y, with_mean=False)`` of a 1-D target (a scalar std: only an exact 0 becomes 1)."""
    out = np.array(y, dtype=np.float64)
    std = _std(out)
    out /= 1.0 if std == 0.0 else std
    return out


#: Recent jitter draws and jittered targets. A sweep estimates every column against the same
#: target rows with the same seed, so these repeat from one column to the next.
_DRAWS: dict[tuple[int, int], np.ndarray] = {}
_TARGETS: dict[tuple[int, bool, bytes], tuple[np.ndarray, np.ndarray]] = {}
_CACHE_SIZE = 8


_LOCK = threading.Lock()


def _remember(cache: dict, key: object, value: object) -> None:
    """Store ``value``, dropping the oldest entry beyond ``_CACHE_SIZE``.

    Under the lock, because sweeps may run in threads; two threads missing the same key only
    compute the same value twice.
    """
    with _LOCK:
        if len(cache) >= _CACHE_SIZE:
            cache.pop(next(iter(cache)), None)
        cache[key] = value


def _draws(seed: int, n: int) -> np.ndarray:
    """The first 2n standard normals of ``RandomState(seed)``.

    scikit-learn draws x's noise ``(n, 1)`` then y's ``(n,)`` from one generator (only y's when
    x is discrete); consecutive legacy draws are one stream, so they are slices of this.
    """
    key = (seed, n)
    z = _DRAWS.get(key)
    if z is None:
        z = np.random.RandomState(seed).standard_normal(size=2 * n)
        z.setflags(write=False)
        _remember(_DRAWS, key, z)
    return z


def jittered_target(y: np.ndarray, discrete: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """y scaled and jittered as scikit-learn does, and its stable sort order (cached, read-only).

    The jitter of y comes after x's draws when x is continuous, so it depends on ``discrete``.
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    key = (seed, discrete, y.tobytes())
    hit = _TARGETS.get(key)
    if hit is not None:
        return hit
    n = y.shape[0]
    z = _draws(seed, n)
    ys = _scale_target(y)
    ys += 1e-10 * np.maximum(1, np.mean(np.abs(ys))) * (z[:n] if discrete else z[n:])
    order = np.argsort(ys, kind="stable")
    ys.setflags(write=False)
    order.setflags(write=False)
    _remember(_TARGETS, key, (ys, order))
    return ys, order


def _jittered_feature(x: np.ndarray, discrete: bool, seed: int) -> np.ndarray:
    """x scaled and jittered as scikit-learn does (a discrete x is left as it is)."""
    if discrete:
        return np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    col = _scale_column(x)
    means = np.maximum(1, np.mean(np.abs(col), axis=0))
    col += 1e-10 * means * _draws(seed, n)[:n, None]
    return col[:, 0]


def jittered(x: np.ndarray, y: np.ndarray, discrete: bool, seed: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """x and y after scikit-learn's scaling and tie-breaking noise (x untouched if discrete)."""
    return _jittered_feature(x, discrete, seed), jittered_target(y, discrete, seed)[0]


def _span(sv: np.ndarray, q: np.ndarray, r: np.ndarray, pos: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Index range ``[lo, hi)`` of sorted ``sv`` with ``|fl(sv[j] - q)| <= r``, per query.

    ``|fl(v - q)|`` falls then rises with ``v`` (rounding is monotone), so the set is a
    contiguous run; ``searchsorted`` finds it up to rounding and single steps settle the edges
    with the exact test. ``pos`` (a position of each query inside ``sv``) keeps a degenerate
    search from leaving the query's own run.
    """
    n = sv.shape[0]
    lo = np.searchsorted(sv, q - r, side="left")
    hi = np.searchsorted(sv, q + r, side="right")
    if pos is not None:
        lo = np.minimum(lo, pos)
        hi = np.maximum(hi, pos + 1)
    while True:  # widen while the point just outside still passes
        m = (lo > 0) & (np.abs(sv[np.maximum(lo - 1, 0)] - q) <= r)
        if not m.any():
            break
        lo = lo - m
    while True:  # narrow while the edge point fails
        m = (lo < hi) & (np.abs(sv[np.minimum(lo, n - 1)] - q) > r)
        if not m.any():
            break
        lo = lo + m
    while True:
        m = (hi < n) & (np.abs(sv[np.minimum(hi, n - 1)] - q) <= r)
        if not m.any():
            break
        hi = hi + m
    while True:
        m = (hi > lo) & (np.abs(sv[np.maximum(hi - 1, 0)] - q) > r)
        if not m.any():
            break
        hi = hi - m
    return lo, hi


def _count_within(v: np.ndarray, r: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Per point i, ``#{j : |fl(v[j] - v[i])| <= r[i]}`` (i itself included), original order.

    ``order`` is ``v``'s sort order when the caller has it.
    """
    if order is None:
        order = np.argsort(v, kind="stable")
    sv = v[order]
    pos = np.empty_like(order)
    pos[order] = np.arange(order.shape[0])
    lo, hi = _span(sv, v, r, pos)
    return hi - lo


#: Half-width (in the target's sorted order) of the window tried before the KD-tree.
_WINDOW = 8


def _kth_chebyshev(a: np.ndarray, b: np.ndarray, k: int, b_order: np.ndarray | None = None
                   ) -> np.ndarray:
    """Per point, the k-th smallest Chebyshev distance ``max(|Δa|, |Δb|)`` to the other points.

    First the ``_WINDOW`` neighbours on each side in ``b`` order (the target, whose values are
    rarely tied): if the nearest points outside the window are at least the window's k-th
    distance away in ``b`` alone, nothing outside can be closer, so that distance is exact.
    The points this does not settle (a feature level with few members, so their neighbours
    are far in ``b``) go to a scipy KD-tree. Both compute ``max(|fl(a_i - a_j)|,
    |fl(b_i - b_j)|)`` as scikit-learn does, so the values are identical. A window search
    alone was measured at 10-60 ms on features with few levels; the tree alone at about
    2 ms; the window settles most points for a fraction of that.
    """
    n = a.shape[0]
    order = np.argsort(b, kind="stable") if b_order is None else b_order
    sa, sb = a[order], b[order]
    w = min(_WINDOW, n - 1)
    pts = np.arange(n)
    offs = np.concatenate((np.arange(-w, 0), np.arange(1, w + 1)))
    idx = pts[:, None] + offs
    outside = (idx < 0) | (idx >= n)
    np.clip(idx, 0, n - 1, out=idx)
    d = np.maximum(np.abs(sa[idx] - sa[:, None]), np.abs(sb[idx] - sb[:, None]))
    d[outside] = np.inf
    kth = np.partition(d, k - 1, axis=1)[:, k - 1]
    left = np.where(pts > w, np.abs(sb[np.maximum(pts - w - 1, 0)] - sb), np.inf)
    right = np.where(pts < n - 1 - w, np.abs(sb[np.minimum(pts + w + 1, n - 1)] - sb), np.inf)
    open_ = np.minimum(left, right) < kth
    out = np.empty(n)
    out[order] = kth
    if open_.any():
        ab = np.column_stack((a, b))
        rest = order[open_]
        # An unbalanced tree builds faster and queries as fast on 2-D data of this size. The
        # query returns the point itself (or a duplicate) at distance 0 first.
        dist, _ = cKDTree(ab, balanced_tree=False, leafsize=8).query(ab[rest], k=k + 1,
                                                                      p=np.inf)
        out[rest] = dist[:, k]
    return out


def _mi_cc(x: np.ndarray, y: np.ndarray, k: int, y_order: np.ndarray | None = None) -> float:
    """``_compute_mi_cc``: Kraskov estimate for two continuous variables."""
    n = x.shape[0]
    radius = np.nextafter(_kth_chebyshev(x, y, k, y_order), 0)
    nx = _count_within(x, radius) - 1.0
    ny = _count_within(y, radius, y_order) - 1.0
    mi = (digamma(n) + digamma(k) - np.mean(digamma(nx + 1)) - np.mean(digamma(ny + 1)))
    return float(max(0, mi))


def _class_radius(c: np.ndarray, inv: np.ndarray, counts: np.ndarray, k: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per point, the (strict) k-th neighbour distance within its class, and the k used.

    Classes with ``k_c >= n_c // 2`` (``k_c = min(k, n_c - 1)``) go through scikit-learn's brute
    force, whose Euclidean distances carry the ``|a|² - 2ab + |b|²`` rounding; larger classes
    through a tree, whose distances are exact, so the k nearest of a point lie among its k
    neighbours on each side in sorted order.
    """
    n = c.shape[0]
    cnt = counts[inv]
    k_c = np.minimum(k, cnt - 1)
    radius = np.zeros(n)
    order = np.lexsort((c, inv))  # by class, then value
    brute_cls = (np.minimum(k, counts - 1) >= counts // 2) & (counts > 1)
    is_brute = brute_cls[inv[order]]
    tree_pos = np.flatnonzero(~is_brute & (cnt[order] > 1))
    if tree_pos.size:
        sc = c[order]
        cls = inv[order]
        offs = np.concatenate((np.arange(-k, 0), np.arange(1, k + 1)))
        idx = tree_pos[:, None] + offs
        bad = (idx < 0) | (idx >= n)
        np.clip(idx, 0, n - 1, out=idx)
        bad |= cls[idx] != cls[tree_pos, None]
        d = np.abs(sc[idx] - sc[tree_pos, None])
        d[bad] = np.inf
        radius[order[tree_pos]] = np.partition(d, k - 1, axis=1)[:, k - 1]
    brute_pos = np.flatnonzero(is_brute)
    if brute_pos.size:
        members = order[brute_pos]  # grouped by class
        cls = inv[members]
        starts = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
        sizes = np.diff(np.r_[starts, members.shape[0]])
        width = int(sizes.max())
        slot = np.arange(members.shape[0]) - np.repeat(starts, sizes)
        grid = np.full((starts.shape[0], width), -1)
        grid[np.repeat(np.arange(starts.shape[0]), sizes), slot] = members
        v = np.where(grid >= 0, c[np.maximum(grid, 0)], 0.0)
        sq = v * v
        # sklearn's EuclideanArgKmin: (|x_i|² + (-2 x_i y_j)) + |y_j|², clipped at 0, sqrt.
        d2 = (sq[:, :, None] + -2.0 * (v[:, :, None] * v[:, None, :])) + sq[:, None, :]
        d = np.sqrt(np.maximum(0.0, d2))
        d[np.broadcast_to((grid < 0)[:, None, :], d.shape)] = np.inf
        d.sort(axis=2)
        row = np.repeat(np.arange(starts.shape[0]), sizes)
        # column k_c: the query itself sits at distance 0, first in every row
        radius[members] = d[row, slot, k_c[members]]
    return np.nextafter(radius, 0), k_c.astype(np.float64)


def _mi_cd(c: np.ndarray, d: np.ndarray, k: int, c_order: np.ndarray | None = None) -> float:
    """``_compute_mi_cd``: Ross estimate for continuous ``c`` and discrete ``d``."""
    _, inv, counts = np.unique(d, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    radius, k_all = _class_radius(c, inv, counts, k)
    keep = counts[inv] > 1
    n = int(np.sum(keep))
    if n == 0:
        return 0.0  # every class is a single point: nothing to estimate (sklearn raises here)
    label_counts = counts[inv][keep].astype(np.float64)
    c, radius, k_all = c[keep], radius[keep], k_all[keep]
    if c_order is not None:  # the kept points keep their relative order
        c_order = (np.cumsum(keep) - 1)[c_order[keep[c_order]]]
    m_all = _count_within(c, radius, c_order)
    mi = (digamma(n) + np.mean(digamma(k_all)) - np.mean(digamma(label_counts))
          - np.mean(digamma(m_all)))
    return float(max(0, mi))


def mi_one_column(x: np.ndarray, y: np.ndarray, *, discrete: bool, seed: int,
                  n_neighbors: int = N_NEIGHBORS) -> float:
    """I(x; y) in nats, the value scikit-learn's ``mutual_info_regression`` gives for one column.

    Args:
        x: Feature values, 1-D, finite.
        y: Target values, same length, finite.
        discrete: Whether x is discrete (its values are class labels).
        seed: ``random_state`` of the jitter.
        n_neighbors: k of the estimator.

    Returns:
        The estimate, clipped at 0.

    Raises:
        ValueError: Shapes differ, values are not finite, or there are too few rows for k.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of the same length (got {x.shape}, {y.shape})")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite (drop missing rows first)")
    if n_neighbors < 1 or x.shape[0] <= n_neighbors:
        raise ValueError(f"need more than n_neighbors={n_neighbors} rows (got {x.shape[0]})")
    xs = _jittered_feature(x, discrete, seed)
    ys, order = jittered_target(y, discrete, seed)
    if discrete:
        return _mi_cd(ys, xs, n_neighbors, order)
    return _mi_cc(xs, ys, n_neighbors, order)
