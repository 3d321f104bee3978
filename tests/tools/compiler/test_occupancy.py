"""Occupancy against hand-computed values, the arithmetic of cuda_occupancy.h written out.

Per arch: registers are allocated per warp in units of 256, per sub-partition (4 per SM,
65536 / 4 = 16384 registers each); smem per block = static + dynamic + 1024 reserved, rounded
up to 128; blocks = min(threads, blocks, registers, smem limits).
"""

from __future__ import annotations

import pytest

from structcover.tools.compiler.occupancy import ARCH_LIMITS, theoretical_occupancy


def test_register_limited_sm90() -> None:
    # 256 threads = 8 warps, 64 regs: 64*32 = 2048 regs/warp; 16384 // 2048 = 8 warps per
    # sub-partition -> 32 warps per SM -> 32 // 8 = 4 blocks. Threads allow 64 // 8 = 8.
    occ = theoretical_occupancy("sm_90", 256, 64)
    assert occ.limits["registers"] == 4
    assert occ.blocks_per_sm == 4
    assert occ.limiter == "registers"
    assert occ.theoretical == pytest.approx(4 * 8 / 64)  # 0.5


def test_register_limited_with_rounding_sm80() -> None:
    # 37 regs: 37*32 = 1184 -> rounded up to 1280; 16384 // 1280 = 12 warps per sub-partition
    # -> 48 per SM; block 128 = 4 warps -> 48 // 4 = 12 blocks = 48 warps of 64.
    occ = theoretical_occupancy("sm_80", 128, 37)
    assert occ.limits["registers"] == 12
    assert occ.limiter == "registers"
    assert occ.theoretical == pytest.approx(48 / 64)  # 0.75


def test_smem_limited_sm80() -> None:
    # 48 KiB static: 49152 + 1024 reserved = 50176 (already a multiple of 128);
    # 164 KiB = 167936 // 50176 = 3 blocks; 3 * 4 warps = 12 of 64.
    occ = theoretical_occupancy("sm_80", 128, 32, smem_bytes=48 * 1024)
    assert occ.limits["smem"] == 3
    assert occ.limiter == "smem"
    assert occ.theoretical == pytest.approx(12 / 64)


def test_smem_limited_with_dynamic_sm86() -> None:
    # 8000 static + 12000 dynamic + 1024 = 21024 -> round up to 128: 21120;
    # 100 KiB = 102400 // 21120 = 4 blocks; block 256 = 8 warps -> 32 of 48 warps.
    occ = theoretical_occupancy("sm_86", 256, 24, smem_bytes=8000, dynamic_smem_bytes=12000)
    assert occ.limits["smem"] == 4
    assert occ.limiter == "smem"
    assert occ.theoretical == pytest.approx(32 / 48)


def test_thread_limited_sm86() -> None:
    # 1024 threads = 32 warps; sm_86 holds 48 warps -> 48 // 32 = 1 block = 32 of 48 warps.
    # 16 regs: 512 per warp -> 32 warps per sub-partition -> 128 // 32 = 4 blocks (not binding).
    occ = theoretical_occupancy("sm_86", 1024, 16)
    assert occ.limits["threads"] == 1
    assert occ.limits["registers"] == 4
    assert occ.limiter == "threads"
    assert occ.theoretical == pytest.approx(32 / 48)


def test_block_count_limited_sm89() -> None:
    # 32 threads = 1 warp, 16 regs: threads allow 48 blocks but sm_89 caps at 24 blocks per SM
    # -> 24 warps of 48.
    occ = theoretical_occupancy("sm_89", 32, 16)
    assert occ.limits["blocks"] == 24
    assert occ.limiter == "blocks"
    assert occ.theoretical == pytest.approx(24 / 48)


def test_full_occupancy_is_thread_limited_sm100() -> None:
    # 256 threads, 32 regs: 1024 regs/warp -> 16 warps per sub-partition -> 64 per SM -> 8
    # blocks; threads allow 64 // 8 = 8 too: a tie at 100 %, named "threads".
    occ = theoretical_occupancy("sm_100", 256, 32)
    assert occ.blocks_per_sm == 8
    assert occ.theoretical == pytest.approx(1.0)
    assert occ.limiter == "threads"


def test_block_that_cannot_launch_has_zero_occupancy() -> None:
    # 1024 threads x 128 regs = 131072 registers > 65536 per block: nothing fits.
    occ = theoretical_occupancy("sm_90", 1024, 128)
    assert occ.blocks_per_sm == 0
    assert occ.theoretical == 0.0
    assert occ.limiter == "registers"


def test_unknown_arch_and_bad_block_are_rejected() -> None:
    with pytest.raises(ValueError, match="sm_75"):
        theoretical_occupancy("sm_75", 128, 32)
    with pytest.raises(ValueError, match="block_size=0"):
        theoretical_occupancy("sm_90", 0, 32)


def test_tables_cover_required_arches() -> None:
    assert {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100"} <= set(ARCH_LIMITS)
