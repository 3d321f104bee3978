"""Compiler-derived features under stable names, per kernel and per program.

Names (program level): ``ptxas.registers`` (max over kernels), ``ptxas.smem_bytes`` (max),
``ptxas.spill_bytes`` (spill stores + loads, summed), ``ptxas.stack_bytes`` (max),
``ptxas.barriers`` (max), ``occupancy.theoretical`` (min over kernels, 0-1),
``occupancy.limiter`` (of that kernel: registers / smem / threads / blocks), ``ptx.ld_global``,
``ptx.st_global``, ``ptx.ld_shared``, ``ptx.fma`` (static counts summed over kernels) and
``ptx.flops_per_global_byte`` (total flops / total global bytes). Also
``occupancy.block_size`` and ``occupancy.block_source`` (``launch`` when read from the
program's ``<<<>>>``, ``argument`` when given, ``default`` = 256 otherwise), ``compile.ok``
and ``compile.kernels_emitted`` (kernels ptxas compiled; template kernels count once per
instantiation). When the program does not compile, or compiles without emitting a kernel
(templates nobody instantiates), the numeric features are missing (NaN), never 0, the limiter
is ``none`` and ``compile.missing_reason`` says why; it is ``""`` when the values are real.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from structcover.config import CompilerSettings
from structcover.schema import CompileStats
from structcover.tools.compiler.launches import DEFAULT_BLOCK_SIZE, block_size_for, find_launches
from structcover.tools.compiler.occupancy import Occupancy, theoretical_occupancy
from structcover.tools.compiler.ptx import PtxMix, ptx_mix, total_mix
from structcover.tools.compiler.service import CompileResult, compile_program

FEATURE_NAMES: tuple[str, ...] = (
    "ptxas.registers", "ptxas.smem_bytes", "ptxas.spill_bytes", "ptxas.stack_bytes",
    "ptxas.barriers", "occupancy.theoretical", "occupancy.limiter", "ptx.ld_global",
    "ptx.st_global", "ptx.ld_shared", "ptx.fma", "ptx.flops_per_global_byte")


@dataclass
class KernelFeatures:
    """Everything the compiler says about one kernel."""

    kernel: str
    stats: CompileStats
    block_size: int
    block_source: str
    occupancy: Occupancy
    mix: PtxMix


@dataclass
class CompilerFeatures:
    """Per-kernel features and the compile they came from."""

    result: CompileResult
    kernels: list[KernelFeatures] = field(default_factory=list)

    def values(self) -> dict[str, float | str]:
        """The program-level feature dict (see the module docstring for the aggregation)."""
        nan = math.nan
        ks = self.kernels
        if not self.result.ok or not ks:
            out: dict[str, float | str] = {n: nan for n in FEATURE_NAMES}
            if self.result.ok:
                reason = self.result.no_kernel_reason() or "no kernel emitted"
            else:
                first = self.result.errors[0].message if self.result.errors else "unknown error"
                reason = f"compile failed: {first}"[:300]
            out.update({"occupancy.limiter": "none", "compile.ok": float(self.result.ok),
                        "compile.kernels_emitted": float(len(ks)) if self.result.ok else nan,
                        "compile.missing_reason": reason,
                        "occupancy.block_size": nan, "occupancy.block_source": "none"})
            return out
        mix = total_mix([k.mix for k in ks])
        worst = min(ks, key=lambda k: k.occupancy.theoretical) if ks else None
        return {
            "ptxas.registers": float(max((k.stats.registers for k in ks), default=0)),
            "ptxas.smem_bytes": float(max((k.stats.smem_bytes for k in ks), default=0)),
            "ptxas.spill_bytes": float(sum(k.stats.spill_store_bytes + k.stats.spill_load_bytes
                                           for k in ks)),
            "ptxas.stack_bytes": float(max((k.stats.stack_bytes for k in ks), default=0)),
            "ptxas.barriers": float(max((k.stats.barriers for k in ks), default=0)),
            "occupancy.theoretical": worst.occupancy.theoretical if worst else 0.0,
            "occupancy.limiter": worst.occupancy.limiter if worst else "none",
            "occupancy.block_size": float(worst.block_size) if worst else nan,
            "occupancy.block_source": worst.block_source if worst else "none",
            "ptx.ld_global": float(mix.ld_global),
            "ptx.st_global": float(mix.st_global),
            "ptx.ld_shared": float(mix.ld_shared),
            "ptx.fma": float(mix.fma),
            "ptx.flops_per_global_byte": mix.flops_per_global_byte,
            "compile.ok": 1.0,
            "compile.kernels_emitted": float(len(ks)),
            "compile.missing_reason": "",
        }


def _base_name(kernel: str) -> str:
    """``ns::scale<4>`` -> ``scale`` (how launches name kernels)."""
    return re.sub(r"<.*>$", "", kernel).split("::")[-1]


def compiler_features(source: str, arch: str = "sm_90", block_size: int | None = None,
                      settings: CompilerSettings | None = None,
                      cache_dir: Path | None = None,
                      include_dirs: list[Path] | None = None) -> CompilerFeatures:
    """Compile ``source`` (cached) and derive per-kernel stats, occupancy and PTX mix.

    Args:
        source: A CUDA program.
        arch: Target architecture; occupancy uses its limits table.
        block_size: Threads per block for every kernel; None reads each kernel's launch
            (falling back to 256, reported as ``default``).
        settings: Compiler settings (via, timeout, cache dir).
        cache_dir: Overrides the settings' cache folder.
        include_dirs: The program's own header folders (settings' when None).

    Returns:
        The compile result and one :class:`KernelFeatures` per compiled kernel.
    """
    result = compile_program(source, arch=arch, settings=settings, cache_dir=cache_dir,
                             include_dirs=include_dirs)
    out = CompilerFeatures(result=result)
    if not result.ok:
        return out
    launches = find_launches(source)
    mixes = {m.kernel: m for m in ptx_mix(result.ptx)}
    for stats in result.stats:
        if block_size is not None:
            size, where = block_size, "argument"
        else:
            size, where = block_size_for(_base_name(stats.kernel), launches, DEFAULT_BLOCK_SIZE)
        dyn = max((s.dynamic_smem or 0 for s in launches
                   if s.kernel == _base_name(stats.kernel)), default=0)
        occ = theoretical_occupancy(arch, size, stats.registers, stats.smem_bytes, dyn)
        symbol = result.kernel_symbols.get(stats.kernel, stats.kernel)
        out.kernels.append(KernelFeatures(kernel=stats.kernel, stats=stats, block_size=size,
                                          block_source=where, occupancy=occ,
                                          mix=mixes.get(symbol, PtxMix(kernel=symbol))))
    return out


def compiler_feature_values(source: str, arch: str = "sm_90",
                            block_size: int | None = None,
                            settings: CompilerSettings | None = None,
                            cache_dir: Path | None = None,
                            include_dirs: list[Path] | None = None) -> dict[str, float | str]:
    """Program-level compiler features under their stable names (see module docstring)."""
    return compiler_features(source, arch, block_size, settings, cache_dir,
                             include_dirs).values()
