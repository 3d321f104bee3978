"""The default executor: a forked process pool on this machine, with crash recovery."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

from structcover.tools.executors.base import (
    DEFAULT_BATCH_SIZE,
    Failed,
    Job,
    Quarantined,
    TaskError,
    describe,
    drive,
    run_batch,
)
from structcover.tools.executors.policy import RunPolicy

_SHARED: dict[str, Any] = {}


def _init(fn: Callable[..., Any], shared: Any, policy: RunPolicy) -> None:
    # The function, the read-only config and the driver's policy reach each worker once.
    _SHARED["fn"] = fn
    _SHARED["shared"] = shared
    _SHARED["policy"] = policy


def _task(start: int, items: list[Any]) -> list[Any]:
    return run_batch(_SHARED["fn"], _SHARED["shared"], start, items, _SHARED["policy"])


class LocalExecutor:
    """A process pool (``fork`` on POSIX) running batches of items.

    A dead worker breaks a Python process pool and fails every batch in flight; the pool is
    rebuilt and those batches re-run alone, so the one that kills its worker again is known,
    retried ``retries`` times, then split until the fatal item is quarantined.

    Args:
        workers: Processes (0 = one per core).
        retries: Re-runs of a batch whose worker died while it ran alone.
    """

    def __init__(self, workers: int = 0, *, retries: int = 1) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.workers = workers or os.cpu_count() or 1
        self.retries = retries
        self.quarantined: list[Quarantined] = []
        self.failures: list[Failed] = []
        self.restarts = 0
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *,
            batch_size: int = DEFAULT_BATCH_SIZE, resources: dict[str, float] | None = None,
            on_progress: Callable[[int], None] | None = None,
            shared: Any = None) -> Iterator[Any]:
        """See :meth:`structcover.tools.executors.base.Executor.map` (``resources`` ignored)."""
        self.quarantined = []
        self.failures = []
        ctx = get_context("fork" if os.name == "posix" else "spawn")
        # Captured once per job: a forked worker would inherit it, a spawned one would not.
        policy = RunPolicy.of_driver()

        def new_pool() -> ProcessPoolExecutor:
            return ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init,
                                       initargs=(fn, shared, policy))

        self.close()
        self._pool = new_pool()

        def submit(job: Job) -> Future[list[Any]]:
            assert self._pool is not None
            return self._pool.submit(_task, job.start, job.items)

        def wait_any(handles: list[Any]) -> list[tuple[Any, bool, Any]]:
            finished, _ = wait(handles, return_when=FIRST_COMPLETED)
            out: list[tuple[Any, bool, Any]] = []
            broken = False
            for f in finished:
                exc = f.exception()
                if exc is None:
                    out.append((f, True, f.result()))
                elif isinstance(exc, BrokenProcessPool):
                    broken = True
                    out.append((f, False, exc))
                else:
                    # The task raised outside fn (its policy, its arguments): our machinery.
                    out.append((f, False, TaskError(describe(exc))))
            if broken:
                # Every other future of the broken pool fails too: collect them now.
                rest = [h for h in handles if h not in finished]
                wait(rest)
                out.extend((h, False, h.exception()) for h in rest)  # deaths, not TaskErrors
                assert self._pool is not None
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = new_pool()
                self.restarts += 1
            return out

        try:
            yield from drive(submit, wait_any, items, batch_size=batch_size,
                             window=2 * self.workers, retries=self.retries, isolate=True,
                             quarantined=self.quarantined, on_progress=on_progress,
                             failures=self.failures)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker processes."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
