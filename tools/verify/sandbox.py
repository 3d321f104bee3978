"""Run jobs in a Python child process with limits (the GPU backend; the CPU emulator uses the
jail of ``jail.py`` instead, see docs/SANDBOX.md).

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
           "run_programs_sandboxed", "sandbox_call"]

_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
#: The only variables of the caller's environment the child sees: what Python, the CUDA
#: driver and the numeric libraries need to start. Everything else (a database URL, a cloud
#: profile, an SSH agent socket, the user's proxy) stays out, whatever its name says.
_CHILD_ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
})
_CHILD_ENV_PREFIXES = ("LC_",)


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

    status: str  # a RunStatus, or "ok" with ``value``/``results`` set
    detail: str = ""
    value: Any = None
    results: list[RunResult] = field(default_factory=list)
    isolation: list[str] = field(default_factory=list)
    returncode: int | None = None
    wall_s: float = 0.0


def _child_env(work: Path) -> dict[str, str]:
    """The child's whole environment: an allow-list of the caller's, HOME and TMPDIR at ``work``.

    Untrusted code may read its environment, so it gets a fixed minimal one: names on
    :data:`_CHILD_ENV_NAMES` (never one that looks like a credential), with ``HOME`` and
    ``TMPDIR`` pointing at the job's private folder so that ``~`` finds none of the user's files.
    """
    env = {k: v for k, v in os.environ.items()
           if (k in _CHILD_ENV_NAMES or k.startswith(_CHILD_ENV_PREFIXES))
           and not any(m in k.upper() for m in _SECRET_MARKERS)}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # BLAS thread pools reserve memory under RLIMIT_AS
    env["HOME"] = env["TMPDIR"] = str(work)
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


def _make_run(meta: dict, arrays: dict[str, np.ndarray]) -> RunResult:
    outputs = {k[4:]: v for k, v in arrays.items() if k.startswith("out:")}
    inputs_after = {k[3:]: v for k, v in arrays.items() if k.startswith("in:")}
    timing = Timing.model_validate(meta["timing"]) if meta.get("timing") else None
    return RunResult(status=meta.get("status", "crash"), outputs=outputs,
                     inputs_after=inputs_after, detail=meta.get("detail", ""),
                     backend=meta.get("backend", ""), timing=timing,
                     energy_j=meta.get("energy_j"))


def _load_result(work: Path) -> tuple[list[RunResult], Any, dict]:
    meta = json.loads((work / "result.json").read_text())
    if meta.get("kind") not in ("run", "runs"):
        return [], meta.get("value"), meta
    arrays: dict[str, np.ndarray] = {}
    npz = work / "outputs.npz"
    if npz.exists():
        with np.load(npz, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    if meta["kind"] == "run":
        return [_make_run(meta, arrays)], None, meta
    runs = []
    for i, run_meta in enumerate(meta["runs"]):
        prefix = f"{i}/"
        runs.append(_make_run(run_meta, {k[len(prefix):]: v for k, v in arrays.items()
                                         if k.startswith(prefix)}))
    return runs, None, meta


def sandbox_call(target: str, *, kwargs: dict[str, Any] | None = None,
                 spec: TaskSpec | None = None, inputs: dict[str, np.ndarray] | None = None,
                 inputs_batch: list[dict[str, np.ndarray]] | None = None,
                 limits: SandboxLimits | None = None) -> SandboxOutcome:
    """Call ``module:function`` in a sandboxed child process.

    The child calls ``function(**kwargs, [spec=TaskSpec], [inputs=arrays])``. A function that
    returns a ``RunResult`` has its arrays shipped back through ``outputs.npz`` (in
    ``results``); any other return value must be JSON-serialisable and comes back as ``value``.
    With ``inputs_batch`` the function (which must return RunResults) is called once per input
    set in the same child, stopping after the first run whose status is not ``ok``: one
    interpreter start-up and one library load for several trials.

    Args:
        target: ``"package.module:function"``.
        kwargs: JSON-serialisable keyword arguments.
        spec: Passed as ``spec`` when given.
        inputs: Passed as ``inputs`` when given (written to ``inputs.npz``).
        inputs_batch: Several input sets, one call each (exclusive with ``inputs``).
        limits: Resource limits (defaults: ``SandboxLimits()``).

    Returns:
        The outcome; never raises for a misbehaving job (timeouts, crashes, OOM).

    Raises:
        ValueError: ``target`` is not of the form ``module:function``.
    """
    if ":" not in target:
        raise ValueError(f"target {target!r} must be 'module:function'")
    if inputs is not None and inputs_batch is not None:
        raise ValueError("pass inputs or inputs_batch, not both")
    limits = limits or SandboxLimits()
    work = Path(tempfile.mkdtemp(prefix="structcover-sbx-"))
    try:
        job = {"target": target, "kwargs": kwargs or {},
               "spec": spec.model_dump(mode="json") if spec else None,
               "has_inputs": inputs is not None,
               "batch": len(inputs_batch) if inputs_batch is not None else None,
               "memory_limit_mb": limits.memory_limit_mb,
               "cpu_limit_s": limits.cpu_limit_s or int(limits.timeout_s * (os.cpu_count() or 1))
               + 10,
               "file_size_mb": limits.file_size_mb,
               "isolate_network": limits.isolate_network,
               "allow_user_namespace": limits.allow_user_namespace}
        (work / "job.json").write_text(json.dumps(job))
        if inputs is not None:
            np.savez(work / "inputs.npz", **{k: np.ascontiguousarray(v)  # type: ignore[arg-type]
                                             for k, v in inputs.items()})
        if inputs_batch is not None:
            np.savez(work / "inputs.npz", **{f"{i}/{k}": np.ascontiguousarray(v)  # type: ignore[arg-type]
                                             for i, arrays in enumerate(inputs_batch)
                                             for k, v in arrays.items()})
        return _run_child(work, limits)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_child(work: Path, limits: SandboxLimits) -> SandboxOutcome:
    cmd = [sys.executable, "-m", "structcover.tools.verify._sandbox_child", str(work)]
    start = time.monotonic()
    with open(work / "stdout.txt", "wb") as out, open(work / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(cmd, cwd=work, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=_child_env(work), start_new_session=True)
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
    results, value, meta = _load_result(work)
    if meta.get("error"):
        return SandboxOutcome(meta.get("status", "crash"), meta["error"], isolation=isolation,
                              returncode=rc, wall_s=wall)
    status = next((r.status for r in results if r.status != "ok"), "ok")
    return SandboxOutcome(status, results[-1].detail if results else "", value=value,
                          results=results, isolation=isolation, returncode=rc, wall_s=wall)


def run_programs_sandboxed(target: str, source: str, spec: TaskSpec,
                           inputs_batch: list[dict[str, np.ndarray]], *,
                           sizes: dict[str, int] | None = None,
                           limits: SandboxLimits | None = None, backend: str = "",
                           extra: dict[str, Any] | None = None) -> list[RunResult]:
    """Policy-check ``source``, then run ``target(source=, spec=, inputs=, sizes=, **extra)``
    once per input set, all in one sandboxed child.

    Args:
        target: A ``run_program``-style function, ``"module:function"``, returning RunResult.
        source: Program text (untrusted).
        spec: The task.
        inputs_batch: Input sets (arrays for every tensor argument), one run each.
        sizes: Size overrides.
        limits: Sandbox limits for the whole batch.
        backend: Backend name recorded in the results.
        extra: More JSON-serialisable keyword arguments for ``target``.

    Returns:
        One result per run made: the runs stop after the first non-``ok`` one. A single
        ``rejected`` result when the host policy refuses the program; a single ``timeout`` /
        ``crash`` result when the child misbehaves. Details end with what was isolated.
    """
    reasons = check_host_policy(source)
    if reasons:
        return [RunResult(status="rejected", backend=backend,
                          detail="host policy: " + "; ".join(reasons))]
    outcome = sandbox_call(target, kwargs={"source": source, "sizes": sizes, **(extra or {})},
                           spec=spec, inputs_batch=inputs_batch, limits=limits)
    note = "sandbox: " + ", ".join(outcome.isolation) if outcome.isolation else ""
    results = outcome.results or [RunResult(
        status=outcome.status if outcome.status != "ok" else "crash",  # type: ignore[arg-type]
        backend=backend,
        detail=outcome.detail or "job returned no RunResult")]
    for result in results:
        result.backend = result.backend or backend
        result.detail = "\n".join(p for p in (result.detail, note) if p)
    return results


def run_program_sandboxed(target: str, source: str, spec: TaskSpec,
                          inputs: dict[str, np.ndarray], *, sizes: dict[str, int] | None = None,
                          limits: SandboxLimits | None = None, backend: str = "",
                          extra: dict[str, Any] | None = None) -> RunResult:
    """``run_programs_sandboxed`` for one input set; returns its single result."""
    return run_programs_sandboxed(target, source, spec, [inputs], sizes=sizes, limits=limits,
                                  backend=backend, extra=extra)[0]
