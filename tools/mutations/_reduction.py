"""Recognise shared-memory tree reductions and warp-shuffle reduction loops."""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from structcover.tools.mutations._patterns import kernel_launches
from structcover.tools.mutations._tree import (
    Src,
    block_dims,
    enclosing,
    eval_int,
    find,
    function_name,
    int_constants,
    is_device_code,
    is_kernel,
    param_names,
    pointer_params,
    splice,
)


@dataclass
class TreeLoop:
    """``for (int s = X; s > 0; s >>= 1) { if (tid < s) STMT; __syncthreads(); }``."""

    node: ts.Node
    svar: str
    tid: str
    array: str
    elem: str
    combine: str  # STMT with ARR[tid] -> {own} and ARR[tid + s] -> {other}
    kernel: ts.Node  # the function holding the loop: a kernel or a __device__ helper
    block: int  # the smallest block any launch reaching the loop uses
    in_kernel: bool = True  # False: in a __device__ helper, whose callers may read the array


@dataclass
class _Shape:
    """The syntactic part of a tree loop, before its function and launches are checked."""

    svar: str
    start: str
    tid: str
    array: str
    combine: str


_STARTS_HALF_BLOCK = ("blockDim.x/2", "(blockDim.x/2)", "blockDim.x>>1")


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _shared_elem(src: Src, kernel: ts.Node, array: str) -> str | None:
    for decl in find(src.root, "declaration"):
        text = src.of(decl)
        m = re.search(r"__shared__\s+(?:volatile\s+)?([\w ]+?)\s+" + re.escape(array) + r"\s*\[", text)
        if m:
            return m.group(1).strip()
    return None


def _declares_shared(src: Src, fn: ts.Node, array: str) -> bool:
    """True when ``fn`` itself declares ``__shared__ ... array[...]``."""
    return any(re.search(r"__shared__\b[^;]*\b" + re.escape(array) + r"\s*\[", src.of(d))
               for d in find(fn, "declaration"))


def _combine(src: Src, stmt: ts.Node, tid: str, svar: str) -> tuple[str, str] | None:
    """(array, combine template) of ``if (tid < s) STMT``'s STMT; None unless it touches one
    array only at ``[tid]`` and ``[tid + s]`` and does not otherwise use ``s``."""
    subs = find(stmt, "subscript_expression")
    arrays = {src.of(s.child_by_field_name("argument")) for s in subs}
    if len(arrays) != 1:
        return None
    edits = []
    for s in subs:
        idx = _norm(src.of(s.child_by_field_name("indices"))).strip("[]")
        if idx == tid:
            edits.append((s.start_byte, s.end_byte, "{own}"))
        elif idx in (f"{tid}+{svar}", f"{svar}+{tid}"):
            edits.append((s.start_byte, s.end_byte, "{other}"))
        else:
            return None
    combine = splice(src.text[stmt.start_byte:stmt.end_byte],
                     [(a - stmt.start_byte, b - stmt.start_byte, r) for a, b, r in edits])
    if stmt.type == "compound_statement":
        combine = combine.strip()[1:-1]
    combine = combine.strip()
    if re.search(r"\b" + svar + r"\b", combine) or not combine.endswith(";"):
        return None
    return arrays.pop(), combine


def _tree_shape(src: Src, node: ts.Node) -> _Shape | None:
    """The loop's stride variable, first stride, thread index, array and combine, when
    ``node`` has the tree shape (one guarded combine and one barrier per halving step)."""
    header = _norm(src.of(node)[:src.of(node).find(")") + 1])
    m = re.fullmatch(r"for\(int(\w+)=(.+);\1>0;\1(?:>>=1|/=2|=\1/2|=\1>>1)\)", header)
    body = node.child_by_field_name("body")
    if not m or body is None or "__syncthreads" not in src.of(body):
        return None
    svar = m.group(1)
    ifs = [s for s in body.named_children if s.type == "if_statement"]
    rest = [s for s in body.named_children if s.type not in ("if_statement", "comment")]
    if len(ifs) != 1 or len(rest) != 1 or _norm(src.of(rest[0])) != "__syncthreads();":
        return None
    cond = _norm(src.of(ifs[0].child_by_field_name("condition")))
    cm = re.fullmatch(r"\((\w+(?:\.x)?)<" + svar + r"\)", cond)
    if not cm or ifs[0].child_by_field_name("alternative") is not None:
        return None
    found = _combine(src, ifs[0].child_by_field_name("consequence"), cm.group(1), svar)
    if found is None:
        return None
    return _Shape(svar, m.group(2), cm.group(1), found[0], found[1])


def _calls_of(src: Src, fn: ts.Node) -> list[ts.Node] | None:
    """Every call of the ``__device__`` function ``fn``; None when one is not made directly
    from a ``__global__`` function (whose launches would then be unknown here)."""
    name = function_name(src, fn)
    calls = [c for c in find(src.root, "call_expression")
             if src.of(c.child_by_field_name("function")) == name
             and not any(ch.type == "kernel_call_syntax" for ch in c.children)]
    callers = [enclosing(c, "function_definition") for c in calls]
    if not calls or any(f is None or not is_kernel(f) for f in callers):
        return None
    return calls


def _helper_elem(src: Src, fn: ts.Node, array: str, calls: list[ts.Node]) -> str | None:
    """Element type of the array a ``__device__`` helper reduces over; None unless it is
    shared memory: declared ``__shared__`` in the helper, or a pointer parameter to which
    every call passes a ``__shared__`` array of the calling kernel."""
    if _declares_shared(src, fn, array):
        return _shared_elem(src, fn, array)
    ptrs = pointer_params(src, fn)
    if array not in ptrs:
        return None
    pos = param_names(src, fn).index(array)
    for call in calls:
        args = call.child_by_field_name("arguments").named_children
        if len(args) <= pos or args[pos].type != "identifier" or not _declares_shared(
                src, enclosing(call, "function_definition"), src.of(args[pos])):
            return None
    return ptrs[array]


def _helper_tid_ok(src: Src, fn: ts.Node, tid: str) -> bool:
    """True when a helper's thread index is ``threadIdx.x`` itself or a local copy of it (a
    parameter could carry any value from the caller)."""
    if tid == "threadIdx.x":
        return True
    return any(re.fullmatch(r"(?:const\s+)?(?:int|unsigned|unsigned int)\s+" + re.escape(tid)
                            + r"\s*=\s*threadIdx\.x\s*;", src.of(d))
               for d in find(fn, "declaration"))


def _launch_blocks(src: Src, kernels: list[ts.Node]) -> set[tuple[int, ...] | None]:
    """Block dimensions of every launch of ``kernels`` (None for a non-constant one)."""
    return {block_dims(src, c) for k in kernels for c in kernel_launches(src, k)}


def _block_ok(shape: _Shape, dims: set[tuple[int, ...] | None], consts: dict[str, int]) -> int | None:
    """The smallest launch block when every launch's block suits the tree; else None.

    The tree covers ``2 * first stride`` partials and the rewrites hand the last 64 to warp 0
    (``tid < 32`` is one whole warp only in a 1-D block), so each block must be 1-D, a power of
    two and at least 64. A first stride of ``blockDim.x / 2`` is then right for every such
    block; a constant one only when every launch uses twice it.
    """
    if not dims or None in dims:
        return None
    sizes = set()
    for dim in dims:
        if dim is None or len(dim) != 1 or dim[0] < 64 or dim[0] & (dim[0] - 1):
            return None
        sizes.add(dim[0])
    if _norm(shape.start) in _STARTS_HALF_BLOCK:
        return min(sizes)
    if len(sizes) == 1 and eval_int(shape.start, consts) == min(sizes) // 2:
        return min(sizes)
    return None


def _tree_loop(src: Src, node: ts.Node, consts: dict[str, int]) -> TreeLoop | None:
    """The tree reduction at ``node``, in a kernel or in a ``__device__`` helper that only
    kernels call, when every launch reaching it suits it; else None."""
    shape = _tree_shape(src, node)
    fn = enclosing(node, "function_definition")
    if shape is None or fn is None or not is_device_code(fn):
        return None
    if is_kernel(fn):
        callers = [fn]
        elem = _shared_elem(src, fn, shape.array)
    else:
        calls = _calls_of(src, fn)
        if calls is None or not _helper_tid_ok(src, fn, shape.tid):
            return None
        callers = list({c.id: c for c in (enclosing(c, "function_definition") for c in calls)}.values())
        elem = _helper_elem(src, fn, shape.array, calls)
    block = _block_ok(shape, _launch_blocks(src, callers), consts)
    if elem is None or block is None:
        return None
    return TreeLoop(node, shape.svar, shape.tid, shape.array, elem, shape.combine, fn, block,
                    in_kernel=is_kernel(fn))


def tree_loops(src: Src) -> list[TreeLoop]:
    """Shared-memory tree reductions reached only from launches with constant power-of-two
    blocks of at least 64: in a kernel, or in a ``__device__`` helper called from kernels."""
    consts = int_constants(src)
    found = (_tree_loop(src, node, consts) for node in find(src.root, "for_statement"))
    return [t for t in found if t is not None]


def combine_text(tree: TreeLoop, own: str, other: str) -> str:
    """The combining statement with the operands filled in."""
    return tree.combine.replace("{own}", own).replace("{other}", other)


def only_tid0_reads_after(src: Src, tree: TreeLoop) -> bool:
    """True when, after the tree loop, the array is only touched under ``if (tid == 0)``.

    Always False for a loop in a ``__device__`` helper: its callers may read the array after
    the call, which this does not look at.
    """
    if not tree.in_kernel:
        return False
    parent = tree.node.parent
    after = [s for s in parent.named_children if s.start_byte >= tree.node.end_byte]
    for stmt in after:
        for sub in find(stmt, "identifier"):
            if src.of(sub) != tree.array:
                continue
            guard = enclosing(sub, "if_statement")
            if guard is None or _norm(src.of(guard.child_by_field_name("condition"))) not in (
                    f"({tree.tid}==0)", "(threadIdx.x==0)"):
                return False
    return True
