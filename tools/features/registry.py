"""Every structural feature: stable name, kind, one-line description, family, default.

Names are a contract: reports, tests and the chat agent rely on them. Values are raw
measures (counts, floats, flags, categories); only the archive bins them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["count", "float", "bool", "category"]


@dataclass(frozen=True)
class FeatureSpec:
    """One feature's contract."""

    name: str
    kind: Kind
    description: str
    family: str
    #: False for size and meta measures (program size, language, parse health, pattern
    #: counts): they separate programs without describing how the kernel is organised, so
    #: they may be discovered but never span the coverage archive.
    structural: bool = True

    @property
    def default(self) -> float | int | bool | str | None:
        """Value when the program has none of the structure (None for undefined floats)."""
        return {"count": 0, "bool": False, "float": None, "category": "unknown"}[self.kind]


def _f(name: str, kind: Kind, description: str, *, structural: bool = True) -> FeatureSpec:
    return FeatureSpec(name, kind, description, name.split(".", 1)[0], structural)


#: Name prefixes of non-structural (size / meta) features, for names not in the registry
#: (mined ``pattern.<id>`` counts, code length columns, parse health). The registered
#: structural patterns (``pattern.global_access`` ...) say so themselves.
NON_STRUCTURAL_PREFIXES: tuple[str, ...] = ("program.", "code.", "parse.", "pattern.", "task.",
                                            "ast.nodes")


FEATURES: tuple[FeatureSpec, ...] = (
    _f("program.language", "category",
       "cuda, triton, cute, torch or unknown (CUDA features do not apply to non-CUDA ones)", structural=False),
    _f("program.embedded_cuda", "bool",
       "CUDA source found inside Python strings (load_inline style)", structural=False),
    _f("parse.encoding", "category",
       "encoding the source bytes were read with: utf-8 (or utf-8-sig), else the cp1252 / "
       "latin-1 fallback; text given as str is utf-8", structural=False),
    _f("parse.error_nodes", "count", "ERROR/MISSING nodes in the tree-sitter-cuda parse", structural=False),
    _f("parse.error_fraction", "float", "error nodes divided by all nodes", structural=False),
    _f("parse.truncated", "bool", "input longer than max_source_bytes was cut before parsing", structural=False),
    _f("parse.extract_error", "bool",
       "an internal error stopped part of the extraction (values partial)", structural=False),
    _f("ast.nodes", "count", "syntax-tree nodes (program size)", structural=False),
    _f("kernel.count", "count", "__global__ kernels defined (Triton/CuTe: decorated kernels)"),
    _f("kernel.has_custom_kernel", "bool", "the program defines at least one kernel of its own"),
    _f("kernel.device_functions", "count", "__device__ helper functions"),
    _f("kernel.templates", "count", "template declarations"),
    _f("kernel.launch_bounds", "count", "__launch_bounds__ annotations"),
    _f("loop.count", "count", "loops in device code"),
    _f("loop.max_depth", "count", "deepest loop nest in device code"),
    _f("loop.unroll_pragmas", "count", "#pragma unroll directives"),
    _f("loop.grid_stride", "count", "grid-stride loops (step involves gridDim)"),
    _f("branch.count", "count", "if/switch/?: in device code"),
    _f("branch.divergent", "count", "device branches whose condition depends on the thread index"),
    _f("branch.ternary", "count", "?: expressions in device code"),
    _f("launch.count", "count", "kernel launch sites (<<<...>>>)"),
    _f("launch.block_size", "float", "largest constant threads-per-block among launches"),
    _f("launch.distinct_block_sizes", "count", "distinct constant block sizes launched"),
    _f("launch.dynamic_smem", "bool", "a launch passes a dynamic shared-memory size"),
    _f("launch.with_stream", "bool", "a launch passes a stream"),
    _f("dataflow.index_vars", "count", "variables whose value depends on the thread index"),
    _f("dataflow.max_chain_length", "count", "longest def-use chain followed to resolve an index"),
    _f("dataflow.mean_chain_length", "float",
       "mean def-use chain length of thread-dependent variables"),
    _f("dataflow.loaded_values_reused", "count",
       "values loaded into a register and read at least twice"),
    _f("mem.global_accesses", "count", "global-memory accesses (loads + stores) in device code"),
    _f("mem.global_loads", "count", "global-memory loads"),
    _f("mem.global_stores", "count", "global-memory stores"),
    _f("mem.global_strided_loads", "count", "strided global loads"),
    _f("mem.global_strided_stores", "count", "strided global stores"),
    _f("mem.global_coalesced", "count", "global accesses with unit stride in threadIdx.x"),
    _f("mem.global_strided", "count",
       "global accesses with a constant >1 or symbolic stride in threadIdx.x"),
    _f("mem.global_broadcast", "count",
       "global accesses independent of threadIdx.x (warp-uniform)"),
    _f("mem.global_indirect", "count", "global accesses whose index reads memory (a[b[i]])"),
    _f("mem.global_unknown", "count", "global accesses whose index is not affine-reducible"),
    _f("mem.coalesced_fraction", "float", "coalesced / (coalesced + strided) global accesses"),
    _f("mem.vector_loads", "count",
       "accesses through a vector type (float4, half2, reinterpret_cast)"),
    _f("mem.restrict_params", "count", "__restrict__ pointer parameters of device functions"),
    _f("mem.const_params", "count", "const pointer parameters of device functions"),
    _f("mem.ldg", "count", "__ldg and cache-hinted load intrinsics"),
    _f("mem.constant_memory", "bool", "__constant__ variables declared"),
    _f("smem.arrays", "count", "__shared__ arrays declared"),
    _f("smem.static_bytes", "count", "bytes of static shared memory whose size is constant"),
    _f("smem.unresolved_sizes", "count", "static shared arrays whose size is not a constant"),
    _f("smem.dynamic", "bool", "extern __shared__ (dynamic shared memory) used"),
    _f("smem.padded", "bool", "a 2-D shared array padded against bank conflicts ([32][33])"),
    _f("smem.accesses", "count", "shared-memory accesses"),
    _f("smem.strided_accesses", "count",
       "shared accesses whose lanes are more than one element apart (row-major linear index)"),
    _f("smem.bank_conflicts", "count",
       "shared accesses whose lanes are an even or symbolic number of 4-byte words apart "
       "(two lanes share a bank; a padded stride of 33 does not)"),
    _f("smem.tiled", "bool", "global data staged in shared memory, a barrier, then shared reads"),
    _f("smem.reuse_in_loop", "bool",
       "staged shared data is read inside a loop deeper than the staging"),
    _f("sync.block_barriers", "count", "__syncthreads and block-level cooperative-group syncs"),
    _f("sync.barriers_in_loops", "count", "block barriers inside loops"),
    _f("sync.barriers_in_branches", "count", "block barriers under a branch"),
    _f("sync.barriers_divergent", "count", "block barriers under a thread-dependent branch"),
    _f("sync.warp_syncs", "count", "__syncwarp and tile syncs"),
    _f("warp.shuffles", "count", "warp shuffles (__shfl*_sync, tile.shfl*)"),
    _f("warp.shuffles_in_loops", "count", "warp shuffles inside loops"),
    _f("warp.shuffle_reduction", "bool", "shuffles in a loop or unrolled (>= 3): a warp reduction"),
    _f("warp.votes", "count", "warp votes (__ballot_sync, __any_sync, __all_sync, match)"),
    _f("warp.activemask", "count", "__activemask calls"),
    _f("atomics.global", "count", "atomic operations on global memory"),
    _f("atomics.shared", "count", "atomic operations on shared memory"),
    _f("reduce.shared_tree", "bool", "a halving/doubling loop combining values in shared memory"),
    _f("reduce.atomic", "bool", "atomics are used to combine results"),
    _f("par.coarsening_loops", "count",
       "small constant-trip loops around thread-dependent global accesses"),
    _f("cg.used", "bool", "cooperative groups used"),
    _f("cg.tiled_partitions", "count", "cooperative-groups tiled_partition calls"),
    _f("tc.wmma_calls", "count", "WMMA / mma_sync calls"),
    _f("tc.ptx_mma", "count", "inline-PTX mma / wgmma / ldmatrix instructions"),
    _f("tc.used", "bool", "tensor cores used (WMMA, mma intrinsics or inline PTX)"),
    _f("async.copies", "count", "asynchronous copies (cp.async, memcpy_async, pipeline)"),
    _f("math.fast_intrinsics", "count", "fast-math intrinsics (__expf, __fdividef, ...)"),
    _f("lib.calls", "count", "calls into libraries (cuBLAS, cuDNN, thrust, cub, torch/ATen)"),
    _f("lib.reference_library", "bool",
       "calls a reference library (torch/ATen, cuBLAS, cuDNN, CUTLASS) for the work"),
    _f("host.graphs", "count", "CUDA graph API calls / stream capture"),
    _f("host.streams", "count", "stream creation or cross-stream waits"),
    _f("host.device_syncs", "count", "cudaDeviceSynchronize / cudaStreamSynchronize calls"),
    _f("host.memcpy", "count", "cudaMemcpy* calls"),
    _f("host.events", "count", "cudaEvent* calls (timing in the program itself is suspicious)"),
    # -- optimizations experts name (tools/features/expert.py) --------------------------------
    _f("reg.outputs_per_thread", "count",
       "output elements one thread stores: global stores x vector lanes x constant trip "
       "counts of the loops around them (register tiling raises it)"),
    _f("reg.accumulators", "count",
       "elements of local (register) arrays accumulated inside loops (acc[i][j] += ...)"),
    _f("reg.tiled", "bool", "register tiling: a register-array accumulator of >= 2 elements"),
    _f("smem.reads_per_staged", "float",
       "shared-memory reads per element stored to shared memory (loop trips counted): the "
       "reuse a staged tile gets"),
    _f("pipeline.double_buffered", "bool",
       "software pipelining: a shared array with a 2..8 stage dimension indexed by a "
       "variable (ping-pong), or async copies with waits (cp.async, __pipeline_*, "
       "cuda::memcpy_async)"),
    _f("pipeline.stages", "count", "stages of the multi-buffered shared array (2 = ping-pong)"),
    _f("pipeline.async_copy", "bool",
       "asynchronous global-to-shared copies (cp.async, __pipeline_memcpy_async, "
       "cuda::memcpy_async)"),
    _f("warp.tiling", "bool",
       "warp-level tiling: a shared-memory read in a loop indexed through a warp id "
       "(thread index / 32)"),
    _f("mem.vector_width_global", "count",
       "widest global access in elements (float4 -> 4; 1 = scalar)"),
    _f("mem.vector_width_shared", "count", "widest shared-memory access in elements"),
    _f("intensity.flop_per_byte", "float",
       "static FLOP per global byte per thread (loop trips counted; unknown trips weigh 16)"),
    _f("fusion.kernel_stages", "count",
       "most computation stages in one kernel: reduction loops plus distinct elementwise "
       "math functions (a fused kernel has several)"),
    _f("fusion.launches_per_forward", "count",
       "kernel launch sites plus heavy library calls per program (one forward pass)"),
    _f("lib.delegates_heavy_op", "bool",
       "the heavy op (GEMM, convolution, attention) is delegated to a library "
       "(cuBLAS, cuDNN, torch/ATen)"),
    _f("sync.grid", "bool", "grid-wide synchronization (cooperative groups grid sync)"),
    # -- Triton (tools/features/triton_*.py; rules in docs/FEATURES.md, "Triton") ----------
    _f("triton.dots", "count", "tl.dot calls (tensor-core block matmuls) in Triton kernels"),
    _f("triton.dot_acc_fp32", "bool",
       "a tl.dot accumulates in float32 (its default, or out_dtype=tl.float32)"),
    _f("triton.reductions", "count",
       "block reductions and scans (tl.sum, tl.max, tl.min, tl.reduce, tl.cumsum, ...)"),
    _f("triton.block_pointers", "count",
       "block pointers and tensor descriptors (tl.make_block_ptr, tl.make_tensor_descriptor, "
       "descriptor parameters)"),
    _f("triton.block_elements", "count",
       "most elements one program handles in a block (constexprs at their largest value)"),
    _f("triton.num_warps", "count", "largest num_warps of a launch or autotune config"),
    _f("triton.num_stages", "count", "largest num_stages of a launch, config or tl.range"),
    _f("triton.autotune_configs", "count", "triton.Config entries of @triton.autotune"),
    _f("triton.grouped_ordering", "bool",
       "program ids remapped in groups (GROUP_SIZE_M swizzle or tl.swizzle2d) for L2 reuse"),
    # -- structural patterns (tools/features/structure.py; rules in docs/FEATURES.md) --------
    _f("pattern.global_access", "category",
       "coalesced / strided / broadcast / indirect / mixed / none: any indirect -> indirect; "
       "coalesced and strided -> mixed; else the one present; only unknown -> mixed"),
    _f("pattern.reuse", "category",
       "none / smem_staging / smem_tiling / register_tiling / smem_and_register: register "
       "tiling = reg.tiled; smem tiling = smem.tiled with >= 2 reads per staged element"),
    _f("pattern.sync", "category",
       "none / block / warp / block_and_warp / atomic_or_grid: global atomics or grid sync "
       "first, else block barriers and warp primitives"),
    _f("pattern.intensity", "category",
       "low / medium / high: intensity.flop_per_byte < 1, < 8, >= 8 FLOP per global byte"),
    _f("pattern.vector_width", "category",
       "1 / 2 / 4 / 8: widest global access in elements (mem.vector_width_global)"),
    _f("pattern.tensor_cores", "category", "no / yes: tensor cores used (tc.used)"),
    # -- named refinements (tools/features/techniques.py; rules in docs/FEATURES.md) -------
    _f("opt.refinements", "count",
       "named refinements beyond the patterns, of 11: warp shuffles, bank padding, work "
       "per thread, read-only path, constant memory, unrolling, launch bounds, fast math, "
       "pipelining, warp tiling, a single launch (tools/features/techniques.py)"),
)

BY_NAME: dict[str, FeatureSpec] = {f.name: f for f in FEATURES}
NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)


def describe(name: str) -> str:
    """One-line description of a feature (mined ``pattern.<id>`` features included)."""
    if name.startswith("pattern.") and name not in BY_NAME:
        return f"occurrences of mined subtree pattern {name.split('.', 1)[1]}"
    try:
        return BY_NAME[name].description
    except KeyError as exc:
        raise KeyError(f"unknown feature {name!r}") from exc


def is_structural(name: str) -> bool:
    """Whether feature ``name`` describes program structure (not size or meta data).

    Registered features say so themselves; others fall back to a name-prefix rule
    (:data:`NON_STRUCTURAL_PREFIXES`), so mined patterns and length columns count as meta.
    """
    spec = BY_NAME.get(name)
    if spec is not None:
        return spec.structural
    return not name.startswith(NON_STRUCTURAL_PREFIXES)


_DEFAULTS: dict[str, float | int | bool | str | None] = {f.name: f.default for f in FEATURES}


def defaults() -> dict[str, float | int | bool | str | None]:
    """Every registered feature at its default value (a fresh dict)."""
    return dict(_DEFAULTS)
