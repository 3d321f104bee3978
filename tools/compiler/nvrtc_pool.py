"""Warm, jailed NVRTC workers: each compile stops paying bwrap + Python + ``cuda.bindings``.

A worker is ``_nvrtc_jail.py --serve`` in the same jail as the one-shot compile (bubblewrap
through :func:`jail.popen_jailed`: the same read-only binds, seccomp deny filter and rlimits,
``RLIMIT_AS`` = ``COMPILER_MEMORY_MB``), reading length-prefixed JSON jobs on its stdin.

* One job per worker at a time; at most ``size`` workers (``STRUCTCOVER_NVRTC_WORKERS``,
  default ``min(2, cpu count)``), shared by every thread of the process. Workers are keyed by
  their read-only binds (the include folders), started lazily.
* A job past its ``timeout_s`` kills the worker's whole session and comes back timed out; a
  worker that dies mid-job comes back as a dead NVRTC process; either way the next job gets a
  fresh worker. A worker is recycled after :data:`RECYCLE_JOBS` jobs, after any NVRTC result
  but success or a compile error, and before its lifetime CPU limit could end a job.
* Workers are started from one long-lived thread: bubblewrap's ``--die-with-parent`` follows
  the *thread* that forked it, so a worker started from a short-lived campaign thread would
  die with that thread.
* Shut down at interpreter exit; a forked child never touches its parent's workers (it
  closes its copies of their pipes and builds its own pool).
"""

from __future__ import annotations

import atexit
import base64
import json
import logging
import os
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from structcover.tools.verify.jail import JailLimits, JailResult, kill_session, popen_jailed

__all__ = ["RECYCLE_JOBS", "NvrtcPool", "WorkerReply", "WorkerUnavailable", "nvrtc_pool",
           "worker_enabled"]

_log = logging.getLogger(__name__)
SCRIPT = Path(__file__).with_name("_nvrtc_jail.py")
#: ``0``/``off``/``false``/``no``: every compile takes the one-shot jailed child (debugging).
ENV_SWITCH = "STRUCTCOVER_NVRTC_WORKER"
ENV_SIZE = "STRUCTCOVER_NVRTC_WORKERS"
#: Jobs a worker serves before it is replaced (bounds whatever NVRTC accumulates).
RECYCLE_JOBS = 200
#: A worker's lifetime CPU budget (RLIMIT_CPU), at least what one job gets in one-shot mode.
WORKER_CPU_S = 1800
START_TIMEOUT_S = 60.0
_MAX_FRAME = 1 << 30
#: nvrtcResult values after which the worker is trusted with the next job.
_HEALTHY = (0, 6)  # NVRTC_SUCCESS, NVRTC_ERROR_COMPILATION
_START_FAILURES_TO_DISABLE = 3


class WorkerUnavailable(RuntimeError):
    """No worker could be started; the caller falls back to the one-shot child."""


@dataclass(frozen=True)
class WorkerReply:
    """One job's outcome. ``died`` names why the worker ended mid-job ("" when it did not)."""

    ok: bool = False
    log: str = ""
    ptx: str = ""
    cubin: bytes = b""
    timed_out: bool = False
    died: str = ""


def worker_enabled() -> bool:
    """Whether compiles use the warm workers (``STRUCTCOVER_NVRTC_WORKER`` not switched off)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def one_job_cpu_s(timeout_s: float) -> int:
    """The CPU seconds a one-shot compile gets (``JailLimits``' default: 2 × timeout + 5)."""
    return int(2 * timeout_s) + 5


class _Broken(Exception):
    """The worker's stdin closed before the job was written: it never saw the job."""


class _Worker:
    """One live jailed ``--serve`` process."""

    def __init__(self, binds: tuple[Path, ...], cpu_s: int, memory_mb: int) -> None:
        self.binds, self.cpu_limit, self.jobs, self.cpu_used = binds, cpu_s, 0, 0.0
        self._stderr = tempfile.TemporaryFile(prefix="structcover-nvrtc-worker-")
        # The limits run_compiler gives a compiler, but CPU seconds over the worker's life.
        limits = JailLimits(timeout_s=START_TIMEOUT_S, memory_mb=memory_mb, cpu_s=cpu_s,
                            file_size_mb=512, nofile=1024, nproc=512)
        self.proc, self.sandboxed = popen_jailed(
            [sys.executable, "-I", str(SCRIPT), "--serve"], ro=list(binds), limits=limits,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr.fileno())
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        try:
            ready = self._read(time.monotonic() + START_TIMEOUT_S)
        except (EOFError, OSError, ValueError) as exc:
            self._end()
            why = f"NVRTC worker did not start ({type(exc).__name__}): {self.stderr_tail()}"
            self.forget()
            raise WorkerUnavailable(why) from None
        self.cpu_used = float(ready.get("cpu_s", 0.0))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fits(self, timeout_s: float) -> bool:
        """Whether a job of ``timeout_s`` still gets a one-shot job's CPU budget here."""
        return self.alive() and self.cpu_used + one_job_cpu_s(timeout_s) <= self.cpu_limit

    def run(self, job: dict, timeout_s: float) -> tuple[WorkerReply, bool]:
        """Do one job. Returns (reply, whether this worker may take another job).

        Raises:
            _Broken: The worker was gone before it read the job.
        """
        deadline = time.monotonic() + timeout_s
        data = json.dumps(job).encode()
        try:
            self._write(struct.pack(">I", len(data)) + data, deadline)
            reply = self._read(deadline)
        except TimeoutError:
            self.kill()
            return WorkerReply(log=f"compile timed out after {timeout_s:g} s", timed_out=True), \
                False
        except (EOFError, OSError, ValueError):
            return WorkerReply(died=self.death()), False
        self.jobs += 1
        self.cpu_used = float(reply.get("cpu_s", self.cpu_used))
        keep = self.jobs < RECYCLE_JOBS and reply.get("code") in _HEALTHY
        return WorkerReply(ok=bool(reply["ok"]), log=reply["log"],
                           ptx=base64.b64decode(reply["ptx"]).decode("utf-8"),
                           cubin=base64.b64decode(reply["cubin"])), keep

    def death(self) -> str:
        """Why the worker ended, in the one-shot path's words."""
        try:
            rc: int | None = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
        self.kill()
        sig = JailResult(returncode=rc, stdout=b"", stderr=b"", timed_out=False, wall_s=0.0,
                         sandboxed=self.sandboxed).signal
        return f"killed by signal {sig} (memory limit?)" if sig else f"exit {rc}"

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        poller = select.poll()
        poller.register(self._in, select.POLLOUT)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if not poller.poll(left * 1000):
                continue
            try:
                view = view[os.write(self._in, view):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                if len(view) == len(data):
                    raise _Broken from None
                raise

    def _read_exact(self, n: int, deadline: float) -> bytes:
        chunks, poller = [], select.poll()
        poller.register(self._out, select.POLLIN)
        while n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if not poller.poll(left * 1000):
                continue
            chunk = os.read(self._out, min(n, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _read(self, deadline: float) -> dict:
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        if size > _MAX_FRAME:
            raise ValueError(f"reply of {size} bytes")
        return json.loads(self._read_exact(size, deadline))

    def stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            lines = self._stderr.read(1 << 16).decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1] if lines else "no message"

    def kill(self) -> None:
        """End the worker's whole session and release its pipes."""
        self._end()
        self.forget()

    def _end(self) -> None:
        if self.proc.returncode is None:  # once reaped, the pid may belong to someone else
            kill_session(self.proc.pid)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def forget(self) -> None:
        """Close this process's copies of the pipes (a forked child's cleanup: no kill)."""
        for stream in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class NvrtcPool:
    """At most ``size`` warm workers, one job each at a time, for every thread of a process."""

    def __init__(self, size: int, memory_mb: int) -> None:
        if size < 1:
            raise ValueError(f"{ENV_SIZE}: need at least one worker, got {size}")
        self.size, self.memory_mb, self.pid = size, memory_mb, os.getpid()
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._busy = 0
        self._start_failures = 0
        self._disabled = ""
        self._closed = False
        # Workers are forked from this one thread, alive as long as the pool (module doc).
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nvrtc-spawn")

    def compile(self, binds: list[Path], job: dict, timeout_s: float) -> WorkerReply:
        """Run one job on a worker whose read-only binds are ``binds``.

        Raises:
            WorkerUnavailable: No worker could be started (or the pool is closed).
            SandboxUnavailable: No jail here and no opt-in (as for the one-shot path).
        """
        if os.getpid() != self.pid:
            raise WorkerUnavailable("NVRTC pool belongs to another process (forked)")
        key = tuple(sorted({Path(p).resolve() for p in binds}))
        for attempt in range(2):
            worker = self._checkout(key, timeout_s)
            keep = False
            try:
                reply, keep = worker.run(job, timeout_s)
            except _Broken:
                reply = WorkerReply(died=worker.death())
                if attempt == 0:
                    continue  # gone while idle (killed from outside): the job never started
            finally:
                self._checkin(worker, keep)
            return reply
        raise AssertionError("unreachable")

    def _checkout(self, key: tuple[Path, ...], timeout_s: float) -> _Worker:
        drop: list[_Worker] = []
        with self._cond:
            while self._busy >= self.size and not self._closed:
                self._cond.wait()
            if self._closed or self._disabled:
                raise WorkerUnavailable(self._disabled or "NVRTC pool is closed")
            self._busy += 1
            found = None
            for worker in list(self._idle):
                if not worker.fits(timeout_s):
                    self._idle.remove(worker)
                    drop.append(worker)
                elif found is None and worker.binds == key:
                    self._idle.remove(worker)
                    found = worker
            if found is None and self._idle and len(self._idle) + self._busy > self.size:
                drop.append(self._idle.pop(0))  # an idle worker of other binds gives way
        for worker in drop:
            self._retire(worker)
        if found is not None:
            return found
        cpu_s = max(WORKER_CPU_S, one_job_cpu_s(timeout_s))
        try:
            worker = self._spawner.submit(_Worker, key, cpu_s, self.memory_mb).result()
        except BaseException as exc:
            with self._cond:
                self._busy -= 1
                if isinstance(exc, WorkerUnavailable):
                    self._start_failures += 1
                    if self._start_failures >= _START_FAILURES_TO_DISABLE:
                        self._disabled = f"NVRTC workers disabled after repeated failures: {exc}"
                self._cond.notify()
            raise
        with self._cond:
            self._start_failures = 0
            self._all.add(worker)
            closed = self._closed
        if closed:
            self._retire(worker)
            raise WorkerUnavailable("NVRTC pool is closed")
        return worker

    def _checkin(self, worker: _Worker, keep: bool) -> None:
        with self._cond:
            self._busy -= 1
            keep = keep and not self._closed and worker.alive()
            if keep:
                self._idle.append(worker)
            self._cond.notify()
        if not keep:
            self._retire(worker)

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        with self._cond:
            self._all.discard(worker)

    def workers(self) -> list[_Worker]:
        """The live workers (for tests and diagnostics)."""
        with self._cond:
            return list(self._all)

    def close(self) -> None:
        """Kill every worker; jobs in flight come back as dead processes."""
        with self._cond:
            self._closed = True
            workers, self._idle = list(self._all), []
            self._cond.notify_all()
        for worker in workers:
            self._retire(worker)
        self._spawner.shutdown(wait=False)

    def forget(self) -> None:
        """In a forked child: drop the parent's workers without touching them."""
        for worker in list(self._all):
            worker.forget()
        self._all, self._idle, self._closed = set(), [], True


_POOL: NvrtcPool | None = None
_POOL_LOCK = threading.Lock()


def nvrtc_pool(memory_mb: int) -> NvrtcPool:
    """This process's pool, made on first use (size from ``STRUCTCOVER_NVRTC_WORKERS``)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.pid != os.getpid():
            raw = os.environ.get(ENV_SIZE, "").strip()
            try:
                size = int(raw) if raw else min(2, os.cpu_count() or 1)
            except ValueError:
                raise ValueError(f"{ENV_SIZE}={raw!r}: expected a whole number of "
                                 "workers") from None
            _POOL = NvrtcPool(size, memory_mb)
        return _POOL


def shutdown() -> None:
    """Kill this process's workers (registered with atexit; a no-op in a forked child)."""
    global _POOL
    pool, _POOL = _POOL, None
    if pool is not None and pool.pid == os.getpid():
        pool.close()


def _after_fork_in_child() -> None:
    global _POOL, _POOL_LOCK
    _POOL_LOCK = threading.Lock()  # the parent's may have been held by another thread
    if _POOL is not None:
        _POOL.forget()
    _POOL = None


atexit.register(shutdown)
os.register_at_fork(after_in_child=_after_fork_in_child)
