"""Triton on the CPU: verify_kernelbench(backend="cpu") over a folder of Triton solutions.

Every ``<data>/<problem>__<tag>.py`` is verified against ``<problem>.py``, looked up in the
``--problems`` folders in order (Triton's interpreter in the jailed child, the CPU path's work
budget). Prints and writes (``--out``, JSON) the equivalent fraction per split (``dev`` /
``held-out``), the failures by kind with their details, and the wall time per verification.

Splits: the project-written set (default ``--data``) uses the fixed ``HELD_OUT`` problems below;
any other set (``--split sha1``, the public solutions of bench/data/triton_public) puts a
problem in held-out when ``sha1(name) % 3 == 0``, a rule fixed before any run. ``--only``
runs one split (dev while fixing the verifier, held-out once at the end). ``--plant`` verifies
instead a planted off-by-one of each solution (``offsets < n_elements`` becomes ``<=``;
solutions without that mask are skipped): every one must be rejected.

    python bench/bench_triton_verify.py [--out bench/triton_verify.json] [--seed 0]
    python bench/bench_triton_verify.py --data /work/public_data/triton_l1/solutions \\
        --problems bench/data/triton_public/problems bench/data/triton_kb/problems \\
        --split sha1 --only dev --out dev.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from structcover.tools.kernelbench.problem import resolve_problem
from structcover.tools.kernelbench.verify import verify_kernelbench

DATA = Path(__file__).parent / "data" / "triton_kb"
#: Problems whose solutions form the held-out split (chosen before running the verifier on them).
HELD_OUT = frozenset({"21_Sigmoid", "5_Matrix_scalar_multiplication"})


def split_of(name: str, rule: str) -> str:
    """``held-out`` or ``dev`` for problem ``name`` under ``rule`` (``fixed`` or ``sha1``)."""
    if rule == "sha1":
        return "held-out" if int(hashlib.sha1(name.encode()).hexdigest(), 16) % 3 == 0 else "dev"
    return "held-out" if name in HELD_OUT else "dev"


#: The element-count mask of a 1-D Triton kernel (``mask = offsets < n_elements``).
_MASK = re.compile(r"\boffsets < n_elements\b")


def plant_off_by_one(source: str) -> str | None:
    """``source`` with every mask ``offsets < n_elements`` made ``<=`` (so the kernel that runs
    has it, whichever of several it launches); None without such a mask."""
    planted, count = _MASK.subn("offsets <= n_elements", source)
    return planted if count else None


def find_problem(name: str, folders: list[Path]) -> Path:
    """The first ``<folder>/<name>.py`` among ``folders``.

    Raises:
        FileNotFoundError: No folder holds the problem.
    """
    for folder in folders:
        if (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    raise FileNotFoundError(f"problem {name}.py in none of {[str(f) for f in folders]}")


def main() -> int:
    """Run every solution, print the summary, write the JSON; exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA / "solutions",
                        help="folder of <problem>__<tag>.py solutions")
    parser.add_argument("--problems", type=Path, nargs="+", default=[DATA / "problems"],
                        help="folders searched in order for <problem>.py")
    parser.add_argument("--split", choices=("fixed", "sha1"), default="fixed")
    parser.add_argument("--only", choices=("dev", "held-out"), default=None)
    parser.add_argument("--plant", action="store_true",
                        help="verify a planted off-by-one mask of each solution instead")
    args = parser.parse_args()
    rows = []
    for sol in sorted(args.data.glob("*.py")):
        name = sol.stem.rsplit("__", 1)[0]
        split = split_of(name, args.split)
        if args.only and split != args.only:
            continue
        text = sol.read_text()
        if args.plant and (text := plant_off_by_one(text)) is None:
            continue
        problem = resolve_problem(str(find_problem(name, args.problems)))
        start = time.perf_counter()
        verdict = verify_kernelbench(text, problem, backend="cpu", seed=args.seed)
        wall = time.perf_counter() - start
        rows.append({"solution": sol.name, "problem": name, "split": split,
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
