"""What one compiler invocation produced, before parsing: shared by the nvcc, NVRTC and jailed
paths (its own module, so that none of them imports another to get it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RawCompile:
    """What one compiler invocation produced, before parsing."""

    ok: bool
    log: str = ""
    ptx: str = ""
    cubin: bytes | None = None
    timed_out: bool = False
