"""Benchmark the compile service on the sample corpus: NVRTC vs nvcc, cold and cached.

Per program: one cold compile per path (cache bypassed, results still written), then cache
hits. Reported per kernel (program time / kernels in it), as medians over the corpus. Targets
(issue 4): NVRTC at least 4x faster than nvcc per kernel; a cache hit under 5 ms.

Usage: ``python bench/bench_compile.py [--arch sm_90] [--hits 20] [--write]``; ``--write``
replaces the "Compilation" section of bench/RESULTS.md (its ``###`` subsections stay).

``--warm-worker [N]`` instead times NVRTC compiles through the warm jailed worker against the
one-shot jailed child (``STRUCTCOVER_NVRTC_WORKER=0``) on the first N corpus programs, side by
side in one run, each compile on a fresh unique source (cache bypassed); with ``--write`` it
replaces the "Warm NVRTC worker" subsection.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from structcover.tools.compiler import nvrtc_pool, toolchain
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


def run_warm_worker(arch: str, count: int) -> dict:
    """Per-compile time, one-shot jailed child vs warm jailed worker, on ``count`` programs.

    The two modes alternate program by program (and which goes first alternates too), so a
    burst of load on the shared machine spoils both alike.
    """
    programs = [p.source for fam in load_corpus() for p in fam.programs][:count]
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {"one_shot": [], "worker": []}
    failures = 0
    saved = os.environ.get(nvrtc_pool.ENV_SWITCH)

    def once(source: str, mode: str, cache: Path) -> float:
        os.environ[nvrtc_pool.ENV_SWITCH] = "0" if mode == "one_shot" else "1"
        unique = f"{source}\n// bench {uuid.uuid4().hex}\n"  # never a cache hit
        start = time.perf_counter()
        res = compile_program(unique, arch=arch, via="nvrtc", cache_dir=cache, use_cache=False)
        elapsed = time.perf_counter() - start
        nonlocal failures
        failures += not res.ok
        return elapsed

    try:
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp)
            once(programs[0], "one_shot", cache)  # imports, first dlopen, OS file cache
            startup = once(programs[0], "worker", cache)  # the worker's start + one compile
            for i, source in enumerate(programs):
                for mode in (("one_shot", "worker") if i % 2 else ("worker", "one_shot")):
                    times[mode].append(once(source, mode, cache))
    finally:
        if saved is None:
            os.environ.pop(nvrtc_pool.ENV_SWITCH, None)
        else:
            os.environ[nvrtc_pool.ENV_SWITCH] = saved
        nvrtc_pool.shutdown()
    med = {m: statistics.median(v) for m, v in times.items()}
    return {"arch": arch, "programs": len(programs), "failures": failures,
            "one_shot_ms": med["one_shot"] * 1000, "worker_ms": med["worker"] * 1000,
            "one_shot_mean_ms": statistics.mean(times["one_shot"]) * 1000,
            "worker_mean_ms": statistics.mean(times["worker"]) * 1000,
            "ratio": med["one_shot"] / med["worker"], "first_worker_ms": startup * 1000,
            "load": (load, os.getloadavg()[0])}


def render_warm_worker(res: dict) -> str:
    """The "Warm NVRTC worker" subsection of RESULTS.md."""
    return "\n".join([
        "### Warm NVRTC worker", "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python bench/bench_compile.py --warm-worker "
        f"{res['programs']} --write` on {_cpu()} (shared: load average {res['load'][0]:.1f} "
        f"before, {res['load'][1]:.1f} after), no GPU, NVRTC "
        f"{toolchain.nvrtc_version()}, arch {res['arch']}: the first {res['programs']} corpus "
        "programs, each compile on a fresh source (a unique comment appended, cache bypassed) "
        "through `compile_program(via='nvrtc')`, the two modes alternating program by program "
        "in one run. One-shot = bwrap + a fresh Python per compile (`STRUCTCOVER_NVRTC_WORKER"
        "=0`); worker = the same jail, kept warm (`tools/compiler/nvrtc_pool.py`).", "",
        "| measure | one-shot child | warm worker |", "|---|---|---|",
        f"| per compile, median | {res['one_shot_ms']:.0f} ms | {res['worker_ms']:.0f} ms |",
        f"| per compile, mean | {res['one_shot_mean_ms']:.0f} ms | {res['worker_mean_ms']:.0f} ms |",
        f"| ratio of the medians | | {res['ratio']:.1f}x faster |",
        f"| first compile (worker start-up included) | | {res['first_worker_ms']:.0f} ms |",
        f"| failed compiles (either mode) | {res['failures']} | |", "",
    ])


def write_subsection(title: str, body: str) -> None:
    """Replace (or add, at the end of the Compilation section) one ``###`` subsection."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n## Compilation\n\n"
    own = re.compile(rf"^### {re.escape(title)}\n.*?(?=^### |^## |\Z)", re.S | re.M)
    if own.search(text):
        text = own.sub(lambda _: body + "\n", text)
    else:
        end = re.compile(r"^## Compilation\n.*?(?=^## |\Z)", re.S | re.M).search(text)
        at = end.end() if end else len(text)
        text = text[:at].rstrip("\n") + "\n\n" + body + "\n" + text[at:]
    RESULTS.write_text(text)


def write_section(section: str) -> None:
    """Replace (or add) the Compilation section of RESULTS.md, leaving other sections (and the
    section's own ``###`` subsections) alone."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    pattern = re.compile(r"^## Compilation\n.*?(?=^### |^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else \
        text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text)


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--hits", type=int, default=20)
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    parser.add_argument("--warm-worker", type=int, nargs="?", const=20, default=None,
                        metavar="N", help="one-shot child vs warm worker on N programs")
    args = parser.parse_args()
    if args.warm_worker is not None:
        warm = run_warm_worker(args.arch, args.warm_worker)
        body = render_warm_worker(warm)
        print(body)
        if args.write:
            write_subsection("Warm NVRTC worker", body)
        return
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
