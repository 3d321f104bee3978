"""Cross-check the CPU emulator's profile counters against Nsight Compute on the sample corpus.

For every corpus program (or those of ``--tasks``), at the task's sizes and with the same
seeded inputs: the emulator's counters (``tools/verify/profile.py``) beside ncu's, read on the
GPU in our counter names (``tools/verify/ncu.py``). Per counter: both values, ncu / emulator
and whether they agree within the counter's band (``ncu.MAPPING``: launch shape and barriers
exact, memory requests/sectors/wavefronts 10 %, fp operations 25 %, branches and warp
collectives a factor 2). Compared on each program's totals; per-kernel detail in the rows.

Writes one JSON file. Exit code: 2 without a GPU or without ncu (with the reason), 1 when a
program could not be profiled on either side or a launch-shape counter disagrees (plumbing,
not an approximation), else 0: disagreements of the other counters are the result, not a
failure. Programs are taken references first, so a ``--budget-s`` cut keeps breadth.

Not yet run on a GPU (docs/EMULATOR.md, "Cross-check with Nsight Compute").

    python bench/cross_check_ncu.py --tasks saxpy,transpose --out bench/results/ncu_crosscheck.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from structcover.config import VerifySettings
from structcover.schema import TaskSpec
from structcover.tools.data.corpus import CorpusProgram, load_corpus
from structcover.tools.verify import ncu as ncu_mod
from structcover.tools.verify.gpu_runner import GpuBackend
from structcover.tools.verify.jail import set_allow_unsandboxed
from structcover.tools.verify.profile import ProfileError, profile_program


def _selected(tasks: set[str] | None, references_only: bool) -> list[tuple[TaskSpec, CorpusProgram]]:
    """(task, program) pairs to check: references of every task first, then the variants."""
    pairs = []
    for family in load_corpus():
        for spec in family.tasks:
            if tasks and spec.task_id not in tasks and family.name not in tasks:
                continue
            programs = [family.reference] if references_only else family.programs
            pairs += [(spec, prog) for prog in programs]
    return sorted(pairs, key=lambda p: not p[1].is_reference)


def _check(spec: TaskSpec, prog: CorpusProgram, seed: int, settings: VerifySettings,
           timeout_s: float, query: bool = True) -> dict[str, Any]:
    """One program: both profiles, compared on totals and per kernel."""
    row: dict[str, Any] = {"task": spec.task_id, "program": prog.name, "sizes": spec.sizes}
    try:
        emu = profile_program(prog.source, spec, seed=seed, settings=settings, timeout_s=timeout_s)
    except ProfileError as exc:
        return {**row, "status": "emulator-error", "why": str(exc)}
    try:
        gpu = ncu_mod.profile_with_ncu(prog.source, spec, seed=seed,
                                       cache_dir=settings.cache_dir / "gpu", timeout_s=timeout_s,
                                       query=query)
    except ncu_mod.NcuError as exc:
        return {**row, "status": "ncu-error", "why": str(exc)}
    emu_kernels = ncu_mod.emulator_by_base(emu.kernels)
    row.update(status="ok", dropped_metrics=gpu.dropped_metrics,
               total=ncu_mod.compare_counters(ncu_mod.emulator_side(emu.total), gpu.total),
               kernels={k: ncu_mod.compare_counters(emu_kernels[k], gpu.kernels[k])
                        for k in emu_kernels if k in gpu.kernels},
               only_emulator=sorted(set(emu_kernels) - set(gpu.kernels)),
               only_ncu=sorted(set(gpu.kernels) - set(emu_kernels)))
    return row


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per counter over the programs' totals: compared, agreeing, exact, band, ratios."""
    per: dict[str, dict[str, Any]] = {}
    for row in rows:
        for counter, cmp in row.get("total", {}).items():
            if cmp["agree"] is None:
                continue
            s = per.setdefault(counter, {"compared": 0, "agree": 0, "exact": 0,
                                         "tolerance": cmp["tolerance"], "ratios": []})
            s["compared"] += 1
            s["agree"] += bool(cmp["agree"])
            s["exact"] += bool(cmp["exact"])
            if cmp["ratio"] is not None:
                s["ratios"].append(round(cmp["ratio"], 4))
    for s in per.values():
        ratios = sorted(s.pop("ratios"))
        s["ratio_min"], s["ratio_max"] = (ratios[0], ratios[-1]) if ratios else (None, None)
    return {"programs": len(rows), "ok": sum(r["status"] == "ok" for r in rows),
            "failed": [f"{r['task']}/{r['program']}: {r['status']}" for r in rows
                       if r["status"] not in ("ok", "skipped")],
            "skipped": sum(r["status"] == "skipped" for r in rows),
            "agreeing_counters": sorted(c for c, s in per.items() if s["agree"] == s["compared"]),
            "disagreeing_counters": sorted(c for c, s in per.items() if s["agree"] < s["compared"]),
            "counters": per}


def _shape_disagreements(rows: list[dict[str, Any]]) -> list[str]:
    return [f"{r['task']}/{r['program']}: {c}" for r in rows for c, cmp in r.get("total", {}).items()
            if c in ncu_mod.SHAPE_COUNTERS and cmp["agree"] is False]


def _unavailable(settings: VerifySettings) -> str | None:
    """Why the check cannot run here (no GPU, no ncu), or None."""
    gpu_ok, gpu_why = GpuBackend(settings, trials=0).available()
    if not gpu_ok:
        return f"gpu backend unavailable: {gpu_why}"
    ncu_ok, ncu_why = ncu_mod.ncu_available()
    return None if ncu_ok else f"ncu unavailable: {ncu_why}"


def main(argv: list[str] | None = None) -> int:
    """Run the cross-check; see the module docstring."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/ncu_crosscheck.json"))
    parser.add_argument("--tasks", default="", help="comma-separated task ids or family names")
    parser.add_argument("--references-only", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=120.0, help="per profile run")
    parser.add_argument("--budget-s", type=float, default=0.0,
                        help="start no program after this many seconds (0 = no limit)")
    parser.add_argument("--no-query-metrics", action="store_true",
                        help="request every mapped metric, even those `ncu --query-metrics` does not list")
    parser.add_argument("--allow-unsandboxed", action="store_true",
                        help="emulator runs without the jail where bwrap is missing (the corpus is ours)")
    args = parser.parse_args(argv)
    settings = VerifySettings(timeout_s=args.timeout_s)
    why = _unavailable(settings)
    if why:
        print(f"cross_check_ncu: {why}", file=sys.stderr)
        return 2
    if args.allow_unsandboxed:
        set_allow_unsandboxed(True)
    tasks = {t.strip() for t in args.tasks.split(",") if t.strip()} or None
    rows, start = [], time.monotonic()
    for spec, prog in _selected(tasks, args.references_only):
        if args.budget_s and time.monotonic() - start > args.budget_s:
            rows.append({"task": spec.task_id, "program": prog.name, "status": "skipped",
                         "why": f"budget of {args.budget_s:g} s spent"})
            continue
        row = _check(spec, prog, args.seed, settings, args.timeout_s, not args.no_query_metrics)
        rows.append(row)
        off = [c for c, cmp in row.get("total", {}).items() if cmp["agree"] is False]
        print(f"{spec.task_id}/{prog.name}: {row['status']} {row.get('why', '')[:200]}"
              f"{' disagree: ' + ','.join(off) if off else ''}", file=sys.stderr)
    summary = {**_summary(rows), "shape_disagreements": _shape_disagreements(rows),
               "seconds": round(time.monotonic() - start, 1), "host": platform.node(),
               "ncu": ncu_mod.ncu_available()[1], "unmapped": ncu_mod.UNMAPPED}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("counters", "unmapped")}))
    return 1 if summary["failed"] or summary["shape_disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main())
