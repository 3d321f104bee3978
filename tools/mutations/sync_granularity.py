"""Sync granularity: block barrier <-> warp-level sync where only one warp communicates."""

from __future__ import annotations

import re

from structcover.tools.mutations._reduction import combine_text, only_tid0_reads_after, tree_loops
from structcover.tools.mutations._tree import (
    Src,
    block_dims,
    find,
    indent_block,
    indent_of,
    is_kernel,
    launch_config,
    launches,
    parse,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator


@operator("block_to_warp_sync", family="sync_granularity")
def block_to_warp_sync(program: str) -> MutationResult:
    """In a shared-memory tree reduction, run the last steps (32 partials and fewer, all in
    warp 0) under ``__syncwarp`` instead of ``__syncthreads``.

    Moves:
        sync.warp_syncs: up

    Applies to tree loops as recognised for ``tree_to_shuffle`` (in a kernel or a
    ``__device__`` helper; constant 1-D power-of-two blocks of at least 64, so warp 0 is
    whole for ``__syncwarp``). When code after the loop reads the array outside
    ``if (tid == 0)``, or the loop is in a helper whose callers may read it, a block barrier
    is kept after the warp steps so other warps see the result.
    """
    # the explicit full mask is the same as __syncwarp() on a GPU, and the CPU emulator's
    # macro rejects the empty argument list
    src = parse(program)
    b = Builder("block_to_warp_sync", program)
    edits = []
    for tree in tree_loops(src):
        head = src.of(tree.node).replace(f"{tree.svar} > 0", f"{tree.svar} > 32", 1)
        own, other = f"{tree.array}[{tree.tid}]", f"{tree.array}[{tree.tid} + {tree.svar}]"
        lines = [f"if ({tree.tid} < 32) {{  // only warp 0 communicates from here on",
                 f"    for (int {tree.svar} = 32; {tree.svar} > 0; {tree.svar} >>= 1) {{",
                 f"        if ({tree.tid} < {tree.svar}) {combine_text(tree, own, other)}",
                 "        __syncwarp(0xffffffff);", "    }", "}"]
        if not only_tid0_reads_after(src, tree):
            lines.append("__syncthreads();")
        edits.append((tree.node.start_byte, tree.node.end_byte,
                      head + "\n" + indent_block("\n".join(lines), indent_of(src, tree.node))))
    if not edits:
        return b.done("no shared-memory tree reduction with a constant block >= 64")
    b.add(splice(src.text, edits))
    return b.done()


def _thread_dependent(src: Src, fn) -> set[str]:
    """Names whose value depends on the thread (fixpoint over declarations/assignments)."""
    names: set[str] = set()
    texts = [src.of(d) for d in find(fn, "declaration", "assignment_expression")]
    changed = True
    while changed:
        changed = False
        for text in texts:
            m = re.match(r"(?:[\w:<>]+\s+)*?(\w+)\s*(?:\[[^\]]*\])?\s*[+\-*/]?=\s*(.*)", text, re.S)
            if not m or m.group(1) in names:
                continue
            rhs = m.group(2)
            if "threadIdx" in rhs or "__lane" in rhs or any(
                    re.search(r"\b" + re.escape(n) + r"\b", rhs) for n in names):
                names.add(m.group(1))
                changed = True
    return names


@operator("warp_to_block_sync", family="sync_granularity")
def warp_to_block_sync(program: str) -> MutationResult:
    """Replace ``__syncwarp()`` by ``__syncthreads()`` where every thread of the block reaches
    it (a stronger barrier is always correct there).

    Moves:
        sync.block_barriers: up
        sync.warp_syncs: down

    Applies only inside ``__global__`` functions, to a ``__syncwarp()`` statement that no
    ``return`` precedes and that is nested only in blocks and loops whose headers do not
    depend on the thread index (no ``if`` around it). Otherwise not applicable: a block
    barrier under divergent control flow would deadlock.
    """
    src = parse(program)
    b = Builder("warp_to_block_sync", program)
    edits = []
    for fn in find(src.root, "function_definition"):
        if not is_kernel(fn):
            continue
        dep = _thread_dependent(src, fn)
        first_return = min((r.start_byte for r in find(fn, "return_statement")), default=None)
        for call in find(fn, "call_expression"):
            if src.of(call.child_by_field_name("function")) != "__syncwarp":
                continue
            if first_return is not None and first_return < call.start_byte:
                continue
            ok, cur = True, call.parent
            while cur is not None and cur != fn:
                if cur.type in ("if_statement", "conditional_expression", "while_statement",
                                "do_statement", "switch_statement"):
                    ok = False
                if cur.type == "for_statement":
                    header = src.of(cur)[:src.of(cur).find("{")] if "{" in src.of(cur) else ""
                    if "threadIdx" in header or any(re.search(r"\b" + re.escape(n) + r"\b", header)
                                                     for n in dep):
                        ok = False
                cur = cur.parent
            if ok and call.parent.type == "expression_statement":
                edits.append((call.start_byte, call.end_byte, "__syncthreads()"))
    if not edits:
        return b.done("no __syncwarp() that every thread of the block reaches")
    b.add(splice(src.text, edits))
    return b.done()


#: ``__syncthreads`` variants that also reduce a predicate: no ``__syncwarp`` equivalent here.
_PREDICATE_BARRIERS = re.compile(r"__syncthreads_(?:count|and|or)\b")


@operator("block_to_one_warp", family="sync_granularity")
def block_to_one_warp(program: str) -> MutationResult:
    """Launch every kernel with one warp per block (32 threads) and make its block barriers
    warp barriers: a block that is one warp synchronizes with ``__syncwarp``.

    Moves:
        sync.block_barriers: down
        sync.warp_syncs: up

    Applies to programs with block barriers whose every launch has a constant 1-D block of
    32 threads or more, written as a literal or a named integer constant the block-size
    operator can edit (the grid math and everything sized by a named constant follow it), and
    without ``__syncthreads_count/and/or``. Whether the kernels compute the same with 32
    threads per block (a tree that starts at a fixed stride of 64 would not) is the
    verifier's question.
    """
    # launch_config imports this module's neighbours only: a function-level import keeps
    # the operator modules free of an import cycle
    from structcover.tools.mutations.launch_config import _edits_for

    src = parse(program)
    b = Builder("block_to_one_warp", program)
    if "__syncthreads" not in program or _PREDICATE_BARRIERS.search(program):
        return b.done("no plain __syncthreads() barrier to make a warp barrier")
    edits: dict[int, tuple[int, int, str]] = {}
    for call in launches(src):
        dims = block_dims(src, call) if len(launch_config(call)) >= 2 else None
        if dims is None or len([d for d in dims if d != 1]) > 1 or dims[0] < 32:
            return b.done("a launch whose block is not a constant 1-D size of 32 or more")
        if dims[0] == 32:
            continue
        found = _edits_for(src, call, 32 / dims[0])
        if found is None:
            return b.done("a launch's block size is not a constant this operator can edit "
                          "consistently")
        for start, end, text in found:
            if start in edits and edits[start][2] != text:
                return b.done("two launches size their blocks from one constant differently")
            edits[start] = (start, end, text)
    for fn in find(src.root, "function_definition"):
        if is_kernel(fn) or "__device__" in src.of(fn)[:src.of(fn).find("(")]:
            for call in find(fn, "call_expression"):
                if src.of(call.child_by_field_name("function")) == "__syncthreads":
                    # the explicit full mask: the CPU emulator's macro rejects ``()``
                    edits[call.start_byte] = (call.start_byte, call.end_byte,
                                              "__syncwarp(0xffffffff)")
    if not any(t == "__syncwarp(0xffffffff)" for _, _, t in edits.values()):
        return b.done("no __syncthreads() call in device code")
    b.add(splice(src.text, list(edits.values())))
    return b.done()
