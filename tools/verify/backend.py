"""The execution contract every backend implements (docs/ARCHITECTURE.md).

A backend takes a program's source, its TaskSpec and concrete inputs, calls the program's
``extern "C"`` launcher, and returns the output buffers as numpy arrays. Backends never raise
for a bad *program* (compile error, crash, deadlock, race, timeout): those are statuses of the
``RunResult``. They raise only for bad *calls* (e.g. inputs missing for the spec).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from structcover.schema import TaskSpec, Timing

RunStatus = Literal[
    "ok",             # ran; outputs are valid
    "compile-error",  # the program did not compile for this backend
    "launch-error",   # the launcher returned a non-zero error code
    "deadlock",       # a barrier or warp collective can never be released
    "race",           # outputs differ between thread schedules
    "crash",          # the program crashed (segfault, abort, wild write)
    "timeout",        # ran past the wall-clock limit (e.g. an infinite loop)
    "unsupported",    # uses a construct this backend cannot run faithfully
    "rejected",       # refused before running (sandbox policy)
]


@dataclass
class RunResult:
    """What one execution of a program produced."""

    status: RunStatus
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    #: The inputs as they were after the call (to detect programs that modify their inputs).
    inputs_after: dict[str, np.ndarray] = field(default_factory=dict)
    detail: str = ""
    backend: str = ""
    timing: Timing | None = None
    energy_j: float | None = None


@runtime_checkable
class ExecutionBackend(Protocol):
    """A way to run programs: ``cpu`` (the emulator), ``gpu`` or ``compile-only``."""

    name: str

    def available(self) -> tuple[bool, str]:
        """Whether this backend can run here, and why not when it cannot."""
        ...

    def run(self, source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
            sizes: dict[str, int] | None = None, timeout_s: float = 60.0) -> RunResult:
        """Run ``source``'s launcher on ``inputs`` (all tensor args, outputs pre-allocated).

        Args:
            source: Full CUDA program text, host launcher included.
            spec: The task's spec (launcher name, argument order, sizes).
            inputs: One array per tensor argument (outputs pre-filled, e.g. with a poison value).
            sizes: Size overrides; the spec's sizes by default.
            timeout_s: Wall-clock limit.

        Returns:
            The run's status and output arrays.
        """
        ...
