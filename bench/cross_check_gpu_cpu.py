"""Cross-check the CPU emulator against a real GPU on the whole sample corpus.

For every task and every program (reference and variants), run it on both backends with the
same seeded inputs and compare the outputs with the task's tolerances; also verify every
variant against its reference on the GPU. Writes one JSON file; exit code 1 if any program
disagrees between the backends. Needs a GPU (exits 2 with the reason without one).

    python bench/cross_check_gpu_cpu.py --out bench/results/gpu_cpu_crosscheck.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from structcover.config import VerifySettings
from structcover.tools.data.corpus import load_corpus
from structcover.tools.verify.compare import compare_output
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence
from structcover.tools.verify.gpu_runner import GpuBackend
from structcover.tools.verify.inputs import make_inputs
from structcover.tools.verify.select import CpuBackend


def _agree(spec, cpu, gpu) -> tuple[bool, str]:  # noqa: ANN001
    if cpu.status != "ok" or gpu.status != "ok":
        return cpu.status == gpu.status, f"cpu {cpu.status}, gpu {gpu.status}"
    for arg in spec.tensors:
        if arg.role == "input":
            continue
        atol, rtol = spec.tolerance(arg.dtype)
        cmp = compare_output(arg.name, cpu.outputs[arg.name], gpu.outputs[arg.name], arg.dtype,
                             atol, rtol)
        if not cmp.ok:
            return False, cmp.detail
    return True, ""


def main() -> int:
    """Run the cross-check; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/gpu_cpu_crosscheck.json"))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--trials", type=int, default=2, help="equivalence trials on the GPU")
    args = parser.parse_args()
    settings = VerifySettings(timeout_s=120.0)
    gpu, cpu = GpuBackend(settings, trials=0), CpuBackend(settings)
    for backend in (gpu, cpu):
        ok, why = backend.available()
        if not ok:
            print(f"{backend.name} backend unavailable: {why}", file=sys.stderr)
            return 2
    rows, start = [], time.monotonic()
    cache = ReferenceCache()
    for family in load_corpus():
        for spec in family.tasks:
            inputs = make_inputs(spec, args.seed)
            for prog in family.programs:
                cpu_res = cpu.run(prog.source, spec, {k: v.copy() for k, v in inputs.items()})
                gpu_res = gpu.run(prog.source, spec, {k: v.copy() for k, v in inputs.items()})
                agree, why = _agree(spec, cpu_res, gpu_res)
                row = {"task": spec.task_id, "program": prog.name, "cpu_gpu_agree": agree,
                       "why": why, "cpu_status": cpu_res.status, "gpu_status": gpu_res.status}
                if not prog.is_reference:
                    v = check_equivalence(prog.source, family.reference.source, spec, backend=gpu,
                                          cache=cache, trials=args.trials, seed=args.seed,
                                          settings=settings)
                    row.update(gpu_equivalent=v.equivalent, gpu_failure=v.failure,
                               gpu_max_abs_error=v.max_abs_error)
                rows.append(row)
                print(f"{spec.task_id}/{prog.name}: agree={agree} {why}", file=sys.stderr)
    summary = {"programs": len(rows), "agree": sum(r["cpu_gpu_agree"] for r in rows),
               "gpu_equivalent": sum(r.get("gpu_equivalent") is True for r in rows),
               "variants": sum("gpu_equivalent" in r for r in rows),
               "seconds": round(time.monotonic() - start, 1), "host": platform.node()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2))
    print(json.dumps(summary))
    return 0 if summary["agree"] == summary["programs"] else 1


if __name__ == "__main__":
    sys.exit(main())
