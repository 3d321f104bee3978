"""Start the torch child (``child.py``) in the jail and read back what it wrote.

The child sees, read-only: the Python installation and the virtual environment (torch), the
package's own source folders (the editable install maps ``structcover`` and
``structcover.tools`` to them), the job folder (job, problem and candidate files), the
reference's folder and the prebuilt CPU extensions; writable: its output folder only. No
network, a private ``/tmp``, uid 65534, rlimits (``tools/verify/jail.py``, docs/SANDBOX.md). On
the GPU path the driver's device nodes are bound too, and CUDA's toolkit read-only for
``load_inline``'s nvcc.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from structcover.tools.kernelbench import zygote
from structcover.tools.kernelbench.triton_path import child_env
from structcover.tools.verify.jail import JailLimits, SandboxUnavailable, run_jailed

__all__ = ["ChildOutcome", "SandboxUnavailable", "run_child"]

CHILD_MODULE = "structcover.tools.kernelbench.child"
#: Address-space limit of the CPU child: torch maps its CUDA libraries at import.
CPU_MEMORY_MB = 16384
_GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                "/dev/nvidia-modeset", *(f"/dev/nvidia{i}" for i in range(16)))


@dataclass
class ChildOutcome:
    """What one child run produced: its ``result.json`` or why there is none."""

    result: dict[str, Any] = field(default_factory=dict)
    folder: Path = Path()
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The child ran to the end and reported no failure."""
        return self.result.get("status") == "ok"


def _python_dirs() -> list[Path]:
    dirs = {Path(sys.base_prefix), Path(sys.prefix), Path(sysconfig.get_paths()["purelib"]),
            Path(sysconfig.get_paths()["platlib"]), Path(sys.executable).resolve().parent.parent}
    return sorted(d.resolve() for d in dirs if d.is_dir())


def _source_dirs() -> list[Path]:
    import structcover
    import structcover.tools

    return [Path(structcover.__file__).resolve().parent,
            Path(structcover.tools.__file__).resolve().parent]


def _cuda_dirs() -> list[Path]:
    nvcc = shutil.which("nvcc")
    dirs = [Path(nvcc).resolve().parent.parent] if nvcc else []
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and Path(home).is_dir():
        dirs.append(Path(home).resolve())
    return dirs


def _one_device(visible: str | None) -> str:
    """The one GPU the child may see: the first the caller may see (index or UUID), else 0."""
    first = (visible or "").split(",")[0].strip()
    return first or "0"


def _zygote_env(device: str) -> dict[str, str]:
    """A child's environment without its job's own folders (what a zygote is started with)."""
    # Triton: the interpreter on the CPU path only; its folders in the jail's /tmp.
    return {"OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
            **child_env(device)}


def prewarm_cpu_children(count: int = 1) -> list[Any]:
    """Start ``count`` zygotes for CPU candidate children in the background (none when the
    zygote is off or the jail is missing): a campaign calls it before its diagnosis, so that
    torch's import in the zygotes overlaps it instead of delaying the first candidates."""
    if not zygote.enabled():
        return []
    return zygote.prewarm([*_python_dirs(), *_source_dirs()], _zygote_env("cpu"), CPU_MEMORY_MB,
                          count)


def run_child(job: dict[str, Any], work: Path, out_dir: Path, *, device: str,
              ro: list[Path] = (), timeout_s: float = 300.0,  # type: ignore[assignment]
              module: str = CHILD_MODULE) -> ChildOutcome:
    """Write ``job`` to ``work/job-<mode>.json`` and run the child on it in the jail.

    Args:
        job: The child's job (``child.py``); ``out_dir`` is filled in.
        work: The job folder (read-only in the jail).
        out_dir: The child's writable folder (created).
        device: ``cpu`` or ``cuda``.
        ro: More read-only paths (the reference's folder, extension libraries).
        timeout_s: Wall-clock limit.
        module: The child module run with ``-m`` (``profile_child`` for a profile run).

    Returns:
        The outcome; a child that died or timed out has ``result["failure"]`` ``crash`` or
        ``timeout`` and the tail of its error output in ``detail``.

    Raises:
        SandboxUnavailable: No jail here and the user did not opt in to running without one.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    job = {**job, "out_dir": str(out_dir)}
    job_path = work / f"job-{job['mode']}.json"
    job_path.write_text(json.dumps(job))
    env = {**_zygote_env(device), "TORCH_EXTENSIONS_DIR": str(out_dir / "torch_extensions")}
    binds = [*_python_dirs(), *_source_dirs(), work, *ro]
    devices: tuple[str, ...] = ()
    memory: int | None = CPU_MEMORY_MB
    if device == "cuda":
        cuda = _cuda_dirs()
        # The driver reads the device's PCI and NUMA facts from /sys (read-only here).
        binds += [*cuda, Path("/proc/driver/nvidia"), Path("/sys")]
        if cuda:
            env["CUDA_HOME"] = str(cuda[0])
            env["PATH"] = f"{cuda[0] / 'bin'}:/usr/bin:/bin"
        # One device visible: a candidate that selects another GPU (to run where the timer
        # is not) gets an error, not a second device.
        env["CUDA_VISIBLE_DEVICES"] = _one_device(os.environ.get("CUDA_VISIBLE_DEVICES"))
        devices, memory = _GPU_DEVICES, None  # CUDA reserves huge virtual ranges
    if device == "cpu" and module == CHILD_MODULE and job["mode"] == "candidate" and \
            zygote.enabled():
        try:
            returncode, timed_out, wall = zygote.run_in_zygote(
                job, work, out_dir, ro=list(ro), binds=[*_python_dirs(), *_source_dirs()],
                env=_zygote_env(device), job_env=env, memory_mb=memory, timeout_s=timeout_s)
            if returncode is None and not timed_out:
                # The zygote died or stopped answering mid-job: whatever the fork wrote after
                # killing its supervisor is not read (it may race the jail's end).
                return ChildOutcome(folder=out_dir, wall_s=wall, result={
                    "status": "error", "failure": "crash",
                    "detail": "the zygote running the candidate ended during the job (killed "
                              "or stopped from inside the jail)"})
            log = out_dir / "child.log"
            stderr = log.read_bytes()[-65536:] if log.is_file() and not log.is_symlink() else b""
            return _outcome(out_dir, timeout_s, timed_out, returncode, None, stderr, wall, [])
        except zygote.ZygoteUnavailable:
            pass  # the one-shot child below
    argv = [sys.executable, "-I", "-m", module, str(job_path)]
    limits = JailLimits(timeout_s=timeout_s, memory_mb=memory, file_size_mb=1024, nofile=1024,
                        nproc=512)
    jailed = run_jailed(argv, ro=binds, rw=[out_dir], env=env, cwd=out_dir, limits=limits,
                        devices=devices)
    return _outcome(out_dir, timeout_s, jailed.timed_out, jailed.returncode, jailed.signal,
                    jailed.stderr or b"", jailed.wall_s, list(jailed.notes))


def plain_files_only(folder: Path) -> list[str]:
    """Remove from ``folder`` (recursively) everything but regular files and folders.

    The child's folder is written by the candidate's process: a link there (to the reference's
    cached outputs, whose path the candidate can compute, or to any file of the host's) would be
    followed when the host reads the folder; a FIFO would block the read. Returns the removed
    names (relative), for the verdict's notes.
    """
    removed: list[str] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        gone = set()
        for name in [*dirs, *files]:  # a link to a folder is listed among the folders
            path = Path(root) / name
            mode = path.lstat().st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                path.unlink()
                gone.add(name)
                removed.append(str(path.relative_to(folder)))
        dirs[:] = [d for d in dirs if d not in gone]
    return removed


def _outcome(out_dir: Path, timeout_s: float, timed_out: bool, returncode: int | None,
             sig: int | None, stderr: bytes, wall_s: float, notes: list[str]) -> ChildOutcome:
    """The child's ``result.json``, or why there is none (its exit and error output's tail)."""
    removed = plain_files_only(out_dir) if out_dir.is_dir() else []
    if removed:
        notes = [*notes, "removed from the child's folder before reading it (not regular "
                         "files): " + ", ".join(removed[:5])]
    outcome = ChildOutcome(folder=out_dir, wall_s=wall_s, notes=notes)
    result_file = out_dir / "result.json"
    if timed_out:
        outcome.result = {"status": "error", "failure": "timeout",
                          "detail": f"ran past the {timeout_s:g} s limit"}
        return outcome
    try:
        outcome.result = json.loads(result_file.read_text())
    except (OSError, ValueError):
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        if sig is None and returncode is not None and returncode < 0:
            sig = -returncode
        why = f"killed by signal {sig}" if sig else f"exit {returncode}"
        outcome.result = {"status": "error", "failure": "crash",
                          "detail": f"the torch child died ({why}) without a result"
                                    + (": " + " | ".join(tail)[-400:] if tail else "")}
    return outcome

