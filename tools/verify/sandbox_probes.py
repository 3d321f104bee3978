"""Small jobs that probe the sandbox itself (used by its tests and by ``structcover doctor``).

Each misbehaves in one way a generated program could: hang, crash, eat memory, reach the
network, or modify its inputs. They run only inside ``sandbox_call``.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import time

import numpy as np

from structcover.tools.verify.backend import RunResult


def echo(**kwargs: object) -> dict:
    """Return the cwd and the keyword names it received (checks the plumbing)."""
    return {"cwd": os.getcwd(), "keys": sorted(kwargs)}


def read_environment() -> dict:
    """What a program could learn about its caller: its environment and its home folder."""
    home = os.path.expanduser("~")
    return {"env": dict(os.environ), "home": home,
            "home_files": sorted(os.listdir(home)) if os.path.isdir(home) else []}


def sleep_forever(spawn_child: bool = False) -> None:
    """Hang; optionally leave a grandchild process that would outlive a naive kill."""
    if spawn_child:
        with open("grandchild.pid", "w") as f:
            f.write(str(subprocess.Popen(["sleep", "1000"]).pid))
    while True:
        time.sleep(0.1)


def spin_cpu() -> None:
    """Burn CPU forever (an infinite loop)."""
    x = 0
    while True:
        x += 1


def segfault() -> None:
    """Dereference a null pointer."""
    ctypes.string_at(0)


def allocate(mb: int) -> int:
    """Allocate and touch ``mb`` MiB."""
    block = np.ones(mb * 1024 * 1024, dtype=np.uint8)
    return int(block.sum() // (1024 * 1024))


def try_network(host: str = "1.1.1.1", port: int = 53) -> dict:
    """Try to open a TCP connection; report what happened."""
    try:
        with socket.create_connection((host, port), timeout=2):
            return {"connected": True, "error": ""}
    except OSError as exc:
        return {"connected": False, "error": f"{type(exc).__name__}: {exc}"}


def double_outputs(source: str, spec, inputs: dict, sizes=None) -> RunResult:  # noqa: ANN001
    """A RunResult job: writes 2*x into every output, and also modifies input ``x``."""
    x = inputs["x"]
    outs = {a.name: (2 * x).astype(inputs[a.name].dtype) for a in spec.tensors
            if a.role != "input"}
    after = {a.name: inputs[a.name] for a in spec.tensors if a.role == "input"}
    if "x" in after:
        after["x"] = after["x"] + 1
    return RunResult(status="ok", outputs=outs, inputs_after=after,
                     detail=f"source had {len(source)} chars", backend="probe")
