"""Theoretical occupancy from per-arch limits, the way CUDA's occupancy calculator does it.

Follows ``cuda_occupancy.h`` (CUDA 13): registers are allocated per warp in units of 256 and
per SM sub-partition (4 per SM); shared memory per block is static + dynamic + the driver's
reserved 1 KiB, rounded up to 128 bytes; the SM's shared memory is taken at its largest
carve-out (the driver's choice when a kernel needs it). Partitioned global caching is off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Limiter = Literal["registers", "smem", "threads", "blocks"]


@dataclass(frozen=True)
class ArchLimits:
    """The per-SM and per-block limits of one compute capability."""

    arch: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256  # registers, allocated per warp
    sub_partitions: int = 4
    smem_per_sm: int = 0  # bytes, largest carve-out
    smem_per_block: int = 0  # bytes, opt-in maximum
    reserved_smem_per_block: int = 1024
    smem_alloc_unit: int = 128
    max_threads_per_block: int = 1024
    warp_size: int = 32


#: Limits from NVIDIA's CUDA C++ Programming Guide (compute capabilities table) and
#: cuda_occupancy.h: A100 (8.0), GA10x (8.6), Ada (8.9), H100 (9.0), B200 (10.0).
ARCH_LIMITS: dict[str, ArchLimits] = {
    "sm_80": ArchLimits("sm_80", 64, 32, smem_per_sm=164 * 1024, smem_per_block=163 * 1024),
    "sm_86": ArchLimits("sm_86", 48, 16, smem_per_sm=100 * 1024, smem_per_block=99 * 1024),
    "sm_89": ArchLimits("sm_89", 48, 24, smem_per_sm=100 * 1024, smem_per_block=99 * 1024),
    "sm_90": ArchLimits("sm_90", 64, 32, smem_per_sm=228 * 1024, smem_per_block=227 * 1024),
    "sm_100": ArchLimits("sm_100", 64, 32, smem_per_sm=228 * 1024, smem_per_block=227 * 1024),
}

# Order in which a tie names the limiter: at full occupancy the warp slots are what binds.
_TIE_ORDER: tuple[Limiter, ...] = ("threads", "blocks", "registers", "smem")


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one kernel at one block size."""

    arch: str
    block_size: int
    registers: int
    smem_bytes: int
    blocks_per_sm: int
    active_warps: int
    max_warps: int
    theoretical: float
    limiter: Limiter
    #: Blocks per SM each resource alone would allow.
    limits: dict[str, int] = field(default_factory=dict)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def arch_limits(arch: str) -> ArchLimits:
    """The limits table for ``arch``.

    Raises:
        ValueError: No table for ``arch``; the message lists the known ones.
    """
    arch = arch.removesuffix("a").removesuffix("f")  # sm_90a has sm_90's limits
    if arch not in ARCH_LIMITS:
        raise ValueError(f"no occupancy limits for arch {arch!r}; known: {sorted(ARCH_LIMITS)}")
    return ARCH_LIMITS[arch]


def theoretical_occupancy(arch: str, block_size: int, registers: int, smem_bytes: int = 0,
                          dynamic_smem_bytes: int = 0) -> Occupancy:
    """Blocks and warps resident per SM, and which resource limits them.

    Args:
        arch: ``sm_80``, ``sm_86``, ``sm_89``, ``sm_90`` or ``sm_100``.
        block_size: Threads per block (1-1024).
        registers: Registers per thread (ptxas).
        smem_bytes: Static shared memory per block (ptxas).
        dynamic_smem_bytes: Dynamic shared memory per block given at launch.

    Returns:
        The occupancy; ``theoretical`` is active warps / max warps per SM, 0 when the block
        cannot launch at all (then ``limiter`` names the resource that is exceeded).

    Raises:
        ValueError: Unknown arch, or a non-positive block size / negative resources.
    """
    lim = arch_limits(arch)
    if block_size <= 0 or registers < 0 or smem_bytes < 0 or dynamic_smem_bytes < 0:
        raise ValueError(f"bad occupancy input: block_size={block_size}, registers={registers}, "
                         f"smem={smem_bytes}, dynamic smem={dynamic_smem_bytes}")
    warps_per_block = -(-block_size // lim.warp_size)

    threads = (lim.max_warps_per_sm // warps_per_block
               if block_size <= lim.max_threads_per_block else 0)

    regs_per_warp = _round_up(registers * lim.warp_size, lim.reg_alloc_unit)
    regs_assumed = regs_per_warp * _round_up(warps_per_block, lim.sub_partitions)
    if (registers > lim.max_regs_per_thread or regs_assumed > lim.regs_per_block
            or regs_per_warp * warps_per_block > lim.regs_per_block):
        regs = 0
    elif regs_per_warp == 0:
        regs = lim.max_blocks_per_sm
    else:
        warps_per_sub = (lim.regs_per_sm // lim.sub_partitions) // regs_per_warp
        regs = warps_per_sub * lim.sub_partitions // warps_per_block

    smem_alloc = _round_up(smem_bytes + dynamic_smem_bytes + lim.reserved_smem_per_block,
                           lim.smem_alloc_unit)
    smem = 0 if smem_alloc > lim.smem_per_block + lim.reserved_smem_per_block \
        else lim.smem_per_sm // smem_alloc

    limits = {"threads": threads, "blocks": lim.max_blocks_per_sm, "registers": regs,
              "smem": smem}
    blocks = min(limits.values())
    limiter = next(name for name in _TIE_ORDER if limits[name] == blocks)
    active = blocks * warps_per_block
    return Occupancy(arch=lim.arch, block_size=block_size, registers=registers,
                     smem_bytes=smem_bytes + dynamic_smem_bytes, blocks_per_sm=blocks,
                     active_warps=active, max_warps=lim.max_warps_per_sm,
                     theoretical=active / lim.max_warps_per_sm, limiter=limiter, limits=limits)
