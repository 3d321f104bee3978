"""Benchmark the verl reward hook (``structcover.reward.compute_score``) per program.

Programs are sample-corpus kernels joined within a family until each is about 2 KB (the size
the target names), wrapped in a model-style reply with a fenced code block. Each is scored
with the coverage bonus on (archive lookup + feature extraction + anti-hacking checks), which
is the most expensive path. CPU time per call (``time.process_time``), best of several
rounds, so a busy machine distorts it less. Target: under 10 ms per program on a 2 KB kernel.

Usage: ``python bench/bench_reward.py [--rounds 5]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from structcover.reward import compute_score
from structcover.tools.coverage.archive import GridArchive
from structcover.tools.coverage.bins import Dimension
from structcover.tools.data.corpus import load_corpus


def two_kb_programs(target: int = 2048) -> list[str]:
    """Corpus programs joined family by family until each source is about ``target`` bytes."""
    out: list[str] = []
    for family in load_corpus():
        buf = ""
        for variant in family.variants:
            buf += variant.source + "\n"
            if len(buf) >= target:
                out.append(buf)
                buf = ""
    return out


def main() -> None:
    """Time compute_score per program and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    programs = two_kb_programs()
    with tempfile.TemporaryDirectory() as tmp:
        archive = GridArchive(dims=[Dimension("smem.arrays", "numeric", edges=(0.0, 1.0, 64.0))])
        archive.add(pd.DataFrame({"smem.arrays": [0.0] * 5, "reward": [1.0] * 5}))
        archive.save(Path(tmp) / "archive.json")
        replies = [f"```cuda\n{p}\n```" for p in programs]
        kwargs = {"state_dir": tmp, "coverage_weight": 0.1}
        compute_score("k", replies[0], "", {"score": 1.0}, **kwargs)  # warm imports and cache
        per_call = []
        for _ in range(args.rounds):
            start = time.process_time()
            for reply in replies:
                compute_score("k", reply, "", {"score": 1.0}, **kwargs)
            per_call.append((time.process_time() - start) / len(replies) * 1000)
    sizes = [len(p) for p in programs]
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, python {platform.python_version()}")
    print(f"programs: {len(programs)}, median size {statistics.median(sizes):.0f} B")
    print(f"compute_score: best {min(per_call):.2f} ms/program, "
          f"median {statistics.median(per_call):.2f} ms (CPU time, target < 10 ms)")


if __name__ == "__main__":
    main()
