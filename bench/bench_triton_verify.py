"""Triton on the CPU: verify_kernelbench(backend="cpu") over bench/data/triton_kb.

Every ``solutions/<problem>__<tag>.py`` is verified against ``problems/<problem>.py`` (Triton's
interpreter in the jailed child, the CPU path's work budget). Prints and writes
(``--out``, JSON) the equivalent fraction per split (``dev`` / ``held-out``, fixed below before
any verifier fix was made for them), the failures by kind with their details, and the wall time
per verification.

    python bench/bench_triton_verify.py [--out bench/triton_verify.json] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from structcover.tools.kernelbench.problem import resolve_problem
from structcover.tools.kernelbench.verify import verify_kernelbench

DATA = Path(__file__).parent / "data" / "triton_kb"
#: Problems whose solutions form the held-out split (chosen before running the verifier on them).
HELD_OUT = frozenset({"21_Sigmoid", "5_Matrix_scalar_multiplication"})


def main() -> int:
    """Run every solution, print the summary, write the JSON; exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for sol in sorted((DATA / "solutions").glob("*.py")):
        name = sol.stem.rsplit("__", 1)[0]
        problem = resolve_problem(str(DATA / "problems" / f"{name}.py"))
        start = time.perf_counter()
        verdict = verify_kernelbench(sol.read_text(), problem, backend="cpu", seed=args.seed)
        wall = time.perf_counter() - start
        rows.append({"solution": sol.name, "problem": name,
                     "split": "held-out" if name in HELD_OUT else "dev",
                     "equivalent": verdict.equivalent, "failure": verdict.failure,
                     "detail": verdict.detail[:300], "wall_s": round(wall, 1),
                     "flags": verdict.hacking_flags})
        print(f"{sol.name:45s} {rows[-1]['split']:8s} eq={verdict.equivalent} "
              f"{verdict.failure or ''} {wall:.1f}s {verdict.detail[:120]}", flush=True)
    summary = {}
    for split in ("dev", "held-out", "all"):
        part = [r for r in rows if split in ("all", r["split"])]
        if not part:
            continue
        eq = sum(r["equivalent"] is True for r in part)
        summary[split] = {"solutions": len(part), "problems": len({r["problem"] for r in part}),
                          "equivalent": eq, "fraction": round(eq / len(part), 3),
                          "failures": dict(Counter(r["failure"] for r in part if r["failure"])),
                          "median_wall_s": round(statistics.median(r["wall_s"] for r in part), 1),
                          "max_wall_s": max(r["wall_s"] for r in part)}
        print(f"{split}: {eq}/{len(part)} equivalent ({summary[split]['fraction']:.0%}), "
              f"failures {summary[split]['failures']}, median {summary[split]['median_wall_s']} s")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
