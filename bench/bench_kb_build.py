"""KernelBench CPU builds, light vs full, side by side: g++ wall time per extension.

Each ``load_inline`` extension of the chosen candidates is built twice, cold (a comment with a
fresh nonce makes its text new; the trusted parts -- PCHs, emulator runtime, Python module
library -- are built once before timing): once light (``shims/sc_kb_boxed.hpp``: the user's text against
``torch/types.h``, no pybind11) and once full (``torch/extension.h`` and a pybind11 module), in
alternating order, so both see the same load. Prints the median seconds of each, their ratio,
and how many extensions a light build could not take (built in full instead).

Candidates: the sample KernelBench rollouts (``tools/simulation/kernelbench_sample.py``,
committed) by default, or every ``*.py`` under ``--data`` (e.g. public leaderboard solutions).

    python bench/bench_kb_build.py [--data DIR/solutions] [--limit 12] [--json]

``--compilers clang++ g++`` times light builds only, once per compiler, alternating (each
compiler's trusted parts built first): how much clang's template-instantiating PCH saves.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from structcover.tools.kernelbench import cpu_build
from structcover.tools.kernelbench.candidate import UnresolvedInline, find_inline_extensions
from structcover.tools.kernelbench.cpu_toolchain import (
    light_pch,
    pymodule_library,
    runtime_library,
    torch_pch,
)

try:
    from structcover.tools.kernelbench.cpu_pch_code import pch_library
except ImportError:  # an older checkout, timed side by side
    pch_library = None  # type: ignore[assignment]


def _texts(data: Path | None, limit: int) -> list[str]:
    if data is None:
        import pandas as pd

        from structcover.tools.simulation.kernelbench_sample import write_sample

        rollouts, _ = write_sample(Path(tempfile.mkdtemp(prefix="bench-kb-build-")), 0)
        texts = list(dict.fromkeys(pd.read_parquet(rollouts)["program"]))
    else:
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(data.glob("*.py"))]
    return texts[:limit]


def _compilers(exts: list[Any], cache: Path, compilers: list[str]) -> dict[str, Any]:
    """Median cold light-build seconds per compiler (``STRUCTCOVER_KB_LIGHT_CXX``), alternating."""
    times: dict[str, list[float]] = {c: [] for c in compilers}
    for cxx in compilers:
        os.environ["STRUCTCOVER_KB_LIGHT_CXX"] = cxx
        _trusted(cache)
    for k, ext in enumerate(exts):
        for cxx in compilers[k % len(compilers):] + compilers[:k % len(compilers)]:
            os.environ["STRUCTCOVER_KB_LIGHT_CXX"] = cxx
            try:
                seconds, built_light = _build(ext, cache, True)
            except (cpu_build.ExtensionBuildError, cpu_build.UnsupportedConstruct):
                continue
            if built_light:
                times[cxx].append(seconds)
    os.environ.pop("STRUCTCOVER_KB_LIGHT_CXX", None)
    row: dict[str, Any] = {"extensions": len(exts)}
    for cxx, ts in times.items():
        row[f"{cxx}_light_median_s"] = round(statistics.median(ts), 2) if ts else None
        row[f"{cxx}_built"] = len(ts)
    first, *rest = compilers
    for other in rest:
        if times[first] and times[other]:
            row[f"{other}_over_{first}"] = round(statistics.median(times[other])
                                                 / statistics.median(times[first]), 2)
    return row


def _trusted(cache: Path) -> None:
    """Build the parts every extension shares, so only the user's translation unit is timed."""
    rt = runtime_library(cache)
    torch_pch(cache)
    light_pch(cache)
    light_pch(cache, device=True)
    pymodule_library(cache, rt)
    if pch_library is not None:  # absent before the device PCH's code was generated once
        pch_library(cache, rt)


def _build(ext: Any, cache: Path, light: bool) -> tuple[float, bool]:
    """One cold build of ``ext`` (a comment with a fresh nonce makes its text new)."""
    nonce = f"// bench {time.perf_counter_ns()}\n"
    fresh = ext.model_copy(update={"cpp_sources": [nonce, *ext.cpp_sources]})
    work = Path(tempfile.mkdtemp(prefix="bench-kb-work-"))
    original = cpu_build.light_possible
    if not light:
        cpu_build.light_possible = lambda _ext: False  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        cpu_build.build_cpu_extension(fresh, work, cache_dir=cache)
        seconds = time.perf_counter() - start
        info = json.loads((work / "build.json").read_text())
        built_light = bool(info["light"])
        for leftover in cache.glob(Path(info["library"]).stem + "*"):  # the nonce's entry
            leftover.unlink()
    finally:
        cpu_build.light_possible = original  # type: ignore[assignment]
        shutil.rmtree(work, ignore_errors=True)
    return seconds, built_light


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a folder of KernelBench candidate .py files")
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--compilers", nargs="+", help="time light builds by each of these")
    args = parser.parse_args()
    from structcover.config import load_settings

    cache = Path(load_settings().verify.cache_dir)
    exts = []
    for text in _texts(args.data, args.limit):
        try:
            exts += find_inline_extensions(text)
        except (UnresolvedInline, SyntaxError):
            continue
    if args.compilers:
        row = _compilers(exts, cache, args.compilers)
        row["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
        row["load_average"] = [round(x, 1) for x in os.getloadavg()]
        print(json.dumps(row) if args.json else "\n".join(f"{k:24s} {v}" for k, v in row.items()))
        return
    _trusted(cache)
    light_s, full_s, fell_back = [], [], 0
    for k, ext in enumerate(exts):
        order = (True, False) if k % 2 == 0 else (False, True)
        for light in order:
            try:
                seconds, built_light = _build(ext, cache, light)
            except (cpu_build.ExtensionBuildError, cpu_build.UnsupportedConstruct):
                break
            if light:
                light_s.append(seconds)
                fell_back += not built_light
            else:
                full_s.append(seconds)
    row = {"extensions": len(exts), "built": len(light_s),
           "light_median_s": round(statistics.median(light_s), 2) if light_s else None,
           "full_median_s": round(statistics.median(full_s), 2) if full_s else None,
           "full_over_light": round(statistics.median(full_s) / statistics.median(light_s), 2)
           if light_s and full_s else None,
           "light_fell_back_to_full": fell_back,
           "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
           "load_average": [round(x, 1) for x in os.getloadavg()]}
    print(json.dumps(row) if args.json else "\n".join(f"{k:24s} {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
