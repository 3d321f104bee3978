"""Where batches of work run: a local process pool (default) or a Ray cluster.

:func:`make_executor` builds one from the commands' ``--executor local|ray`` and
``--address`` options.
"""

from __future__ import annotations

from structcover.tools.executors.base import (
    DEFAULT_BATCH_SIZE,
    Executor,
    Failed,
    InfrastructureError,
    Quarantined,
)
from structcover.tools.executors.local import LocalExecutor


def make_executor(kind: str = "local", *, workers: int = 0, address: str | None = None,
                  num_cpus: int | None = None) -> Executor:
    """An executor by name.

    Args:
        kind: ``local`` (process pool) or ``ray``.
        workers: Local pool size (0 = per core); for a Ray cluster started here, its CPUs.
        address: Ray cluster to join (``auto`` or an address); None starts a local one.
        num_cpus: CPUs of a local Ray cluster (defaults to ``workers`` when set).

    Raises:
        ValueError: ``kind`` is neither, or ``address`` given with ``local``.
    """
    if kind == "local":
        if address is not None:
            raise ValueError("--address applies to --executor ray only")
        return LocalExecutor(workers)
    if kind == "ray":
        from structcover.tools.executors.ray_exec import RayExecutor
        return RayExecutor(address, num_cpus=num_cpus or (workers or None))
    raise ValueError(f"--executor must be 'local' or 'ray', got {kind!r}")


__all__ = ["DEFAULT_BATCH_SIZE", "Executor", "Failed", "InfrastructureError", "LocalExecutor", "Quarantined",
           "make_executor"]
