"""Reduction strategy: shared-memory tree <-> warp shuffle <-> shared atomics."""

from __future__ import annotations

import re

from structcover.tools.mutations._loops import pragma_before
from structcover.tools.mutations._reduction import combine_text, tree_loops
from structcover.tools.mutations._tree import find, indent_block, indent_of, parse, splice
from structcover.tools.mutations.base import Builder, MutationResult, operator


@operator("tree_to_shuffle", family="reduction_strategy")
def tree_to_shuffle(program: str) -> MutationResult:
    """Finish a shared-memory tree reduction with warp shuffles once 32 partials remain.

    Moves:
        warp.shuffles: up

    Applies to ``for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) <combine
    a[tid] with a[tid + s]>; __syncthreads(); }`` (or a constant first stride of half the
    block) over ``__shared__`` memory, in a kernel or in a ``__device__`` helper that only
    kernels call, where every launch reaching it has a constant 1-D power-of-two block of at
    least 64 threads (so ``tid < 32`` is all of warp 0, as the shuffles need). The loop stops
    at 64 partials; warp 0 folds them with ``__shfl_down_sync`` using the same combine, writes
    ``a[0]`` and a barrier keeps the loop's postcondition (every thread may read ``a[0]``).
    """
    src = parse(program)
    b = Builder("tree_to_shuffle", program)
    edits = []
    for tree in tree_loops(src):
        ind = indent_of(src, tree.node)
        head = src.of(tree.node)
        head = head.replace(f"{tree.svar} > 0", f"{tree.svar} > 32", 1)
        if head == src.of(tree.node):
            continue
        own = f"{tree.array}[{tree.tid}]"
        lines = [f"if ({tree.tid} < 32) {{  // last warp: shuffles instead of barriers",
                 f"    {tree.elem} v_ = {own};",
                 f"    {combine_text(tree, 'v_', tree.array + '[' + tree.tid + ' + 32]')}"]
        lines += [f"    {combine_text(tree, 'v_', f'__shfl_down_sync(0xffffffff, v_, {o})')}"
                  for o in (16, 8, 4, 2, 1)]
        lines += [f"    if ({tree.tid} == 0) {tree.array}[0] = v_;", "}", "__syncthreads();"]
        edits.append((tree.node.start_byte, tree.node.end_byte,
                      head + "\n" + indent_block("\n".join(lines), ind)))
    if not edits:
        return b.done("no shared-memory tree reduction with a constant block >= 64")
    b.add(splice(src.text, edits))
    return b.done()


@operator("tree_to_atomic", family="reduction_strategy")
def tree_to_atomic(program: str) -> MutationResult:
    """Replace a shared-memory tree sum with ``atomicAdd`` of every thread's partial into
    ``a[0]`` (shared atomics).

    Moves:
        atomics.shared: up

    Applies to tree reductions as for ``tree_to_shuffle`` (in kernels or ``__device__``
    helpers) whose combine is exactly ``a[tid] += a[tid + s]`` (a sum: other operators have
    no float atomic); the power-of-two block makes the tree cover every thread's partial, so
    the atomics add the same ones. The summation order changes, so results match within
    floating-point tolerance, not bit for bit.
    """
    src = parse(program)
    b = Builder("tree_to_atomic", program)
    edits = []
    for tree in tree_loops(src):
        if re.sub(r"\s+", "", tree.combine) != "{own}+={other};" or \
                tree.elem not in ("float", "int", "double", "unsigned int"):
            continue
        a, t = tree.array, tree.tid
        lines = ["{  // reduction by shared atomics instead of a tree",
                 f"    {tree.elem} v_ = {a}[{t}];", "    __syncthreads();",
                 f"    if ({t} == 0) {a}[0] = 0;", "    __syncthreads();",
                 f"    atomicAdd(&{a}[0], v_);", "    __syncthreads();", "}"]
        edits.append((tree.node.start_byte, tree.node.end_byte,
                      indent_block("\n".join(lines), indent_of(src, tree.node)).lstrip()))
    if not edits:
        return b.done("no shared-memory tree *sum* with a constant block >= 64")
    b.add(splice(src.text, edits))
    return b.done()


_SHFL_LOOP = re.compile(
    r"for\s*\(\s*int\s+(\w+)\s*=\s*(16|warpSize\s*/\s*2)\s*;\s*\1\s*>\s*0\s*;\s*\1\s*(?:>>=\s*1|/=\s*2)\s*\)")


@operator("shuffle_to_tree", family="reduction_strategy")
def shuffle_to_tree(program: str) -> MutationResult:
    """Replace a warp-shuffle reduction loop by a shared-memory tree within the warp
    (``__syncwarp`` between steps); every lane ends with the warp's total.

    Moves:
        warp.shuffles: down

    Applies to ``for (int o = 16; o > 0; o >>= 1) v = v OP __shfl_*_sync(0xffffffff, v, o);``
    (down or xor, ``+=`` or a call such as ``fmaxf``) on a 32-bit float or int value.
    A lane other than 0 of a ``__shfl_down`` reduction used to hold a partial; it now holds
    the total, which a correct program never reads.
    """
    src = parse(program)
    b = Builder("shuffle_to_tree", program)
    edits = []
    for node in find(src.root, "for_statement"):
        text = src.of(node)
        m = _SHFL_LOOP.match(text)
        body = node.child_by_field_name("body")
        if not m or body is None:
            continue
        stmts = [s for s in (body.named_children if body.type == "compound_statement" else [body])
                 if s.type != "comment"]
        if len(stmts) != 1:
            continue
        stmt = src.of(stmts[0])
        calls = re.findall(r"__shfl_(?:down|xor)_sync\s*\(\s*0xffffffffu?\s*,\s*(\w+)\s*,\s*"
                           + m.group(1) + r"\s*\)", stmt)
        if len(calls) != 1:
            continue
        val = calls[0]
        decl = re.search(r"\b(float|int|unsigned int|unsigned)\s+" + val + r"\b",
                         src.text[:node.start_byte].decode())
        if decl is None:
            continue
        o = m.group(1)
        red = "red_[tl_]"
        other = f"red_[tl_ + {o}]"
        combine = re.sub(r"__shfl_(?:down|xor)_sync\s*\([^;]*?" + o + r"\s*\)", other, stmt)
        combine = re.sub(r"\b" + val + r"\b", red, combine)
        lines = ["{  // warp reduction through shared memory instead of shuffles",
                 f"    __shared__ {decl.group(1)} red_[1024];",
                 "    const int tl_ = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
                 "    const int lane_ = tl_ & 31;",
                 "    __syncwarp(0xffffffff);", f"    red_[tl_] = {val};", "    __syncwarp(0xffffffff);",
                 f"    for (int {o} = 16; {o} > 0; {o} >>= 1) {{",
                 f"        if (lane_ < {o}) {combine}", "        __syncwarp(0xffffffff);", "    }",
                 f"    {val} = red_[tl_ - lane_];", "}"]
        prag = pragma_before(src, node)  # a pragma before a block is an error: drop it
        edits.append((node.start_byte if prag is None else prag.start_byte, node.end_byte,
                      indent_block("\n".join(lines), indent_of(src, node)).lstrip()))
    if not edits:
        return b.done("no full-warp shuffle reduction loop (for o = 16; o > 0; o >>= 1)")
    b.add(splice(src.text, edits))
    return b.done()
