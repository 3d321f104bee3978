"""Per-run security settings, taken from the driver and imposed on every worker batch.

A worker is another process (a Ray worker may be on another machine, with its own settings
file and environment), so a decision the driver made at run time — the CLI's
``--allow-unsandboxed``, or ``verify.allow_unsandboxed`` in the driver's settings — does not
reach it by itself. Each :meth:`~structcover.tools.executors.base.Executor.map` captures the
driver's :class:`RunPolicy` once and every batch runs under it: the worker's jail decides
exactly as the driver would, neither more permissive (a worker whose own settings allow
unsandboxed runs, under a driver that does not) nor stricter (a driver that opted in, on
workers that never saw the flag). The worker's own decision is restored after the batch, so a
worker shared by two jobs never carries one job's policy into the other.

Limits (timeouts, memory) are not process state: they travel inside each task's settings
(``verify_batch``'s settings, the campaign's backend, the compile batch's compiler settings).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class RunPolicy:
    """The security decisions of one run, as the driver made them.

    Attributes:
        allow_unsandboxed: Run untrusted code with rlimits only where no jail is possible
            (otherwise it is refused).
    """

    allow_unsandboxed: bool

    @classmethod
    def of_driver(cls) -> RunPolicy:
        """This process's effective policy (its flag, else its settings)."""
        from structcover.tools.verify.jail import unsandboxed_allowed

        return cls(allow_unsandboxed=unsandboxed_allowed())

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Run the block under this policy; put the process's own decision back after."""
        from structcover.tools.verify import jail

        before = jail.allow_unsandboxed_override()
        jail.set_allow_unsandboxed(self.allow_unsandboxed)
        try:
            yield
        finally:
            jail.set_allow_unsandboxed(before)
