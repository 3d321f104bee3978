"""Predicted GPU time per kernel from MEASURED counters. MODELLED, not measured on a GPU.

Inputs, per kernel: the CPU emulator's counters (``tools/verify/profile.py``, extrapolated to
the model's size by ``profiles.extrapolate``), ptxas' registers and static shared memory for
the GPU's architecture, and a :class:`~structcover.tools.simulation.gpu_specs.GpuSpec`.
Never the static source features. Per task, the compulsory bytes and useful FLOPs
(``profiles.work_at``) stand in for operation counts while the profiler does not count
operations by class; where ``ops_<class>_<kind>`` counters are present (:func:`op_counters`)
they are used instead (``KernelTime.flops_source`` says which).

Per kernel (``L`` launches, ``B`` blocks, ``T`` threads; all counters summed over launches)::

    occupancy  = ptxas registers + shared bytes per block + threads per block through
                 tools/compiler/occupancy.py (the CUDA occupancy calculator's rules)
    warps/SM   = min(active warps per SM, B * ceil(T / B / 32) / L / SMs)  (a small grid
                 fills less; a block's partial warp is a whole warp)
    in_flight  = min(LOADS_IN_FLIGHT_PER_WARP, max(1, global load requests / (B * ceil(T / B
                 / 32))))  (a warp cannot have more loads in flight than it issues: one load
                 per thread is one in flight, whatever the cap)
    mem_hide   = min(1, warps/SM * in_flight * bytes per load request
                        / (DRAM B/s / SMs * DRAM_LATENCY))
                 (Little's law: bytes in flight per SM needed to cover the DRAM latency;
                  ILP is not visible in the counters, so the cap is an assumed figure;
                  bytes per request: what the lanes ask for, at most its sectors' bytes:
                  a request's extra sectors are traffic, they deliver no asked bytes)
    l2_hide    = the same with the request's sector bytes (the L2 term moves sectors)
    comp_hide  = min(1, warps/SM / (ISSUE_WARPS_PER_SCHEDULER * schedulers))
    sectors    = global load + store sectors;  sector_bytes = 32 * sectors
                 (every sector is charged to L2: the profiler's L1 misses,
                 ``global_load_l1_miss_sectors``, are a feature, not a term; docs/SIMULATION.md)
    dram_bytes = compulsory + max(0, sector_bytes - compulsory) * L2_MISS   (L2 reuse term:
                 traffic beyond every buffer once is re-reads, served by L2 but L2_MISS),
                 at most the sectors (and atomic requests' sectors) the kernel touches
    dram_s     = dram_bytes / DRAM B/s / mem_hide
    l2_s       = sector_bytes / (L2_OVER_DRAM * DRAM B/s) / l2_hide
    shared_s   = shared wavefronts / (SMs * clock) / comp_hide   (one wavefront per clock)
    compute_s  = FLOPs / peak(dtype) / comp_hide
    issue_s    = warp instructions / (SMs * schedulers * clock) / comp_hide, with warp
                 instructions = global + shared + atomic requests + branch evaluations +
                 warp collectives + FLOPs / 2 / 32 (FMA per lane) when ops are not counted
    barrier_s  = barriers / (SMs * resident blocks per SM) * BARRIER_S
    atomic_s   = global serialized atomic updates * GLOBAL_ATOMIC_S
                 + shared serialized updates * SHARED_ATOMIC_CLOCKS / (SMs * clock)
    time       = L * LAUNCH_S + max(dram_s, l2_s, shared_s, compute_s, issue_s)
                 + barrier_s + atomic_s

A program's time is the sum over its kernels, plus torch's own operators in a KernelBench
forward (fills, copies: :func:`torch_ops_time`), each a launch that moves its bytes at the
DRAM peak (torch's elementwise kernels are vectorized and unrolled, so they run near it).
The constants below are modelling assumptions, not datasheet figures; docs/SIMULATION.md
("Timing model") states their limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from structcover.tools.compiler.occupancy import theoretical_occupancy
from structcover.tools.simulation.gpu_specs import GpuSpec

#: Kernel launch overhead (back-to-back launches in one stream), seconds.
LAUNCH_S = 3e-6
#: DRAM latency Little's law covers, seconds (order of published microbenchmarks; assumed
#: the same on every GPU of the table).
DRAM_LATENCY_S = 500e-9
#: Fraction of re-read sector traffic (beyond every buffer once) that misses L2.
L2_MISS = 0.1
#: L2 bandwidth as a multiple of DRAM bandwidth (NVIDIA publishes no L2 bandwidth: assumed).
L2_OVER_DRAM = 2.5
#: Eligible warps per scheduler that hide dependent-issue latency.
ISSUE_WARPS_PER_SCHEDULER = 2
#: Independent global loads a warp has in flight (a loop body's loads issue before their
#: first use stalls; the counters do not show ILP, so one typical figure is assumed).
LOADS_IN_FLIGHT_PER_WARP = 2
#: Cost of one block-wide barrier release, seconds (the block's pipeline drains).
BARRIER_S = 40e-9
#: One serialized global atomic update at L2 (same address), seconds.
GLOBAL_ATOMIC_S = 1e-9
#: Clocks per serialized shared-memory atomic update.
SHARED_ATOMIC_CLOCKS = 2.0
#: Registers per thread assumed when ptxas gave none for a kernel (noted in the result).
DEFAULT_REGISTERS = 32

#: Op-class counters the profiler may report, ``ops_<class>_<kind>`` (per-thread operations):
#: class -> the peak-rate field of :class:`GpuSpec` it runs at.
OP_CLASSES = {"fp32": "fp32_flops", "fp64": "fp64_flops", "fp16": "fp16_flops",
              "bf16": "bf16_flops", "int": "int32_ops"}
#: kind -> (rate override or None, FLOPs per operation). A fused multiply-add is 2 FLOPs at
#: the class's FLOP rate; divides and special functions (sqrt, exp, rsqrt...) run on the
#: special-function units (16 per clock per SM); logic ops at the integer rate.
OP_KINDS: dict[str, tuple[str | None, float]] = {
    "add": (None, 1.0), "mul": (None, 1.0), "fma": (None, 2.0), "div": ("sfu_ops", 1.0),
    "special": ("sfu_ops", 1.0), "logic": ("int32_ops", 1.0)}
#: Double-precision divides and math functions have no special-function unit: the math
#: library computes them in software, as a sequence of DFMA/DADD/DMUL on the fp64 pipe (1/64
#: of the fp32 rate on an L40S or an RTX 4090, so a stray ``tanh``/``pow`` on a double in an
#: elementwise kernel makes it compute-bound). fp64 operations per call, from the SASS of
#: CUDA 13's math library for sm_89 (``nvcc -cubin -O3``, counted with cuobjdump; static
#: counts of each function's DFMA/DADD/DMUL): exp 17, sin 15, log 30, tanh 33, erf 41,
#: pow 86, sqrt 20 and a divide 22, these two with their rarely taken slow-path subroutines.
#: A call of any math function (the profiler's ``special``, sqrt included) is charged the
#: typical 30; a divide 10, an estimate of its fast path (a MUFU.RCP64H seed and Newton
#: steps), not a count.
FP64_SOFTWARE_OPS = {"div": 10.0, "special": 30.0}


def op_counters(counters: dict[str, float]) -> dict[str, tuple[str, float]]:
    """The ``ops_<class>_<kind>`` counters present -> (rate field, FLOPs per op); empty when
    the profile does not count operations (then the task's work stands in)."""
    out: dict[str, tuple[str, float]] = {}
    for name in counters:
        parts = name.split("_")
        if len(parts) == 3 and parts[0] == "ops" and parts[1] in OP_CLASSES \
                and parts[2] in OP_KINDS:
            rate, per_op = OP_KINDS[parts[2]]
            if parts[1] == "fp64" and parts[2] in FP64_SOFTWARE_OPS:
                # Each is a software sequence of fp64 operations, 2 FLOPs of the peak each.
                rate, per_op = None, 2.0 * FP64_SOFTWARE_OPS[parts[2]]
            out[name] = (rate or OP_CLASSES[parts[1]], per_op)
    return out


#: Peak-rate field by the task's output dtype (for FLOPs estimated from the task's work).
DTYPE_RATE = {"float64": "fp64_flops", "float16": "fp16_flops", "bfloat16": "bf16_flops"}


@dataclass(frozen=True)
class KernelInputs:
    """One kernel's inputs to the model (counters at the model's size)."""

    counters: dict[str, float]
    registers: int | None = None
    smem_bytes: int | None = None
    #: FLOPs attributed to this kernel from the task's work (ignored when op counters exist).
    flops: float = 0.0
    #: Compulsory bytes attributed to this kernel.
    compulsory_bytes: float = 0.0
    rate: str = "fp32_flops"


@dataclass
class KernelTime:
    """The model's terms for one kernel, in seconds."""

    seconds: float
    launch_s: float
    dram_s: float
    l2_s: float
    shared_s: float
    compute_s: float
    issue_s: float
    barrier_s: float
    atomic_s: float
    occupancy: float
    warps_per_sm: float
    mem_hide: float
    comp_hide: float
    bound: str
    flops_source: str
    notes: list[str] = field(default_factory=list)


def _c(counters: dict[str, float], key: str) -> float:
    return float(counters.get(key, 0.0) or 0.0)


def kernel_time(k: KernelInputs, gpu: GpuSpec) -> KernelTime:
    """Modelled time of one kernel on ``gpu`` (see the module docstring for every term)."""
    c, notes = k.counters, []
    launches = max(1.0, _c(c, "launches"))
    blocks = max(1.0, _c(c, "blocks"))
    threads = max(1.0, _c(c, "threads"))
    block = max(1, min(1024, round(threads / blocks)))
    regs = k.registers
    if regs is None:
        regs = DEFAULT_REGISTERS
        notes.append(f"registers unknown: {DEFAULT_REGISTERS} assumed")
    smem = int(k.smem_bytes if k.smem_bytes is not None else _c(c, "shared_static_bytes"))
    dyn = int(_c(c, "shared_dynamic_bytes"))
    occ = theoretical_occupancy(gpu.arch, block, regs, smem, dyn)
    if occ.blocks_per_sm == 0:
        notes.append(f"block of {block} threads cannot launch ({occ.limiter}); 1 block/SM")
    active = max(occ.active_warps, -(-block // 32))
    # Warps are counted per block: a block of 1 thread is a whole warp on the SM (with one
    # lane active), so 126 one-thread blocks are 126 warps, not 126 / 32.
    grid_warps = blocks * -(-block // 32) / launches / gpu.sms
    warps = max(min(float(active), grid_warps), 1.0 / 32.0)

    loads = _c(c, "global_load_requests")
    sector_bytes_loaded = 32.0 * _c(c, "global_load_sectors")
    # Bytes a request asks for: the sectors an uncoalesced request also drags in are traffic,
    # not bytes that cover latency (older profiles lack the counter: the sectors stand in).
    asked = _c(c, "global_load_bytes") or sector_bytes_loaded
    per_req = min(asked, sector_bytes_loaded) / loads if loads else 128.0
    sectors_per_req = sector_bytes_loaded / loads if loads else 128.0
    need = gpu.dram_bytes_per_s / gpu.sms * DRAM_LATENCY_S
    # Loads a warp issues in all: its in-flight loads can be no more (a thread that loads one
    # element has one load in flight, so a vector load's 4x bytes per request show).
    loads_per_warp = loads / (blocks * -(-block // 32))
    in_flight = min(float(LOADS_IN_FLIGHT_PER_WARP), max(1.0, loads_per_warp))
    mem_hide = min(1.0, warps * in_flight * per_req / need) if loads else 1.0
    # The L2 term moves sectors, and every sector of a request is in flight at once.
    l2_hide = min(1.0, warps * in_flight * sectors_per_req / need) if loads else 1.0
    comp_hide = min(1.0, warps / (ISSUE_WARPS_PER_SCHEDULER * gpu.warp_schedulers_per_sm))

    sector_bytes = 32.0 * (_c(c, "global_load_sectors") + _c(c, "global_store_sectors"))
    dram_bytes = k.compulsory_bytes + max(0.0, sector_bytes - k.compulsory_bytes) * L2_MISS
    # A kernel's DRAM traffic is what misses L2 of what it requests: never more than the
    # sectors it touches (atomics included), whatever share of the compulsory bytes it was
    # given (torch may write the outputs, as in ``x / norm`` after a reduction kernel).
    touched = sector_bytes + 32.0 * _c(c, "global_atomic_requests")
    dram_bytes = min(dram_bytes, touched) if touched > 0 else dram_bytes
    dram_s = dram_bytes / gpu.dram_bytes_per_s / mem_hide
    l2_s = sector_bytes / (L2_OVER_DRAM * gpu.dram_bytes_per_s) / l2_hide
    clock_sm = gpu.sms * gpu.boost_clock_hz
    shared_s = (_c(c, "shared_load_wavefronts") + _c(c, "shared_store_wavefronts")) \
        / clock_sm / comp_hide

    ops = op_counters(c)
    counted = {name: _c(c, name) for name in ops}
    if counted:
        compute_s = sum(n * ops[name][1] / getattr(gpu, ops[name][0])
                        for name, n in counted.items())
        op_instr = sum(counted.values()) / 32.0
        source = "counted"
    else:
        compute_s = k.flops / getattr(gpu, k.rate)
        op_instr = k.flops / 2.0 / 32.0
        source = "task-work estimate"
    compute_s /= comp_hide
    instr = (loads + _c(c, "global_store_requests") + _c(c, "shared_load_requests")
             + _c(c, "shared_store_requests") + _c(c, "global_atomic_requests")
             + _c(c, "shared_atomic_requests") + _c(c, "branch_requests")
             + _c(c, "warp_collectives") + op_instr)
    issue_s = instr / (clock_sm * gpu.warp_schedulers_per_sm) / comp_hide

    resident = max(1.0, float(occ.blocks_per_sm)) * gpu.sms
    barrier_s = _c(c, "barriers") / resident * BARRIER_S
    atomic_s = (_c(c, "global_atomic_serialized") * GLOBAL_ATOMIC_S
                + _c(c, "shared_atomic_serialized") * SHARED_ATOMIC_CLOCKS / clock_sm)
    terms = {"dram": dram_s, "l2": l2_s, "shared": shared_s, "compute": compute_s,
             "issue": issue_s}
    bound = max(terms, key=lambda name: terms[name])
    launch_s = launches * LAUNCH_S
    return KernelTime(seconds=launch_s + terms[bound] + barrier_s + atomic_s,
                      launch_s=launch_s, dram_s=dram_s, l2_s=l2_s, shared_s=shared_s,
                      compute_s=compute_s, issue_s=issue_s, barrier_s=barrier_s,
                      atomic_s=atomic_s, occupancy=occ.theoretical, warps_per_sm=warps,
                      mem_hide=mem_hide, comp_hide=comp_hide, bound=bound,
                      flops_source=source, notes=notes)


def torch_ops_time(ops: dict[str, dict[str, float]], gpu: GpuSpec) -> float:
    """Modelled seconds of torch's own operators (``op -> {"launches", "read_bytes",
    "write_bytes"}``, ``tools/kernelbench/torch_traffic.py``): per operator, its launches'
    overhead plus its bytes at the DRAM peak. A zero fill of the output before a kernel
    overwrites it is one more pass over the output, which on a memory-bound op is a third
    more traffic."""
    seconds = 0.0
    for row in ops.values():
        moved = float(row.get("read_bytes", 0.0)) + float(row.get("write_bytes", 0.0))
        seconds += float(row.get("launches", 0.0)) * LAUNCH_S + moved / gpu.dram_bytes_per_s
    return seconds
