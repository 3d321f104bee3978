"""The benchmark suite in one command: ``python bench/run_all.py [--quick] [--only NAME ...]``.

Runs each benchmark of ``bench/`` (each stays runnable alone) and the executor scaling
measurement, prints every figure with the machine it ran on, and rewrites the
"Benchmark suite" section of ``bench/RESULTS.md``. Without ``--quick`` the compile and emulator
benchmarks also rewrite their own sections (``--write``); ``--quick`` runs smaller sizes and
leaves those sections alone.

Benchmarks (ratios are measured within one run, so machine load shifts both sides alike):

* ``features``: feature extraction per program vs a bare tree-sitter parse (bench_features).
* ``compile``: NVRTC vs nvcc per kernel, cache-hit latency (bench_compile; needs nvcc).
* ``emulator``: CPU-emulator kernels vs the same loop in serial C (bench_emulator).
* ``discovery`` / ``diagnosis``: 1 M rows (``--quick``: 100 k) (bench_discovery/diagnosis).
* ``campaign``: the offline demo's campaign end to end (verified candidates per minute).
* ``scaling``: the same extraction on 1 and 2 local workers and on a 2-CPU local Ray cluster;
  efficiency = t1 / (2 * t2). Run last, with the load average beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "RESULTS.md"
SECTION = "## Benchmark suite (bench/run_all.py)"


def machine() -> str:
    """CPU model, cores, Python and the load average now."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {load()}")


def load() -> str:
    """The 1/5/15-minute load averages."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def run_script(args: list[str], timeout: float) -> tuple[int, str, float]:
    """Run one bench script; return its exit status, output and wall time."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=BENCH.parent)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = 124, f"timed out after {timeout:.0f} s\n{exc.stdout or ''}"
    return rc, out, time.perf_counter() - t0


def _script(name: str, full: list[str], quick: list[str]) -> Callable[[bool], dict[str, str]]:
    def bench(is_quick: bool) -> dict[str, str]:
        rc, out, wall = run_script([str(BENCH / name), *(quick if is_quick else full)],
                                   timeout=1800)
        status = "ok" if rc == 0 else ("skipped" if rc == 2 else f"failed (exit {rc})")
        return {"status": status, "wall": f"{wall:.0f} s", "figures": _figures(out)}
    return bench


def _figures(out: str) -> str:
    """The figures a script printed: a JSON summary flattened, else its last lines."""
    start = out.find("{")
    if start >= 0:
        try:
            data = json.loads(out[start:out.rfind("}") + 1])
            return ", ".join(f"{k} {v}" for k, v in data.items())
        except ValueError:
            pass
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    return " / ".join(lines[-6:])


def campaign(is_quick: bool) -> dict[str, str]:
    """The offline demo end to end; verified candidates per minute of its campaign."""
    budget = "6" if is_quick else "48"
    with tempfile.TemporaryDirectory() as tmp:
        args = ["-c", "import sys; from structcover.cli import main; sys.exit(main())",
                "demo", "-o", tmp, "--skip-verify", "--json", "--budget", budget, "--rounds", "2"]
        if is_quick:  # two families whose open bins the offline mutations can reach
            args += ["--family", "softmax", "--family", "vector_add"]
        rc, out, wall = run_script(args, timeout=1800)
    if rc != 0:
        return {"status": f"failed (exit {rc})", "wall": f"{wall:.0f} s",
                "figures": " / ".join(out.strip().splitlines()[-3:])}
    start = out.find("{")
    summary = json.loads(out[start:]) if start >= 0 else {}
    camp = summary.get("campaign") or {}
    verified, tried = camp.get("verified", 0), camp.get("candidates", 0)
    return {"status": "ok", "wall": f"{wall:.0f} s",
            "figures": (f"{tried} candidates tried, {verified} verified, "
                        f"{len(camp.get('added', []))} added, SCov "
                        f"{camp.get('scov_before', 0):.3f} -> {camp.get('scov_after', 0):.3f}; "
                        f"{60 * verified / wall:.1f} verified candidates per minute of the "
                        f"whole demo (corpus load, simulated rounds, campaign; no LLM)")}


def scaling(is_quick: bool) -> dict[str, str]:
    """The same extraction on 1 and 2 local workers and on a 2-CPU local Ray cluster."""
    sys.path.insert(0, str(BENCH.parent))
    from structcover.tools.executors import LocalExecutor
    from structcover.tools.features.extract import extract_table

    root = BENCH.parent / "structcover" / "corpus"
    # Typical 2-4 KB programs (corpus files joined family by family, as bench_features does):
    # the work per program must dominate the driver's per-program cost (send, receive, row),
    # or one worker plus the driver already use both cores of a 2-core machine.
    sources: list[str] = []
    for family in sorted(p for p in root.iterdir() if p.is_dir()):
        text = ""
        for path in sorted(family.rglob("*.cu")):
            text += path.read_text() + "\n"
            if len(text) >= 2048:
                sources.append(text)
                text = ""
    n = 1500 if is_quick else 4000
    # Distinct programs (every content hash differs), cache off: every row is computed.
    programs = [(str(i), f"// variant {i}\n{sources[i % len(sources)]}") for i in range(n)]
    before = load()

    def timed(executor: object) -> float:
        t0 = time.perf_counter()
        table = extract_table(programs, chunksize=32, executor=executor)  # type: ignore[arg-type]
        assert len(table) == n
        return time.perf_counter() - t0

    with LocalExecutor(1) as one:
        t1 = timed(one)
    with LocalExecutor(2) as two:
        t2 = timed(two)
    ray_note = "ray not installed"
    try:
        from structcover.tools.executors.ray_exec import RayExecutor

        with RayExecutor(num_cpus=2) as ray_ex:
            timed(ray_ex)  # warm: worker start-up and imports are not extraction
            tr = timed(ray_ex)
        ray_note = (f"Ray (2 CPUs, warm) {tr:.1f} s, efficiency vs 1 local worker "
                    f"{t1 / (2 * tr):.0%}")
    except ImportError:
        pass
    after = load()
    eff = t1 / (2 * t2)
    return {"status": "ok", "wall": f"{t1 + t2:.0f} s",
            "figures": (f"{n} programs of 2-4 KB: 1 worker {t1:.1f} s ({n / t1:.0f}/s), 2 workers "
                        f"{t2:.1f} s ({n / t2:.0f}/s), efficiency t1/(2 t2) = {eff:.0%} "
                        f"(target >= 80%: {'met' if eff >= 0.8 else 'NOT met'}); {ray_note}; "
                        f"load average before {before}, after {after}")}


def benches(is_quick: bool) -> dict[str, Callable[[bool], dict[str, str]]]:
    write = [] if is_quick else ["--write"]
    rows = "100000" if is_quick else "1000000"
    return {
        "features": _script("bench_features.py", ["--n", "0", "--rounds", "11"],
                            ["--n", "0", "--rounds", "3"]),
        "compile": _script("bench_compile.py", ["--hits", "20", *write], ["--hits", "3"]),
        "emulator": _script("bench_emulator.py", ["--repeat", "5", *write], ["--repeat", "2"]),
        "discovery": _script("bench_discovery.py", ["--rows", rows], ["--rows", rows,
                                                                      "--bootstrap", "5"]),
        "diagnosis": _script("bench_diagnosis.py", ["--rows", rows], ["--rows", rows]),
        "campaign": campaign,
        "scaling": scaling,  # last: it needs the machine's cores to itself
    }


def write_section(results: dict[str, dict[str, str]], is_quick: bool) -> None:
    """Replace (or append) the suite's section of bench/RESULTS.md.

    Rows of benchmarks not run this time (``--only``) are kept; each row says when and how it
    was measured.
    """
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    how = f"`run_all.py{' --quick' if is_quick else ''}` {when}"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    rows: dict[str, str] = {}
    if SECTION in text:
        old = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
        for line in old.splitlines():
            cells = line.split(" | ")
            if line.startswith("| ") and len(cells) >= 5 and cells[0][2:] not in (
                    "benchmark", "---"):
                rows[cells[0][2:]] = line
    for name, r in results.items():
        figures = r["figures"].replace("|", "\\|")
        rows[name] = (f"| {name} | {how} | {r['status']} | {r['wall']} | {figures}; "
                      f"machine: {r.get('machine') or machine()} |")
    lines = [SECTION, "",
             "Each row: the benchmark, when and how it ran, status, wall time, its figures and "
             "the machine (with the load average at the end of the benchmark).", "",
             "| benchmark | run | status | wall | figures |", "|---|---|---|---|---|",
             *rows.values()]
    block = "\n".join(lines) + "\n"
    pattern = re.compile(re.escape(SECTION) + r".*?(?=\n## |\Z)", re.S)
    text = pattern.sub(lambda _: block.rstrip("\n"), text) if SECTION in text else \
        text.rstrip("\n") + "\n\n" + block
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (minutes, not hours)")
    parser.add_argument("--only", nargs="*", default=None, help="run only these benchmarks")
    parser.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()
    suite = benches(args.quick)
    unknown = set(args.only or []) - set(suite)
    if unknown:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; choose from {sorted(suite)}")
    print(f"machine: {machine()}", flush=True)
    results: dict[str, dict[str, str]] = {}
    for name, bench in suite.items():
        if args.only is not None and name not in args.only:
            continue
        results[name] = bench(args.quick)
        results[name]["machine"] = machine()
        print(f"[{name}] {results[name]['status']} ({results[name]['wall']}): "
              f"{results[name]['figures']}", flush=True)
    if not args.no_write:
        write_section(results, args.quick)
    return 0 if all(r["status"] in ("ok", "skipped") for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
