"""The KernelBench zygote, run in the jail: torch imported once, one fork per candidate.

A fresh child spends most of its life importing torch (1.2-1.3 s of a 2 s candidate run on
the development machine). This process, started in the same bubblewrap jail as a one-shot child
(``sandbox.py``; ``zygote.py`` starts and feeds it), imports torch, numpy and the child's own
modules, then reads one request per line on its standard input and forks for each: the fork
runs ``child.main`` on the request's job exactly as ``python -m ...child JOB`` would, and the
zygote answers one line with the fork's exit status.

What keeps one candidate from reaching another through the zygote (docs/KERNELBENCH.md,
"The zygote"):

* the zygote never runs candidate code; each fork closes the zygote's pipes, takes a fresh
  environment and working folder, lowers its CPU limit, and writes its output to a log file;
* the zygote makes itself non-dumpable before the first fork, so a fork cannot open its
  ``/proc`` entries (memory, descriptors); ``ptrace`` and ``process_vm_*`` are refused to every
  jailed process already;
* it adds a seccomp filter of its own, inherited by every fork, that refuses System V IPC and
  POSIX message queues: their objects outlive a process in the IPC namespace the forks share;
* after each job it kills every other process of its PID namespace (``kill(-1, SIGKILL)``)
  and empties the jail's private ``/tmp`` and ``/dev/shm``; the host empties the spool folder
  the jobs are read from and written to before the next request.

Killing or stopping the zygote is a fork's own failure: the host reports the job as a crash
(or a timeout) and starts another zygote.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import shutil
import signal
import stat
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
#: Folders a fork may write that live as long as the zygote (its private tmpfs mounts).
_SCRATCH = (Path("/tmp"), Path("/dev/shm"))


def _preload() -> None:
    """Import what every candidate run imports, so the forks start with it."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import torch.utils.cpp_extension  # noqa: F401

    # The load_inline hook's InlineExtension: pydantic's import and its model building (with
    # the scan of every installed distribution for pydantic plugins) were two thirds of a
    # fork's time (py-spy --subprocesses on the zygotes of a campaign).
    import structcover.tools.kernelbench.candidate  # noqa: F401
    import structcover.tools.kernelbench.child  # noqa: F401
    import structcover.tools.kernelbench.compiler_guard  # noqa: F401
    import structcover.tools.kernelbench.cpu_shims  # noqa: F401
    import structcover.tools.kernelbench.dispatch_watch  # noqa: F401
    import structcover.tools.kernelbench.timing_watch  # noqa: F401


def _seal(filter_path: str) -> None:
    """Non-dumpable, and the IPC filter (raw BPF made on the host: ``seccomp_policy``) on:
    before the first fork, inherited by each."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
    program = Path(filter_path).read_bytes()
    if not program or len(program) % 8:
        raise ValueError(f"{filter_path}: not a BPF program ({len(program)} bytes)")
    code = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "loading the IPC filter failed")


def _fork_child(request: dict[str, Any]) -> NoReturn:
    """In the fork: become a one-shot child for ``request`` and run it (never returns)."""
    code = 70
    try:
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])  # the zygote's pipes
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        cpu = int(request["cpu_s"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        from structcover.tools.kernelbench import child

        code = child.main([request["job"]])
    except BaseException:  # noqa: BLE001 - whatever happens, the fork ends here
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _remove(path: Path) -> None:
    def writable_again(fn: Any, failed: str, _info: Any) -> None:
        # A fork may leave a folder without write or search permission: give it back first.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), stat.S_IRWXU)
            os.chmod(failed, stat.S_IRWXU)
        with contextlib.suppress(OSError):
            fn(failed)

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onerror=writable_again)  # onexc is 3.12+
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _mount_points() -> set[Path]:
    """Every mount point of this mount namespace (the jail's binds among them)."""
    points = set()
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) > 4:
                # Octal escapes for spaces and the like in mountinfo's paths.
                points.add(Path(fields[4].encode().decode("unicode_escape")))
    return points


def _empty(folder: Path, mounts: set[Path]) -> None:
    """Remove what ``folder`` holds, except mounts (binds: the host's) and the folders that
    lead to them, which are emptied the same way."""
    for entry in list(folder.iterdir()):
        if entry in mounts:
            continue
        if any(entry in m.parents for m in mounts):
            _empty(entry, mounts)
        else:
            _remove(entry)


def _sweep() -> None:
    """After a job: no process of the namespace but the zygote (and bwrap's init), empty
    scratch folders."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(-1, signal.SIGKILL)
    while True:  # reap what was killed (the zygote may be the namespace's reaper)
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    mounts = _mount_points()
    for folder in _SCRATCH:
        if folder.is_dir():
            _empty(folder, mounts - {folder})  # the folder itself is a tmpfs mount


def serve(filter_path: str, stdin: Any = None, stdout: Any = None) -> int:
    """Preload, seal, announce ``ready``, then one fork per request line until end of input."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    _preload()
    _seal(filter_path)
    stdout.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    stdout.flush()
    for line in stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _fork_child(request)
        _, status = os.waitpid(pid, 0)
        _sweep()
        stdout.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1]))
