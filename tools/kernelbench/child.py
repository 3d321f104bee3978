"""The sandboxed torch child: ``python -m structcover.tools.kernelbench.child JOB.json``.

The only process in which a problem's or a candidate's Python runs. The verifier starts it in
the bubblewrap jail (``tools/verify/jail.py``: the Python installation and this package
read-only, no network, a private ``/tmp``, rlimits) with one writable folder, the job's.

Two modes, one process each, so a candidate never shares a process with the reference:

``reference``
    Per trial ``t``: ``torch.manual_seed(seed + t)``, ``get_inputs()`` (the problem's sizes
    replaced by the job's, which may be shrunk); the inputs go to ``in_{t}.npz`` (+ their kinds
    in ``result.json``); the reference ``Model`` (weights: seed, ``get_init_inputs()``, seed
    again, construct, as KernelBench does) runs on them; outputs to ``out_{t}.npz``. With
    ``job["fp64"]`` (the CPU path) a float64 copy of the model also runs on the same inputs,
    upcast (``out64_{t}.npz``; ``result["fp64"]`` says whether it ran and why not): the
    precision check's yardstick (``precision.py``).
``candidate``
    Same seeding and construction for ``ModelNew``; inputs are *read* from the reference's
    files (the candidate cannot influence them); per trial the outputs go to ``out_{t}.npz``
    and the inputs as they are after the call to ``after_{t}.npz``. Checked here, at run time:
    an output that aliases an input, an output whose storage was returned before or that a
    later call overwrote (a buffer kept across calls), and on the GPU work left running after
    ``forward`` returns (``gpu_protocol.async_work_check``).

CPU path: :mod:`cpu_shims` first, then ``torch.use_deterministic_algorithms(True,
warn_only=True)`` with ``torch.utils.deterministic.fill_uninitialized_memory = True``, so every
``torch.empty`` (Python or C++) starts as NaN / the integer maximum and an unwritten or
uninitialised-read output cannot pass as zeros. GPU path: the real ``load_inline`` builds into
the job folder; after the trials, :func:`gpu_protocol.time_callable` times the model.

``result.json``: ``{"status": "ok"|"error", "failure", "detail", "trials": [{"outputs":
[{"dtype", "shape"}], "inputs": [...]}], "flags": [...], "timing": {...}|null}``. Arrays never
pass through JSON; messages never carry data values.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from structcover.tools.kernelbench.sizes import apply_sizes

#: The ``torch.cuda``-like surface of the GPU protocol; None = ``torch.cuda``. The tests put a
#: fake device here and run the GPU path on CPU tensors (``job["gpu"]`` with ``device`` cpu).
CUDA: Any = None

#: Exception text -> failure kind (the CPU build's runtime names what it found: ``EmulatorFault:
#: race: ...``; torch's load_inline on the GPU path: ``Error building extension``).
_KINDS = ((r"error building extension", "compile-error"), (r"\brace\b", "race"),
          (r"\bdeadlock", "deadlock"), (r"\bout[- ]of[- ]bounds\b", "out-of-bounds"),
          (r"\buninitiali[sz]ed\b", "uninitialised-read"), (r"\bunsupported\b", "unsupported"))


def classify(exc: BaseException) -> str:
    """The failure kind of an exception the candidate's call raised (``crash`` by default)."""
    triton = _triton_failure(exc)
    if triton is not None:
        return triton[0]
    text = f"{type(exc).__name__}: {exc}".lower()
    for pattern, kind in _KINDS:
        if re.search(pattern, text):
            return kind
    return "crash"


def _triton_failure(exc: BaseException) -> tuple[str, str] | None:
    if "triton" not in sys.modules:
        return None
    from structcover.tools.kernelbench.triton_path import describe_failure

    return describe_failure(exc)


def _short(exc: BaseException, limit: int = 600) -> str:
    triton = _triton_failure(exc)
    if triton is not None:
        return triton[1]
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _import_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _to_numpy(t: Any) -> tuple[Any, str]:
    import numpy as np
    import torch

    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16), "bfloat16"
    return t.numpy(), str(t.dtype).removeprefix("torch.")


def _from_numpy(arr: Any, dtype: str, device: str) -> Any:
    import numpy as np
    import torch

    # clone(): the tensor's memory comes from torch's allocator (on the CPU path the emulator's
    # guarded device allocator once an extension is loaded), not from numpy's buffer.
    if dtype == "bfloat16":
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16).clone().to(device)
    return torch.from_numpy(arr).clone().to(device)


def _flatten(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple | list) else [result]


def _save(path: Path, tensors: list[Any]) -> list[dict[str, Any]]:
    """Tensors to ``path`` (npz, keys a0..), their dtypes and shapes to the returned list."""
    import numpy as np
    import torch

    arrays: dict[str, Any] = {}
    meta: list[dict[str, Any]] = []
    for i, t in enumerate(tensors):
        if isinstance(t, torch.Tensor):
            arr, dtype = _to_numpy(t)
            arrays[f"a{i}"] = arr
            meta.append({"kind": "tensor", "dtype": dtype, "shape": list(arr.shape)})
        elif isinstance(t, bool | int | float) or t is None:
            meta.append({"kind": "value", "value": t})
        else:
            meta.append({"kind": "other", "type": type(t).__name__})
    np.savez(path, **arrays)
    return meta


def _load_inputs(path: Path, meta: list[dict[str, Any]], device: str) -> list[Any]:
    import numpy as np

    with np.load(path) as data:
        return [_from_numpy(data[f"a{i}"], m["dtype"], device) if m["kind"] == "tensor"
                else m.get("value") for i, m in enumerate(meta)]


def _construct(cls: Any, problem: ModuleType, seed: int, device: str) -> Any:
    import torch

    torch.manual_seed(seed)
    init = list(problem.get_init_inputs()) if hasattr(problem, "get_init_inputs") else []
    torch.manual_seed(seed)
    model = cls(*init)
    return model.to(device) if hasattr(model, "to") else model


def _storages(tensors: list[Any]) -> list[tuple[int, int]]:
    """(start, end) byte ranges of the tensors' storages."""
    import torch

    out = []
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes() > 0:
            start = t.untyped_storage().data_ptr()
            out.append((start, start + t.untyped_storage().nbytes()))
    return out


def _same(a: Any, b: Any) -> bool:
    """Bit-equal contents, NaN equal to NaN (floats)."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.isnan(a), torch.isnan(b))
                    and torch.equal(a.nan_to_num(), b.nan_to_num()))
    return bool(torch.equal(a, b))


def _overlaps(a: tuple[int, int], ranges: list[tuple[int, int]]) -> bool:
    return any(a[0] < end and start < a[1] for start, end in ranges)


def _triton_launches() -> int:
    """Interpreted Triton launches so far (0 where Triton's CPU checks are not installed)."""
    if "structcover.tools.kernelbench.triton_path" not in sys.modules:
        return 0
    from structcover.tools.kernelbench.triton_path import launches

    return launches()


def _watch(job: dict[str, Any]) -> Any:
    """The run-time torch-compute watch for one trial (a no-op context when not asked for)."""
    from structcover.tools.kernelbench.dispatch_watch import TorchComputeWatch

    return TorchComputeWatch() if job.get("watch_torch") else contextlib.nullcontext()


def _delegation(job: dict[str, Any], watch: Any, launches_before: int, trial: int) -> str:
    """What one trial's ``forward`` delegated: torch compute seen, Triton kernels never launched."""
    found = [getattr(watch, "finding", lambda _t: None)(trial) or ""]
    if job.get("triton_kernels") and not _gpu(job) and _triton_launches() == launches_before:
        found.append(f"trial {trial}: no_library_delegation: forward launched no Triton kernel "
                     "(the candidate's @triton.jit functions are a decoy; the output came from "
                     "elsewhere)")
    return "; ".join(f for f in found if f)


def _cuda() -> Any:
    import torch

    return CUDA if CUDA is not None else torch.cuda


def _gpu(job: dict[str, Any]) -> bool:
    return bool(job.get("gpu", job["device"] == "cuda"))


def _deterministic(torch: Any) -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)`` without importing inductor.

    The public function imports ``torch._inductor.config`` (and with it ``torch._dynamo``) only
    to copy the flag into inductor's config: that import was half of a child's start-up
    (docs/KERNELBENCH.md, "Cost"). The same two effects, cheaper: the flag set in torch's C++
    core, and ``TORCHINDUCTOR_DETERMINISTIC=1``, the default inductor's config reads from the
    environment should the candidate import it later (``torch.compile``).
    """
    os.environ["TORCHINDUCTOR_DETERMINISTIC"] = "1"
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(True, warn_only=True)  # another torch, or too late
    else:
        setter(True, warn_only=True)


def _prepare(job: dict[str, Any]) -> tuple[ModuleType, str]:
    import torch

    device = job["device"]
    torch.set_num_threads(int(job.get("threads", 1)))
    if not _gpu(job):
        # Both modes: a problem's get_inputs may put its tensors on "cuda" too.
        from structcover.tools.kernelbench.cpu_shims import install_cpu_shims

        install_cpu_shims(job.get("extensions", {}))
        if job.get("triton"):
            # Before the candidate's `@triton.jit`s run: interpreter checks, autotune rule.
            from structcover.tools.kernelbench.triton_path import install_cpu_triton

            install_cpu_triton()
        _deterministic(torch)
        torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    problem = _import_file("kb_problem", Path(job["problem_file"]))
    apply_sizes(problem.__dict__, job["sizes"])
    return problem, device


def _widened(model: Any) -> tuple[Any, str]:
    """A float64 copy of the reference model, or (None, why not)."""
    import copy

    if not callable(getattr(model, "double", None)):
        return None, "the reference Model has no .double()"
    try:
        return copy.deepcopy(model).double(), ""
    except Exception as exc:  # noqa: BLE001 - the precision check is skipped, with the reason
        return None, "copying the reference Model to float64 raised " + _short(exc, 200)


def fp64_outputs(model64: Any, inputs: list[Any], outputs: list[Any],
                 rng_state: Any) -> tuple[list[Any] | None, str]:
    """The reference model in float64 on the same inputs (floating inputs upcast).

    The random generator is set to ``rng_state`` (the state the task-dtype forward started
    from: a forward that draws, dropout, draws the same) and restored after; tensors a forward
    creates without a dtype are float64 meanwhile.

    Returns:
        One entry per output: the float64 tensor where the output is a floating tensor, None
        elsewhere; or (None, why) when the run raised or its outputs do not match in count or
        shape.
    """
    import torch

    wide_in = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
               for x in inputs]
    after, default = torch.get_rng_state(), torch.get_default_dtype()
    torch.set_rng_state(rng_state)
    try:
        torch.set_default_dtype(torch.float64)
        with torch.no_grad():
            wide = _flatten(model64(*wide_in))
    except Exception as exc:  # noqa: BLE001
        return None, "the float64 run raised " + _short(exc, 200)
    finally:
        torch.set_default_dtype(default)
        torch.set_rng_state(after)
    if len(wide) != len(outputs):
        return None, f"the float64 run returned {len(wide)} outputs, not {len(outputs)}"
    found: list[Any] = []
    for i, (o, w) in enumerate(zip(outputs, wide, strict=True)):
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()):
            found.append(None)
        elif not (isinstance(w, torch.Tensor) and w.is_floating_point()
                  and tuple(w.shape) == tuple(o.shape)):
            return None, f"the float64 run's output {i} is not a tensor of the same shape"
        else:
            found.append(w.detach().to("cpu", torch.float64))
    return found, ""


def _save_fp64(path: Path, wide: list[Any]) -> None:
    import numpy as np

    np.savez(path, **{f"a{i}": w.numpy() for i, w in enumerate(wide) if w is not None})


def run_reference(job: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Inputs and reference outputs for every trial (module doc); with ``job["fp64"]`` also
    the reference in float64 on the same inputs (``out64_{t}.npz``, for the precision check)."""
    import torch

    problem, device = _prepare(job)
    model = _construct(problem.Model, problem, job["seed"], device)
    # Copied before any forward: a model with state (BatchNorm's running statistics) then
    # goes through the same calls in both precisions.
    model64, why = _widened(model) if job.get("fp64") else (None, "")
    trials = []
    for t in range(job["trials"]):
        torch.manual_seed(job["seed"] + t)
        inputs = list(problem.get_inputs())
        in_meta = _save(folder / f"in_{t}.npz", inputs)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
        state = torch.get_rng_state()
        with torch.no_grad():
            outputs = _flatten(model(*inputs))
        trials.append({"inputs": in_meta, "outputs": _save(folder / f"out_{t}.npz", outputs)})
        if model64 is not None:
            wide, why = fp64_outputs(model64, inputs, outputs, state)
            if wide is None:
                model64 = None
            else:
                _save_fp64(folder / f"out64_{t}.npz", wide)
    result: dict[str, Any] = {"status": "ok", "trials": trials, "flags": [], "timing": None}
    if job.get("fp64"):
        result["fp64"] = {"ran": model64 is not None, "why": why}
    if job.get("time") and _gpu(job):
        result["timing"] = _time(model, inputs, job)
    return result


def _time(model: Any, inputs: list[Any], job: dict[str, Any]) -> dict[str, Any]:
    import torch

    from structcover.tools.kernelbench.gpu_protocol import l2_flush_buffer, time_callable

    monitor = None
    try:
        from structcover.tools.verify.gpu_nvml import NvmlMonitor

        monitor = NvmlMonitor(0)
    except Exception:  # noqa: BLE001 - no NVML: timing without energy
        monitor = None
    flush = l2_flush_buffer(torch, _cuda(), job["device"])
    with torch.no_grad():
        return dict(time_callable(model, inputs, _cuda(), flush, warmup=job.get("warmup", 3),
                                  trials=job.get("timing_trials", 20), monitor=monitor))


def run_candidate(job: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The candidate on the reference's inputs, with the run-time checks (module doc)."""
    import torch

    problem, device = _prepare(job)
    try:
        cand = _import_file("kb_candidate", Path(job["candidate_file"]))
    except Exception as exc:  # noqa: BLE001 - the candidate's own failure is a verdict
        return {"status": "error", "failure": classify(exc) if classify(exc) != "crash"
                else "import-error", "detail": "importing the candidate: " + _short(exc)}
    if not hasattr(cand, "ModelNew"):
        return {"status": "error", "failure": "no-modelnew",
                "detail": "the candidate defines no ModelNew"}
    apply_sizes(cand.__dict__, job["sizes"], only_existing=True)  # the candidate's copies
    try:
        model = _construct(cand.ModelNew, problem, job["seed"], device)
    except Exception as exc:  # noqa: BLE001
        return {"status": "error", "failure": classify(exc),
                "detail": "constructing ModelNew: " + _short(exc)}
    # Only the inputs: the reference's outputs are never readable from the candidate's process.
    in_meta = json.loads((Path(job["inputs_dir"]) / "inputs.json").read_text())
    trials: list[dict[str, Any]] = []
    flags: list[str] = []
    kept: list[tuple[list[Any], list[Any]]] = []  # earlier outputs and their snapshots
    last_inputs: list[Any] = []
    for t, meta in enumerate(in_meta):
        inputs = _load_inputs(Path(job["inputs_dir"]) / f"in_{t}.npz", meta, device)
        last_inputs = inputs
        in_ranges = _storages(inputs)
        before = _triton_launches()
        watch = _watch(job)
        try:
            with torch.no_grad(), watch:
                outputs = _flatten(model(*inputs))
            if _gpu(job):
                _cuda().synchronize()
        except Exception as exc:  # noqa: BLE001
            kind = classify(exc)
            return {"status": "error", "failure": kind, "trial": t, "flags": flags,
                    "detail": _short(exc) if kind == "unsupported"
                    else f"trial {t}: forward raised " + _short(exc)}
        finding = _delegation(job, watch, before, t)
        if finding:
            return {"status": "error", "failure": "hacking", "trial": t, "flags": flags,
                    "detail": finding}
        bad = [i for i, o in enumerate(outputs) if not isinstance(o, torch.Tensor)]
        if bad:
            return {"status": "error", "failure": "bad-output", "trial": t,
                    "detail": f"trial {t}: output {bad[0]} is a {type(outputs[bad[0]]).__name__}, "
                              "not a tensor"}
        for i, o in enumerate(outputs):
            if any(_overlaps(r, in_ranges) for r in _storages([o])):
                return {"status": "error", "failure": "aliases-input", "trial": t,
                        "detail": f"trial {t}: output {i} shares memory with an input"}
        for s, (old, snap) in enumerate(kept):
            old_ranges = _storages(old)
            for i, o in enumerate(outputs):
                if any(_overlaps(r, old_ranges) for r in _storages([o])):
                    return {"status": "error", "failure": "output-reused", "trial": t,
                            "detail": f"trial {t}: output {i} is memory returned by trial {s} "
                                      "(an output kept across calls)"}
            for i, (o, before) in enumerate(zip(old, snap, strict=True)):
                if not _same(o.detach().to("cpu"), before):
                    return {"status": "error", "failure": "output-reused", "trial": t,
                            "detail": f"trial {t}: the call rewrote output {i} of trial {s}"}
        kept.append((outputs, [o.detach().to("cpu", copy=True) for o in outputs]))
        trials.append({"outputs": _save(folder / f"out_{t}.npz", outputs),
                       "inputs": _save(folder / f"after_{t}.npz", inputs)})
    result: dict[str, Any] = {"status": "ok", "trials": trials, "flags": flags, "timing": None}
    if _gpu(job):
        from structcover.tools.kernelbench.gpu_protocol import async_work_check

        with torch.no_grad():
            why = async_work_check(model, last_inputs, _cuda())
        if why:
            kind = why.split(":", 1)[0]
            return {"status": "error", "failure": kind, "detail": why, "trials": trials}
        if job.get("time"):
            result["timing"] = _time(model, last_inputs, job)
    return result


def main(argv: list[str]) -> int:
    """Run the job named by ``argv[0]``; always writes ``result.json`` unless killed."""
    job_path = Path(argv[0])
    job = json.loads(job_path.read_text())
    folder = Path(job["out_dir"])
    try:
        result = (run_reference if job["mode"] == "reference" else run_candidate)(job, folder)
    except BaseException as exc:  # noqa: BLE001 - SystemExit from user code is a failure too
        result = {"status": "error", "failure": classify(exc),
                  "detail": _short(exc), "where": traceback.format_exc(limit=3)[-800:]}
    (folder / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
