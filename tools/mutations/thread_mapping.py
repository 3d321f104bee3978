"""Thread mapping of one-thread-per-element kernels: which elements a thread touches (chunked,
serial) and whether its inputs pass through shared memory under a barrier (staged).

These are the structures policies write for element-wise and row-per-thread kernels besides
the coalesced one-thread-per-element form: a contiguous chunk per thread (strided global
access), a single thread looping over every element (warp-uniform, broadcast access), and
inputs staged through a shared-memory slot per thread under a block or warp barrier. Each
keeps the kernel's result exactly (the same body runs once per element, in element order per
thread); none is meant to be fast. They exist so that the campaign can put verified programs
in the access-pattern and synchronization bins a collapsed policy stopped writing.

All four apply to kernels shaped ``T i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N)
{...}`` (or ``if (i >= N) return; ...``) whose guarded body has no barrier, warp collective,
shared memory, ``return``, ``break`` or ``continue``, and does not assign ``i``
(:func:`structcover.tools.mutations.parallel_strategy.per_element`).
"""

from __future__ import annotations

import re

from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    indent_block,
    kernels,
    parse,
    pointer_params,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator
from structcover.tools.mutations.parallel_strategy import PerElement, _wrap_grid, per_element

#: Elements per thread of the chunked mapping.
CHUNK = 4
#: Shared slots per staged input: the most threads a CUDA block can have, so every thread of
#: any launch has its own slot.
MAX_BLOCK = 1024
#: Bytes of one element of the types a staged input may have.
_SIZES = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4, "__half": 2,
          "half": 2, "__nv_bfloat16": 2, "float2": 8, "float4": 16, "int2": 8, "int4": 16,
          "__half2": 4, "long": 8, "long long": 8, "char": 1, "unsigned char": 1,
          "signed char": 1, "short": 2, "int8_t": 1, "uint8_t": 1, "int32_t": 4,
          "uint32_t": 4, "int64_t": 8}
#: Static shared memory the staged slots may take (48 KB is the static limit; keep headroom).
_SMEM_BUDGET = 32 * 1024
_THREAD_BUILTINS = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim|warpSize)\b")


def _shapes(src: Src) -> list[PerElement]:
    """The per-element kernels whose body can run in another order or another thread."""
    out = []
    for kernel in kernels(src):
        pe = per_element(src, kernel)
        if pe is None or re.search(r"\b(?:break|continue|goto)\b", pe.body):
            continue
        out.append(pe)
    return out


@operator("coarsen_chunked", family="thread_mapping")
def coarsen_chunked(program: str) -> MutationResult:
    """Give each thread a contiguous chunk of 4 elements (thread t handles 4t .. 4t+3), so
    neighbouring threads touch addresses 4 elements apart: strided, uncoalesced access. The
    launcher's grid shrinks by 4.

    Moves:
        mem.global_strided: up
        mem.global_coalesced: down

    Applies to one-thread-per-element kernels (module docstring) whose every launch has a 1-D
    integer grid.
    """
    src = parse(program)
    b = Builder("coarsen_chunked", program)
    edits: list[tuple[int, int, str]] = []
    for pe in _shapes(src):
        grid = _wrap_grid(src, pe.kernel, f"(({{}}) + {CHUNK - 1}) / {CHUNK}")
        if grid is None:
            continue
        ind = pe.indent
        text = (f"for (int c_ = 0; c_ < {CHUNK}; ++c_) {{  // chunked: {CHUNK} consecutive "
                "elements per thread\n"
                f"{ind}    const {pe.ctype} {pe.var} = (blockIdx.x * blockDim.x + threadIdx.x) "
                f"* {CHUNK} + c_;\n"
                f"{ind}    if ({pe.var} < {pe.bound}) {{\n"
                f"{indent_block(pe.body, ind + '        ')}\n{ind}    }}\n{ind}}}")
        edits += [(pe.start, pe.end, text), *grid]
    if not edits:
        return b.done("no one-thread-per-element kernel with a 1-D grid launch")
    b.add(splice(src.text, edits), chunk=CHUNK)
    return b.done()


@operator("serialize", family="thread_mapping")
def serialize(program: str) -> MutationResult:
    """Let one thread of the grid loop over every element in order; the other threads do
    nothing. Every global address is then the same across the threads of a warp (broadcast).

    Moves:
        mem.global_broadcast: up
        mem.global_coalesced: down

    Applies to one-thread-per-element kernels (module docstring) whose body does not read
    the thread or block index itself (it would differ in the one working thread).
    """
    src = parse(program)
    b = Builder("serialize", program)
    edits: list[tuple[int, int, str]] = []
    for pe in _shapes(src):
        if _THREAD_BUILTINS.search(pe.body):
            continue
        ind = pe.indent
        text = (f"if (blockIdx.x == 0 && threadIdx.x == 0) {{  // serial: one thread, every "
                "element\n"
                f"{ind}    for ({pe.ctype} {pe.var} = 0; {pe.var} < {pe.bound}; ++{pe.var}) {{\n"
                f"{indent_block(pe.body, ind + '        ')}\n{ind}    }}\n{ind}}}")
        edits.append((pe.start, pe.end, text))
    if not edits:
        return b.done("no one-thread-per-element kernel whose body is free of thread indices")
    b.add(splice(src.text, edits))
    return b.done()


def _reads(name: str, var: str) -> str:
    """A regex for the element reads of input ``name`` at index ``var``: ``p[i]``,
    ``__ldg(p + i)``, ``__ldg(&p[i])`` and ``*(p + i)``."""
    n, v = re.escape(name), re.escape(var)
    return (rf"(?<![&\w.]){n}\s*\[\s*{v}\s*\]|__ldg\(\s*{n}\s*\+\s*{v}\s*\)"
            rf"|__ldg\(\s*&\s*{n}\s*\[\s*{v}\s*\]\s*\)|\*\s*\(\s*{n}\s*\+\s*{v}\s*\)")


def _staged_inputs(src: Src, pe: PerElement) -> dict[str, str]:
    """Read-only pointer inputs whose element ``i`` the body reads (:func:`_reads`): name ->
    element type."""
    written = assigned_names(src, pe.kernel)
    out = {}
    for name, ctype in pointer_params(src, pe.kernel).items():
        ctype = " ".join(ctype.split())
        if not re.fullmatch(r"\w+", name) or name in written or ctype not in _SIZES:
            continue
        if re.search(_reads(name, pe.var), pe.body):
            out[name] = ctype
    total = sum(_SIZES[t] * MAX_BLOCK for t in out.values())
    return out if out and total <= _SMEM_BUDGET else {}


def _stage(program: str, name: str, barrier: str, what: str) -> MutationResult:
    src = parse(program)
    b = Builder(name, program)
    edits: list[tuple[int, int, str]] = []
    for pe in _shapes(src):
        inputs = _staged_inputs(src, pe)
        if not inputs:
            continue
        ind, body = pe.indent, pe.body
        decls, loads = [], []
        for p, ctype in sorted(inputs.items()):
            slot = f"s_{p}_"
            decls.append(f"__shared__ {ctype} {slot}[{MAX_BLOCK}];")
            loads.append(f"{slot}[threadIdx.x] = {p}[{pe.var}];")
            body = re.sub(_reads(p, pe.var), f"{slot}[threadIdx.x]", body)
        text = (f"// staged: each thread's inputs pass through its shared slot ({what})\n"
                + "".join(f"{ind}{d}\n" for d in decls)
                + f"{ind}const {pe.ctype} {pe.var} = blockIdx.x * blockDim.x + threadIdx.x;\n"
                + f"{ind}if ({pe.var} < {pe.bound}) {{\n"
                + "".join(f"{ind}    {ld}\n" for ld in loads)
                + f"{ind}}}\n{ind}{barrier}\n"
                + f"{ind}if ({pe.var} < {pe.bound}) {{\n"
                + f"{indent_block(body, ind + '    ')}\n{ind}}}")
        edits.append((pe.start, pe.end, text))
    if not edits:
        return b.done("no one-thread-per-element kernel reading a read-only input as p[i] "
                      f"(element types {', '.join(sorted(_SIZES))}, at most "
                      f"{_SMEM_BUDGET // 1024} KB of slots)")
    b.add(splice(src.text, edits))
    return b.done()


@operator("stage_smem_block", family="thread_mapping")
def stage_smem_block(program: str) -> MutationResult:
    """Stage each read-only input of a one-thread-per-element kernel through a shared-memory
    slot per thread: load (guarded), ``__syncthreads()`` outside the guard so every thread of
    the block reaches it, then compute from the slot.

    Moves:
        smem.accesses: up
        sync.block_barriers: up

    Applies to one-thread-per-element kernels (module docstring) with at least one read-only
    pointer input of a plain element type whose element ``i`` the body reads (``p[i]``,
    ``__ldg(p + i)``, ``__ldg(&p[i])``, ``*(p + i)``), all such inputs fitting in 32 KB of
    1024-slot tiles.
    """
    return _stage(program, "stage_smem_block", "__syncthreads();", "block barrier")


@operator("stage_smem_warp", family="thread_mapping")
def stage_smem_warp(program: str) -> MutationResult:
    """Stage each read-only input of a one-thread-per-element kernel through a shared-memory
    slot per thread under a warp barrier (``__syncwarp()``, reached by every lane).

    Moves:
        smem.accesses: up
        sync.warp_syncs: up

    Applies where ``stage_smem_block`` does.
    """
    return _stage(program, "stage_smem_warp", "__syncwarp();", "warp barrier")
