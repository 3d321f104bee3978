"""Benchmark the compile service on the sample corpus: NVRTC vs nvcc, cold and cached.

Per program: one cold compile per path (cache bypassed, results still written), then cache
hits. Reported per kernel (program time / kernels in it), as medians over the corpus. Targets
(issue 4): NVRTC at least 4x faster than nvcc per kernel; a cache hit under 5 ms.

Usage: ``python bench/bench_compile.py [--arch sm_90] [--hits 20] [--write]``; ``--write``
replaces the "Compilation" section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import tempfile
import time
from pathlib import Path

from structcover.tools.compiler import toolchain
from structcover.tools.compiler.service import compile_program
from structcover.tools.data.corpus import load_corpus

RESULTS = Path(__file__).with_name("RESULTS.md")


def _cpu() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = re.search(r"model name\s*:\s*(.*)", text)
        return f"{model.group(1).strip() if model else platform.processor()}, {os.cpu_count()} cores"
    except OSError:
        return f"{platform.processor()}, {os.cpu_count()} cores"


def run(arch: str, hits: int) -> dict:
    """Time every corpus program; return medians and the rows."""
    programs = [(f"{fam.name}/{p.name}", p.source) for fam in load_corpus() for p in fam.programs]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        # Warm both paths once (imports, first dlopen, the OS file cache) so "cold" means
        # "not in the compile cache", not "first process start".
        compile_program(programs[0][1], arch=arch, via="nvrtc", cache_dir=cache, use_cache=False)
        compile_program(programs[0][1], arch=arch, via="nvcc", cache_dir=cache, use_cache=False)
        for name, source in programs:
            row = {"program": name}
            for via in ("nvrtc", "nvcc"):
                start = time.perf_counter()
                res = compile_program(source, arch=arch, via=via, cache_dir=cache, use_cache=False)
                row[f"{via}_s"] = time.perf_counter() - start
                row[f"{via}_ok"] = res.ok
                row["kernels"] = max(len(res.stats), row.get("kernels", 0), 1)
            times = []
            for _ in range(hits):
                start = time.perf_counter()
                res = compile_program(source, arch=arch, via="nvrtc", cache_dir=cache)
                times.append(time.perf_counter() - start)
                assert res.cached
            row["hit_s"] = statistics.median(times)
            rows.append(row)
    per_kernel = {via: statistics.median(r[f"{via}_s"] / r["kernels"] for r in rows)
                  for via in ("nvrtc", "nvcc")}
    speedups = [r["nvcc_s"] / r["nvrtc_s"] for r in rows]
    return {
        "arch": arch, "programs": len(rows), "kernels": sum(r["kernels"] for r in rows),
        "nvrtc_per_kernel_s": per_kernel["nvrtc"], "nvcc_per_kernel_s": per_kernel["nvcc"],
        "speedup_of_medians": per_kernel["nvcc"] / per_kernel["nvrtc"],
        "median_program_speedup": statistics.median(speedups),
        "min_program_speedup": min(speedups),
        "hit_median_ms": statistics.median(r["hit_s"] for r in rows) * 1000,
        "hit_max_ms": max(r["hit_s"] for r in rows) * 1000,
        "failures": [r["program"] for r in rows if not (r["nvrtc_ok"] and r["nvcc_ok"])],
        "rows": rows,
    }


def render(res: dict) -> str:
    """The RESULTS.md section."""
    speed_ok = "met" if res["speedup_of_medians"] >= 4 else "NOT met"
    hit_ok = "met" if res["hit_median_ms"] < 5 else "NOT met"
    lines = [
        "## Compilation", "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python bench/bench_compile.py --write` on "
        f"{_cpu()}, no GPU; nvcc {toolchain.nvcc_version()}, NVRTC {toolchain.nvrtc_version()}, "
        f"arch {res['arch']}. {res['programs']} corpus programs, {res['kernels']} kernels. "
        "Cold = compile cache bypassed (each NVRTC compile runs in a forked child, nvcc as a "
        "subprocess, as the service always does); per kernel = program time / its kernels.", "",
        "| measure | value |", "|---|---|",
        f"| NVRTC cold, median per kernel | {res['nvrtc_per_kernel_s'] * 1000:.0f} ms |",
        f"| nvcc cold, median per kernel | {res['nvcc_per_kernel_s'] * 1000:.0f} ms |",
        f"| speedup (ratio of the medians) | {res['speedup_of_medians']:.1f}x (target >= 4x: {speed_ok}) |",
        f"| speedup per program, median / min | {res['median_program_speedup']:.1f}x / "
        f"{res['min_program_speedup']:.1f}x |",
        f"| cache hit, median / max over programs | {res['hit_median_ms']:.2f} ms / "
        f"{res['hit_max_ms']:.2f} ms (target < 5 ms: {hit_ok}) |",
        f"| programs failing on a path | {', '.join(res['failures']) or 'none'} |", "",
    ]
    return "\n".join(lines)


def write_section(section: str) -> None:
    """Replace (or add) the Compilation section of RESULTS.md, leaving other sections alone."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    pattern = re.compile(r"^## Compilation\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else \
        text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text)


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--hits", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    res = run(args.arch, args.hits)
    for row in res["rows"]:
        print(f"{row['program']:40s} k={row['kernels']} nvrtc {row['nvrtc_s'] * 1000:7.0f} ms  "
              f"nvcc {row['nvcc_s'] * 1000:7.0f} ms  hit {row['hit_s'] * 1000:6.2f} ms")
    section = render(res)
    print(section)
    if args.write:
        write_section(section)


if __name__ == "__main__":
    main()
