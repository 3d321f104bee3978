"""Fault injection for the executors' tests and drills (never used by the pipeline itself).

Module-level so that both a forked pool and Ray workers can import them by name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def square(item: int) -> int:
    """A trivial task: ``item ** 2``."""
    return item * item


def poison(item: Any) -> Any:
    """Kill the worker process on an item marked ``"POISON"``; pass others through."""
    if item == "POISON" or (isinstance(item, tuple | list) and "POISON" in str(item[0])):
        os._exit(3)
    return item


def die_once(flag: str, item: Any) -> Any:
    """Kill the worker the first time any worker reaches ``item == 7`` while ``flag`` exists.

    The flag file is removed before dying (``unlink`` is atomic: exactly one worker dies),
    so the retry of the batch succeeds: a worker killed mid-task.
    """
    if item == 7:
        try:
            Path(flag).unlink()
        except FileNotFoundError:
            return item * item
        os._exit(9)
    return item * item


def raise_on(item: Any) -> Any:
    """Raise ValueError on negative numbers (a deterministic Python failure)."""
    if item < 0:
        raise ValueError(f"negative input {item}")
    return item * item


def jailless_run(worker_env: dict[str, str], item: Any) -> str:
    """Run ``/bin/true`` as untrusted code on a worker that has no jail; say what happened.

    A drill for the per-run security policy: bubblewrap is hidden from the worker (``PATH``
    without it, the probe's cache cleared) and ``worker_env`` (say, the worker's own
    ``STRUCTCOVER_VERIFY__ALLOW_UNSANDBOXED``) is set, as on a cluster node without user
    namespaces and with settings of its own. Everything is put back afterwards.

    Returns:
        ``"refused"`` (the jail's :class:`SandboxUnavailable`) or ``"ran unsandboxed"``.
    """
    from structcover.tools.verify import jail

    saved = {k: os.environ.get(k) for k in [*worker_env, "PATH"]}
    os.environ.update(worker_env)
    os.environ["PATH"] = "/nonexistent"
    jail.jail_status.cache_clear()
    try:
        result = jail.run_jailed(["/bin/true"])
        return "ran unsandboxed" if not result.sandboxed and result.returncode == 0 else "?"
    except jail.SandboxUnavailable:
        return "refused"
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        jail.jail_status.cache_clear()


def gpu_slot(seconds: float, item: Any) -> tuple[str, float, float]:
    """The GPUs Ray gave this task and when it held them (``(ids, start, end)``)."""
    import time

    import ray

    start = time.time()
    time.sleep(seconds)
    ids = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
    return ",".join(str(i) for i in ids), start, time.time()


def import_fails(item: Any) -> Any:
    """Fail as a worker that cannot import a module would (our machinery, not the item).

    Negative items raise ValueError instead: a deterministic failure caused by the item.
    """
    if isinstance(item, int) and item < 0:
        raise ValueError(f"negative input {item}")
    raise ModuleNotFoundError("No module named 'structcover.tools.features' (injected)")


def _refuse_unpickle() -> Any:
    raise ModuleNotFoundError("No module named 'structcover.tools' (injected at unpickling)")


class UnpicklableOnWorker:
    """Pickles on the driver, fails to unpickle in the worker: the old root-folder Ray bug,
    where workers imported a partial ``structcover`` and could not load the task's function."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _refuse_unpickle, ()


def echo(shared: Any, item: Any) -> Any:
    """Return the item (a task whose ``shared`` may carry the fault)."""
    return item
