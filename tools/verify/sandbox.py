"""Run untrusted compile-and-run jobs in a child process with limits (DESIGN.md §6).

Every execution of generated code goes through ``sandbox_call``: the job runs in a fresh
Python child (``_sandbox_child``) in its own session and temp dir, with

* a wall-clock timeout enforced here by killing the child's whole process group;
* ``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (CPU seconds), ``RLIMIT_FSIZE`` and no core dumps;
* no network: the child enters a new network namespace (``unshare(CLONE_NEWNET)``, or with a
  new user namespace when unprivileged) before it touches the program; when the kernel refuses,
  the result's ``isolation`` says so;
* inputs and outputs exchanged as ``.npz`` files in the temp dir.

What is *not* isolated: the filesystem is visible (only the cwd is private), which is why
``run_program_sandboxed`` refuses host code that opens files before anything runs
(``check_host_policy``). Crashes, hangs, wild writes and out-of-memory become statuses.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from structcover.schema import TaskSpec, Timing
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.host_policy import check_host_policy

__all__ = ["SandboxLimits", "SandboxOutcome", "check_host_policy", "run_program_sandboxed",
           "sandbox_call"]

_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one sandboxed job.

    Attributes:
        timeout_s: Wall-clock limit; the process group is killed past it.
        memory_limit_mb: ``RLIMIT_AS`` in MiB; None leaves it unset (CUDA reserves huge virtual
            ranges, so the GPU runner cannot use it).
        cpu_limit_s: ``RLIMIT_CPU``; None = timeout × cores + 10 (a backstop for the timeout).
        isolate_network: Enter a new network namespace.
        allow_user_namespace: Fall back to a user namespace when a plain netns is refused (not
            for the GPU: device files are not mapped into it).
        file_size_mb: ``RLIMIT_FSIZE`` in MiB.
    """

    timeout_s: float = 60.0
    memory_limit_mb: int | None = 4096
    cpu_limit_s: int | None = None
    isolate_network: bool = True
    allow_user_namespace: bool = True
    file_size_mb: int = 512

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_limit_mb is not None and self.memory_limit_mb < 64:
            raise ValueError(f"memory_limit_mb must be >= 64, got {self.memory_limit_mb}")


@dataclass
class SandboxOutcome:
    """What came back from a sandboxed job."""

    status: str  # a RunStatus, or "ok" with ``value``/``result`` set
    detail: str = ""
    value: Any = None
    result: RunResult | None = None
    isolation: list[str] = field(default_factory=list)
    returncode: int | None = None
    wall_s: float = 0.0


def _child_env() -> dict[str, str]:
    # Untrusted code may read its environment: drop anything that looks like a credential.
    env = {k: v for k, v in os.environ.items()
           if not any(m in k.upper() for m in _SECRET_MARKERS)}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # BLAS thread pools reserve memory under RLIMIT_AS
    return env


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text[-limit:].strip()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_status(sig: int) -> tuple[str, str]:
    name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
    if sig == signal.SIGXCPU:
        return "timeout", f"CPU time limit exceeded ({name})"
    if sig == signal.SIGKILL:
        return "crash", f"killed by {name} (memory exhausted?)"
    return "crash", f"killed by {name}"


def _load_result(work: Path, status: str) -> tuple[RunResult | None, Any, dict]:
    meta = json.loads((work / "result.json").read_text())
    if meta.get("kind") != "run":
        return None, meta.get("value"), meta
    outputs: dict[str, np.ndarray] = {}
    inputs_after: dict[str, np.ndarray] = {}
    npz = work / "outputs.npz"
    if npz.exists():
        with np.load(npz, allow_pickle=False) as data:
            for key in data.files:
                target = outputs if key.startswith("out:") else inputs_after
                target[key.split(":", 1)[1]] = data[key]
    timing = Timing.model_validate(meta["timing"]) if meta.get("timing") else None
    result = RunResult(status=meta.get("status", status), outputs=outputs,
                       inputs_after=inputs_after, detail=meta.get("detail", ""),
                       backend=meta.get("backend", ""), timing=timing,
                       energy_j=meta.get("energy_j"))
    return result, None, meta


def sandbox_call(target: str, *, kwargs: dict[str, Any] | None = None,
                 spec: TaskSpec | None = None, inputs: dict[str, np.ndarray] | None = None,
                 limits: SandboxLimits | None = None) -> SandboxOutcome:
    """Call ``module:function`` in a sandboxed child process.

    The child calls ``function(**kwargs, [spec=TaskSpec], [inputs=arrays])``. A function that
    returns a ``RunResult`` has its arrays shipped back through ``outputs.npz``; any other
    return value must be JSON-serialisable and comes back as ``value``.

    Args:
        target: ``"package.module:function"``.
        kwargs: JSON-serialisable keyword arguments.
        spec: Passed as ``spec`` when given.
        inputs: Passed as ``inputs`` when given (written to ``inputs.npz``).
        limits: Resource limits (defaults: ``SandboxLimits()``).

    Returns:
        The outcome; never raises for a misbehaving job (timeouts, crashes, OOM).

    Raises:
        ValueError: ``target`` is not of the form ``module:function``.
    """
    if ":" not in target:
        raise ValueError(f"target {target!r} must be 'module:function'")
    limits = limits or SandboxLimits()
    work = Path(tempfile.mkdtemp(prefix="structcover-sbx-"))
    try:
        job = {"target": target, "kwargs": kwargs or {},
               "spec": spec.model_dump(mode="json") if spec else None,
               "has_inputs": inputs is not None,
               "memory_limit_mb": limits.memory_limit_mb,
               "cpu_limit_s": limits.cpu_limit_s or int(limits.timeout_s * (os.cpu_count() or 1))
               + 10,
               "file_size_mb": limits.file_size_mb,
               "isolate_network": limits.isolate_network,
               "allow_user_namespace": limits.allow_user_namespace}
        (work / "job.json").write_text(json.dumps(job))
        if inputs is not None:
            np.savez(work / "inputs.npz", **{k: np.ascontiguousarray(v) for k, v in inputs.items()})
        return _run_child(work, limits)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_child(work: Path, limits: SandboxLimits) -> SandboxOutcome:
    cmd = [sys.executable, "-m", "structcover.tools.verify._sandbox_child", str(work)]
    start = time.monotonic()
    with open(work / "stdout.txt", "wb") as out, open(work / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(cmd, cwd=work, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=_child_env(), start_new_session=True)
        try:
            rc = proc.wait(timeout=limits.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = None
        finally:
            _kill_group(proc)  # also reaps strays the job may have left behind
            proc.wait()
    wall = time.monotonic() - start
    isolation = []
    if (work / "isolation.json").exists():
        isolation = json.loads((work / "isolation.json").read_text())
    logs = _tail(work / "stderr.txt") or _tail(work / "stdout.txt")
    if timed_out:
        return SandboxOutcome("timeout", f"wall-clock limit of {limits.timeout_s:g} s exceeded; "
                              "process group killed", isolation=isolation, wall_s=wall)
    if rc is not None and rc < 0:
        status, detail = _signal_status(-rc)
        return SandboxOutcome(status, f"{detail}\n{logs}".strip(), isolation=isolation,
                              returncode=rc, wall_s=wall)
    if not (work / "result.json").exists():
        return SandboxOutcome("crash", f"child exited with code {rc} and no result\n{logs}".strip(),
                              isolation=isolation, returncode=rc, wall_s=wall)
    result, value, meta = _load_result(work, "ok")
    if meta.get("error"):
        return SandboxOutcome(meta.get("status", "crash"), meta["error"], isolation=isolation,
                              returncode=rc, wall_s=wall)
    status = result.status if result else "ok"
    return SandboxOutcome(status, result.detail if result else "", value=value, result=result,
                          isolation=isolation, returncode=rc, wall_s=wall)


def run_program_sandboxed(target: str, source: str, spec: TaskSpec,
                          inputs: dict[str, np.ndarray], *, sizes: dict[str, int] | None = None,
                          limits: SandboxLimits | None = None, backend: str = "",
                          extra: dict[str, Any] | None = None) -> RunResult:
    """Policy-check ``source``, then run ``target(source=, spec=, inputs=, sizes=, **extra)``.

    Args:
        target: A ``run_program``-style function, ``"module:function"``, returning RunResult.
        source: Program text (untrusted).
        spec: The task.
        inputs: Arrays for every tensor argument.
        sizes: Size overrides.
        limits: Sandbox limits.
        backend: Backend name recorded in the result.
        extra: More JSON-serialisable keyword arguments for ``target``.

    Returns:
        The run's result; status ``rejected`` when the host policy refuses the program, and
        ``timeout``/``crash`` when the child misbehaves. The detail ends with what was isolated.
    """
    reasons = check_host_policy(source)
    if reasons:
        return RunResult(status="rejected", backend=backend,
                         detail="host policy: " + "; ".join(reasons))
    outcome = sandbox_call(target, kwargs={"source": source, "sizes": sizes, **(extra or {})},
                           spec=spec, inputs=inputs, limits=limits)
    note = "sandbox: " + ", ".join(outcome.isolation) if outcome.isolation else ""
    if outcome.result is not None:
        result = outcome.result
        result.backend = result.backend or backend
    else:
        result = RunResult(status=outcome.status if outcome.status != "ok" else "crash",
                           backend=backend, detail=outcome.detail or "job returned no RunResult")
    result.detail = "\n".join(p for p in (result.detail, note) if p)
    return result
