"""Run the CPU path's candidate children in warm jailed zygotes (``zygote_server.py``).

:func:`run_in_zygote` is what ``sandbox.run_child`` calls for a CPU candidate job when the jail
works: it leases an idle zygote (or starts one), mirrors the job folder into the zygote's spool
(hard links: the job's files are never copied), rewrites the job's paths to the mirror, asks
the zygote for one fork, waits at most the job's wall-clock limit, and moves the fork's output
folder back to where the caller expects it. The spool is emptied before the zygote serves
again. A zygote that died, stopped answering or ran past the limit is killed with its whole
jail, and the job is reported as the one-shot child would report it (``crash``/``timeout``).

Each zygote is one bubblewrap jail with the binds of a one-shot CPU child (the Python
installation, the package's source folders) plus its spool: ``jobs/`` read-only (one job's
mirror at a time), ``out/`` writable (one job's output folder at a time). Nothing else is
writable but the jail's private ``/tmp``, which the zygote empties after each job.
``STRUCTCOVER_KB_ZYGOTE=0`` turns the zygote off (every child one-shot, as before).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from structcover.tools.verify.jail import JailLimits, jail_status, kill_session, popen_jailed
from structcover.tools.verify.seccomp_policy import ipc_filter_bytes

__all__ = ["ZygoteUnavailable", "enabled", "idle_zygotes", "run_in_zygote", "shutdown"]

#: Wall-clock limit for a zygote's start (torch's import, cold caches on a loaded machine).
START_TIMEOUT_S = 120.0
#: Zygotes kept idle per binding set (more are started while more jobs run at once).
MAX_IDLE = 4
_SERVER = "structcover.tools.kernelbench.zygote_server"


class ZygoteUnavailable(RuntimeError):
    """This job cannot run in a zygote (the caller runs a one-shot child instead)."""


def enabled() -> bool:
    """Whether CPU candidate children go to zygotes: the jail works and the user did not
    turn them off (``STRUCTCOVER_KB_ZYGOTE=0``)."""
    if os.environ.get("STRUCTCOVER_KB_ZYGOTE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return jail_status()[0]


class _Zygote:
    """One jailed zygote process and its spool."""

    def __init__(self, binds: list[Path], env: dict[str, str], memory_mb: int | None) -> None:
        self.closed = False
        self.spool = Path(tempfile.mkdtemp(prefix="structcover-zygote-"))
        (self.spool / "jobs").mkdir()
        (self.spool / "out").mkdir()
        self._stderr = open(self.spool / "zygote.log", "w+b")  # noqa: SIM115 - lives as long
        seal = self.spool / "ipc.bpf"
        seal.write_bytes(ipc_filter_bytes())
        limits = JailLimits(timeout_s=3600.0, memory_mb=memory_mb, cpu_s=7 * 24 * 3600,
                            file_size_mb=1024, nofile=1024, nproc=512)
        # Started from one long-lived thread: bwrap's --die-with-parent follows the *thread*
        # that forked it, and a campaign's verification threads come and go.
        self.proc, _ = _spawner().submit(
            popen_jailed, [sys.executable, "-I", "-m", _SERVER, str(seal)],
            ro=[*binds, self.spool / "jobs", seal], rw=[self.spool / "out"], env=env,
            cwd=Path("/tmp"), limits=limits, allow_unsandboxed=False, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr.fileno()).result()
        self._buffer = b""
        ready = self._answer(START_TIMEOUT_S)
        if not ready or not ready.get("ready"):
            why = self._log_tail()
            self.close()
            raise ZygoteUnavailable(f"the zygote did not start: {why or 'no answer'}")

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            return " | ".join(lines[-3:])[-400:]
        return ""

    def _answer(self, timeout_s: float) -> dict[str, Any] | None:
        """The zygote's next line, or None when it closed its output or the time ran out."""
        stdout = self.proc.stdout
        if stdout is None:
            return None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None

    def run(self, job: Path, out_dir: Path, env: dict[str, str], timeout_s: float
            ) -> tuple[int | None, bool]:
        """Fork one child on ``job``: (its exit status or None, whether it timed out).

        None with ``False``: the zygote died or answered nonsense (the caller drops it).
        """
        request = {"job": str(job), "cwd": str(out_dir), "env": env,
                   "cpu_s": int(2 * timeout_s) + 5, "log": str(out_dir / "child.log")}
        stdin = self.proc.stdin
        if stdin is None or self.proc.poll() is not None:
            return None, False
        try:
            stdin.write((json.dumps(request) + "\n").encode())
            stdin.flush()
        except OSError:
            return None, False
        start = time.monotonic()
        answer = self._answer(timeout_s)
        if answer is None:
            timed_out = time.monotonic() - start >= timeout_s and self.proc.poll() is None
            return None, timed_out
        code = answer.get("returncode")
        return (code if isinstance(code, int) else None), False

    def alive(self) -> bool:
        return not self.closed and self.proc.poll() is None

    def kill(self) -> None:
        """End the jail now (every process in it); :meth:`close` cleans up after."""
        kill_session(self.proc.pid)

    def clean_spool(self) -> None:
        """Empty ``jobs/`` and ``out/`` (whatever the last fork left there)."""
        if self.closed:
            return
        for folder in (self.spool / "jobs", self.spool / "out"):
            for entry in list(folder.iterdir()):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        entry.unlink()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        kill_session(self.proc.pid)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(Exception):
            self._stderr.close()
        shutil.rmtree(self.spool, ignore_errors=True)


_lock = threading.Lock()
_idle: dict[tuple[Any, ...], list[_Zygote]] = {}
_owner = os.getpid()
_spawn_thread: list[ThreadPoolExecutor] = []


def _spawner() -> ThreadPoolExecutor:
    """The thread every zygote of this process is started from (alive as long as it)."""
    with _lock:
        _forget_after_fork()
        if not _spawn_thread:
            _spawn_thread.append(ThreadPoolExecutor(max_workers=1,
                                                    thread_name_prefix="zygote-spawn"))
        return _spawn_thread[0]


def _forget_after_fork() -> None:
    """In a forked process the idle zygotes and the spawning thread are the parent's: never
    used or closed here. Call with ``_lock`` held."""
    global _owner
    if os.getpid() != _owner:
        _idle.clear()
        _spawn_thread.clear()
        _owner = os.getpid()


def _key(binds: list[Path], env: dict[str, str], memory_mb: int | None) -> tuple[Any, ...]:
    """The pool a zygote of these binds, environment and memory limit belongs to."""
    return tuple(str(b) for b in binds), tuple(sorted(env.items())), memory_mb


def prewarm(binds: list[Path], env: dict[str, str], memory_mb: int | None,
            count: int = 1) -> list[threading.Thread]:
    """Start up to ``count`` zygotes in the background, idle in the pool for the first jobs.

    A zygote imports torch before it answers (seconds of a core), and a fresh process's first
    candidates each waited for one. Started while the caller does other work (a campaign's
    diagnosis), that import overlaps it. A zygote that fails to start is dropped silently:
    the first job starts its own and reports why.

    Returns:
        The starting threads (a test may join them).
    """
    key = _key(binds, env, memory_mb)

    def start() -> None:
        try:
            zygote = _Zygote(binds, env, memory_mb)
        except (RuntimeError, OSError):  # ZygoteUnavailable, the jail's SandboxUnavailable
            return
        with _lock:
            _forget_after_fork()
            pool = _idle.setdefault(key, [])
            if len(pool) < MAX_IDLE:
                pool.append(zygote)
                return
        zygote.close()

    with _lock:
        _forget_after_fork()
        missing = max(0, count - len(_idle.get(key, [])))
    threads = [threading.Thread(target=start, name="zygote-prewarm", daemon=True)
               for _ in range(missing)]
    for thread in threads:
        thread.start()
    return threads


@contextlib.contextmanager
def _lease(binds: list[Path], env: dict[str, str], memory_mb: int | None) -> Iterator[_Zygote]:
    key = _key(binds, env, memory_mb)
    with _lock:
        _forget_after_fork()
        pool = _idle.setdefault(key, [])
        zygote = pool.pop() if pool else None
    if zygote is None or not zygote.alive():
        if zygote is not None:
            zygote.close()
        zygote = _Zygote(binds, env, memory_mb)
    keep = False
    try:
        yield zygote
        keep = zygote.alive()
    finally:
        zygote.clean_spool()
        with _lock:
            pool = _idle.setdefault(key, [])
            kept = keep and len(pool) < MAX_IDLE
            if kept:
                pool.append(zygote)
        if not kept:
            zygote.close()


def _mirror(src: Path, dest: Path) -> None:
    """``src``'s tree at ``dest``: folders made, files hard-linked (copied across devices)."""
    for root, dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            source, target = Path(root) / name, dest / rel / name
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]


def _rebase(value: Any, moves: list[tuple[str, str]]) -> Any:
    """``value`` with every path string under a ``moves`` source re-rooted at its target."""
    if isinstance(value, dict):
        return {k: _rebase(v, moves) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebase(v, moves) for v in value]
    if isinstance(value, str):
        for old, new in moves:
            if value == old or value.startswith(old + "/"):
                return new + value[len(old):]
    return value


def run_in_zygote(job: dict[str, Any], work: Path, out_dir: Path, *, ro: list[Path],
                  binds: list[Path], env: dict[str, str], job_env: dict[str, str],
                  memory_mb: int | None, timeout_s: float) -> tuple[int | None, bool, float]:
    """Run the candidate ``job`` (paths under ``work``, output to ``out_dir``) in a zygote.

    Args:
        job: The child's job; its ``out_dir`` is ``out_dir``.
        work: The job folder; everything the job names must lie under it (``ro`` too).
        out_dir: Where the caller reads ``result.json`` and the outputs afterwards.
        ro: The one-shot child's extra read-only paths (extension folders).
        binds: The zygote's own read-only binds (Python, the package's sources).
        env: The zygote's environment (the same for every job it runs).
        job_env: Variables for this job only (set in the fork).
        memory_mb: Address-space limit of the zygote and its forks.
        timeout_s: Wall-clock limit of the job.

    Returns:
        (exit status or None, timed out, wall seconds).

    Raises:
        ZygoteUnavailable: Something the job needs lies outside ``work``, or no zygote starts.
    """
    work = work.resolve()
    outside = [p for p in ro if not Path(p).resolve().is_relative_to(work)]
    if outside:
        raise ZygoteUnavailable(f"{outside[0]} is outside the job folder")
    start = time.monotonic()
    with _lease(binds, env, memory_mb) as zygote:
        token = secrets.token_hex(16)
        mirror, out = zygote.spool / "jobs" / token, zygote.spool / "out" / token
        out.mkdir()
        out_resolved = out_dir.resolve()
        # The output folder may lie inside the job folder: it is excluded from the mirror.
        _mirror(work, mirror)
        if out_resolved.is_relative_to(work):
            shutil.rmtree(mirror / out_resolved.relative_to(work), ignore_errors=True)
        moves = [(str(out_resolved), str(out)), (str(work), str(mirror))]
        job_path = mirror / f"job-{job['mode']}.json"
        job_path.write_text(json.dumps(_rebase(job, moves)))
        # What the jail gives a one-shot child (jail.py), then the job's own variables.
        fork_env = _rebase({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
                            **job_env}, moves)
        returncode, timed_out = zygote.run(job_path, out, fork_env, timeout_s)
        if returncode is None:
            zygote.kill()  # dead, stopped or past the limit: nothing in it runs on
        out_dir.mkdir(parents=True, exist_ok=True)
        for entry in list(out.iterdir()):  # links the fork planted: sandbox.plain_files_only
            shutil.move(str(entry), str(out_dir / entry.name))
        if returncode is None:
            zygote.close()  # not reused
    return returncode, timed_out, time.monotonic() - start


def idle_zygotes() -> tuple[int, int]:
    """(idle zygotes of this process, how many of them are alive)."""
    with _lock:
        _forget_after_fork()
        zygotes = [z for pool in _idle.values() for z in pool]
    return len(zygotes), sum(z.alive() for z in zygotes)


def shutdown() -> None:
    """Close every idle zygote (at exit; a test that wants a fresh one)."""
    with _lock:
        _forget_after_fork()
        zygotes = [z for pool in _idle.values() for z in pool]
        _idle.clear()
    for zygote in zygotes:
        zygote.close()


atexit.register(shutdown)
