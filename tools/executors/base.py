"""The executor interface: map a function over many items, in batches, results in input order.

Two implementations share it: :class:`~structcover.tools.executors.local.LocalExecutor` (a
forked process pool, the default) and :class:`~structcover.tools.executors.ray_exec.RayExecutor`
(Ray tasks, for a cluster). Both give the same results for the same inputs; they differ only in
where the work runs.

Failure model (both executors):

* ``fn`` raising a Python exception on an item is that item's failure: the item's result is a
  :class:`Quarantined` carrying the exception, the other items are unaffected.
* A worker process dying (killed, out of memory, ``os._exit``) is retried: the batch runs
  again. A batch that keeps killing its worker is split in halves until the item that kills it
  stands alone; that item is then :class:`Quarantined` with the reason, and the job goes on.
* Our own machinery failing is never the item's fault, so it is never quarantine: an import
  that fails in a worker, an ``OSError`` (a missing binary, a full disk), the jail refusing to
  run (:class:`~structcover.tools.verify.jail.SandboxUnavailable`), or a task that errors
  outside ``fn`` (arguments that do not unpickle, a Ray task error). The item (or the whole
  batch) is retried a bounded number of times, then reported as :class:`Failed` with the cause,
  in the executor's ``failures`` list, never in ``quarantined``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from structcover.tools.executors.policy import RunPolicy

#: Items per batch when the caller does not say: large enough to amortise a task's overhead.
DEFAULT_BATCH_SIZE = 16


@dataclass(frozen=True)
class Quarantined:
    """The result slot of an item that could not be processed.

    Attributes:
        index: Position of the item in the input.
        reason: Why (the exception, or that its worker died on every attempt).
        item: A short repr of the item, for the report.
    """

    index: int
    reason: str
    item: str = ""


@dataclass(frozen=True)
class Failed(Quarantined):
    """The result slot of an item our machinery failed on (not its input's fault).

    A subclass of :class:`Quarantined` so that a caller which only knows quarantine still never
    mistakes it for a result; callers that can tell the two apart check :class:`Failed` first.
    Executors list it in ``failures``, never in ``quarantined``.
    """


class InfrastructureError(RuntimeError):
    """Raised by our own code when its machinery (not the item) fails; never quarantined."""


def is_ours(exc: BaseException) -> bool:
    """Whether an exception is our machinery's failure rather than the item's.

    Imports, the operating system (missing binaries, permissions, disk) and the jail's refusal
    to run are properties of the worker, not of the item: every item would fail the same way.
    """
    if isinstance(exc, ImportError | OSError | InfrastructureError):
        return True
    from structcover.tools.verify.jail import SandboxUnavailable  # lazy: only on failures

    return isinstance(exc, SandboxUnavailable)


def describe(exc: BaseException) -> str:
    """One line naming an exception: ``Type: message`` (no traceback, first line only; a Ray
    system error carries the remote traceback in its message)."""
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return text.splitlines()[0] if text else type(exc).__name__


class TaskError(Exception):
    """A whole task failed outside ``fn`` (the backend said why); its worker did not die."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class Executor(Protocol):
    """Runs ``fn`` over items in batches somewhere; yields results in input order."""

    #: Items quarantined by the last :meth:`map` call (filled while it runs).
    quarantined: list[Quarantined]
    #: Items our machinery failed on in the last :meth:`map` call (:class:`Failed`).
    failures: list[Failed]

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *, batch_size: int = ...,
            resources: dict[str, float] | None = None,
            on_progress: Callable[[int], None] | None = None,
            shared: Any = None) -> Iterator[Any]:
        """Apply ``fn`` to every item; yield each result (or a :class:`Quarantined`) in order.

        Args:
            fn: A module-level (picklable) function: ``fn(item)``, or ``fn(shared, item)`` when
                ``shared`` is given.
            items: The inputs; consumed lazily, a bounded window of batches at a time.
            batch_size: Items per task.
            resources: What one task needs, e.g. ``{"num_gpus": 1}`` (Ray schedules on it;
                the local pool ignores it).
            on_progress: Called with the number of items finished so far.
            shared: Read-only data every call needs (a config): sent once per worker or
                object store, not once per item.
        """
        ...

    def close(self) -> None:
        """Release the workers (and a Ray cluster this executor started)."""
        ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


def item_repr(item: Any, limit: int = 80) -> str:
    """A short description of an item for quarantine reports (ids first, never whole sources)."""
    if isinstance(item, tuple | list) and item and isinstance(item[0], str | int):
        return repr(item[0])[:limit]
    text = repr(item)
    return text if len(text) <= limit else text[:limit - 3] + "..."


#: Tries of one item whose run failed in our machinery (:func:`is_ours`) before it is Failed.
ITEM_TRIES = 2


def run_batch(fn: Callable[..., Any], shared: Any, start: int, batch: Sequence[Any],
              policy: RunPolicy | None = None) -> list[Any]:
    """Apply ``fn`` to a batch inside a worker; a raising item becomes a :class:`Quarantined`.

    A Python exception caused by the item is deterministic, so it is recorded, not retried:
    retrying would only repeat it (and an RL policy's adversarial program must not be able to
    stall the job). An exception of our machinery (:func:`is_ours`) is tried again
    (:data:`ITEM_TRIES` in all) and then becomes a :class:`Failed` naming the cause.

    Args:
        fn: The task function.
        shared: Its read-only first argument (None: ``fn(item)``).
        start: Input index of the batch's first item.
        batch: The items.
        policy: The driver's security settings, imposed for the batch (see
            :mod:`~structcover.tools.executors.policy`); None keeps the worker's own.
    """
    if policy is not None:
        with policy.applied():
            return run_batch(fn, shared, start, batch)
    out: list[Any] = []
    for offset, item in enumerate(batch):
        out.append(_run_item(fn, shared, start + offset, item))
    return out


def _run_item(fn: Callable[..., Any], shared: Any, index: int, item: Any) -> Any:
    for attempt in range(1, ITEM_TRIES + 1):
        try:
            return fn(item) if shared is None else fn(shared, item)
        except Exception as exc:  # noqa: BLE001 - one item's failure is a result, not a crash
            if not is_ours(exc):
                return Quarantined(index, f"raised {describe(exc)}"[:500], item_repr(item))
            if attempt == ITEM_TRIES:
                return Failed(index, f"our failure, not the input's ({attempt} tries): "
                              f"{describe(exc)}"[:500], item_repr(item))
    raise AssertionError("unreachable")


def batches(items: Iterable[Any], size: int) -> Iterator[tuple[int, list[Any]]]:
    """``(start index, items)`` chunks of ``size`` from a stream."""
    if size < 1:
        raise ValueError(f"batch_size must be >= 1, got {size}")
    chunk: list[Any] = []
    start = 0
    for i, item in enumerate(items):
        if not chunk:
            start = i
        chunk.append(item)
        if len(chunk) == size:
            yield start, chunk
            chunk = []
    if chunk:
        yield start, chunk


def died(index: int, item: Any, attempts: int) -> Quarantined:
    """The quarantine record of an item whose worker died on every attempt."""
    return Quarantined(index, f"worker died on each of {attempts} attempts on this item alone",
                       item_repr(item))


@dataclass
class Job:
    """A batch in flight: its first input index, its items, crashes seen while alone."""

    start: int
    items: list[Any]
    attempts: int = 0
    alone: bool = False
    errors: int = 0


#: ``submit(job) -> handle``; ``wait(handles) -> [(handle, ok, value)]`` for finished ones
#: (``ok`` False: the worker died, or ``value`` is a :class:`TaskError`).
Submit = Callable[[Job], Any]
Wait = Callable[[list[Any]], list[tuple[Any, bool, Any]]]


def drive(submit: Submit, wait: Wait, items: Iterable[Any], *, batch_size: int, window: int,
          retries: int, isolate: bool, quarantined: list[Quarantined],
          on_progress: Callable[[int], None] | None = None,
          tries_per_failure: int = 1, failures: list[Failed] | None = None,
          task_retries: int = 1) -> Iterator[Any]:
    """Schedule batches over a backend and yield results in input order (shared by executors).

    Args:
        submit: Starts a job; returns a handle.
        wait: Blocks until at least one handle finishes; ``ok`` False means its worker died.
        items: The inputs.
        batch_size: Items per job.
        window: Jobs in flight at most (bounds memory for streams of millions of items).
        retries: Re-runs of a job whose worker died alone, before it is split.
        isolate: A death fails every job in flight (a broken process pool), so a failed job is
            re-run alone to learn whether it was the cause. Without it (Ray) a failure is the
            failed task's own, already retried by the backend.
        quarantined: Receives the items given up on.
        on_progress: Called with the number of items finished so far.
        tries_per_failure: Runs behind one reported failure (Ray: 1 + its ``max_retries``).
        failures: Receives the items our machinery failed on (:class:`Failed`).
        task_retries: Re-runs of a job that failed outside ``fn`` (a :class:`TaskError`)
            before each of its items is :class:`Failed` with the cause.
    """
    failures = [] if failures is None else failures
    fresh = batches(items, batch_size)
    suspects: list[Job] = []   # re-run before any fresh batch, one at a time when isolating
    inflight: dict[Any, Job] = {}
    done: dict[int, list[Any]] = {}
    pos = finished = 0
    exhausted = False

    def fill() -> None:
        nonlocal exhausted
        if suspects:
            if isolate:
                if not inflight:
                    job = suspects.pop(0)
                    job.alone = True
                    inflight[submit(job)] = job
            else:
                while suspects:
                    job = suspects.pop(0)
                    job.alone = True
                    inflight[submit(job)] = job
            return
        while not exhausted and len(inflight) < window:
            try:
                start, chunk = next(fresh)
            except StopIteration:
                exhausted = True
                return
            job = Job(start, chunk, alone=not isolate)
            inflight[submit(job)] = job

    fill()
    while inflight:
        for handle, ok, value in wait(list(inflight)):
            job = inflight.pop(handle)
            if not ok and isinstance(value, TaskError):
                # Our machinery, not a death: no item is to blame, so no splitting.
                job.errors += 1
                if job.errors <= task_retries:
                    suspects.insert(0, job)
                    continue
                done[job.start] = [Failed(job.start + i, f"our failure, not the input's "
                                          f"(task failed {job.errors} times): {value.cause}"[:500],
                                          item_repr(item)) for i, item in enumerate(job.items)]
                finished += len(job.items)
                if on_progress is not None:
                    on_progress(finished)
            elif ok:
                done[job.start] = value
                finished += len(job.items)
                if on_progress is not None:
                    on_progress(finished)
            elif not job.alone:
                suspects.append(job)     # maybe a bystander of another job's crash
            else:
                job.attempts += 1
                if job.attempts <= retries:
                    suspects.insert(0, job)
                elif len(job.items) > 1:
                    half = len(job.items) // 2
                    # Halves get one try each before splitting again: the crash is
                    # reproducible by now, so this finds the item in log2(batch) steps.
                    suspects[:0] = [Job(job.start, job.items[:half], retries),
                                    Job(job.start + half, job.items[half:], retries)]
                else:
                    q = died(job.start, job.items[0], job.attempts * tries_per_failure)
                    quarantined.append(q)
                    done[job.start] = [q]
                    finished += 1
                    if on_progress is not None:
                        on_progress(finished)
        while pos in done:
            out = done.pop(pos)
            pos += len(out)
            for result in out:
                if isinstance(result, Failed):
                    failures.append(result)
                elif isinstance(result, Quarantined) and result not in quarantined:
                    quarantined.append(result)
                yield result
        fill()
