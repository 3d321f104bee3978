"""KernelBench-format candidates on a real GPU: verdicts, speedups and energy per candidate.

Runs ``verify_kernelbench(backend="gpu")`` on a sample of tests/data/kernelbench's candidates
(correct and planted wrong ones; each names its problem in ``PAIRS``; every CUDA candidate costs
one nvcc build of its extension, 30-60 s) and writes one JSON file. Exit 1 when a verdict
disagrees with its expectation (a wrong candidate may fail for another reason on a GPU: a race
shows as a mismatch, an unwritten tail as whatever the memory held). Needs torch with CUDA
(exits 2 with the reason without one).

    python bench/kernelbench_gpu.py --out bench/results/kernelbench_gpu.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "kernelbench"
#: candidate -> (problem id, expected: "pass" or the failure kinds acceptable on a GPU)
PAIRS: dict[str, tuple[str, str]] = {
    "elementwise_mul_torch.py": ("1", "pass"),
    "row_softmax_cuda.py": ("3", "pass"),
    "matmul_cuda.py": ("5", "pass"),
    "elementwise_mul_cached_py.py": ("1", "cached-output"),
    "elementwise_mul_tail.py": ("1", "mismatch|nan-mismatch|unwritten-output|magnitude-guard"),
    "row_sum_race.py": ("4", "mismatch"),
    "matmul_torch_heavy.py": ("5", "hacking"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("kernelbench_gpu: torch is not installed (pip install structcover[kernelbench])")
        return 2
    if not torch.cuda.is_available():
        print("kernelbench_gpu: no CUDA device visible to torch")
        return 2
    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench

    rows, ok = [], True
    for cand, (problem, expected) in PAIRS.items():
        start = time.monotonic()
        verdict = verify_kernelbench((DATA / "candidates" / cand).read_text(),
                                     resolve_problem(problem, DATA / "problems"), backend="gpu",
                                     seed=0)
        got = "pass" if verdict.equivalent else (verdict.failure or "none")
        agrees = got in expected.split("|") or (expected != "pass" and got != "pass"
                                                and verdict.equivalent is False)
        ok &= agrees
        rows.append({"candidate": cand, "problem": problem, "expected": expected, "got": got,
                     "agrees": agrees, "speedup": verdict.speedup, "energy_j": verdict.energy_j,
                     "median_ms": verdict.timing.median_ms if verdict.timing else None,
                     "cv": verdict.timing.cv if verdict.timing else None,
                     "detail": verdict.detail[:300], "wall_s": round(time.monotonic() - start, 1)})
        print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(0),
                                    "torch": torch.__version__, "rows": rows}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
