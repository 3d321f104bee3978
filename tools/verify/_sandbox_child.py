"""Child side of the sandbox: apply limits and isolation, run one job, write its results.

Run as ``python -m structcover.tools.verify._sandbox_child WORKDIR``. The parent
(``sandbox.py``) owns the timeout; this side sets rlimits, leaves the network namespace and
records in ``isolation.json`` what it could and could not isolate, *before* importing the job.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import resource
import sys
import traceback
from pathlib import Path

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000


def _unshare(flags: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) == 0:
        return 0
    return ctypes.get_errno()


def _isolate(job: dict) -> list[str]:
    notes: list[str] = []
    mem = job.get("memory_limit_mb")
    if mem:
        limit = int(mem) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        notes.append(f"memory limit {mem} MiB")
    else:
        notes.append("memory NOT limited (no RLIMIT_AS)")
    cpu = int(job.get("cpu_limit_s") or 0)
    if cpu:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        notes.append(f"cpu limit {cpu} s")
    fsize = int(job.get("file_size_mb") or 0) * 1024 * 1024
    if fsize:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if job.get("isolate_network", True):
        err = _unshare(_CLONE_NEWNET)
        if err == 0:
            notes.append("network namespace")
        elif (job.get("allow_user_namespace", True)
              and _unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0):
            notes.append("network namespace (in a user namespace)")
        else:
            notes.append(f"network NOT isolated (unshare refused: {os.strerror(err)})")
    else:
        notes.append("network NOT isolated (disabled)")
    notes.append("filesystem NOT isolated (private cwd only; host policy refuses file access)")
    return notes


def _run_meta(result) -> dict:  # noqa: ANN001 - a RunResult
    return {"status": result.status, "detail": result.detail, "backend": result.backend,
            "energy_j": result.energy_j,
            "timing": result.timing.model_dump(mode="json") if result.timing else None}


def _run_arrays(result, prefix: str = "") -> dict:  # noqa: ANN001 - a RunResult
    import numpy as np

    arrays = {f"{prefix}out:{k}": np.ascontiguousarray(v) for k, v in result.outputs.items()}
    arrays.update({f"{prefix}in:{k}": np.ascontiguousarray(v)
                   for k, v in result.inputs_after.items()})
    return arrays


def _write_run(work: Path, result) -> None:  # noqa: ANN001 - a RunResult
    import numpy as np

    arrays = _run_arrays(result)
    if arrays:
        np.savez(work / "outputs.npz", **arrays)
    (work / "result.json").write_text(json.dumps({"kind": "run", **_run_meta(result)}))


def _run_batch(work: Path, func, kwargs: dict, n: int) -> None:  # noqa: ANN001
    """Call ``func`` once per input set ``0/…``, ``1/…``; stop after the first non-ok run."""
    import numpy as np

    sets: list[dict] = [{} for _ in range(n)]
    with np.load(work / "inputs.npz", allow_pickle=False) as data:
        for key in data.files:
            index, name = key.split("/", 1)
            sets[int(index)][name] = data[key]
    results = []
    for inputs in sets:
        results.append(func(**kwargs, inputs=inputs))
        if results[-1].status != "ok":
            break
    arrays: dict = {}
    for i, result in enumerate(results):
        arrays.update(_run_arrays(result, f"{i}/"))
    if arrays:
        np.savez(work / "outputs.npz", **arrays)
    (work / "result.json").write_text(json.dumps(
        {"kind": "runs", "runs": [_run_meta(r) for r in results]}))


def main(work: Path) -> int:
    """Run the job described in ``work/job.json``; returns the process exit code."""
    job = json.loads((work / "job.json").read_text())
    os.chdir(work)
    notes = _isolate(job)
    (work / "isolation.json").write_text(json.dumps(notes))
    try:
        kwargs = dict(job.get("kwargs") or {})
        if job.get("spec") is not None:
            from structcover.schema import TaskSpec

            kwargs["spec"] = TaskSpec.model_validate(job["spec"])
        if job.get("batch"):
            module_name, func_name = job["target"].split(":", 1)
            func = getattr(importlib.import_module(module_name), func_name)
            _run_batch(work, func, kwargs, int(job["batch"]))
            return 0
        if job.get("has_inputs"):
            import numpy as np

            with np.load(work / "inputs.npz", allow_pickle=False) as data:
                kwargs["inputs"] = {k: data[k] for k in data.files}
        module_name, func_name = job["target"].split(":", 1)
        func = getattr(importlib.import_module(module_name), func_name)
        value = func(**kwargs)
        from structcover.tools.verify.backend import RunResult

        if isinstance(value, RunResult):
            _write_run(work, value)
        else:
            (work / "result.json").write_text(json.dumps({"kind": "value", "value": value}))
    except MemoryError:
        (work / "result.json").write_text(json.dumps(
            {"kind": "error", "status": "crash", "error": "out of memory (memory limit reached)"}))
        return 3
    except BaseException:  # noqa: BLE001 - everything the job raises is a verdict, not a crash
        tail = traceback.format_exc()[-1500:]
        (work / "result.json").write_text(json.dumps(
            {"kind": "error", "status": "crash", "error": f"runner raised:\n{tail}"}))
        return 3
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main(Path(sys.argv[1])))
