"""Ray executor: batches as Ray tasks on a cluster (``--executor ray [--address auto]``).

Needs the ``ray`` extra. Each batch is one task (batched object references: a stream of a
million programs becomes a bounded window of small tasks, never one giant object); the function
and the read-only config are put in the object store once (``ray.put``) and every task gets the
reference. Results come back with ``ray.wait`` as tasks finish and are yielded in input order.

Cluster and authentication:

* ``address=None`` starts a private local cluster (``ray.init(num_cpus=..., include_dashboard=
  False)``) and shuts it down on :meth:`RayExecutor.close`. Token authentication is turned off
  for that cluster only (``RAY_AUTH_MODE=disabled``): nobody else can reach it, and it keeps
  the tool from writing an auth token into the home folder.
* ``address="auto"`` (or ``ray://host:10001``, ``host:6379``) joins a running cluster and leaves
  it running. A cluster started with token authentication needs its token in the driver's
  environment: ``export RAY_AUTH_TOKEN=...`` (or ``RAY_AUTH_TOKEN_PATH=/path/to/token``) and
  ``RAY_AUTH_MODE=token`` before running ``structcover ... --executor ray --address auto``;
  this module never sets or reads a token.

Faults: a task whose worker dies is retried by Ray (``max_retries``); a batch that still fails
is split in halves until the item that kills its worker stands alone, and that item is
quarantined; a Python exception in ``fn`` quarantines its item at once. A task that errors
outside ``fn`` (a ``RayTaskError``: say, the worker cannot import or unpickle the function) is
our failure, not its items': it is retried once, then its items are :class:`Failed` with the
cause (``failures``), never quarantined.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
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


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise RuntimeError("--executor ray needs the ray extra: pip install "
                           "'structcover[ray]'") from exc
    return ray


def _run(fn: Callable[..., Any], shared: Any, start: int, items: list[Any],
         policy: RunPolicy) -> list[Any]:
    return run_batch(fn, shared, start, items, policy)


class RayExecutor:
    """Runs batches as Ray tasks.

    Args:
        address: None starts a private local cluster; ``"auto"`` or an address joins one.
        num_cpus: CPUs of a local cluster this executor starts (None: all).
        num_gpus: GPUs of a local cluster this executor starts (None: the ones Ray detects).
            Declaring GPUs a machine lacks is for tests of GPU scheduling only.
        retries: Ray ``max_retries`` of a task whose worker died.
        window: Tasks in flight at most (None: twice the cluster's CPUs).
    """

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None,
                 num_gpus: int | None = None, retries: int = 2,
                 window: int | None = None) -> None:
        ray = _ray()
        self.quarantined: list[Quarantined] = []
        self.failures: list[Failed] = []
        self.retries = retries
        self._started = False
        if not ray.is_initialized():
            if address is None:
                # A private cluster: no token auth (see the module docstring).
                os.environ.setdefault("RAY_AUTH_MODE", "disabled")
                ray.init(num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.window = window or max(2, 2 * cpus)
        self._remote = ray.remote(_run)

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *,
            batch_size: int = DEFAULT_BATCH_SIZE, resources: dict[str, float] | None = None,
            on_progress: Callable[[int], None] | None = None,
            shared: Any = None) -> Iterator[Any]:
        """See :meth:`structcover.tools.executors.base.Executor.map`; ``resources`` are Ray
        task resources (``{"num_gpus": 1}`` for GPU verification).

        Raises:
            RuntimeError: The tasks ask for more GPUs than the whole cluster has (Ray would
                wait for them forever).
        """
        ray = _ray()
        self.quarantined = []
        self.failures = []
        want = float((resources or {}).get("num_gpus", 0) or 0)
        have = float(ray.cluster_resources().get("GPU", 0))
        if want > have:
            raise RuntimeError(f"GPU tasks ask for {want:g} GPU each but the Ray cluster has "
                               f"{have:g}: join a cluster with GPUs (--address) or verify on "
                               "another backend (--backend cpu)")
        fn_ref = ray.put(fn)
        shared_ref = ray.put(shared)
        # The driver's security settings, imposed on each batch (executors/policy.py).
        policy = RunPolicy.of_driver()
        task = self._remote.options(max_retries=self.retries, retry_exceptions=False,
                                    **(resources or {}))

        def submit(job: Job) -> Any:
            return task.remote(fn_ref, shared_ref, job.start, job.items, policy)

        def wait_any(handles: list[Any]) -> list[tuple[Any, bool, Any]]:
            ready, _ = ray.wait(handles, num_returns=1)
            out: list[tuple[Any, bool, Any]] = []
            for ref in ready:
                try:
                    out.append((ref, True, ray.get(ref)))
                except ray.exceptions.RayTaskError as exc:  # raised outside fn: our machinery
                    cause = exc.cause if isinstance(exc.cause, BaseException) else exc
                    out.append((ref, False, TaskError(f"Ray task error: {describe(cause)}")))
                except ray.exceptions.RayError as exc:  # worker died past its retries
                    out.append((ref, False, exc))
            return out

        # Ray already retried a failed task: the driver splits at once (retries=0).
        yield from drive(submit, wait_any, items, batch_size=batch_size, window=self.window,
                         retries=0, isolate=False, quarantined=self.quarantined,
                         on_progress=on_progress, tries_per_failure=1 + self.retries,
                         failures=self.failures)

    def close(self) -> None:
        """Shut down the local cluster if this executor started it."""
        if self._started:
            _ray().shutdown()
            self._started = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
