"""Benchmark: the kNN MI estimator of discovery, scikit-learn's against tools/mining/knn_mi.

Runs the demo's discovery stage (``run_diagnosis`` on each round of a rollouts table, as
``structcover demo`` does) twice in one process: once with the previous estimator
(``sklearn.feature_selection.mutual_info_regression`` per column, columns dispatched by
scikit-learn's joblib ``Parallel`` over threads) and once with the current code. It compares
the saved discoveries and diagnoses of every round byte for byte, and times one MI sweep of
round 0 (the first one discovery makes) in several dispatch modes.

    python bench/bench_mi_estimator.py /tmp/demo1/out/rollouts.parquet
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.feature_selection import mutual_info_regression
from sklearn.utils.parallel import Parallel, delayed

from structcover.config import Settings
from structcover.tools.coverage import diagnosis_state
from structcover.tools.mining import association as A

# The package re-exports the function discover, which shadows the module's name.
D = importlib.import_module("structcover.tools.mining.discover")


def old_mi_one(x: np.ndarray, y: np.ndarray, discrete: bool, seed: int) -> float | None:
    """The estimator before knn_mi: scikit-learn per column."""
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < A.MIN_ROWS:
        return None
    x, y = x[ok], y[ok]
    if np.all(x == x[0]):
        return 0.0
    mi = mutual_info_regression(x[:, None], y, discrete_features=[discrete],
                                n_neighbors=A.N_NEIGHBORS, random_state=seed)
    return float(mi[0])


def old_mi_sweep(columns: list[A.Column], y: np.ndarray, rows: np.ndarray, *, seed: int,
                 n_jobs: int = 0) -> list[float | None]:
    """The sweep before knn_mi: joblib threads, one task per column."""
    yr = y[rows]
    workers = n_jobs or os.cpu_count() or 1

    def run(col: A.Column) -> float | None:
        return old_mi_one(col.values[rows], yr, col.discrete, seed)

    if workers == 1 or len(columns) < 2:
        return [run(c) for c in columns]
    return list(Parallel(n_jobs=workers, prefer="threads")(delayed(run)(c) for c in columns))


def per_column_pool(columns: list[A.Column], y: np.ndarray, rows: np.ndarray, *, seed: int,
                    n_jobs: int = 0) -> list[float | None]:
    """New estimator, a ThreadPoolExecutor task per column (a dispatch mode measured)."""
    yr = y[rows]
    with ThreadPoolExecutor(n_jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(lambda c: A._mi_one(c.values[rows], yr, c.discrete, seed), columns))


def load() -> str:
    """The 1-minute load average, as text."""
    return f"{os.getloadavg()[0]:.1f}"


def run_rounds(table: pd.DataFrame, state: Path) -> tuple[list[float], list[str]]:
    """run_diagnosis on each round; wall seconds and load average at the end of each.

    CPU seconds (all threads) are printed too: on a shared machine they move less than wall.
    """
    settings = Settings()
    disc = settings.discovery.model_copy(update={"bootstrap": 10})
    times, loads = [], []
    for n in sorted(table["round"].unique()):
        t, cpu = time.perf_counter(), time.process_time()
        diagnosis_state.run_diagnosis(table[table["round"] == n], state, round=int(n),
                                      settings=settings.archive, discovery_settings=disc,
                                      seed=0)
        times.append(time.perf_counter() - t)
        loads.append(load())
        print(f"  round {n}: {times[-1]:.1f} s wall, {time.process_time() - cpu:.1f} s CPU "
              f"(load {loads[-1]})", flush=True)
    return times, loads


def saved(state: Path) -> dict[str, bytes]:
    """Every round's discovery.json and diagnosis.json, by relative path.

    The diagnosis' notes name the state folder, which differs between the two runs.
    """
    return {str(p.relative_to(state)): p.read_bytes().replace(str(state).encode(), b"<state>")
            for name in ("discovery.json", "diagnosis.json")
            for p in sorted(state.glob(f"rounds/*/{name}"))}


def first_sweep(table: pd.DataFrame) -> dict[str, Any]:
    """The arguments of discovery's first MI sweep on round 0."""
    got: dict[str, Any] = {}
    real = D.mi_sweep

    def grab(columns: list[A.Column], y: np.ndarray, rows: np.ndarray, **kw: Any) -> Any:
        got.update(columns=columns, y=y, rows=rows, **kw)
        raise StopIteration

    D.mi_sweep = grab  # type: ignore[assignment]
    try:
        D.discover(table[table["round"] == 0], bootstrap=0, seed=0, round=0)
    except StopIteration:
        pass
    finally:
        D.mi_sweep = real  # type: ignore[assignment]
    return got


def best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Smallest wall time of ``repeats`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def cpu_of(fn: Callable[[], Any], repeats: int) -> float:
    """Mean CPU seconds (all threads) of ``repeats`` calls."""
    t = time.process_time()
    for _ in range(repeats):
        fn()
    return (time.process_time() - t) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rollouts", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-rounds", action="store_true", help="only time the MI sweep")
    args = ap.parse_args()
    table = pd.read_parquet(args.rollouts)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {load()}")
    sweep = first_sweep(table)
    cols, y, rows, seed = sweep["columns"], sweep["y"], sweep["rows"], sweep["seed"]
    print(f"sweep: {len(cols)} columns ({sum(c.discrete for c in cols)} discrete), "
          f"{len(rows)} rows")
    modes: list[tuple[str, Callable[[], Any]]] = [
        ("old: sklearn, joblib threads (2)", lambda: old_mi_sweep(cols, y, rows, seed=seed)),
        ("old: sklearn, sequential", lambda: old_mi_sweep(cols, y, rows, seed=seed, n_jobs=1)),
        ("new: sequential", lambda: A.mi_sweep(cols, y, rows, seed=seed, n_jobs=1)),
        ("new: batched threads (2)", lambda: A.mi_sweep(cols, y, rows, seed=seed, n_jobs=2)),
        ("new: thread per column (2)", lambda: per_column_pool(cols, y, rows, seed=seed)),
    ]
    ref = None
    for name, fn in modes:
        secs, out = best_of(fn, args.repeats)
        cpu = cpu_of(fn, args.repeats)
        same = "" if ref is None else ("identical" if out == ref else "DIFFERENT")
        ref = out if ref is None else ref
        print(f"  {name}: {1e3 * secs:.1f} ms wall (best of {args.repeats}), "
              f"{1e3 * cpu:.1f} ms CPU (load {load()}) {same}", flush=True)
    if args.skip_rounds:
        return
    results = {}
    for label in ("old", "new"):
        print(f"{label} estimator, {table['round'].nunique()} rounds:", flush=True)
        patched = (label == "old")
        if patched:
            A._mi_one, A.mi_sweep, D.mi_sweep = old_mi_one, old_mi_sweep, old_mi_sweep
        try:
            with tempfile.TemporaryDirectory() as tmp:
                times, loads = run_rounds(table, Path(tmp))
                results[label] = (times, loads, saved(Path(tmp)))
        finally:
            A._mi_one, A.mi_sweep, D.mi_sweep = NEW
    old, new = results["old"], results["new"]
    same = old[2] == new[2]
    print(json.dumps({"old_s": [round(t, 1) for t in old[0]], "old_load": old[1],
                      "new_s": [round(t, 1) for t in new[0]], "new_load": new[1],
                      "files": len(new[2]), "identical": same}))
    if not same:
        for k in sorted(old[2]):
            if old[2][k] != new[2].get(k):
                print("differs:", k)


NEW = (A._mi_one, A.mi_sweep, D.mi_sweep)

if __name__ == "__main__":
    main()
