"""The ``cpu`` execution backend: run a CUDA program on the project's CPU emulator.

One run = rewrite (tools/verify/rewriter.py), build and load (tools/verify/emulator.py), then
call the launcher once per fiber schedule (forward, reverse, random by default) on fresh copies
of the inputs. Each tensor lives in the runtime's device memory (guard pages on both sides,
closed to host code outside launches and copies; docs/EMULATOR.md), so an out-of-bounds access
is a ``crash`` naming the buffer. Outputs that differ between schedules beyond the task's
tolerance are a ``race``, as is a plain read-modify-write two threads do on one address.

Timeouts: the runtime's watchdog stops kernels past the deadline (it preempts fibers stuck in
loops without barriers by a signal). Host code that loops forever is not covered in-process:
the sandbox's child-process kill handles that case.
"""

from __future__ import annotations

import ctypes
import threading
import time
from pathlib import Path

import numpy as np

from structcover.config import VerifySettings, load_settings
from structcover.schema import DTYPES, ScalarArg, TaskSpec, TensorArg, eval_size_expr
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.emulator import (
    BuildError,
    EmulatorLibrary,
    LinkRefused,
    build_library,
    compiler,
    first_error,
)
from structcover.tools.verify.rewriter import rewrite

DEFAULT_SCHEDULES = ("forward", "reverse", "random:1")
_SCALAR_CTYPES = {"int": ctypes.c_int, "long long": ctypes.c_longlong,
                  "unsigned int": ctypes.c_uint, "float": ctypes.c_float, "double": ctypes.c_double}
# Signal handlers and the runtime's global state are per process: one emulated run at a time.
_RUN_LOCK = threading.Lock()


class CpuEmulatorBackend:
    """Runs programs on the CPU emulator (``name = "cpu"``)."""

    name = "cpu"

    def __init__(self, settings: VerifySettings | None = None, *,
                 schedules: tuple[str, ...] | list[str] = DEFAULT_SCHEDULES, workers: int = 0):
        """Args:
            settings: Verification settings (cache folder); the loaded settings when None.
            schedules: Fiber schedules to run and compare: ``forward``, ``reverse``,
                ``random:SEED``. The first one's outputs are returned.
            workers: Worker threads for blocks; 0 = one per core.
        """
        self.settings = settings or load_settings().verify
        self.schedules = tuple(schedules) or DEFAULT_SCHEDULES
        self.workers = workers
        #: Wall seconds inside kernel launches in the last run's first schedule.
        self.last_kernel_seconds = 0.0

    def available(self) -> tuple[bool, str]:
        """The emulator needs a C++ compiler on an x86-64 or aarch64 machine."""
        arch = _no_context_switch()
        if arch:
            return False, arch
        try:
            return True, f"C++ compiler {compiler()}"
        except BuildError as exc:
            return False, str(exc)

    def run(self, source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
            sizes: dict[str, int] | None = None, timeout_s: float = 60.0) -> RunResult:
        """Run ``source``'s launcher on ``inputs`` under every schedule (see module doc).

        ``timeout_s`` bounds running (all schedules together); compiling has its own limit.
        A program build compiles only the program (about 0.2 CPU-seconds): the runtime's
        objects and precompiled header are built once per cache folder and runtime hash (about
        8 CPU-seconds cold); ``emulator.prepare_runtime`` builds them ahead of a timed run.

        Raises:
            ValueError: ``inputs`` lacks a tensor argument or one has the wrong shape/dtype.
        """
        sizes = {**spec.sizes, **(sizes or {})}
        arrays = _check_inputs(spec, inputs, sizes)
        arch = _no_context_switch()
        if arch:
            return self._result("unsupported", detail=f"unsupported: {arch}")
        rewritten = rewrite(source, filename=f"{spec.task_id or 'program'}.cu")
        if rewritten.unsupported:
            return self._result("unsupported", detail="unsupported: " + "; ".join(rewritten.unsupported))
        try:
            build = build_library(rewritten.source, Path(self.settings.cache_dir),
                                  timeout_s=max(120.0, timeout_s))
        except LinkRefused as exc:
            return self._result("rejected", detail=exc.log)
        except BuildError as exc:
            return self._result("compile-error", detail=f"{first_error(exc.log)}\n{exc.log}")
        # The limit covers running (all schedules), not compiling: a cold build on a loaded
        # machine must not eat the kernel's budget. The compiler has its own time limit.
        deadline = time.monotonic() + timeout_s
        lib = EmulatorLibrary(build.path)
        try:
            launcher = lib.launcher(spec.launcher, _argtypes(spec))
        except AttributeError:
            return self._result("compile-error", detail=f"no extern \"C\" launcher `{spec.launcher}`")
        scalars = _scalar_values(spec, sizes)
        runs: list[tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]] = []
        for schedule in self.schedules:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return self._result("timeout", detail=f"time limit of {timeout_s:.1f} s spent before "
                                                       f"schedule {schedule}")
            outcome = self._run_once(lib, launcher, spec, arrays, scalars, schedule, remaining)
            if isinstance(outcome, RunResult):
                return outcome
            runs.append((schedule, *outcome))
        race = _compare_schedules(spec, runs)
        _, outputs, after = runs[0]
        if race:
            return self._result("race", outputs=outputs, inputs_after=after, detail=race)
        return self._result("ok", outputs=outputs, inputs_after=after,
                            detail=f"schedules: {', '.join(self.schedules)}")

    def _result(self, status: str, **kw) -> RunResult:
        return RunResult(status=status, backend=self.name, **kw)  # type: ignore[arg-type]

    def _run_once(self, lib: EmulatorLibrary, launcher, spec: TaskSpec, arrays: dict[str, np.ndarray],
                  scalars: dict[str, object], schedule: str, remaining: float):
        # Tensors live in the runtime's device memory (guard pages, closed to host code, a
        # host pointer as a kernel argument is a crash); see runtime/sc_devmem.cpp.
        with _RUN_LOCK:
            try:
                lib.configure(schedule, self.workers, remaining)
                ptrs = {name: lib.device_buffer(arr) for name, arr in arrays.items()}
                args = [ctypes.c_void_p(ptrs[a.name]) if isinstance(a, TensorArg)
                        else scalars[a.name] for a in spec.args]
                rc = launcher(*args, None)
                status, detail = lib.status()
                if schedule == self.schedules[0]:
                    self.last_kernel_seconds = lib.kernel_seconds()
                results = {name: np.empty_like(arr) for name, arr in arrays.items()}
                for name, out in results.items():
                    lib.read_device(ptrs[name], out)
            finally:
                lib.release_handlers()
        for k, name in enumerate(arrays):  # the runtime numbers allocations; ours come first
            detail = detail.replace(f"device allocation #{k} ", f"buffer `{name}` ")
        where = f" (schedule {schedule})"
        if status == "timeout" and schedule != self.schedules[0]:
            where += (f"; schedule {self.schedules[0]} finished, so the kernel probably spin-waits on "
                      "work of a block this schedule starts later (CUDA guarantees no block order)")
        if status != "ok":
            return self._result(status, detail=detail + where)
        if rc != 0:
            return self._result("launch-error", detail=f"launcher returned CUDA error {rc}{where}")
        outputs = {a.name: results[a.name] for a in spec.tensors if a.role != "input"}
        after = {a.name: results[a.name] for a in spec.tensors if a.role != "output"}
        return outputs, after


def _no_context_switch() -> str:
    """Why this machine cannot run fibers (the runtime switches contexts in assembly), or ''."""
    import platform

    machine = platform.machine()
    if machine.lower() in ("x86_64", "amd64", "aarch64", "arm64"):
        return ""
    return f"the CPU emulator has no fiber context switch for {machine or 'this machine'}"


def _check_inputs(spec: TaskSpec, inputs: dict[str, np.ndarray], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    arrays = {}
    for arg in spec.tensors:
        if arg.name not in inputs:
            raise ValueError(f"inputs: missing array for tensor argument `{arg.name}`")
        arr = np.ascontiguousarray(inputs[arg.name])
        shape = spec.shape_of(arg.name, sizes)
        want = np.dtype(DTYPES[arg.dtype])
        if arr.dtype != want:
            raise ValueError(f"inputs: `{arg.name}` has dtype {arr.dtype}, task says {want}")
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"inputs: `{arg.name}` has shape {arr.shape}, task says {shape}")
        arrays[arg.name] = arr.reshape(shape)
    return arrays


def _argtypes(spec: TaskSpec) -> list:
    types = [ctypes.c_void_p if isinstance(a, TensorArg) else _SCALAR_CTYPES[a.ctype] for a in spec.args]
    return [*types, ctypes.c_void_p]


def _scalar_values(spec: TaskSpec, sizes: dict[str, int]) -> dict[str, object]:
    values: dict[str, object] = {}
    for arg in spec.args:
        if isinstance(arg, ScalarArg):
            ctype = _SCALAR_CTYPES[arg.ctype]
            if arg.ctype in ("float", "double"):
                raw = arg.value
                value = float(raw) if not isinstance(raw, str) or raw not in sizes else float(sizes[raw])
                values[arg.name] = ctype(value)  # type: ignore[arg-type]
            else:
                values[arg.name] = ctype(eval_size_expr(arg.value, sizes))
    return values


def _compare_schedules(spec: TaskSpec, runs: list[tuple[str, dict, dict]]) -> str:
    """Describe the first output that differs between schedules beyond tolerance, or ''."""
    base_name, base, _ = runs[0]
    dtypes = {a.name: a.dtype for a in spec.tensors}
    for name, outputs, _ in runs[1:]:
        for key, ref in base.items():
            other = outputs[key]
            dtype = dtypes[key]
            if dtype in ("float32", "float64", "float16"):
                atol, rtol = spec.tolerance(dtype)
                a, b = ref.astype(np.float64), other.astype(np.float64)
                bad = ~np.isclose(a, b, atol=atol, rtol=rtol, equal_nan=True)
            else:
                bad = ref != other
            if bad.any():
                idx = np.unravel_index(int(np.flatnonzero(bad)[0]), ref.shape)
                return (f"output `{key}` differs between schedules {base_name} and {name} at "
                        f"{list(map(int, idx))}: {ref[idx]!r} vs {other[idx]!r} ({int(bad.sum())} "
                        "elements): a data race, or a read of memory nothing wrote (shared or device "
                        "memory, or an uninitialised local: each schedule poisons them differently)")
    return ""


def run_program(source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
                sizes: dict[str, int] | None = None, timeout_s: float = 60.0,
                schedules: list[str] | None = None, workers: int = 0,
                cache_dir: str | None = None) -> RunResult:
    """Plain-function entry for a sandbox child: run ``source`` on the CPU emulator.

    Args:
        source: The program.
        spec: Its task.
        inputs: One array per tensor argument (outputs pre-filled).
        sizes: Size overrides.
        timeout_s: Wall-clock limit for all schedules together.
        schedules: Fiber schedules (default forward, reverse, random:1).
        workers: Worker threads (0 = one per core).
        cache_dir: Build cache folder (VerifySettings' default when None).

    Returns:
        The run's result (``backend = "cpu"``).
    """
    settings = VerifySettings(cache_dir=Path(cache_dir)) if cache_dir else load_settings().verify
    backend = CpuEmulatorBackend(settings, schedules=tuple(schedules or DEFAULT_SCHEDULES), workers=workers)
    return backend.run(source, spec, inputs, sizes=sizes, timeout_s=timeout_s)
