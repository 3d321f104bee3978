"""Thread mapping of one-thread-per-element kernels: which elements a thread touches (chunked,
serial) and whether its inputs pass through shared memory under a barrier (staged).

These are the structures policies write for element-wise and row-per-thread kernels besides
the coalesced one-thread-per-element form: a contiguous chunk per thread (strided global
access), a single thread looping over every element (warp-uniform, broadcast access), and
inputs staged through a shared-memory slot per thread under a block or warp barrier. Each
keeps the kernel's result exactly (the same body runs once per element, in element order per
thread); none is meant to be fast. They exist so that the campaign can put verified programs
in the access-pattern and synchronization bins a collapsed policy stopped writing.

The ``map_<mapping>_<sync>`` operators (:data:`MAP_OPERATORS`, texts from
:mod:`structcover.tools.mutations._mapping`) take such a kernel in one step to each other
(access mapping, synchronization) pair: with these four, every feasible pair of
``pattern.global_access`` x ``pattern.sync``.

All of them apply to kernels shaped ``T i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N)
{...}`` (or ``if (i >= N) return; ...``) whose guarded body has no barrier, warp collective,
shared memory, ``return``, ``break`` or ``continue``, and does not assign ``i``
(:func:`structcover.tools.mutations.parallel_strategy.per_element`). Kernels in the 2-D form
of that shape (``x``, ``y`` global indices, one guard ``y < R && x < C``) are first put on a
flat grid (:func:`~structcover.tools.mutations.flatten.flattened`), so naive GEMM, transposes
and other matrix maps take every pair as well.
"""

from __future__ import annotations

import re

from structcover.tools.mutations._mapping import (
    _SIZES,
    _SMEM_BUDGET,
    CHUNK,
    MAPPINGS,
    MAX_BLOCK,
    SYNCS,
    THREAD_BUILTINS,
    generate,
    reads,
    staged_inputs,
)
from structcover.tools.mutations._tree import Src, indent_block, kernels, parse, splice
from structcover.tools.mutations.base import Builder, MutationResult, operator
from structcover.tools.mutations.flatten import flattened
from structcover.tools.mutations.parallel_strategy import PerElement, _wrap_grid, per_element


def _per_element_text(program: str) -> str:
    """``program``, with its 2-D one-thread-per-element kernels flattened onto a 1-D grid
    (:func:`~structcover.tools.mutations.flatten.flattened`) so that they take the
    per-element shape these operators rewrite."""
    return flattened(program) or program


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
    src = parse(_per_element_text(program))
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
    src = parse(_per_element_text(program))
    b = Builder("serialize", program)
    edits: list[tuple[int, int, str]] = []
    for pe in _shapes(src):
        if THREAD_BUILTINS.search(pe.body):
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


def _stage(program: str, name: str, barrier: str, what: str) -> MutationResult:
    src = parse(_per_element_text(program))
    b = Builder(name, program)
    edits: list[tuple[int, int, str]] = []
    sync = "block" if "syncthreads" in barrier else "warp"
    for pe in _shapes(src):
        inputs = staged_inputs(src, pe)
        if not inputs:
            # No input read at the element's own index (a 2-D kernel flattened, a transpose):
            # its trailing output stores pass through the slot instead.
            found, _ = generate(src, pe, "coalesced", sync)
            edits += found or []
            continue
        ind, body = pe.indent, pe.body
        decls, loads = [], []
        for p, ctype in sorted(inputs.items()):
            slot = f"s_{p}_"
            decls.append(f"__shared__ {ctype} {slot}[{MAX_BLOCK}];")
            loads.append(f"{slot}[threadIdx.x] = {p}[{pe.var}];")
            body = re.sub(reads(p, pe.var), f"{slot}[threadIdx.x]", body)
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
                      f"{_SMEM_BUDGET // 1024} KB of slots) or ending in output stores "
                      "y[index] = value;")
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
    1024-slot tiles; failing that, to those whose body ends in output stores
    ``y[index] = v;`` (index free of side effects), which then pass through the slot: compute
    into it, barrier, store from it.
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


# Moves name the access and synchronization features these operators exist for. The shared
# slots also add shared accesses (pattern.reuse: smem_staging); the measured effects table
# records that, and declaring it would make the planner chain them toward reuse targets.
_MAPPING_DOC = {
    "coalesced": ("Keep one element per thread (coalesced access)", {}),
    "strided": ("Give each thread a contiguous chunk of 4 elements, thread t handling 4t .. "
                "4t+3 (strided access; the launcher's grid shrinks by 4)",
                {"mem.global_strided": "up", "mem.global_coalesced": "down"}),
    "broadcast": ("Let the elements loop in order, 0 .. N-1, with no thread index in any "
                  "address (broadcast access)",
                  {"mem.global_broadcast": "up", "mem.global_coalesced": "down"}),
    "indirect": ("Keep one element per thread but read its index back from the thread's "
                 "shared-memory slot, s_idx_[threadIdx.x] (indirect access)",
                 {"mem.global_indirect": "up", "mem.global_coalesced": "down"}),
    "mixed": ("Process elements [0, N/2) one per thread (coalesced) and [N/2, N) in contiguous "
              "chunks of 4 per thread (strided), in one kernel (mixed access)",
              {"mem.global_strided": "up"}),
}
_SYNC_DOC = {
    "none": ("with no synchronization", {}),
    "block": ("with each element's inputs (or trailing output stores) passing through a "
              "per-thread shared slot under __syncthreads(), reached by every thread of the "
              "block", {"sync.block_barriers": "up"}),
    "warp": ("with each element's inputs (or trailing output stores) passing through a "
             "per-thread shared slot under __syncwarp(), reached by every lane of the warp",
             {"sync.warp_syncs": "up"}),
    "block_and_warp": ("with each element's inputs (or trailing output stores) passing through "
                       "a per-thread shared slot under __syncwarp() and __syncthreads(), each "
                       "reached by every thread it names",
                       {"sync.block_barriers": "up", "sync.warp_syncs": "up"}),
    "atomic_or_grid": ("with every output element stored by atomicExch(&y[index], v)",
                       {"atomics.global": "up"}),
}
_APPLIES = {
    "strided": "whose every launch has a 1-D integer grid",
    "broadcast": "whose body and bound do not read the thread or block index",
    "barrier": ("with a read-only input whose element i the body reads (as for "
                "stage_smem_block) or, failing that, trailing output stores y[index] = v; "
                "whose output the body names nowhere else (an index other than i may use "
                "only parameters and the body's leading pure const declarations)"),
    "atomic_or_grid": ("whose outputs are written only as y[index] = v; with y float, int or "
                       "unsigned (not applicable to __half, double or other outputs: "
                       "atomicExch has no overload for them)"),
}
#: The combinations the older operators already make (and the unchanged original).
_EXISTING = {("coalesced", "none"): "", ("strided", "none"): "coarsen_chunked",
             ("broadcast", "none"): "serialize", ("coalesced", "block"): "stage_smem_block",
             ("coalesced", "warp"): "stage_smem_warp"}


def _doc(mapping: str, sync: str) -> str:
    what_map, map_moves = _MAPPING_DOC[mapping]
    what_sync, sync_moves = _SYNC_DOC[sync]
    moves = {**map_moves, **sync_moves}
    conds = [_APPLIES[k] for k in (mapping, "barrier" if sync in ("block", "warp",
                                                                    "block_and_warp")
                                   and mapping != "indirect" else sync) if k in _APPLIES]
    lines = [f"{what_map}, {what_sync}: lands a one-thread-per-element kernel in "
             f"({mapping}, {sync}).", ""]
    if sync in ("block", "warp", "block_and_warp") and mapping == "indirect":
        lines += ["The barrier sits between writing and reading the index slot.", ""]
    if mapping == "broadcast" and sync in ("block", "warp", "block_and_warp"):
        lines += [("Every lane of warp 0" if sync == "warp" else "Every thread") + " of block "
                  "0 runs the element loop and reaches each barrier; thread 0 does the loads "
                  "and stores; the other " + ("warps and blocks" if sync == "warp" else
                                              "blocks") + " return first.", ""]
    lines += ["Moves:", *(f"    {k}: {d}" for k, d in moves.items()), "",
              "Applies to one-thread-per-element kernels (module docstring)"
              + (" " + " and ".join(conds) if conds else "") + "; not applicable otherwise, "
              "with the reason."]
    return "\n".join(lines)


def _map_operator(mapping: str, sync: str) -> None:
    name = f"map_{mapping}_{sync}"

    def op(program: str) -> MutationResult:
        src = parse(_per_element_text(program))
        b = Builder(name, program)
        edits: list[tuple[int, int, str]] = []
        why = ""
        for pe in _shapes(src):
            found, reason = generate(src, pe, mapping, sync)
            if found is None:
                why = why or reason
                continue
            edits += found
        if not edits:
            return b.done(why or "no one-thread-per-element kernel")
        b.add(splice(src.text, edits), mapping=mapping, sync=sync)
        return b.done()

    op.__name__ = op.__qualname__ = name
    op.__doc__ = _doc(mapping, sync)
    operator(name, family="thread_mapping")(op)


#: The operators that move a one-thread-per-element kernel straight into one (access, sync)
#: pair (the older four cover the rest), by pair.
MAP_OPERATORS = {(m, s): f"map_{m}_{s}" for m in MAPPINGS for s in SYNCS
                 if (m, s) not in _EXISTING}
for _m, _s in MAP_OPERATORS:
    _map_operator(_m, _s)
