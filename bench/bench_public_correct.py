"""Public correct KernelBench CUDA solutions on the CPU path (issue 27, point 6).

Reads ``<data>/manifest.json`` (written by the fetch step; a committed copy without code is
``bench/data/kernelbench_l1/leaderboard_manifest.json``): public KernelBench level-1 ``ModelNew``
files with ``load_inline`` CUDA that the KernelBench leaderboard judged correct on a GPU. Each
``<data>/solutions/<file>`` is verified with ``verify_kernelbench(text, problem, backend="cpu")``
against ``<problems>/<problem>.py``. Prints and writes (``--out``, JSON) the equivalent fraction
per split, every rejection with its failure kind and detail, and the wall time per verification.

The split is the manifest's (``dev`` / ``heldout``, fixed by sha1 of the problem name before any
run). Run ``--split dev`` while fixing the verifier and ``--split heldout`` once at the end.

    python bench/bench_public_correct.py --split dev --out /tmp/kbl_dev.json
    python bench/bench_public_correct.py --split heldout --out /tmp/kbl_heldout.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from structcover.tools.kernelbench.problem import resolve_problem
from structcover.tools.kernelbench.verify import verify_kernelbench

DATA = Path("/work/public_data/kbl")
PROBLEMS = Path(__file__).parent / "data" / "kernelbench_l1" / "problems"


def load_manifest(data: Path) -> list[dict[str, Any]]:
    """The manifest's solution rows (``file``, ``problem``, ``model``, ``split``, ...)."""
    doc = json.loads((data / "manifest.json").read_text())
    rows: list[dict[str, Any]] = doc["solutions"] if isinstance(doc, dict) else doc
    return rows


def verify_one(row: dict[str, Any], data: Path, problems: Path, seed: int) -> dict[str, Any]:
    """One solution's verdict as a JSON-able record (with the wall time it took)."""
    text = (data / "solutions" / row["file"]).read_text()
    problem = resolve_problem(problems / f"{row['problem']}.py")
    t0 = time.monotonic()
    verdict = verify_kernelbench(text, problem, backend="cpu", seed=seed)
    wall = time.monotonic() - t0
    return {"file": row["file"], "problem": row["problem"], "model": row["model"],
            "split": row["split"], "equivalent": verdict.equivalent,
            "failure": verdict.failure, "detail": verdict.detail[:600],
            "max_abs_error": verdict.max_abs_error, "max_rel_error": verdict.max_rel_error,
            "precision_ratio": verdict.precision_ratio,
            "notes": verdict.notes, "wall_s": round(wall, 2)}


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Equivalent fraction per split, failures by kind and wall statistics."""
    out: dict[str, Any] = {}
    for split in sorted({r["split"] for r in records}):
        rs = [r for r in records if r["split"] == split]
        walls = [r["wall_s"] for r in rs]
        out[split] = {
            "n": len(rs), "equivalent": sum(1 for r in rs if r["equivalent"] is True),
            "fraction": round(sum(1 for r in rs if r["equivalent"] is True) / len(rs), 4),
            "failures": dict(Counter(r["failure"] or "wrong" for r in rs
                                     if r["equivalent"] is not True)),
            "wall_median_s": round(statistics.median(walls), 2),
            "wall_max_s": max(walls), "wall_total_s": round(sum(walls), 1)}
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; the exit status is 0 whatever the verdicts (it measures)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--problems", type=Path, default=PROBLEMS)
    ap.add_argument("--split", choices=["dev", "heldout", "all"], default="dev")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--limit", type=int, help="verify at most this many solutions")
    ap.add_argument("--only", nargs="*", help="only these files or problems")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = [r for r in load_manifest(args.data) if args.split in ("all", r["split"])]
    if args.only:
        rows = [r for r in rows if r["file"] in args.only or r["problem"] in args.only
                or r["file"].removesuffix(".py") in args.only]
    rows = rows[:args.limit] if args.limit else rows
    records: list[dict[str, Any]] = []
    for i, row in enumerate(rows, 1):
        rec = verify_one(row, args.data, args.problems, args.seed)
        records.append(rec)
        mark = "ok" if rec["equivalent"] is True else f"{rec['failure']}: {rec['detail'][:200]}"
        if rec["precision_ratio"] is not None:
            mark += f" (precision ratio {rec['precision_ratio']:.2f})"
        print(f"[{i}/{len(rows)}] {rec['problem']} {rec['file']} ({rec['model']}) "
              f"{rec['wall_s']}s {mark}", flush=True)
        if args.out:  # written as it goes, so a long run can be polled
            args.out.write_text(json.dumps({"records": records,
                                            "summary": summarise(records)}, indent=1))
    if records:
        print(json.dumps(summarise(records), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
