"""Pick an execution backend by name: ``auto``, ``gpu``, ``cpu`` or ``compile-only``.

``auto`` takes the GPU when one is usable, else the CPU emulator, else compile-only. Every
backend here runs untrusted programs through the sandbox (``sandbox.py``) after the host policy.
Backends written by other parts (the CPU emulator, the compile service) are imported lazily so
that a missing part makes its backend unavailable instead of breaking imports.
"""

from __future__ import annotations

import numpy as np

from structcover.config import CompilerSettings, VerifySettings
from structcover.schema import TaskSpec
from structcover.tools.verify.backend import ExecutionBackend, RunResult
from structcover.tools.verify.host_policy import check_host_policy

BACKENDS = ("auto", "gpu", "cpu", "compile-only")


class CpuBackend:
    """The CPU emulator, compiled and run in the jail (``jailed_cpu``) per call."""

    name = "cpu"

    def __init__(self, settings: VerifySettings | None = None) -> None:
        self.settings = settings or VerifySettings()

    @property
    def schedules(self) -> tuple[str, ...]:
        """The fiber schedules every run goes through (recorded in verdicts, for replays).

        Fixed, the random one's seed included (``random:1``): the same program and inputs
        give the same outputs on every run and every machine.
        """
        from structcover.tools.verify.cpu_backend import DEFAULT_SCHEDULES

        return DEFAULT_SCHEDULES

    def available(self) -> tuple[bool, str]:
        """Whether the emulator module imports and says it can run here."""
        try:
            from structcover.tools.verify import cpu_backend
        except ImportError as exc:
            return False, f"CPU emulator not installed: {exc}"
        if not hasattr(cpu_backend, "run_program"):
            return False, "CPU emulator has no run_program entry point"
        inner = getattr(cpu_backend, "CpuEmulatorBackend", None)
        if inner is not None:
            try:
                return inner().available()
            except Exception as exc:  # noqa: BLE001 - report, never raise
                return False, f"CPU emulator unavailable: {type(exc).__name__}: {exc}"
        return True, "CPU emulator"

    def run(self, source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
            sizes: dict[str, int] | None = None, timeout_s: float | None = None) -> RunResult:
        """Policy check, then the emulator in a child with the settings' memory limit.

        The emulator's own watchdog gets ``timeout_s`` (it reports stuck kernels as
        ``timeout`` with detail); the runner is killed ``jailed_cpu.GRACE_S`` later in case
        host code hangs.
        """
        return self.run_many(source, spec, [inputs], sizes=sizes, timeout_s=timeout_s)[0]

    def run_many(self, source: str, spec: TaskSpec, inputs_batch: list[dict[str, np.ndarray]],
                 *, sizes: dict[str, int] | None = None, timeout_s: float | None = None,
                 ) -> list[RunResult]:
        """Several input sets in one jailed runner (one start-up, one library load).

        ``timeout_s`` applies to each run; the runs stop after the first non-``ok`` one.
        """
        timeout = timeout_s or self.settings.timeout_s
        # The program is compiled and run only inside the jail (bubblewrap + seccomp): see
        # jailed_cpu.py and docs/SANDBOX.md. The host policy stays as an early, friendly refusal.
        reasons = check_host_policy(source)
        if reasons:
            return [RunResult(status="rejected", backend="cpu",
                              detail="host policy: " + "; ".join(reasons))]
        from structcover.tools.verify.jailed_cpu import run_many

        return run_many(source, spec, inputs_batch, settings=self.settings, sizes=sizes,
                        timeout_s=timeout, schedules=self.schedules)


class CompileOnlyBackend:
    """Compiles (through the compile service) but never executes; equivalence stays None."""

    name = "compile-only"

    def __init__(self, compiler: CompilerSettings | None = None) -> None:
        self.compiler = compiler or CompilerSettings()

    def available(self) -> tuple[bool, str]:
        """Whether the compile service and a compiler (NVRTC or nvcc) are present."""
        try:
            from structcover.tools.compiler import service  # noqa: F401
            from structcover.tools.compiler.toolchain import find_nvcc, nvrtc_available
        except ImportError as exc:
            return False, f"compile service not installed: {exc}"
        if find_nvcc() is None and not nvrtc_available():
            return False, "neither nvcc nor NVRTC found"
        return True, "compile service"

    def compile(self, source: str, spec: TaskSpec | None = None) -> tuple[bool, str]:
        """Policy-check and compile ``source``; returns (compiled, log)."""
        reasons = check_host_policy(source)
        if reasons:
            return False, "host policy: " + "; ".join(reasons)
        from structcover.tools.compiler.service import compile_program

        result = compile_program(source, settings=self.compiler)
        log = result.log or "\n".join(str(e) for e in result.errors)
        return bool(result.ok), log

    def run(self, source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
            sizes: dict[str, int] | None = None, timeout_s: float = 60.0) -> RunResult:
        """Never executes: compile errors are reported, anything else is ``unsupported``."""
        ok, log = self.compile(source, spec)
        if not ok:
            status = "rejected" if log.startswith("host policy") else "compile-error"
            return RunResult(status=status, detail=log, backend=self.name)  # type: ignore[arg-type]
        return RunResult(status="unsupported", backend=self.name,
                         detail="compile-only backend compiles but does not execute programs")


def _make(kind: str, settings: VerifySettings) -> ExecutionBackend:
    if kind == "gpu":
        from structcover.tools.verify.gpu_runner import GpuBackend

        return GpuBackend(settings)
    if kind == "cpu":
        return CpuBackend(settings)
    return CompileOnlyBackend(CompilerSettings(include_dirs=list(settings.include_dirs)))


def get_backend(kind: str = "auto", *, settings: VerifySettings | None = None,
                ) -> ExecutionBackend:
    """Return a ready backend.

    Args:
        kind: ``auto`` (gpu, else cpu, else compile-only), ``gpu``, ``cpu`` or ``compile-only``.
        settings: Verify settings (timeouts, memory limit, cache folder).

    Returns:
        A backend whose ``available()`` is True.

    Raises:
        ValueError: Unknown kind.
        RuntimeError: The requested backend (or, for ``auto``, every backend) is unavailable;
            the message gives each reason.
    """
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")
    settings = settings or VerifySettings()
    reasons = []
    for name in (("gpu", "cpu", "compile-only") if kind == "auto" else (kind,)):
        backend = _make(name, settings)
        ok, why = backend.available()
        if ok:
            return backend
        reasons.append(f"{name}: {why}")
    raise RuntimeError("no backend available: " + "; ".join(reasons))
