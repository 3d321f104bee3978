"""Run one untrusted command (a compiler on program text, or the program runner) in a jail.

The jail is bubblewrap (Debian package ``bubblewrap``), chosen over a home-made namespace
set-up because it is small, audited and used by Flatpak for exactly this (docs/SANDBOX.md):

* fresh user, PID, mount, IPC, UTS, cgroup and network namespaces (``--unshare-all``), running
  as uid/gid 65534 (nobody), in a new session, killed with its parent (``--die-with-parent``);
  the PID namespace means that ending the run ends every process it made;
* a file system of read-only binds only: ``/usr`` (plus the ``/lib``/``/bin`` links), the
  folders the caller names (toolchain, runtime headers, the program's build), one writable
  folder when the caller asks for it (a compiler's output), a private ``/tmp``, its own
  ``/proc`` and a minimal ``/dev``; no ``/etc``, no home, no other process's ``/proc``;
* an empty environment plus what the caller passes;
* a seccomp filter (built with ``pyseccomp`` from :mod:`seccomp_policy`) given to bwrap by file
  descriptor: the deny-list every jailed process gets;
* rlimits: address space, CPU seconds, file size, open files, processes, no core dumps;
* a wall-clock limit enforced here: past it the session is killed.

Where bwrap is missing or the kernel refuses namespaces, :func:`jail_status` says why and
:func:`run_jailed` (and :func:`popen_jailed`, the same jail for a long-lived child) raise
:class:`SandboxUnavailable` unless the caller opted in to running unsandboxed
(``VerifySettings.allow_unsandboxed`` / ``--allow-unsandboxed``); the opt-in path
keeps rlimits, the wall-clock kill and (for the runner) the runner's own seccomp filter.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from structcover.tools.verify.compiler_log import own_lines
from structcover.tools.verify.rlimits import limited

__all__ = ["UNSANDBOXED_HINT", "JailLimits", "JailResult", "SandboxUnavailable", "jail_status",
           "allow_unsandboxed_override", "kill_session", "own_lines", "popen_jailed",
           "run_compiler", "run_jailed", "set_allow_unsandboxed", "unsandboxed_allowed"]

#: Named in every refusal so the user knows how to opt in.
UNSANDBOXED_HINT = ("pass --allow-unsandboxed (or set verify.allow_unsandboxed: true) to run "
                    "untrusted programs without OS isolation, at your own risk")
_NOBODY = 65534
#: Top-level paths that are links into /usr on merged-/usr systems (or real folders elsewhere).
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class SandboxUnavailable(RuntimeError):
    """OS isolation is not possible here and the user did not opt out of it."""


@dataclass(frozen=True)
class JailLimits:
    """Resource limits for one jailed command.

    Attributes:
        timeout_s: Wall-clock limit; the whole session is killed past it.
        memory_mb: ``RLIMIT_AS`` per process, MiB; None leaves it unset.
        cpu_s: ``RLIMIT_CPU`` per process; None = 2 × timeout + 5.
        file_size_mb: ``RLIMIT_FSIZE``: no file (or stdout) grows past this.
        nofile: ``RLIMIT_NOFILE``.
        nproc: ``RLIMIT_NPROC`` (only enforced for non-root callers; the runner's seccomp
            filter forbids new processes outright).
    """

    timeout_s: float = 60.0
    memory_mb: int | None = 4096
    cpu_s: int | None = None
    file_size_mb: int = 256
    nofile: int = 256
    nproc: int = 256

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_mb is not None and self.memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64, got {self.memory_mb}")


@dataclass
class JailResult:
    """What a jailed command did."""

    returncode: int | None  # None: killed at the wall-clock limit
    stdout: bytes
    stderr: bytes
    timed_out: bool
    wall_s: float
    sandboxed: bool
    notes: list[str] = field(default_factory=list)

    @property
    def signal(self) -> int | None:
        """The signal that ended the command, if one did (bwrap reports 128+N)."""
        rc = self.returncode
        if rc is None:
            return None
        if rc < 0:
            return -rc
        if self.sandboxed and rc > 128:
            return rc - 128
        return None


def bwrap_path() -> str | None:
    """The bubblewrap executable, or None."""
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def jail_status() -> tuple[bool, str]:
    """Whether the jail works here: (usable, reason). Probes once per process.

    Returns:
        ``(True, "bubblewrap X: ...")`` or ``(False, why)``, e.g. bwrap missing or the kernel
        refusing user namespaces (common in unprivileged containers).
    """
    bwrap = bwrap_path()
    if bwrap is None:
        return False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, OSError) as exc:
        return False, f"pyseccomp/libseccomp not usable ({exc}): pip install pyseccomp"
    cmd = [bwrap, *_base_args(), "--", "/bin/true"]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap did not start: {exc}"
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        return False, ("the kernel refused namespaces for bwrap (" + (why[-1] if why else
                       f"exit {proc.returncode}") + ")")
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    return True, f"{version}: user, PID, mount, IPC, network namespaces; seccomp; rlimits"


def _base_args() -> list[str]:
    args = ["--unshare-all", "--uid", str(_NOBODY), "--gid", str(_NOBODY), "--die-with-parent",
            "--new-session", "--clearenv", "--ro-bind", "/usr", "/usr"]
    for link in _SYSTEM_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def _bind_args(ro: list[Path], rw: list[Path]) -> list[str]:
    args: list[str] = []
    # Parents before children so a nested bind is not hidden by its parent's.
    for path in sorted({Path(p).resolve() for p in ro}, key=lambda p: len(p.parts)):
        if path.exists() and not str(path).startswith("/usr/"):
            args += ["--ro-bind", str(path), str(path)]
    for path in sorted({Path(p).resolve() for p in rw}, key=lambda p: len(p.parts)):
        args += ["--bind", str(path), str(path)]
    return args


def limit_plan(limits: JailLimits) -> list[tuple[int, int]]:
    """The rlimits of a jailed command (inherited through bwrap by everything it runs), the
    address-space limit last: where they are set in a ``preexec_fn``, the child is still a
    copy of this process until exec, and a parent with a large address space (torch and Ray
    loaded: many GiB of mappings) would fail its next Python allocation under a smaller limit
    ("Exception occurred in preexec_fn")."""
    plan = [(resource.RLIMIT_CPU, limits.cpu_s or int(2 * limits.timeout_s) + 5),
            (resource.RLIMIT_FSIZE, limits.file_size_mb * 1024 * 1024),
            (resource.RLIMIT_NOFILE, limits.nofile),
            (resource.RLIMIT_NPROC, limits.nproc),
            (resource.RLIMIT_CORE, 0)]
    if limits.memory_mb:
        plan.append((resource.RLIMIT_AS, limits.memory_mb * 1024 * 1024))
    return plan


@dataclass
class _Prepared:
    """A jailed command ready to spawn: argv, its environment and descriptors."""

    cmd: list[str]
    env: dict[str, str]
    cwd: Path | None  # host working directory (the unsandboxed path only)
    fds: tuple[int, ...]
    sandboxed: bool
    notes: list[str]
    tmp: Path


@contextlib.contextmanager
def _prepared(argv: list[str], ro: list[Path], rw: list[Path], env: dict[str, str] | None,
              cwd: Path | None, pass_fds: tuple[int, ...], allow_unsandboxed: bool | None,
              devices: tuple[str, ...]) -> Iterator[_Prepared]:
    """The bwrap command line for ``argv`` (or the bare command where the user opted out of
    the jail), shared by :func:`run_jailed` and :func:`popen_jailed`; the seccomp program's
    descriptor is open for the duration of the block (the child keeps its own copy)."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", **(env or {})}
    usable, why = jail_status()
    with tempfile.TemporaryDirectory(prefix="structcover-jail-") as tmp:
        if usable:
            from structcover.tools.verify.seccomp_policy import deny_filter_bytes

            (Path(tmp) / "deny.bpf").write_bytes(deny_filter_bytes())
            bpf_fd = os.open(Path(tmp) / "deny.bpf", os.O_RDONLY)
            cmd = [bwrap_path() or "bwrap", *_base_args(), *_bind_args(list(ro), list(rw)),
                   "--seccomp", str(bpf_fd)]
            for dev in devices:
                if os.path.exists(dev):
                    cmd += ["--dev-bind", dev, dev]
            for key, value in env.items():
                cmd += ["--setenv", key, value]
            cmd += ["--chdir", str(cwd) if cwd is not None else "/tmp", "--", *argv]
            try:
                yield _Prepared(cmd, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, None,
                                (*pass_fds, bpf_fd), True, [], Path(tmp))
            finally:
                os.close(bpf_fd)
        elif allow_unsandboxed or (allow_unsandboxed is None and _settings_allow()):
            yield _Prepared(list(argv), env, cwd, tuple(pass_fds), False,
                            [f"NOT sandboxed ({why}); rlimits and the wall-clock kill only"],
                            Path(tmp))
        else:
            raise SandboxUnavailable(f"untrusted code refused: {why}; {UNSANDBOXED_HINT}")


def run_jailed(argv: list[str], *, ro: list[Path] = (), rw: list[Path] = (),  # type: ignore[assignment]
               env: dict[str, str] | None = None, cwd: Path | None = None,
               limits: JailLimits | None = None, pass_fds: tuple[int, ...] = (),
               allow_unsandboxed: bool | None = None, stdin: int | None = None,
               devices: tuple[str, ...] = ()) -> JailResult:
    """Run ``argv`` in the jail and wait for it (never longer than ``limits.timeout_s``).

    Args:
        argv: The command; its executable must lie in ``/usr`` or in ``ro``.
        ro: Files and folders bound read-only at the same path.
        rw: Folders bound writable at the same path (a compiler's output folder).
        env: The whole environment of the command (``PATH`` defaults to ``/usr/bin:/bin``).
        cwd: Working directory inside the jail (default ``/tmp``, private).
        limits: Resource limits.
        pass_fds: File descriptors the command inherits (same numbers).
        allow_unsandboxed: When the jail is unusable, run with rlimits only instead of raising;
            None reads ``verify.allow_unsandboxed`` from the settings.
        stdin: A file descriptor for the command's standard input (default: none).
        devices: Device files bound into the jail's ``/dev`` (``/dev/nvidia0``, ...; those that
            do not exist are skipped): the GPU path's torch child needs the driver's nodes.

    Returns:
        Exit status, captured output (at most the file-size limit) and timing.

    Raises:
        SandboxUnavailable: No jail here and ``allow_unsandboxed`` is False.
    """
    limits = limits or JailLimits()
    with _prepared(argv, list(ro), list(rw), env, cwd, tuple(pass_fds), allow_unsandboxed,
                   devices) as prep:
        result = _spawn(prep.cmd, prep.env, prep.cwd, limits, prep.fds, stdin, prep.tmp)
    result.sandboxed = prep.sandboxed
    result.notes = prep.notes + result.notes
    return result


def popen_jailed(argv: list[str], *, ro: list[Path] = (), rw: list[Path] = (),  # type: ignore[assignment]
                 env: dict[str, str] | None = None, cwd: Path | None = None,
                 limits: JailLimits | None = None, allow_unsandboxed: bool | None = None,
                 stdin: int | None = None, stdout: int | None = None,
                 stderr: int | None = None) -> tuple[subprocess.Popen, bool]:
    """Start ``argv`` in the same jail as :func:`run_jailed` and return the live process.

    For long-lived jailed workers (the NVRTC compile pool). The rlimits of ``limits`` apply
    (CPU seconds over the process's whole life); its ``timeout_s`` is NOT enforced here: the
    caller owns the wall clock and ends the process (its own session, ``proc.pid``) with
    :func:`kill_session`. ``stdin``/``stdout``/``stderr`` as for :class:`subprocess.Popen`
    (None: ``/dev/null``); the other arguments as for :func:`run_jailed`.

    Returns:
        ``(process, sandboxed)``; sandboxed is False on the user's opt-in path only.

    Raises:
        SandboxUnavailable: No jail here and ``allow_unsandboxed`` is False.
    """
    null = subprocess.DEVNULL
    with _prepared(argv, list(ro), list(rw), env, cwd, (), allow_unsandboxed, ()) as prep:
        cmd, preexec = limited(prep.cmd, limit_plan(limits or JailLimits()))
        proc = subprocess.Popen(cmd, stdin=null if stdin is None else stdin,  # noqa: S603
                                stdout=null if stdout is None else stdout,
                                stderr=null if stderr is None else stderr, env=prep.env,
                                cwd=prep.cwd, pass_fds=prep.fds, start_new_session=True,
                                preexec_fn=preexec)  # noqa: PLW1509
    return proc, prep.sandboxed


#: This process's decision; None = read ``verify.allow_unsandboxed`` from the settings.
_ALLOW_UNSANDBOXED: bool | None = None


def set_allow_unsandboxed(allow: bool | None) -> None:
    """Opt this process in (True) or out (False) of running untrusted code where no jail is
    possible; None goes back to the settings' ``verify.allow_unsandboxed``.

    The CLI's ``--allow-unsandboxed`` calls it with True. An executor worker is set to exactly
    its driver's decision (True or False) for each batch, so a worker's own settings can make
    it neither more permissive nor stricter than the driver (``tools.executors.policy``).
    """
    global _ALLOW_UNSANDBOXED
    _ALLOW_UNSANDBOXED = None if allow is None else bool(allow)


def allow_unsandboxed_override() -> bool | None:
    """The decision :func:`set_allow_unsandboxed` made for this process (None: settings')."""
    return _ALLOW_UNSANDBOXED


def unsandboxed_allowed() -> bool:
    """Whether this process runs untrusted code unsandboxed where no jail is possible."""
    return _settings_allow()


def _settings_allow() -> bool:
    if _ALLOW_UNSANDBOXED is not None:
        return _ALLOW_UNSANDBOXED
    from structcover.config import load_settings

    return bool(getattr(load_settings().verify, "allow_unsandboxed", False))


def kill_session(pid: int) -> None:
    """SIGKILL the process group ``pid`` (a jailed command's session); gone already is fine."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _spawn(cmd: list[str], env: dict[str, str], cwd: Path | None, limits: JailLimits,
           fds: tuple[int, ...], stdin: int | None, tmp: Path) -> JailResult:
    start = time.monotonic()
    with open(tmp / "stdout", "w+b") as out, open(tmp / "stderr", "w+b") as err:
        # prlimit sets the limits where installed (a preexec_fn would fork this whole process
        # with the GIL held: tools/verify/rlimits.py).
        argv, preexec = limited(cmd, limit_plan(limits))
        proc = subprocess.Popen(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                stdout=out, stderr=err, env=env, cwd=cwd, pass_fds=fds,
                                start_new_session=True, preexec_fn=preexec)  # noqa: PLW1509
        # A timer kills the session at the limit; meanwhile a blocking wait (Popen.wait with a
        # timeout polls in steps of up to 50 ms, which would be most of a short run's cost).
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            kill_session(proc.pid)

        timer = threading.Timer(limits.timeout_s, kill)
        timer.start()
        try:
            rc: int | None = proc.wait()
        finally:
            timer.cancel()
            # bwrap's PID namespace takes every process of the run with it; the group kill also
            # covers the unsandboxed path.
            kill_session(proc.pid)
            proc.wait()
        timed_out = fired.is_set()
        if timed_out:
            rc = None
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        cap = limits.file_size_mb * 1024 * 1024
        return JailResult(returncode=rc, stdout=out.read(cap), stderr=err.read(cap),
                          timed_out=timed_out, wall_s=wall, sandboxed=True)


def run_compiler(argv: list[str], *, readable: list[Path], folder: Path,
                 timeout_s: float, memory_mb: int = 4096,
                 env: dict[str, str] | None = None) -> JailResult:
    """Run a compiler on untrusted text: read-only ``readable`` (plus /usr), writable ``folder``.

    The program text and the outputs live in ``folder``; the jail's cwd is ``folder``. Macro
    bombs end at ``memory_mb`` per process or at ``timeout_s``; ``#include`` of host files finds
    nothing outside /usr and ``readable``.

    Raises:
        SandboxUnavailable: No jail here and the user did not opt in to running without one.
    """
    exe = shutil.which(argv[0]) or argv[0]
    extra = [] if exe.startswith("/usr/") else [Path(exe).resolve().parent.parent]
    limits = JailLimits(timeout_s=timeout_s, memory_mb=memory_mb, file_size_mb=512,
                        nofile=1024, nproc=512)
    return run_jailed([exe, *argv[1:]], ro=[*readable, *extra], rw=[folder], cwd=folder,
                      env=env, limits=limits)
