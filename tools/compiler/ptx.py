"""Static PTX instruction mix per kernel: a cheap arithmetic-intensity proxy.

Counts are static (instructions in the code, not executed instructions): a load inside a loop
counts once. That is what makes them a *structural* measure of the program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(")
_FLOAT_TYPES = {"f32": 1, "f64": 1, "f16": 1, "bf16": 1, "f16x2": 2, "bf16x2": 2}
_FLOP_OPS = {"add": 1, "sub": 1, "mul": 1, "div": 1, "fma": 2, "mad": 2, "rcp": 1, "sqrt": 1,
             "rsqrt": 1, "ex2": 1, "lg2": 1, "sin": 1, "cos": 1, "tanh": 1, "min": 1, "max": 1}
_WIDTH = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


@dataclass
class PtxMix:
    """Instruction counts of one kernel (or a sum over kernels)."""

    kernel: str
    ld_global: int = 0
    st_global: int = 0
    ld_shared: int = 0
    st_shared: int = 0
    fma: int = 0
    flops: int = 0
    global_bytes: int = 0
    instructions: int = 0

    @property
    def flops_per_global_byte(self) -> float:
        """Floating-point operations per byte moved by global loads/stores (0 when none)."""
        return self.flops / self.global_bytes if self.global_bytes else 0.0


def _bodies(ptx: str) -> list[tuple[str, str]]:
    """``(symbol, body)`` of every ``.entry`` in ``ptx``."""
    out: list[tuple[str, str]] = []
    for match in _ENTRY.finditer(ptx):
        start = ptx.find("{", ptx.find(")", match.end()))
        if start < 0:
            continue
        depth = 0
        for pos in range(start, len(ptx)):
            if ptx[pos] == "{":
                depth += 1
            elif ptx[pos] == "}":
                depth -= 1
                if depth == 0:
                    out.append((match.group(1), ptx[start + 1:pos]))
                    break
    return out


def _access_bytes(parts: list[str]) -> int:
    vector = 1
    width = 4
    for part in parts:
        if part in ("v2", "v4", "v8"):
            vector = int(part[1:])
        m = re.fullmatch(r"[bfsu](\d+)", part)
        if m and m.group(1) in _WIDTH:
            width = _WIDTH[m.group(1)]
    return vector * width


def count_instructions(body: str, kernel: str) -> PtxMix:
    """Count the instruction mix of one kernel body."""
    mix = PtxMix(kernel=kernel)
    for raw in body.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line.startswith((".", "{", "}")) or line.endswith(":"):
            continue
        if line.startswith("@"):
            line = line.split(None, 1)[1] if " " in line else ""
        opcode = line.split(None, 1)[0].rstrip(";") if line else ""
        if not opcode:
            continue
        mix.instructions += 1
        parts = opcode.split(".")
        base = parts[0]
        if base in ("ld", "ldu") and "global" in parts:
            mix.ld_global += 1
            mix.global_bytes += _access_bytes(parts)
        elif base == "st" and "global" in parts:
            mix.st_global += 1
            mix.global_bytes += _access_bytes(parts)
        elif base == "ld" and "shared" in parts:
            mix.ld_shared += 1
        elif base == "st" and "shared" in parts:
            mix.st_shared += 1
        elif base in _FLOP_OPS:
            lanes = max((_FLOAT_TYPES.get(p, 0) for p in parts[1:]), default=0)
            if lanes:
                mix.flops += _FLOP_OPS[base] * lanes
                if base == "fma":
                    mix.fma += 1
    return mix


def ptx_mix(ptx: str) -> list[PtxMix]:
    """The instruction mix of every kernel (``.entry``) in a PTX module, keyed by symbol."""
    return [count_instructions(body, symbol) for symbol, body in _bodies(ptx)]


def total_mix(mixes: list[PtxMix]) -> PtxMix:
    """Sum of several kernels' counts (a program's aggregate)."""
    total = PtxMix(kernel="*")
    for mix in mixes:
        for name in ("ld_global", "st_global", "ld_shared", "st_shared", "fma", "flops",
                     "global_bytes", "instructions"):
            setattr(total, name, getattr(total, name) + getattr(mix, name))
    return total
