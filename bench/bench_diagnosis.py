"""Benchmark: diagnosis of 1 M programs x 60 features (target < 10 s on 2 cores, < 4 GB).

Run: ``python bench/bench_diagnosis.py [--rows 1000000] [--cvt]``. The table is synthetic
(bool, float, count and categorical features; 50 tasks); the archive is fitted beforehand
(as at round 0) and the timed part is ``diagnose`` itself: binning, per-bin statistics,
entropies, the cross-validated SRMis predictor and the gap list. Peak memory is the
process's maximum resident set size, table included.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from structcover.config import ArchiveSettings
from structcover.tools.coverage.archive import build_archive
from structcover.tools.coverage.diagnosis import diagnose


@dataclass
class _Feature:
    name: str
    mi: float
    tier: str
    stability: float = 1.0


@dataclass
class _Discovery:
    features: list = field(default_factory=list)
    f_star: list = field(default_factory=list)


def make_table(rows: int, n_features: int = 60, seed: int = 0) -> pd.DataFrame:
    """A synthetic feature table: a quarter each bool, float, count and categorical."""
    rng = np.random.default_rng(seed)
    cols: dict[str, object] = {
        "program_id": np.char.add("p", np.arange(rows).astype(str)),
        "task_id": rng.integers(0, 50, rows).astype(str), "round": 0,
        "correct": rng.random(rows) > 0.1}
    for i in range(n_features):
        kind = i % 4
        if kind == 0:
            cols[f"flag.f{i}"] = rng.random(rows) > 0.5
        elif kind == 1:
            cols[f"frac.f{i}"] = rng.random(rows)
        elif kind == 2:
            cols[f"count.f{i}"] = rng.poisson(2, rows)
        else:
            cols[f"cat.f{i}"] = pd.Categorical(rng.choice(["a", "b", "c", "d"], rows))
    table = pd.DataFrame(cols)
    signal = table["flag.f0"].to_numpy() * 0.7 + table["frac.f1"].to_numpy()
    table["speedup"] = np.exp(signal + rng.normal(0, 0.3, rows))
    return table


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cvt", action="store_true", help="6 archive features (a CVT archive)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    table = make_table(args.rows)
    t_make = time.perf_counter() - t0
    feats = ["flag.f0", "frac.f1", "count.f2"] + (["cat.f3", "flag.f4", "frac.f5"] if args.cvt else [])
    disc = _Discovery(features=[_Feature(f, 0.1, "critical") for f in feats],
                      f_star=[*feats, "cat.f7", "frac.f9", "count.f10", "flag.f12", "frac.f13"])
    t0 = time.perf_counter()
    arch = build_archive(table, feats, settings=ArchiveSettings(), seed=0)
    t_fit = time.perf_counter() - t0
    diagnose(table.head(1000), arch, discovery=disc)  # imports and first-call costs, untimed
    t0, c0 = time.perf_counter(), time.process_time()
    d = diagnose(table, arch, discovery=disc, round=0)
    t_diag, c_diag = time.perf_counter() - t0, time.process_time() - c0
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    print(f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}")
    print(f"rows={args.rows} features=60 archive={arch.kind} bins={arch.n_bins} "
          f"predictor features={len(disc.f_star)}")
    print(f"make table {t_make:.2f} s; fit archive {t_fit:.2f} s; diagnose wall {t_diag:.2f} s, "
          f"CPU {c_diag:.2f} s; peak RSS {peak_gb:.2f} GB; SCov {d.scov:.3f}; "
          f"SRMis {d.srmis.overall:.3f}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
