"""Benchmark: does structure fit on our ladders rank public ladders? (issue 12, out of sample)

Our four ladders (``tests/data/ladders``) were written with the features in view, so their
ranking says little about real code. This script scores two public ladders by people who
never saw the extractor, with a model fit on our ladders only:

* SGEMM: the kernels of a checkout of https://github.com/siboehm/SGEMM_CUDA, each with its
  launcher from ``src/runner.cu`` (the launcher fixes the template arguments), labelled by
  the GFLOP/s table in that checkout's README.
* Reduction: ``reduce0`` … ``reduce6`` of the CUDA samples' ``reduction_kernel.cu`` (the
  steps of Harris's "Optimizing Parallel Reduction in CUDA"), each with a launcher,
  labelled by the ladder order (each step is the faster one in that write-up).

Neither source ships with this repository; point the script at your own copies::

    python bench/bench_public_ladders.py --sgemm PATH/SGEMM_CUDA \\
        --reduction PATH/cuda-samples/Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu

It prints, per ladder and pooled, the within-ladder pairwise accuracy of code length and of
fixed feature sets, each fit (ridge, features standardized within ladder) on our four
ladders and scored on the public ones.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import Ridge

from structcover.tools.features.extract import extract_values
from structcover.tools.mining import table as T
from structcover.tools.mining.predictors import PredictorSpec, design

LADDERS = Path(__file__).parents[1] / "tests" / "data" / "ladders"
#: Kernel number -> the launcher in src/runner.cu that instantiates it.
SGEMM_LAUNCHERS = {1: "run_sgemm_naive", 2: "run_sgemm_coalesce",
                   3: "run_sgemm_shared_mem_block", 4: "runSgemm1DBlocktiling",
                   5: "runSgemm2DBlocktiling", 6: "runSgemmVectorize",
                   7: "runSgemmResolveBankConflicts", 8: "runSgemmResolveBankExtraCol",
                   9: "runSgemmAutotuned", 10: "runSgemmWarptiling"}
#: reduceN -> its instantiation (block size 256; reduce6 with a power-of-two n).
REDUCE_INSTANCES = {0: "reduce0<float>", 1: "reduce1<float>", 2: "reduce2<float>",
                    3: "reduce3<float>", 4: "reduce4<float, 256>", 5: "reduce5<float, 256>",
                    6: "reduce6<float, 256, true>"}
FEATURE_SETS = {"F* (opt.refinements, pattern.reuse, kernel.device_functions)":
                ["opt.refinements", "pattern.reuse", "kernel.device_functions"],
                "patterns only (reuse, access, vector width, sync)":
                ["pattern.reuse", "pattern.global_access", "pattern.vector_width",
                 "pattern.sync"]}


def _function(lines: list[str], start: int) -> str:
    """Lines from ``start`` to the first line that is a lone closing brace."""
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip() == "}")
    return "\n".join(lines[start:end + 1])


def sgemm_rows(root: Path) -> list[dict]:
    """Each kernel with its launcher, labelled by the README's GFLOP/s."""
    runner = (root / "src" / "runner.cu").read_text().splitlines()
    readme = (root / "README.md").read_text()
    gflops = {int(m.group(1)): float(m.group(2))
              for m in re.finditer(r"^\|\s*(\d+):[^|]*\|\s*([\d.]+)\s*\|", readme, re.M)}
    rows = []
    for path in sorted((root / "src" / "kernels").glob("*.cuh")):
        number = int(path.name.split("_", 1)[0])
        launcher = SGEMM_LAUNCHERS.get(number)
        if launcher is None or number not in gflops:
            continue
        start = next(i for i, line in enumerate(runner) if line.startswith(f"void {launcher}("))
        text = (path.read_text() + "\n\n#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))\n"
                + _function(runner, start) + "\n")
        rows.append({"task_id": "public/sgemm", "program_id": path.stem, "program": text,
                     "speedup": gflops[number]})
    return rows


def reduction_rows(path: Path) -> list[dict]:
    """reduce0..reduce6 with the file's shared helpers and a launcher, labelled by order."""
    text = path.read_text()
    lines = text.splitlines()
    kernel_starts = {int(m.group(1)): text[:m.start()].count("\n") - 1
                     for m in re.finditer(r"^__global__ void reduce(\d)\(", text, re.M)}
    helpers_end = min(kernel_starts.values()) - 1
    # From the first #include: the includes, ``namespace cg = cooperative_groups;`` (the
    # barriers are cg::sync) and the helpers every kernel shares.
    top = next(i for i, line in enumerate(lines) if line.startswith("#include"))
    helpers = "\n".join(lines[top:helpers_end])
    rows = []
    for step, inst in REDUCE_INSTANCES.items():
        start = kernel_starts[step]
        while not lines[start].startswith("template"):
            start -= 1
        blocks = "64" if step == 6 else "(n + 255) / 256" if step < 3 else "(n + 511) / 512"
        program = (helpers + "\n\n" + _function(lines, start)
                   + f"\n\nvoid launch(float* in, float* out, unsigned int n) {{\n"
                     f"  {inst}<<<{blocks}, 256, 256 * sizeof(float)>>>(in, out, n);\n}}\n")
        rows.append({"task_id": "public/reduction", "program_id": f"reduce{step}",
                     "program": program, "speedup": 1.5 ** step})
    return rows


def our_ladders() -> list[dict]:
    """Our four ladders, labelled by their order."""
    return [{"task_id": ladder.name, "program_id": f"{ladder.name}/{p.stem}",
             "program": p.read_text(), "speedup": 1.5 ** i}
            for ladder in sorted(LADDERS.iterdir()) if ladder.is_dir()
            for i, p in enumerate(sorted(ladder.glob("[0-9][0-9]_*.cu")))]


def pair_accuracy(frame: pd.DataFrame, scores: np.ndarray, task: str) -> tuple[float, int]:
    """Correct pairs (ties half) and pairs, within one ladder."""
    idx = np.flatnonzero((frame["task_id"] == task).to_numpy())
    credit = 0.0
    pairs = list(itertools.combinations(idx, 2))
    for a, b in pairs:
        d = frame["speedup"].iat[a] - frame["speedup"].iat[b]
        s = scores[a] - scores[b]
        credit += 1.0 if d * s > 0 else 0.5 if s == 0 else 0.0
    return credit, len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sgemm", type=Path, help="checkout of siboehm/SGEMM_CUDA")
    ap.add_argument("--reduction", type=Path, help="the CUDA samples' reduction_kernel.cu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    public = (sgemm_rows(args.sgemm) if args.sgemm else []) + (
        reduction_rows(args.reduction) if args.reduction else [])
    if not public:
        sys.exit("give --sgemm and/or --reduction (see the module docstring)")
    frame = pd.DataFrame(our_ladders() + public)
    frame = pd.concat([frame, pd.DataFrame([extract_values(s) for s in frame["program"]])],
                      axis=1)
    groups = T.group_codes(frame, ["task_id"])
    train = ~frame["task_id"].str.startswith("public/").to_numpy()
    target = T.zscore_within(np.log(frame["speedup"].to_numpy(float)), groups)
    specs = [PredictorSpec("length", baselines=["length"])] + [
        PredictorSpec(name, columns=cols) for name, cols in FEATURE_SETS.items()]
    tasks = sorted({r["task_id"] for r in public})
    out = {}
    for spec in specs:
        x = design(frame, spec, spec.columns, groups)
        scores = Ridge(alpha=1.0).fit(x[train], target[train]).predict(x)
        parts = {t: pair_accuracy(frame, scores, t) for t in tasks}
        pooled = sum(c for c, _ in parts.values()) / sum(n for _, n in parts.values())
        out[spec.name] = {**{t: round(c / n, 3) for t, (c, n) in parts.items()},
                          "pooled": round(pooled, 3),
                          "pairs": sum(n for _, n in parts.values())}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for name, row in out.items():
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
