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
    ``forward`` returns (``gpu_protocol.async_work_check``). Each trial's ``forward`` runs under
    the torch-compute watch (``dispatch_watch``: torch compute and host reads beyond a finishing
    step are delegation or host computation) and, on the CPU path, the timing watch
    (``timing_watch``); ``child_behaviour`` holds those checks.

CPU path: :mod:`cpu_shims` first, then ``torch.use_deterministic_algorithms(True,
warn_only=True)`` with ``torch.utils.deterministic.fill_uninitialized_memory = True``, so every
``torch.empty`` (Python or C++) starts as NaN / the integer maximum and an unwritten or
uninitialised-read output cannot pass as zeros. GPU path: the real ``load_inline`` builds into
the job folder; after the trials, :func:`gpu_protocol.time_callable` times the model.

``result.json``: ``{"status": "ok"|"error", "failure", "detail", "trials": [{"outputs":
[{"dtype", "shape"}], "inputs": [...]}], "flags": [...], "timing": {...}|null, "notes": [...]}``
(``notes``: a finishing step torch did, said in the verdict). Arrays never
pass through JSON; messages never carry data values.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from structcover.tools.kernelbench.child_behaviour import (
    clocks,
    delegation,
    fallback_call,
    in_first_storage,
    input_bytes,
    launched,
    on_gpu,
    timing_finding,
    torch_watch,
    triton_launches,
)
from structcover.tools.kernelbench.child_fp64 import fp64_outputs, save_fp64, widened
from structcover.tools.kernelbench.child_io import (
    _flatten,
    _load_inputs,
    _save,
    _short,
    _triton_failure,
)
from structcover.tools.kernelbench.compiler_guard import finding as compiler_finding
from structcover.tools.kernelbench.compiler_guard import install_compiler_guard
from structcover.tools.kernelbench.sizes import apply_sizes, recompute_derived

#: The ``torch.cuda``-like surface of the GPU protocol; None = ``torch.cuda``. The tests put a
#: fake device here and run the GPU path on CPU tensors (``job["gpu"]`` with ``device`` cpu).
CUDA: Any = None

#: Exception text -> failure kind (the CPU build's runtime names what it found: ``EmulatorFault:
#: race: ...``; torch's load_inline on the GPU path: ``Error building extension``).
_KINDS = ((r"error building extension", "compile-error"), (r"\bno_timing_tampering\b", "hacking"),
          (r"\brace\b", "race"),
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


def _import_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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


def _cuda() -> Any:
    import torch

    return CUDA if CUDA is not None else torch.cuda


_gpu = on_gpu


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
    from structcover.tools.kernelbench.dispatch_watch import install_host_read_watch

    install_host_read_watch()  # before any user import: `.tolist()` and friends are counted
    if not _gpu(job):
        # Both modes: a problem's get_inputs may put its tensors on "cuda" too.
        from structcover.tools.kernelbench.cpu_shims import install_cpu_shims

        install_cpu_shims(job.get("extensions", {}))
        from structcover.tools.kernelbench.timing_watch import install_timing_watch

        install_timing_watch()  # after the shims: their torch.cuda.synchronize is the one wrapped
        if job.get("triton"):
            # Before the candidate's `@triton.jit`s run: interpreter checks, autotune rule.
            from structcover.tools.kernelbench.triton_path import install_cpu_triton

            install_cpu_triton()
        _deterministic(torch)
        torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    problem = _import_file("kb_problem", Path(job["problem_file"]))
    apply_sizes(problem.__dict__, job["sizes"])
    # Shapes the problem derives from its sizes (`bias_shape = (out_channels, 1, 1)`).
    recompute_derived(problem.__dict__, Path(job["problem_file"]).read_text(), job["sizes"])
    return problem, device


def run_reference(job: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Inputs and reference outputs for every trial (module doc); with ``job["fp64"]`` also
    the reference in float64 on the same inputs (``out64_{t}.npz``, for the precision check)."""
    import torch

    problem, device = _prepare(job)
    model = _construct(problem.Model, problem, job["seed"], device)
    # Copied before any forward: a model with state (BatchNorm's running statistics) then
    # goes through the same calls in both precisions.
    model64, why = widened(model) if job.get("fp64") else (None, "")
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
                save_fp64(folder / f"out64_{t}.npz", wide)
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
    install_compiler_guard()  # before the candidate's imports: torch's compiler is refused
    failed: Exception | None = None
    try:
        cand = _import_file("kb_candidate", Path(job["candidate_file"]))
    except Exception as exc:  # noqa: BLE001 - the candidate's own failure is a verdict
        failed = exc
    if compiler_finding():  # reached at import, whether the ImportError was caught or not
        return {"status": "error", "failure": "hacking", "detail": compiler_finding()}
    if failed is not None:
        return {"status": "error", "failure": classify(failed) if classify(failed) != "crash"
                else "import-error", "detail": "importing the candidate: " + _short(failed)}
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
    if job.get("probe_only"):  # precision_probe.py: asked for after a precision failure
        from structcover.tools.kernelbench import cpu_shims
        from structcover.tools.kernelbench.precision_probe import run_probe

        inputs = _load_inputs(Path(job["inputs_dir"]) / "in_0.npz", in_meta[0], device)
        return {"status": "ok", "probe": run_probe(model, inputs, cpu_shims.LOADED)}
    trials: list[dict[str, Any]] = []
    flags: list[str] = []
    kept: list[tuple[list[Any], list[Any]]] = []  # earlier outputs and their snapshots
    last_inputs: list[Any] = []
    first_inputs: list[Any] = []
    finished: str | None = None  # trial 0's finishing step, if torch finished the answer
    for t, meta in enumerate(in_meta):
        inputs = _load_inputs(Path(job["inputs_dir"]) / f"in_{t}.npz", meta, device)
        if t == 0:
            first_inputs = inputs
        elif not _gpu(job):  # CPU path: the GPU path's storage reuse is not tested yet
            inputs = in_first_storage(first_inputs, inputs)
        last_inputs = inputs
        in_ranges = _storages(inputs)
        before = triton_launches()
        watch = torch_watch(job)
        try:
            with torch.no_grad(), watch, clocks(job) as clock_calls:
                outputs = _flatten(model(*inputs))
            if _gpu(job):
                _cuda().synchronize()
        except Exception as exc:  # noqa: BLE001
            if compiler_finding(t):  # the guard's ImportError, or what followed from it
                return {"status": "error", "failure": "hacking", "trial": t, "flags": flags,
                        "detail": compiler_finding(t)}
            kind = classify(exc)
            return {"status": "error", "failure": kind, "trial": t, "flags": flags,
                    "detail": _short(exc) if kind == "unsupported"
                    else f"trial {t}: forward raised " + _short(exc)}
        read_budget, kernels_ran = input_bytes(inputs), launched(job, before)
        finding = delegation(job, watch, before, t, read_budget, kernels_ran) or \
            timing_finding(clock_calls, t) or compiler_finding(t)
        if finding:
            return {"status": "error", "failure": "hacking", "trial": t, "flags": flags,
                    "detail": finding}
        if t == 0 and hasattr(watch, "finishing"):
            finished = watch.finishing(read_budget, kernels_ran)
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
    fallback = ""
    if not _gpu(job) and job.get("watch_torch"):
        inputs = _load_inputs(Path(job["inputs_dir"]) / "in_0.npz", in_meta[0], device)
        fallback = fallback_call(model, inputs, torch_watch(job))
    if fallback:
        return {"status": "error", "failure": "hacking", "detail": fallback, "trials": trials}
    result: dict[str, Any] = {"status": "ok", "trials": trials, "flags": flags, "timing": None,
                              "notes": [finished] if finished else []}
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
