"""Benchmark: discovery on a synthetic 1 M programs x 60 features table (SIMULATED rewards).

Reward (log speedup) = task offset + 0.8 z(f00) + 0.6 z(f01) + 0.7 [c00 == "b"] + noise;
f02 correlates 0.7 with f00 (a decoy), ``code.length`` is the default control, every other
feature is noise. Prints wall time of ``discover`` alone, peak RSS of the process, and
whether F* recovered the planted features.

    python bench/bench_discovery.py --rows 1000000 --features 60
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time

import numpy as np
import pandas as pd


def make_table(rows: int, features: int, tasks: int, seed: int) -> pd.DataFrame:
    """The synthetic table: 2/3 continuous features, 1/3 categorical."""
    rng = np.random.default_rng(seed)
    n_cont = features * 2 // 3
    data: dict[str, np.ndarray] = {}
    for i in range(n_cont):
        data[f"f.{i:02d}"] = rng.normal(size=rows).astype(np.float32)
    data["f.02"] = (0.7 * data["f.00"] + 0.714 * rng.normal(size=rows)).astype(np.float32)
    for i in range(features - n_cont - 1):
        data[f"c.{i:02d}"] = pd.Categorical.from_codes(rng.integers(0, 4, rows),
                                                       ["a", "b", "c", "d"])
    task = rng.integers(0, tasks, rows)
    logs = (rng.normal(size=tasks)[task] + 0.8 * data["f.00"] + 0.6 * data["f.01"]
            + 0.7 * (np.asarray(data["c.00"]) == "b") + rng.normal(0, 0.7, rows))
    frame = pd.DataFrame(data)
    frame["code.length"] = rng.integers(200, 5000, rows)  # counts as one of the 60 features
    frame["task_id"] = pd.Categorical.from_codes(task, [f"t{i:04d}" for i in range(tasks)])
    frame["correct"] = rng.random(rows) > 0.1
    frame["speedup"] = np.exp(logs)
    return frame


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=60)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--bootstrap", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from structcover.tools.mining import discover

    t0 = time.perf_counter()
    table = make_table(args.rows, args.features, args.tasks, args.seed)
    built = time.perf_counter() - t0
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    result = discover(table, bootstrap=args.bootstrap, n_jobs=args.jobs, seed=args.seed)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0  # CPU seconds: comparable on a machine shared with others
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({
        "rows": args.rows, "features": args.features, "bootstrap": args.bootstrap,
        "mi_rows": result.settings.mi_rows, "controls": result.settings.controls_used,
        "discover_s": round(wall, 1), "discover_cpu_s": round(cpu, 1),
        "load_avg_1m": round(os.getloadavg()[0], 1), "table_build_s": round(built, 1),
        "peak_rss_mb": round(peak_mb), "f_star": result.f_star,
        "critical": [f.name for f in result.features if f.tier == "critical"],
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
    }, indent=1))


if __name__ == "__main__":
    main()
