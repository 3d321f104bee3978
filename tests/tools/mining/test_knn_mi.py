"""knn_mi against scikit-learn's mutual_info_regression, on data built here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.feature_selection import mutual_info_regression
from sklearn.preprocessing import scale

from structcover.tools.mining import knn_mi
from structcover.tools.mining.association import Column, mi_sweep
from structcover.tools.mining.knn_mi import mi_one_column


def sklearn_mi(x: np.ndarray, y: np.ndarray, discrete: bool, seed: int) -> float:
    """The reference, or 0.0 where scikit-learn refuses (every class a single point)."""
    try:
        return float(mutual_info_regression(x[:, None], y, discrete_features=[discrete],
                                            n_neighbors=3, random_state=seed)[0])
    except ValueError:
        return 0.0


def check(x: np.ndarray, y: np.ndarray, discrete: bool, seed: int) -> None:
    ref = sklearn_mi(x, y, discrete, seed)
    got = mi_one_column(x, y, discrete=discrete, seed=seed)
    assert math.isclose(got, ref, rel_tol=1e-9, abs_tol=1e-15), (got, ref, len(x), discrete)


def feature(kind: str, y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = y.shape[0]
    if kind == "dependent":
        return 0.6 * y + rng.normal(size=n)
    if kind == "levels":  # a count feature with few values
        return rng.integers(0, 4, n).astype(float)
    if kind == "many_levels":
        return rng.integers(0, max(2, n // 3), n).astype(float)
    if kind == "rounded":  # ties in x
        return np.round(rng.normal(size=n), 1)
    if kind == "heavy_tail":
        return rng.exponential(size=n) * 1e4
    return rng.normal(size=n)


KINDS = ["independent", "dependent", "levels", "many_levels", "rounded", "heavy_tail"]


@pytest.mark.parametrize("n", [20, 21, 57, 400])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("discrete", [False, True])
def test_matches_sklearn_random(n: int, kind: str, discrete: bool) -> None:
    rng = np.random.default_rng(n * 7 + KINDS.index(kind))
    y = rng.normal(size=n)
    x = feature(kind, y, rng)
    check(x, y, discrete, seed=int(rng.integers(0, 1000)))


@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_sklearn_on_resampled_rows(discrete: bool, seed: int) -> None:
    """A bootstrap resample: whole rows repeat, so (x, y) pairs are exact duplicates."""
    rng = np.random.default_rng(seed)
    n = 300
    y = np.round(rng.normal(size=n), 2)
    x = rng.integers(0, 5, n).astype(float) if discrete else y + rng.normal(size=n)
    idx = rng.integers(0, n, n)
    check(x[idx], y[idx], discrete, seed)


@pytest.mark.parametrize("discrete", [False, True])
def test_matches_sklearn_with_tied_targets(discrete: bool) -> None:
    """Targets z-scored within tasks of 3 programs take few values."""
    rng = np.random.default_rng(5)
    y = np.tile([-1.0, 0.0, 1.0], 60)
    x = rng.integers(0, 3, y.size).astype(float)
    check(x, y, discrete, seed=0)


def test_matches_sklearn_with_tiny_classes() -> None:
    """Classes of 1 point are dropped, 2-7 go through brute force, 8 and more through a tree."""
    rng = np.random.default_rng(3)
    sizes = [1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 30]
    x = np.repeat(np.arange(len(sizes), dtype=float), sizes)
    y = rng.normal(size=x.size) + 0.3 * x
    for seed in range(4):
        check(x, y, True, seed)
    # near-duplicate targets inside small classes: the brute-force rounding decides radii
    y2 = np.repeat(rng.normal(size=len(sizes)), sizes) + rng.normal(size=x.size) * 1e-9
    check(x, y2, True, 0)


def test_only_single_point_classes_give_zero() -> None:
    x = np.arange(25, dtype=float)
    assert mi_one_column(x, np.sin(x), discrete=True, seed=0) == 0.0


@pytest.mark.parametrize("discrete", [False, True])
def test_matches_sklearn_on_constants(discrete: bool) -> None:
    rng = np.random.default_rng(8)
    y = rng.normal(size=60)
    check(np.full(60, 3.0), y, discrete, 0)
    check(rng.integers(0, 3, 60).astype(float), np.full(60, 2.0), discrete, 0)


@pytest.mark.parametrize("discrete", [False, True])
def test_matches_sklearn_large(discrete: bool) -> None:
    rng = np.random.default_rng(11)
    n = 5000
    y = rng.normal(size=n)
    x = (rng.integers(0, 6, n) if discrete else np.round(y + rng.normal(size=n), 2)) * 1.0
    check(x, y, discrete, 4)


def test_jitter_is_sklearns() -> None:
    """Scaling and noise reproduce _estimate_mi's preprocessing bit for bit."""
    rng = np.random.default_rng(2)
    x, y = rng.exponential(size=101) * 50, rng.normal(size=101) * 3 + 1
    for discrete in (False, True):
        r = np.random.RandomState(9)
        want_x = x.copy()
        if not discrete:
            col = scale(x[:, None].astype(np.float64), with_mean=False)
            col += 1e-10 * np.maximum(1, np.mean(np.abs(col), axis=0)) * \
                r.standard_normal(size=(101, 1))
            want_x = col[:, 0]
        want_y = scale(y, with_mean=False)
        want_y += 1e-10 * np.maximum(1, np.mean(np.abs(want_y))) * r.standard_normal(size=101)
        got_x, got_y = knn_mi.jittered(x, y, discrete, 9)
        assert np.array_equal(got_x, want_x) and np.array_equal(got_y, want_y)


def test_std_is_nanstd() -> None:
    rng = np.random.default_rng(4)
    for n in (2, 20, 129, 1000, 4097):
        a = rng.normal(size=n) * rng.exponential() + rng.normal() * 100
        assert np.array_equal(knn_mi._std(a), np.nanstd(a, axis=0))
        assert np.array_equal(knn_mi._std(a[:, None]), np.nanstd(a[:, None], axis=0))


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        mi_one_column(np.zeros(30), np.zeros(29), discrete=False, seed=0)
    with pytest.raises(ValueError, match="finite"):
        mi_one_column(np.r_[np.nan, np.zeros(29)], np.zeros(30), discrete=False, seed=0)
    with pytest.raises(ValueError, match="n_neighbors"):
        mi_one_column(np.zeros(3), np.zeros(3), discrete=False, seed=0)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_sweep_matches_sklearn_per_column(n_jobs: int) -> None:
    """A sweep (with missing values and repeated targets) equals scikit-learn column by column."""
    rng = np.random.default_rng(6)
    n = 200
    y = rng.normal(size=n)
    y[:5] = np.nan
    cols = []
    for i, kind in enumerate(KINDS):
        v = feature(kind, np.nan_to_num(y), rng)
        v[rng.random(n) < 0.1 * (i % 3)] = np.nan
        cols.append(Column(f"f{i}", v, discrete=kind in ("levels", "many_levels")))
    cols.append(Column("const", np.ones(n), discrete=False))
    cols.append(Column("sparse", np.where(np.arange(n) < 10, 1.0, np.nan), discrete=False))
    rows = rng.integers(0, n, n)
    got = mi_sweep(cols, y, rows, seed=3, n_jobs=n_jobs)
    want: list[float | None] = []
    for c in cols:
        x, yr = c.values[rows], y[rows]
        ok = ~(np.isnan(x) | np.isnan(yr))
        if ok.sum() < 20:
            want.append(None)
        elif np.all(x[ok] == x[ok][0]):
            want.append(0.0)
        else:
            want.append(sklearn_mi(x[ok], yr[ok], c.discrete, 3))
    assert got == want
