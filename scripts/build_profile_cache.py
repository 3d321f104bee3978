"""Regenerate the packaged profile cache (tools/simulation/profile_cache.json).

Profiles every program of the sample corpus and every launch-config mutant ``simulate`` draws
(tools/simulation/simulate.py ``_variants``) on each of its family's tasks, with our own CPU
emulator profiler at the two profile sizes, plus ptxas resources for each spec-table arch.
Run it after changing the corpus, the profiler or the size plan:

    python scripts/build_profile_cache.py [--threads 2] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor

from structcover.schema import content_hash
from structcover.tools.data.corpus import load_corpus
from structcover.tools.simulation import profiles
from structcover.tools.simulation.simulate import _prefetch_variants, _variants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="profile only the first N jobs")
    args = parser.parse_args()
    started = time.perf_counter()
    families = load_corpus()
    sources = [p.source for f in families for p in f.programs]
    _prefetch_variants(sources)
    jobs = []
    for fam in families:
        programs = [p.source for p in fam.programs]
        programs += [v for p in fam.programs for v, _ in _variants(p.source)]
        for spec in fam.tasks:
            jobs += [(s, spec) for s in dict.fromkeys(programs)]
    if args.limit:
        jobs = jobs[:args.limit]
    print(f"{len(jobs)} (program, task) profiles; variants ready after "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    store = profiles.ProfileStore(packaged=None, user=None)

    def one(job):
        source, spec = job
        return profiles.cache_key(content_hash(source), spec), store.get(source, spec)

    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        done = list(pool.map(one, jobs))
    entries = {k: e.to_json() for k, e in sorted(done, key=lambda kv: kv[0])}
    failed = sum(1 for e in entries.values() if e["error"])
    out = {"cache_version": profiles.CACHE_VERSION, "profiler": profiles.profiler_version(),
           "arches": list(profiles.ARCHES), "entries": entries}
    profiles.PACKAGED.write_text(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {len(entries)} entries ({failed} failed) to {profiles.PACKAGED} in "
          f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
