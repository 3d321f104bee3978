"""The CPU emulator, isolated: build in the jail, run through the runner in the jail.

Same verdicts as :class:`cpu_backend.CpuEmulatorBackend` (same schedules, guarded buffers,
race comparison and messages), but nothing untrusted runs in a Python process: the program
is compiled by g++ inside bubblewrap (``emulator.build_library``), and its library is loaded
only by ``sc_runner`` inside bubblewrap, under the runner's seccomp allow-list. Arrays cross
by file descriptors (:mod:`jail_runner`).

After every input set ran clean, the runner makes one fault-injection run on the last set:
every kernel launch fails as a GPU fails one it has no resources for (not sticky, like the real
error). Whatever an honest program does then (return the error, exit, retry) is ignored; host
code touching a device buffer there is a ``crash``, as in any run. So a fallback that computes
the outputs on the host when a launch fails -- a path the normal runs never take -- is seen by
what it does, not by how it is spelled (``hacking.check_no_fallback`` reads the text).
"""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np

from structcover.config import VerifySettings
from structcover.schema import DTYPES, TaskSpec, TensorArg
from structcover.tools.verify import cpu_backend as cb
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.emulator import (
    STATUS_NAMES,
    BuildError,
    LinkRefused,
    _compiler_id,
    build_library,
    compiler,
    first_error,
    prepare_runtime,
)
from structcover.tools.verify.jail import JailLimits, JailResult, SandboxUnavailable
from structcover.tools.verify.jail_runner import (
    DEADLINE_SPENT,
    NO_MEMORY,
    OVERRUN_AFTER,
    OVERRUN_BEFORE,
    Record,
    arg_kinds,
    encode_job,
    run_runner,
    runner_executable,
    scalar_values,
)
from structcover.tools.verify.profile_rewrite import Site
from structcover.tools.verify.rewriter import rewrite
from structcover.tools.verify.seccomp_policy import runner_filter_bytes

#: Extra wall-clock seconds for the runner beyond the emulator's own deadlines (start, I/O).
GRACE_S = 10.0
_FORBIDDEN_EXIT = 71


def _result(status: str, **kw) -> RunResult:
    return RunResult(status=status, backend="cpu", **kw)  # type: ignore[arg-type]


def run_many(source: str, spec: TaskSpec, inputs_batch: list[dict[str, np.ndarray]], *,
             settings: VerifySettings, sizes: dict[str, int] | None = None,
             timeout_s: float = 60.0, schedules: tuple[str, ...] = cb.DEFAULT_SCHEDULES,
             workers: int = 0) -> list[RunResult]:
    """Run ``source`` once per input set; stops after the first run that is not ``ok``.

    Args:
        source: The program (untrusted).
        spec: Its task (trusted): the launcher's name and signature.
        inputs_batch: Input sets, one array per tensor argument each.
        settings: Cache folder and memory limit.
        sizes: Size overrides.
        timeout_s: Per input set, all schedules together (the runtime's watchdog).
        schedules: Fiber schedules, compared for races.
        workers: Worker threads (0 = one per core).

    Returns:
        One result per run made; a single result when the program does not build or the
        runner dies outside a run.
    """
    return _run(source, spec, inputs_batch, settings=settings, sizes=sizes, timeout_s=timeout_s,
                schedules=schedules, workers=workers)[0]


def run_profiled(source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
                 settings: VerifySettings, sizes: dict[str, int] | None = None,
                 timeout_s: float = 60.0, workers: int = 0) -> tuple[RunResult, str, list[Site]]:
    """One run of the profile build (forward schedule) in the jail: the result, the runtime's
    counters (JSON text, "" when the run reported none) and the instrumented sites."""
    results, records, sites = _run(source, spec, [inputs], settings=settings, sizes=sizes,
                                   timeout_s=timeout_s, schedules=("forward",), workers=workers,
                                   profile=True)
    return results[0], (records[0].profile if records else ""), sites


def _run(source: str, spec: TaskSpec, inputs_batch: list[dict[str, np.ndarray]], *,
         settings: VerifySettings, sizes: dict[str, int] | None, timeout_s: float,
         schedules: tuple[str, ...], workers: int, profile: bool = False,
         ) -> tuple[list[RunResult], list[Record], list[Site]]:
    sizes = {**spec.sizes, **(sizes or {})}
    try:
        sets = [cb._check_inputs(spec, inputs, sizes) for inputs in inputs_batch]
    except ValueError as exc:
        return [_result("crash", detail=str(exc))], [], []
    rewritten = rewrite(source, filename=f"{spec.task_id or 'program'}.cu", profile=profile)
    if rewritten.unsupported:
        return [_result("unsupported", detail="unsupported: " + "; ".join(rewritten.unsupported))], [], []
    cache = Path(settings.cache_dir)
    prepare_runtime(cache)  # trusted runtime objects, outside any clock
    try:
        build = build_library(rewritten.source, cache, timeout_s=max(120.0, timeout_s))
    except LinkRefused as exc:
        return [_result("rejected", detail=exc.log)], [], []
    except BuildError as exc:
        return [_result("compile-error", detail=f"{first_error(exc.log)}\n{exc.log}")], [], []
    except SandboxUnavailable as exc:
        return [_result("rejected", detail=str(exc))], [], []
    kinds = arg_kinds(spec)
    cxx = compiler()
    runner = runner_executable(kinds, cache, cxx, _compiler_id(cxx))
    scalars = scalar_values(spec, cb._scalar_values(spec, sizes))
    names = [a.name for a in spec.args]
    # A profile build measures the normal runs only: no fault-injection run there.
    job = encode_job(kinds, list(schedules), workers, timeout_s,
                     [({i: arrays[n] for i, n in enumerate(names) if n in arrays}, scalars)
                      for arrays in sets], fault_run=not profile)
    # The result file holds every tensor once per schedule run: size its limit from the job.
    result_mb = len(job) * len(schedules) // (1 << 20) + 64
    limits = JailLimits(timeout_s=timeout_s * len(sets) + GRACE_S,
                        memory_mb=settings.memory_limit_mb, file_size_mb=result_mb, nofile=64,
                        nproc=64)
    try:
        report, jailed = run_runner(runner, build.path, spec.launcher, job, limits=limits,
                                    seccomp=runner_filter_bytes())
    except SandboxUnavailable as exc:
        return [_result("rejected", detail=str(exc))], [], []
    note = ("sandbox: bubblewrap (user, PID, mount, IPC, network namespaces), seccomp, rlimits"
            if jailed.sandboxed else "sandbox: " + "; ".join(jailed.notes))
    if report is not None and not report.has_launcher:
        return [_result("compile-error", detail=f"no extern \"C\" launcher `{spec.launcher}`")], [], []
    records = report.records if report is not None else []
    results = _results(spec, sets, list(schedules), records, timeout_s)
    fault = _fault_finding(spec, records, len(sets) * len(schedules), results, len(sets))
    if fault is not None:
        results[-1] = fault
    if not results or (results[-1].status == "ok" and len(results) < len(sets)):
        results.append(_died(jailed))
    for result in results:
        result.detail = "\n".join(p for p in (result.detail, note) if p)
    return results, records, rewritten.sites


def _results(spec: TaskSpec, sets: list[dict[str, np.ndarray]], schedules: list[str],
             records: list[Record], timeout_s: float) -> list[RunResult]:
    """Turn the runner's records into one RunResult per complete input set (or failure)."""
    results: list[RunResult] = []
    pos = 0
    for arrays in sets:
        runs = []
        for k, schedule in enumerate(schedules):
            if pos >= len(records):
                return results
            rec = records[pos]
            pos += 1
            outcome = _one(spec, arrays, schedule, k == 0, schedules[0], rec, timeout_s)
            if isinstance(outcome, RunResult):
                results.append(outcome)
                return results
            runs.append((schedule, *outcome))
        race = cb._compare_schedules(spec, runs)
        _, outputs, after = runs[0]
        if race:
            results.append(_result("race", outputs=outputs, inputs_after=after, detail=race))
            return results
        results.append(_result("ok", outputs=outputs, inputs_after=after,
                               detail=f"schedules: {', '.join(schedules)}"))
    return results


def _one(spec: TaskSpec, arrays: dict[str, np.ndarray], schedule: str, first: bool,
         first_name: str, rec: Record, timeout_s: float) -> RunResult | tuple[dict, dict]:
    where = f" (schedule {schedule})"
    tensors = [a for a in spec.args if isinstance(a, TensorArg)]
    if rec.code == DEADLINE_SPENT:
        return _result("timeout", detail=f"time limit of {timeout_s:.1f} s spent before "
                                         f"schedule {schedule}")
    detail = rec.detail
    for k, arg in enumerate(tensors):  # the runtime numbers allocations; ours come first
        detail = detail.replace(f"device allocation #{k} ", f"buffer `{arg.name}` ")
    if rec.code == NO_MEMORY:
        return _result("crash", detail=f"{detail}{where}")
    if rec.code in STATUS_NAMES and rec.code != 0:
        status = STATUS_NAMES[rec.code]
        if status == "timeout" and not first:
            where += (f"; schedule {first_name} finished, so the kernel probably spin-waits on "
                      "work of a block this schedule starts later (CUDA guarantees no block order)")
        return _result(status, detail=detail + where)
    if rec.code == OVERRUN_BEFORE:
        name = spec.args[rec.which].name
        return _result("crash", detail=f"out-of-bounds write before buffer `{name}` "
                                       f"({rec.where} bytes before its start){where}")
    if rec.code == OVERRUN_AFTER:
        name = spec.args[rec.which].name
        return _result("crash", detail=f"out-of-bounds write past the end of buffer `{name}` "
                                       f"(byte +{rec.where}){where}")
    if rec.code != 0:
        return _result("crash", detail=f"runner reported unknown status {rec.code}{where}")
    if rec.rc != 0:
        return _result("launch-error", detail=f"launcher returned CUDA error {rec.rc}{where}")
    if len(rec.tensors) != len(tensors):
        return _result("crash", detail=f"runner returned {len(rec.tensors)} arrays, "
                                       f"expected {len(tensors)}{where}")
    after_all: dict[str, np.ndarray] = {}
    for arg, raw in zip(tensors, rec.tensors, strict=True):
        ref = arrays[arg.name]
        dtype = np.dtype(DTYPES[arg.dtype])
        if len(raw) != ref.nbytes:
            return _result("crash", detail=f"runner returned {len(raw)} bytes for `{arg.name}`, "
                                           f"expected {ref.nbytes}{where}")
        after_all[arg.name] = np.frombuffer(raw, dtype=dtype).reshape(ref.shape).copy()
    outputs = {a.name: after_all[a.name] for a in tensors if a.role != "input"}
    after = {a.name: after_all[a.name] for a in tensors if a.role != "output"}
    return outputs, after


#: What the runtime says when host code touched a device buffer (sc_devmem.cpp).
_HOST_ACCESS = "host code read or wrote "


def _fault_finding(spec: TaskSpec, records: list[Record], normal: int,
                   results: list[RunResult], nsets: int) -> RunResult | None:
    """The verdict of the fault-injection run, when it found something; else None.

    Only host code touching a device buffer counts: on a GPU that is an invalid access in any
    run, so no honest program does it, failed launch or not. Anything else an error path does
    (an error code, no outputs, an exit, a hang cut by the wall clock: then no record) is not
    judged. The run exists only when every normal run was clean (the runner's last record).

    Args:
        spec: The task (buffer names for the message).
        records: Every record the runner wrote.
        normal: How many records the normal runs wrote (sets x schedules).
        results: The normal runs' results.
        nsets: Input sets in the job.

    Returns:
        A ``crash`` result for the last set, or None.
    """
    if len(records) <= normal or len(results) != nsets or any(r.status != "ok" for r in results):
        return None
    rec = records[normal]
    if STATUS_NAMES.get(rec.code) != "crash" or _HOST_ACCESS not in rec.detail:
        return None
    detail = rec.detail
    for k, arg in enumerate(a for a in spec.args if isinstance(a, TensorArg)):
        detail = detail.replace(f"device allocation #{k} ", f"buffer `{arg.name}` ")
    return _result("crash", detail="fault-injection run (every kernel launch refused as out of "
                                   f"resources): {detail}: a host path taken when a launch "
                                   "fails computes with device buffers (a host fallback)")


def _died(jailed: JailResult) -> RunResult:
    """The runner stopped outside a reported run: why, without echoing program output."""
    if jailed.timed_out:
        return _result("timeout", detail="wall-clock limit exceeded; every process of the run "
                                         "was killed")
    own = [ln for ln in jailed.stderr.decode("utf-8", "replace").splitlines()
           if ln.startswith(("sc_runner:", "bwrap:"))][:3]
    sig = jailed.signal
    if (jailed.returncode == _FORBIDDEN_EXIT or sig == signal.SIGSYS
            or any("forbidden system call" in ln for ln in own)):
        return _result("crash", detail=_forbidden(own))
    if sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig == signal.SIGXCPU:
            return _result("timeout", detail=f"CPU time limit exceeded ({name})")
        why = " (memory exhausted?)" if sig == signal.SIGKILL else ""
        return _result("crash", detail=f"killed by {name}{why}")
    return _result("crash", detail="the program ended the runner before it reported "
                                   f"(exit {jailed.returncode})" + ("\n" + "\n".join(own)
                                                                     if own else ""))


def _forbidden(lines: list[str]) -> str:
    import re

    for line in lines:
        m = re.search(r"forbidden system call (\d+)", line)
        if m:
            number = int(m.group(1))
            try:
                import pyseccomp

                name = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, number)
                name = name.decode() if isinstance(name, bytes) else str(name)
            except Exception:  # noqa: BLE001 - the number alone is still a verdict
                name = str(number)
            return f"forbidden system call {name} (the sandbox allows only what a kernel needs)"
    return "forbidden system call (the sandbox allows only what a kernel needs)"
