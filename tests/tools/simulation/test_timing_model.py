"""Timing model: hand-derived times on tiny synthetic counter sets, and monotonicity."""

from __future__ import annotations

import pytest

from structcover.tools.simulation.gpu_specs import GPUS, gpu_spec
from structcover.tools.simulation.timing_model import KernelInputs, kernel_time

H100 = gpu_spec("h100-sxm")
N = 2 ** 24  # elements


def _stream(load_sectors_per_request: int = 4, **extra: float) -> dict[str, float]:
    """An elementwise y = f(x) over N fp32 with 256-thread blocks: N/32 warp requests each
    way; a coalesced warp request touches 32 lanes x 4 B = 128 B = 4 sectors. The lanes ask
    for 4 B each whatever the sectors (``global_load_bytes``)."""
    return {"launches": 1, "blocks": N / 256, "threads": N, "global_load_requests": N / 32,
            "global_load_sectors": load_sectors_per_request * N / 32,
            "global_load_bytes": 4 * N,
            "global_store_requests": N / 32, "global_store_sectors": 4 * N / 32, **extra}


def test_coalesced_stream_is_dram_bound_at_full_bandwidth():
    t = kernel_time(KernelInputs(_stream(), registers=16, compulsory_bytes=2 * 4 * N), H100)
    # 256 threads = 8 warps/block; 16 regs never bind; 2048 threads/SM -> 8 blocks = 64 warps.
    assert t.occupancy == 1.0 and t.warps_per_sm == 64
    # Little's law: each thread loads one element, so a warp has 1 load in flight (not the
    # cap of 2): 64 warps x 1 x 128 B = 8192 B per SM, against the
    # 3.35e12 / 132 x 500e-9 = 12689.4 B needed -> mem_hide = 0.6456.
    hide = 64 * 128 / (3.35e12 / 132 * 500e-9)
    assert t.mem_hide == pytest.approx(hide, rel=1e-9)
    # sectors x 32 B = 2 x 2^24 x 4 B = 2^27 B = the compulsory bytes: no re-reads.
    assert t.dram_s == pytest.approx(2 ** 27 / 3.35e12 / hide, rel=1e-9)  # 62.06 us
    assert t.l2_s == pytest.approx(2 ** 27 / (2.5 * 3.35e12) / hide, rel=1e-9)  # 24.8 us
    # 2^20 warp instructions / (132 SMs x 4 schedulers x 1.98e9) = 1.0 us
    assert t.issue_s == pytest.approx(2 ** 20 / (132 * 4 * 1.98e9), rel=1e-9)
    assert t.bound == "dram"
    assert t.seconds == pytest.approx(3e-6 + 2 ** 27 / 3.35e12 / hide, rel=1e-9)  # 65.06 us


def test_float4_loads_cover_the_latency_a_float_load_cannot():
    # The same stream with one float4 per thread: N/128 warp requests of 32 lanes x 16 B =
    # 512 B = 16 sectors. 64 warps x 1 x 512 B = 32768 B in flight >= 12689 B: mem_hide 1.
    c = _stream(blocks=N / 1024, threads=N / 4, global_load_requests=N / 128,
                global_load_sectors=N / 8, global_store_requests=N / 128,
                global_store_sectors=N / 8)
    t = kernel_time(KernelInputs(c, registers=16, compulsory_bytes=2 * 4 * N), H100)
    assert t.mem_hide == 1.0 and t.bound == "dram"
    assert t.seconds == pytest.approx(3e-6 + 2 ** 27 / 3.35e12, rel=1e-9)  # 43.06 us
    scalar = kernel_time(KernelInputs(_stream(), registers=16, compulsory_bytes=2 * 4 * N), H100)
    assert t.seconds < scalar.seconds


def test_two_loads_per_thread_are_two_in_flight():
    # c = a + b: two independent loads per thread, 2N/32 requests over N/32 warps: the cap
    # of 2 in flight per warp, 64 x 2 x 128 B = 16384 B >= 12689 B -> mem_hide 1.
    c = _stream(global_load_requests=2 * N / 32, global_load_sectors=8 * N / 32,
                global_load_bytes=8 * N)
    t = kernel_time(KernelInputs(c, registers=16, compulsory_bytes=3 * 4 * N), H100)
    assert t.mem_hide == 1.0


def test_uncoalesced_loads_pay_sectors_at_l2_and_latency_at_dram():
    t = kernel_time(KernelInputs(_stream(load_sectors_per_request=32), registers=16,
                                 compulsory_bytes=2 * 4 * N), H100)
    # sector bytes = 32 B x (32 + 4) x N/32 = 36 x 2^24 = 603,979,776 B
    sector_bytes = 36 * 2 ** 24
    # DRAM's cover: the 128 B the lanes ask for per request, not the 1024 B of sectors (the
    # extra sectors deliver no asked bytes): mem_hide 0.6456 as for the coalesced stream.
    hide = 64 * 128 / (3.35e12 / 132 * 500e-9)
    assert t.mem_hide == pytest.approx(hide)
    # DRAM: compulsory 2^27 + 10 % of the excess re-reads, over that cover: 83.8 us
    dram_s = (2 ** 27 + 0.1 * (sector_bytes - 2 ** 27)) / 3.35e12 / hide
    assert t.dram_s == pytest.approx(dram_s)
    # L2 moves sectors, all 32 of a request in flight at once: 64 x 1024 B >= 12689 B, so it
    # is covered: 603,979,776 B at 2.5 x 3.35e12 B/s = 72.1 us, under DRAM's 83.8 us.
    assert t.l2_s == pytest.approx(sector_bytes / 8.375e12) and t.bound == "dram"
    assert t.seconds == pytest.approx(3e-6 + dram_s)
    coalesced = kernel_time(KernelInputs(_stream(), registers=16, compulsory_bytes=2 * 4 * N),
                            H100)
    assert t.seconds > coalesced.seconds


def test_small_grid_is_latency_bound():
    # A grid-stride kernel with 132 blocks of 256: 8 warps per SM.
    c = _stream(blocks=132, threads=132 * 256)
    t = kernel_time(KernelInputs(c, registers=16, compulsory_bytes=2 * 4 * N), H100)
    assert t.warps_per_sm == 8
    # mem_hide = 8 x 2 x 128 / (3.35e12 / 132 x 500e-9) = 2048 / 12689.4 = 0.1614
    hide = 8 * 2 * 128 / (3.35e12 / 132 * 500e-9)
    assert t.mem_hide == pytest.approx(hide)
    assert t.seconds == pytest.approx(3e-6 + 2 ** 27 / 3.35e12 / hide)  # 251 us


def test_one_thread_blocks_are_a_warp_each():
    # 126 blocks of one thread (a scan with one thread per row): each block is a whole warp
    # on its SM, one lane active, so 126 warps over 132 SMs, not 126 / 32 = 3.9.
    c = _stream(blocks=126, threads=126)
    t = kernel_time(KernelInputs(c, registers=16, compulsory_bytes=2 * 4 * N), H100)
    assert t.warps_per_sm == pytest.approx(126 / 132)
    # Blocks of 40 threads are two warps each (the second with 8 lanes).
    t40 = kernel_time(KernelInputs(_stream(blocks=66, threads=66 * 40), registers=16,
                                   compulsory_bytes=2 * 4 * N), H100)
    assert t40.warps_per_sm == pytest.approx(66 * 2 / 132)


def test_atomics_barriers_and_launches_add_serial_time():
    base = kernel_time(KernelInputs(_stream(), registers=16, compulsory_bytes=2 ** 27), H100)
    more = kernel_time(KernelInputs(_stream(global_atomic_serialized=1000, launches=2,
                                            barriers=132 * 8 * 10),
                                    registers=16, compulsory_bytes=2 ** 27), H100)
    # 1000 serialized updates x 1 ns; barriers: 10 per resident block (8 blocks x 132 SMs)
    # x 40 ns; one more launch: 3 us. Two launches also halve the warps per launch, which
    # still leaves 64 resident warps per SM here.
    assert more.atomic_s == pytest.approx(1e-6) and more.barrier_s == pytest.approx(400e-9)
    assert more.seconds - base.seconds == pytest.approx(1e-6 + 400e-9 + 3e-6)


def test_shared_bank_conflicts_are_slower():
    phases = 2 ** 22
    clean = _stream(shared_load_requests=phases, shared_load_wavefronts=phases)
    conflicted = _stream(shared_load_requests=phases, shared_load_wavefronts=32 * phases)
    a = kernel_time(KernelInputs(clean, registers=16, compulsory_bytes=2 ** 27), H100)
    b = kernel_time(KernelInputs(conflicted, registers=16, compulsory_bytes=2 ** 27), H100)
    # 32 x 2^22 wavefronts at one per clock per SM: 2^27 / (132 x 1.98e9) = 513.5 us
    assert b.shared_s == pytest.approx(32 * phases / (132 * 1.98e9))
    assert b.bound == "shared" and b.seconds > a.seconds


@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_more_sectors_never_faster(gpu):
    spec = gpu_spec(gpu)
    times = [kernel_time(KernelInputs(_stream(load_sectors_per_request=s), registers=32,
                                      compulsory_bytes=2 ** 27), spec).seconds
             for s in (4, 8, 16, 32)]
    assert times == sorted(times) and times[-1] > times[0]


@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_higher_occupancy_is_not_slower(gpu):
    spec = gpu_spec(gpu)
    c = _stream(blocks=spec.sms * 8, threads=spec.sms * 8 * 256)
    # registers 255 -> 8160 per warp, rounded to 8192: 2 warps per sub-partition, 8 per SM
    times = [kernel_time(KernelInputs(c, registers=r, compulsory_bytes=2 ** 27), spec)
             for r in (255, 128, 64, 32)]
    occ = [t.occupancy for t in times]
    assert occ == sorted(occ) and occ[-1] > occ[0]
    secs = [t.seconds for t in times]
    assert all(later <= earlier for earlier, later in zip(secs, secs[1:], strict=False))
    assert secs[-1] < secs[0]


def test_op_counters_replace_the_task_work_estimate():
    c = _stream(ops_fp32_fma=N * 1000, ops_fp32_special=N, ops_int_bogus=5)
    t = kernel_time(KernelInputs(c, registers=16, compulsory_bytes=2 ** 27, flops=1.0), H100)
    # 2^24 x 1000 FMAs x 2 FLOPs / 66.9e12 = 501.6 us, plus 2^24 special functions at
    # 16 per clock per SM: 2^24 / (16 x 132 x 1.98e9) = 4.0 us; an unknown kind is ignored
    assert t.flops_source == "counted"
    assert t.compute_s == pytest.approx(N * 1000 * 2 / 66.9e12 + N / (16 * 132 * 1.98e9))
    est = kernel_time(KernelInputs(_stream(), registers=16, compulsory_bytes=2 ** 27,
                                   flops=2.0 * N * 1000), H100)
    assert est.flops_source == "task-work estimate"
    assert est.compute_s == pytest.approx(N * 1000 * 2 / 66.9e12)


def test_double_math_functions_run_on_the_fp64_pipe():
    l40s = gpu_spec("l40s")
    c = _stream(ops_fp64_special=3 * N, ops_fp64_div=N)
    t = kernel_time(KernelInputs(c, registers=16, compulsory_bytes=2 ** 27), l40s)
    # No special-function unit for doubles: 3 math calls x 30 fp64 operations and a divide's
    # 10, each 2 FLOPs at the L40S's 1.431 TFLOP/s fp64 peak = 2^24 x 200 / 1.431e12 = 2.34 ms,
    # where the same calls in fp32 take 2^24 x 4 / (16 x 142 x 2.52e9) = 11.7 us on the SFUs.
    assert t.compute_s == pytest.approx(N * (3 * 30 + 10) * 2 / 1.431e12)
    assert t.bound == "compute"
    f32 = kernel_time(KernelInputs(_stream(ops_fp32_special=3 * N, ops_fp32_div=N),
                                   registers=16, compulsory_bytes=2 ** 27), l40s)
    assert f32.compute_s == pytest.approx(4 * N / (16 * 142 * 2.52e9))
    assert f32.bound != "compute"


def test_dram_traffic_never_exceeds_the_sectors_a_kernel_touches():
    # A reduction kernel that only reads x (2^24 floats = 2^26 B) while torch writes the
    # output: given the compulsory bytes of input and output (2^27 B), its DRAM traffic is
    # still only what it requests, 2^26 B.
    c = _stream()
    c["global_store_requests"] = c["global_store_sectors"] = 0
    t = kernel_time(KernelInputs(c, registers=16, compulsory_bytes=2 ** 27), H100)
    assert t.dram_s * t.mem_hide == pytest.approx(2 ** 26 / H100.dram_bytes_per_s)
    # Atomic updates touch sectors too: a histogram's output written only by atomics
    # keeps its bytes.
    c2 = {**c, "global_atomic_requests": 2 ** 20}
    t2 = kernel_time(KernelInputs(c2, registers=16, compulsory_bytes=2 ** 27), H100)
    assert t2.dram_s * t2.mem_hide == pytest.approx((2 ** 26 + 32 * 2 ** 20)
                                                    / H100.dram_bytes_per_s)


def test_unknown_registers_are_assumed_and_said():
    t = kernel_time(KernelInputs(_stream(), registers=None, compulsory_bytes=2 ** 27), H100)
    assert any("registers unknown" in n for n in t.notes)


def test_spec_table_figures_and_derivations():
    for spec in GPUS.values():
        # FP32 peak = 2 FLOPs x FP32 lanes per SM (64 on sm_80, 128 otherwise) x SMs x clock,
        # within 1 % of the datasheet figure for every GPU of the table.
        lanes = 64 if spec.arch == "sm_80" else 128
        assert spec.fp32_flops == pytest.approx(2 * lanes * spec.sms * spec.boost_clock_hz,
                                                rel=0.01)
        assert spec.shared_bytes_per_s == 32 * 4 * spec.sms * spec.boost_clock_hz
        assert spec.status_of("shared_bytes_per_s") == "derived"
        assert spec.limits.max_warps_per_sm in (48, 64)
    with pytest.raises(ValueError, match="known"):
        gpu_spec("v100")
