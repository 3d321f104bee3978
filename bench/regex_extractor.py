"""A regex feature extractor: the baseline the tree-sitter extractor is timed against (issue 28).

What a competent engineer would write without a parser: the program is read as text, comments
are stripped once (one ``re.sub`` that keeps string literals), a KernelBench-style Python file
has its CUDA taken from its triple-quoted strings, and then each feature is one compiled regex
(``findall`` / ``search``) over the comment-stripped text, one pass per feature. Brace-nested
measures (loop depth) and anything needing def-use chains (coalescing, strides, index
variables, divergence, tiling, trip counts) are not expressible as one regex and are left out.

Features covered (same names as ``structcover.tools.features.registry``; values are the
regex approximations, not guaranteed equal to the parser's):

* ``program.language``, ``program.embedded_cuda``
* ``kernel.count``, ``kernel.has_custom_kernel``, ``kernel.device_functions``,
  ``kernel.templates``, ``kernel.launch_bounds``
* ``loop.count``, ``loop.unroll_pragmas``, ``loop.grid_stride``
* ``branch.count``, ``branch.ternary``
* ``launch.count``, ``launch.block_size``, ``launch.distinct_block_sizes``,
  ``launch.dynamic_smem``, ``launch.with_stream``
* ``mem.global_accesses`` (subscripts), ``mem.vector_loads``, ``mem.restrict_params``,
  ``mem.const_params``, ``mem.ldg``, ``mem.constant_memory``
* ``smem.arrays``, ``smem.static_bytes`` (literal sizes), ``smem.unresolved_sizes``,
  ``smem.dynamic``, ``smem.padded``
* ``sync.block_barriers``, ``sync.warp_syncs``, ``sync.grid``
* ``warp.shuffles``, ``warp.votes``, ``warp.activemask``
* ``atomics.global``, ``atomics.shared`` (an atomic on ``&name`` of a ``__shared__`` array
  counts as shared), ``reduce.atomic``
* ``cg.used``, ``cg.tiled_partitions``, ``tc.wmma_calls``, ``tc.ptx_mma``, ``tc.used``,
  ``async.copies``, ``pipeline.async_copy``, ``math.fast_intrinsics``
* ``lib.calls``, ``lib.reference_library``, ``lib.delegates_heavy_op``,
  ``fusion.launches_per_forward``
* ``host.graphs``, ``host.streams``, ``host.device_syncs``, ``host.memcpy``, ``host.events``
* Triton (Python files): ``triton.dots``, ``triton.reductions``, ``triton.block_pointers``,
  ``triton.num_warps``, ``triton.num_stages``, ``triton.autotune_configs``,
  ``triton.grouped_ordering``

That is 58 of the 115 registered features; the other 57 need the syntax tree or the
data-flow resolver.
"""

from __future__ import annotations

import re
from typing import Any

_FLAGS = re.M

#: Comments out, string literals kept (a ``//`` inside a string is not a comment).
_COMMENTS = re.compile(r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|//[^\n]*|/\*.*?\*/', re.S)
_TRIPLE = re.compile(r'(?:[rRbBuU]{0,2})("""|\'\'\')(.*?)\1', re.S)
_PY_COMMENTS = re.compile(r"^\s*#[^\n]*", re.M)

_LANG = {
    "triton": re.compile(r"@triton\.(?:jit|autotune)|^\s*import\s+triton|^\s*from\s+triton\b",
                         _FLAGS),
    "cute": re.compile(r"@cute\.(?:kernel|jit)|cutlass\.cute|^\s*import\s+cutlass", _FLAGS),
    "torch": re.compile(r"^\s*import\s+torch|^\s*from\s+torch\b", _FLAGS),
    "cuda": re.compile(r"__global__|<<<|__device__|#\s*include\s*<cuda|threadIdx|cudaMalloc"),
}

#: Count features: name -> regex counted with ``findall`` over the CUDA text.
_COUNTS: dict[str, re.Pattern[str]] = {
    "kernel.count": re.compile(r"__global__\s+(?:[\w:<>,\s*&]+?\s)?\w+\s*\("),
    "kernel.device_functions": re.compile(
        r"__device__\s+(?:__forceinline__\s+|inline\s+|static\s+)*[\w:<>,\s*&]+?\s\**\w+\s*\("),
    "kernel.templates": re.compile(r"\btemplate\s*<"),
    "kernel.launch_bounds": re.compile(r"__launch_bounds__\s*\("),
    "loop.count": re.compile(r"\b(?:for|while)\s*\(|\bdo\s*\{"),
    "loop.unroll_pragmas": re.compile(r"#\s*pragma\s+unroll\b"),
    "loop.grid_stride": re.compile(r"\bfor\s*\([^;]*;[^;]*;[^)]*gridDim"),
    "branch.count": re.compile(r"\bif\s*\(|\bswitch\s*\(|\?[^:;?]*:"),
    "branch.ternary": re.compile(r"\?[^:;?]*:"),
    "launch.count": re.compile(r"<<<"),
    "mem.global_accesses": re.compile(r"\b\w+\s*\[[^\[\]]+\]"),
    "mem.vector_loads": re.compile(r"\b(?:float|int|half|uint|double|__half|__nv_bfloat16|"
                                   r"bfloat16)[248]\b|reinterpret_cast\s*<"),
    "mem.restrict_params": re.compile(r"\*\s*(?:const\s+)?__restrict__"),
    "mem.const_params": re.compile(r"[(,]\s*const\s+[\w:]+\s*\*"),
    "mem.ldg": re.compile(r"\b__ld(?:g|cg|ca|cs|lu|cv)\s*\("),
    "smem.arrays": re.compile(r"__shared__[^;]*\["),
    "smem.unresolved_sizes": re.compile(r"(?<!extern )__shared__[^;\[]*\[\s*[A-Za-z_]"),
    "sync.block_barriers": re.compile(r"\b__syncthreads\w*\s*\(|\bblock\.sync\s*\(|"
                                      r"\bcg::sync\s*\(|__barrier_sync\s*\("),
    "sync.warp_syncs": re.compile(r"\b__syncwarp\s*\(|\b(?:tile|warp)\w*\.sync\s*\("),
    "warp.shuffles": re.compile(r"\b__shfl\w*_sync\s*\(|\.shfl\w*\s*\("),
    "warp.votes": re.compile(r"\b__(?:ballot|any|all|match_any|match_all)_sync\s*\("),
    "warp.activemask": re.compile(r"\b__activemask\s*\("),
    "atomics.all": re.compile(r"\batomic[A-Z]\w*\s*\("),
    "cg.tiled_partitions": re.compile(r"\btiled_partition\s*<?"),
    "tc.wmma_calls": re.compile(r"\bwmma::(?:mma_sync|load_matrix_sync|store_matrix_sync|"
                                r"fill_fragment)\s*\(|\b__hmma\w*|\bmma_sync\s*\("),
    "tc.ptx_mma": re.compile(r"\b(?:mma\.sync|wgmma\.\w+|ldmatrix)\b"),
    "async.copies": re.compile(r"\b(?:memcpy_async|__pipeline_memcpy_async|cp_async\w*)\s*\(|"
                               r"cp\.async\b"),
    "math.fast_intrinsics": re.compile(r"\b__(?:expf|exp10f|logf|log2f|log10f|sinf|cosf|"
                                       r"tanf|powf|fdividef|frcp_rn|fsqrt_rn|frsqrt_rn|"
                                       r"fmul_rn|fadd_rn|fmaf_rn|saturatef)\s*\("),
    "lib.calls": re.compile(r"\b(?:cublas\w+|cudnn\w+|cufft\w+|curand\w+|cusparse\w+|"
                            r"cusolver\w+|thrust::\w+|cub::\w+|at::\w+|torch::\w+|"
                            r"cutlass::\w+)\s*(?:<[^;>]*>)?\s*\("),
    "host.graphs": re.compile(r"\bcudaGraph\w*\s*\(|\bcudaStreamBeginCapture\w*\s*\("),
    "host.streams": re.compile(r"\bcudaStreamCreate\w*\s*\(|\bcudaStreamWaitEvent\s*\("),
    "host.device_syncs": re.compile(r"\bcuda(?:Device|Stream)Synchronize\s*\("),
    "host.memcpy": re.compile(r"\bcudaMemcpy\w*\s*\("),
    "host.events": re.compile(r"\bcudaEvent\w*\s*\("),
}

_PY_HEAVY = re.compile(r"\b(?:torch\.(?:nn\.functional\.)?|F\.|at::|torch::)(?:matmul|mm|"
                           r"bmm|addmm|baddbmm|linear|conv\w*|einsum|"
                           r"scaled_dot_product_attention)\s*\(|nn\.(?:Linear|Conv\w+)\s*\(|"
                           r"(?<![\w@])@(?![\w.])")

#: Flag features: name -> regex searched once over the CUDA text.
_FLAGS_RE: dict[str, re.Pattern[str]] = {
    "mem.constant_memory": re.compile(r"__constant__"),
    "smem.dynamic": re.compile(r"extern\s+__shared__"),
    "smem.padded": re.compile(r"__shared__[^;]*\[\s*(\w+)\s*\]\s*\[\s*\1\s*\+\s*1\s*\]|"
                              r"__shared__[^;]*\[\s*32\s*\]\s*\[\s*33\s*\]"),
    "launch.dynamic_smem": re.compile(r"<<<[^,>]+,[^,>]+,\s*[^,>\s0][^,>]*>>>|"
                                      r"<<<[^,>]+,[^,>]+,[^,>]+,[^>]+>>>"),
    "launch.with_stream": re.compile(r"<<<[^,>]+,[^,>]+,[^,>]+,[^>]+>>>"),
    "cg.used": re.compile(r"cooperative_groups|\bcg::"),
    "sync.grid": re.compile(r"\bgrid\.sync\s*\(|this_grid\s*\(\s*\)\s*\.sync|grid_group"),
    "lib.reference": re.compile(r"\b(?:cublas|cudnn|at::|torch::|cutlass)\w*"),
    "heavy.lib": re.compile(r"\b(?:cublas\w*gemm\w*|cublasLt\w*|cublas\w*[Gg]emv\w*|"
                            r"cudnnConvolution\w*|cudnnRNN\w*|(?:at|torch)::(?:\w+::)*(?:matmul|"
                            r"mm|bmm|addmm|baddbmm|linear|conv\w*|einsum))\s*\("),
}

_BLOCK = re.compile(r"<<<\s*[^,>]+,\s*(\d+)\s*[,>]")
_DIM3 = re.compile(r"\bdim3\s+\w+\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\)")
_SMEM_LITERAL = re.compile(r"(?<!extern )__shared__\s+(\w+)[^;\[]*((?:\[\s*\d+\s*\])+)")
_DIMS = re.compile(r"\d+")
_SHARED_NAMES = re.compile(r"__shared__[^;\[]*?(\w+)\s*\[")
_ATOMIC_ADDR = re.compile(r"\batomic[A-Z]\w*\s*\(\s*&?\s*(\w+)")
_SIZES = {"float": 4, "int": 4, "unsigned": 4, "double": 8, "half": 2, "__half": 2,
          "char": 1, "short": 2, "long": 8, "float4": 16, "float2": 8, "int4": 16}

_TRITON_COUNTS = {
    "triton.dots": re.compile(r"\btl\.dot\s*\("),
    "triton.reductions": re.compile(r"\btl\.(?:sum|max|min|reduce|cumsum|cumprod|"
                                    r"associative_scan|argmax|argmin|xor_sum)\s*\("),
    "triton.block_pointers": re.compile(r"\btl\.make_(?:block_ptr|tensor_descriptor)\s*\("),
    "triton.autotune_configs": re.compile(r"\btriton\.Config\s*\("),
}
_NUM_WARPS = re.compile(r"\bnum_warps\s*=\s*(\d+)")
_NUM_STAGES = re.compile(r"\bnum_stages\s*=\s*(\d+)")
_GROUPED = re.compile(r"GROUP_SIZE_M|tl\.swizzle2d")
_PY_KERNELS = re.compile(r"@(?:triton\.jit|cute\.kernel)")


def language(text: str) -> str:
    """``triton``, ``cute``, ``torch``, ``cuda`` or ``unknown``."""
    for name, pattern in _LANG.items():
        if pattern.search(text):
            return name
    return "unknown"


def strip_comments(text: str) -> str:
    """C/C++ comments removed (string literals kept)."""
    return _COMMENTS.sub(lambda m: m.group(1) or " ", text)


def extract(text: str) -> dict[str, Any]:
    """The regex features of one program (CUDA, or Python with load_inline CUDA / Triton)."""
    lang = language(text)
    out: dict[str, Any] = {"program.language": lang, "program.embedded_cuda": False}
    python = lang in ("torch", "triton", "cute")
    cuda = text
    if python:
        parts = [m.group(2) for m in _TRIPLE.finditer(text)
                 if "__global__" in m.group(2) or "__device__" in m.group(2)]
        cuda = "\n".join(parts)
        if parts:
            out["program.embedded_cuda"] = True
            out["program.language"] = "cuda"
    src = strip_comments(cuda)
    counts = {name: len(p.findall(src)) for name, p in _COUNTS.items()}
    flags = {name: p.search(src) is not None for name, p in _FLAGS_RE.items()}
    atomics = counts.pop("atomics.all")
    shared = set(_SHARED_NAMES.findall(src))
    atomics_shared = sum(1 for name in _ATOMIC_ADDR.findall(src) if name in shared)
    out.update(counts)
    out.update({k: v for k, v in flags.items() if k not in ("lib.reference", "heavy.lib")})
    out["kernel.has_custom_kernel"] = counts["kernel.count"] > 0
    out["atomics.shared"] = atomics_shared
    out["atomics.global"] = atomics - atomics_shared
    out["reduce.atomic"] = atomics > 0
    blocks = [int(b) for b in _BLOCK.findall(src)]
    for dims in _DIM3.findall(src):
        size = 1
        for d in dims:
            size *= int(d) if d else 1
        blocks.append(size)
    out["launch.block_size"] = float(max(blocks)) if blocks else None
    out["launch.distinct_block_sizes"] = len(set(blocks))
    static = 0
    for ctype, dims in _SMEM_LITERAL.findall(src):
        n = 1
        for d in _DIMS.findall(dims):
            n *= int(d)
        static += n * _SIZES.get(ctype, 4)
    out["smem.static_bytes"] = static
    out["tc.used"] = counts["tc.wmma_calls"] + counts["tc.ptx_mma"] > 0
    out["pipeline.async_copy"] = counts["async.copies"] > 0
    out["lib.reference_library"] = flags["lib.reference"]
    heavy = len(_PY_HEAVY.findall(_PY_COMMENTS.sub("", text))) if python else 0
    out["lib.delegates_heavy_op"] = flags["heavy.lib"] or heavy > 0
    out["fusion.launches_per_forward"] = counts["launch.count"] + heavy
    if lang == "triton" and not out["program.embedded_cuda"]:
        py = _PY_COMMENTS.sub("", text)
        out["kernel.count"] = len(_PY_KERNELS.findall(py))
        out.update({name: len(p.findall(py)) for name, p in _TRITON_COUNTS.items()})
        out["triton.num_warps"] = max(map(int, _NUM_WARPS.findall(py)), default=0)
        out["triton.num_stages"] = max(map(int, _NUM_STAGES.findall(py)), default=0)
        out["triton.grouped_ordering"] = _GROUPED.search(py) is not None
    return out


#: The registered feature names the regex extractor reports.
COVERED: tuple[str, ...] = (
    "program.language", "program.embedded_cuda", "kernel.count", "kernel.has_custom_kernel",
    "kernel.device_functions", "kernel.templates", "kernel.launch_bounds", "loop.count",
    "loop.unroll_pragmas", "loop.grid_stride", "branch.count", "branch.ternary",
    "launch.count", "launch.block_size", "launch.distinct_block_sizes", "launch.dynamic_smem",
    "launch.with_stream", "mem.global_accesses", "mem.vector_loads", "mem.restrict_params",
    "mem.const_params", "mem.ldg", "mem.constant_memory", "smem.arrays", "smem.static_bytes",
    "smem.unresolved_sizes", "smem.dynamic", "smem.padded", "sync.block_barriers",
    "sync.warp_syncs", "sync.grid", "warp.shuffles", "warp.votes", "warp.activemask",
    "atomics.global", "atomics.shared", "reduce.atomic", "cg.used", "cg.tiled_partitions",
    "tc.wmma_calls", "tc.ptx_mma", "tc.used", "async.copies", "pipeline.async_copy",
    "math.fast_intrinsics", "lib.calls", "lib.reference_library", "lib.delegates_heavy_op",
    "fusion.launches_per_forward", "host.graphs", "host.streams", "host.device_syncs",
    "host.memcpy", "host.events", "triton.dots", "triton.reductions", "triton.block_pointers",
    "triton.num_warps", "triton.num_stages", "triton.autotune_configs",
    "triton.grouped_ordering")
