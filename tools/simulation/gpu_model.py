"""An analytical GPU time model for the rollout simulator. SIMULATED, not measured.

The model is a roofline with structural corrections, computed from a program's raw features
and its task's buffer sizes. Every constant is stated here so a reader can check a number:

* Hardware (:class:`GpuSpec`, an H100-SXM-like part): HBM bandwidth 3.35 TB/s, fp32 peak
  67 TFLOP/s, 132 SMs, 2048 threads and 228 KiB shared memory per SM, kernel launch 3 µs,
  barrier 40 ns per block-wide ``__syncthreads`` round, global atomic 2 ns (serialized).
* Work: minimum bytes = every buffer read or written once; ``flops = 2 · out_elems · inner``
  where ``inner`` is the product of sizes that appear in an input's shape but not in the
  output's (K for a GEMM, N for a reduction, 1 for elementwise ops).
* Sizes are scaled up so the largest buffer has ``target_elements`` elements (the corpus uses
  tiny test sizes, where launch overhead would hide every structural difference).
* Traffic: with ``inner > 1`` a kernel re-reads inputs ``inner / reuse`` times, ``reuse`` = 1
  (naive, 90 % served by L2: factor 0.1), the tile width with shared-memory tiling (16 or 32
  from ``smem.static_bytes``), ×2 with register coarsening.
* Coalescing: a coalesced access moves 4 useful bytes per 4, a strided or indirect one 4 per
  32 (one 32-byte sector per element): efficiency ``cf + (1 − cf)/8`` with ``cf`` =
  ``mem.coalesced_fraction``. Vector loads (float4) add 10 % to achieved bandwidth.
* Occupancy: resident blocks per SM = min(32, 2048 / block, 228 KiB / smem per block);
  achieved bandwidth and compute scale with min(1, occupancy / 0.5).
* Compute efficiency: 0.25 without data reuse in shared memory or registers (loads stall the
  FMAs), 0.6 with tiling; divergent branches cost 3 % each (capped at 30 %).
* Barriers: ``sync.barriers_in_loops`` run once per tile step (``inner / tile``) in a tiled
  kernel, else once per level of a tree over the block (log2 block); the rest once; each
  costs the barrier time per wave of resident blocks.
* Atomics (serialized): one per element without pre-reduction, one per 32 elements after a
  warp shuffle reduction, one per block after a shared-memory tree; a grid-stride or coarsened
  kernel
  issues them per resident thread (132 · 2048) rather than per element.

Time = launch overhead · kernels + max(memory time, compute time) + barrier + atomic time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from structcover.schema import TaskSpec, eval_size_expr

_DTYPE_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int8": 1,
                "uint8": 1, "int32": 4, "uint32": 4, "int64": 8}


@dataclass(frozen=True)
class GpuSpec:
    """The modelled GPU (H100-SXM-like)."""

    bandwidth_bps: float = 3.35e12
    fp32_flops: float = 6.7e13
    sms: int = 132
    threads_per_sm: int = 2048
    smem_per_sm: int = 228 * 1024
    launch_s: float = 3e-6
    barrier_s: float = 40e-9
    atomic_s: float = 2e-9


@dataclass(frozen=True)
class Workload:
    """A task's work at model scale."""

    bytes_min: float
    flops: float
    out_elems: float
    inner: float


def workload(spec: TaskSpec, *, target_elements: float = 2 ** 24) -> Workload:
    """Bytes and flops of ``spec``, sizes scaled so the largest buffer has ``target_elements``."""
    shapes = {t.name: spec.shape_of(t.name) for t in spec.tensors}
    largest = max((math.prod(s), len(s)) for s in shapes.values())
    k = (target_elements / max(largest[0], 1)) ** (1 / max(largest[1], 1))
    sizes = {n: max(1, round(v * k)) for n, v in spec.sizes.items()}
    total, out_elems, out_syms, in_syms = 0.0, 1.0, set(), set()
    for t in spec.tensors:
        elems = math.prod(eval_size_expr(e, sizes) for e in t.shape)
        total += elems * _DTYPE_BYTES.get(t.dtype, 4)
        syms = {str(e) for e in t.shape}
        if t.role != "input":
            out_elems = max(out_elems, elems)
            out_syms |= syms
        else:
            in_syms |= syms
    inner = math.prod(sizes.get(s, 1) for s in in_syms - out_syms
                      if s in sizes) if in_syms - out_syms else 1
    if out_elems <= 1:  # a scalar output (reduction): all input elements flow into it
        inner = max(inner, 1)
    return Workload(bytes_min=total, flops=2.0 * out_elems * inner, out_elems=out_elems,
                    inner=float(inner))


def _f(values: dict[str, Any], key: str, default: float = 0.0) -> float:
    v = values.get(key)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return default
    return float(v)


def predict_time_s(values: dict[str, Any], work: Workload, gpu: GpuSpec = GpuSpec()) -> float:
    """Modelled run time in seconds of a program with raw features ``values`` on ``work``."""
    block = _f(values, "launch.block_size", 256.0) or 256.0
    smem = _f(values, "smem.static_bytes")
    tiled = bool(values.get("smem.tiled"))
    coarse = _f(values, "par.coarsening_loops") > 0
    blocks_per_sm = min(32.0, gpu.threads_per_sm // max(block, 32),
                        gpu.smem_per_sm // smem if smem > 0 else 32.0)
    occupancy = max(blocks_per_sm, 1.0) * block / gpu.threads_per_sm
    occ_eff = min(1.0, occupancy / 0.5)

    tile = (32.0 if smem >= 8192 else 16.0) if tiled else 1.0
    reuse = tile * (2.0 if coarse else 1.0)
    reload = (0.0 if work.inner <= 1 or work.out_elems <= 1
              else work.inner / reuse * (0.1 if reuse == 1 else 1.0))
    traffic = work.bytes_min * (1.0 + reload * 0.5)
    cf = _f(values, "mem.coalesced_fraction", 1.0)
    coalesce_eff = cf + (1.0 - cf) / 8.0
    vec = 1.1 if _f(values, "mem.vector_loads") > 0 else 1.0
    mem_s = traffic / (gpu.bandwidth_bps * coalesce_eff * vec * occ_eff)

    diverge = 1.0 + min(0.3, 0.03 * _f(values, "branch.divergent"))
    comp_eff = (0.6 if reuse > 1 else 0.25) * occ_eff / diverge
    comp_s = work.flops / (gpu.fp32_flops * comp_eff)

    # Threads cover the output, or the input when the output is a scalar (a reduction).
    elems = work.out_elems if work.out_elems > 1 else work.inner
    waves = max(1.0, elems / block / (gpu.sms * max(blocks_per_sm, 1.0)))
    steps = (work.inner / tile if tiled and work.inner > 1 and work.out_elems > 1
             else math.log2(max(block, 2)))  # tile steps, else a tree over the block
    in_loops = _f(values, "sync.barriers_in_loops")
    barrier_s = gpu.barrier_s * waves * (in_loops * steps + max(
        0.0, _f(values, "sync.block_barriers") - in_loops))
    atomic_s = 0.0
    if values.get("reduce.atomic") or _f(values, "atomics.global") > 0:
        per = (block if values.get("reduce.shared_tree") else
               32.0 if values.get("warp.shuffle_reduction") else 1.0)
        # A grid-stride or coarsened kernel sums many elements per thread before its atomic.
        threads = (min(elems, gpu.sms * gpu.threads_per_sm)
                   if _f(values, "loop.grid_stride") > 0 or coarse else elems)
        atomic_s = gpu.atomic_s * threads / per
    kernels = max(1.0, _f(values, "launch.count", 1.0))
    return gpu.launch_s * kernels + max(mem_s, comp_s) + barrier_s + atomic_s
