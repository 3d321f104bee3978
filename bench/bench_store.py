"""Benchmark the campaign memory (tools/store): add and nearest-query speed at ~2k programs.

Programs are the sample corpus's feature vectors (``numeric_features`` of every corpus
program, ~130 numeric and one-hot dimensions) perturbed so every record differs; sources
differ too, so every id is new. Reported (wall time, one process):

* add: one ``add_programs`` call per batch (ledger transaction + Chroma upsert);
* nearest: ``k=5`` look-ups by raw features, unfiltered and with ``task`` + ``verified``;
* reopen: ``MemoryStore.open`` of the full store (ledger/index sync check);
* rebuild: open after the Chroma folder was deleted (index rebuilt from the ledger).

Usage: ``python bench/bench_store.py [--n 2000] [--batch 100] [--queries 200]``
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from structcover.tools.data.corpus import load_corpus
from structcover.tools.features.extract import extract_features
from structcover.tools.store import MemoryStore, ProgramRecord, numeric_features


def _records(n: int, seed: int = 0) -> list[ProgramRecord]:
    rng = random.Random(seed)
    base = []
    for fam in load_corpus():
        for prog in fam.programs:
            num, levels = numeric_features(extract_features(prog.source).values)
            base.append((fam.name, prog.source, num, levels))
    out = []
    for i in range(n):
        task, src, num, levels = base[i % len(base)]
        feats = {k: (v if math.isnan(v) else v * rng.uniform(0.5, 1.5) + rng.random())
                 for k, v in num.items()}
        out.append(ProgramRecord(task=task, source=f"{src}\n// variant {i}", features=feats,
                                 levels=levels, verified=i % 3 != 0, round=i % 4,
                                 origin="mutant" if i % 2 else "input"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    recs = _records(args.n)
    root = Path(tempfile.mkdtemp(prefix="sc-store-bench-")) / "memory"
    try:
        store = MemoryStore.open(root)
        t = time.perf_counter()
        for i in range(0, len(recs), args.batch):
            store.add_programs(recs[i:i + args.batch])
        add_s = time.perf_counter() - t
        t = time.perf_counter()
        store.add_programs(recs[:args.batch])  # idempotent re-add
        readd_s = time.perf_counter() - t
        queries = [recs[(i * 7919) % len(recs)].features for i in range(args.queries)]
        lat = []
        for q in queries:
            t = time.perf_counter()
            store.nearest(q, k=5)
            lat.append(time.perf_counter() - t)
        lat_f = []
        for i, q in enumerate(queries):
            t = time.perf_counter()
            store.nearest(q, k=5, task=recs[i % len(recs)].task, verified=True)
            lat_f.append(time.perf_counter() - t)
        store.close()
        t = time.perf_counter()
        MemoryStore.open(root).close()
        reopen_s = time.perf_counter() - t
        shutil.rmtree(root / "chroma")
        t = time.perf_counter()
        rebuilt = MemoryStore.open(root)
        rebuild_s = time.perf_counter() - t
        assert rebuilt.count_programs() == len(recs) and rebuilt.repairs
        rebuilt.close()
        dims = len(recs[0].features)

        def ms(xs: list[float]) -> str:
            xs = sorted(xs)
            return (f"median {1000 * statistics.median(xs):.1f} ms, "
                    f"p95 {1000 * xs[int(0.95 * (len(xs) - 1))]:.1f} ms")

        print(f"records {len(recs)} x {dims} features, batches of {args.batch}")
        print(f"add: {add_s:.2f} s total, {len(recs) / add_s:.0f} records/s; "
              f"re-add of one batch {1000 * readd_s:.0f} ms")
        print(f"nearest k=5: {ms(lat)}")
        print(f"nearest k=5 task+verified filter: {ms(lat_f)}")
        print(f"reopen {reopen_s:.2f} s; rebuild index from ledger {rebuild_s:.2f} s")
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
