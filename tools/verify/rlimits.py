"""Resource limits for a child command, set without forking this process's memory.

A ``preexec_fn`` that calls ``setrlimit`` forces ``subprocess`` to ``fork()`` (not ``vfork()``)
and holds the GIL while the kernel copies the parent's page tables: measured here, a spawn
from a 1.8 GB Python process took 210 ms with a ``preexec_fn`` and 2 ms without, and every
other thread of a campaign waits meanwhile. So the limits go through util-linux's
``prlimit`` (it sets them on itself, then execs the command) wherever it is installed, and
through ``preexec_fn`` only where it is not.
"""

from __future__ import annotations

import functools
import resource
import shutil
from collections.abc import Callable, Sequence

#: ``prlimit`` option of each limit this project sets.
_OPTION = {resource.RLIMIT_CPU: "cpu", resource.RLIMIT_FSIZE: "fsize",
           resource.RLIMIT_NOFILE: "nofile", resource.RLIMIT_NPROC: "nproc",
           resource.RLIMIT_CORE: "core", resource.RLIMIT_AS: "as"}


def capped(limits: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(kind, value)`` pairs with each value lowered to this process's hard limit (a child
    cannot raise it; asking would fail the spawn)."""
    out = []
    for kind, value in limits:
        _, hard = resource.getrlimit(kind)
        out.append((kind, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return out


@functools.lru_cache(maxsize=1)
def _prlimit() -> str | None:
    return shutil.which("prlimit")


def limited(argv: list[str], limits: Sequence[tuple[int, int]]
            ) -> tuple[list[str], Callable[[], None] | None]:
    """The command line and ``preexec_fn`` that run ``argv`` under ``limits`` (soft = hard).

    Args:
        argv: The command.
        limits: ``(resource.RLIMIT_*, value)`` pairs; the address-space limit, if any, last.

    Returns:
        ``(prlimit … -- argv, None)`` where ``prlimit`` is on PATH, else ``(argv, preexec)``.
    """
    plan = capped(limits)
    tool = _prlimit()
    if tool is not None and all(kind in _OPTION for kind, _ in plan):
        return [tool, *(f"--{_OPTION[kind]}={v}:{v}" for kind, v in plan), "--", *argv], None

    def preexec() -> None:  # in the child before exec: every value is computed already
        for kind, v in plan:
            resource.setrlimit(kind, (v, v))

    return argv, preexec
