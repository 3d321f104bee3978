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
    int_constants,
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
    kernel: ts.Node
    block: int


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _shared_elem(src: Src, kernel: ts.Node, array: str) -> str | None:
    for decl in find(src.root, "declaration"):
        text = src.of(decl)
        m = re.search(r"__shared__\s+(?:volatile\s+)?([\w ]+?)\s+" + re.escape(array) + r"\s*\[", text)
        if m:
            return m.group(1).strip()
    return None


def tree_loops(src: Src) -> list[TreeLoop]:
    """Shared-memory tree reductions in kernels launched with a constant power-of-two block."""
    out = []
    for node in find(src.root, "for_statement"):
        header = _norm(src.of(node)[:src.of(node).find(")") + 1])
        m = re.fullmatch(r"for\(int(\w+)=(.+);\1>0;\1(?:>>=1|/=2|=\1/2|=\1>>1)\)", header)
        body = node.child_by_field_name("body")
        kernel = enclosing(node, "function_definition")
        if not m or body is None or kernel is None or "__syncthreads" not in src.of(body):
            continue
        svar = m.group(1)
        ifs = [s for s in body.named_children if s.type == "if_statement"]
        rest = [s for s in body.named_children if s.type not in ("if_statement", "comment")]
        if len(ifs) != 1 or len(rest) != 1 or _norm(src.of(rest[0])) != "__syncthreads();":
            continue
        cond = _norm(src.of(ifs[0].child_by_field_name("condition")))
        cm = re.fullmatch(r"\((\w+(?:\.x)?)<" + svar + r"\)", cond)
        if not cm or ifs[0].child_by_field_name("alternative") is not None:
            continue
        tid = cm.group(1)
        stmt = ifs[0].child_by_field_name("consequence")
        subs = find(stmt, "subscript_expression")
        arrays = {src.of(s.child_by_field_name("argument")) for s in subs}
        if len(arrays) != 1:
            continue
        array = arrays.pop()
        edits = []
        for s in subs:
            idx = _norm(src.of(s.child_by_field_name("indices"))).strip("[]")
            if idx == tid:
                edits.append((s.start_byte, s.end_byte, "{own}"))
            elif idx in (f"{tid}+{svar}", f"{svar}+{tid}"):
                edits.append((s.start_byte, s.end_byte, "{other}"))
            else:
                edits = []
                break
        if not edits:
            continue
        combine = splice(src.text[stmt.start_byte:stmt.end_byte],
                         [(a - stmt.start_byte, b - stmt.start_byte, r) for a, b, r in edits])
        if stmt.type == "compound_statement":
            combine = combine.strip()[1:-1]
        combine = combine.strip()
        if re.search(r"\b" + svar + r"\b", combine) or not combine.endswith(";"):
            continue
        elem = _shared_elem(src, kernel, array)
        calls = kernel_launches(src, kernel)
        dims = {block_dims(src, c) for c in calls}
        if elem is None or len(dims) != 1 or None in dims:
            continue
        (dim,) = dims
        if len(dim) != 1 or dim[0] < 64 or dim[0] & (dim[0] - 1):
            continue
        start = _norm(m.group(2))
        if start not in ("blockDim.x/2", "(blockDim.x/2)", "blockDim.x>>1") and \
                eval_int(m.group(2), int_constants(src)) != dim[0] // 2:
            continue
        out.append(TreeLoop(node, svar, tid, array, elem, combine, kernel, dim[0]))
    return out


def combine_text(tree: TreeLoop, own: str, other: str) -> str:
    """The combining statement with the operands filled in."""
    return tree.combine.replace("{own}", own).replace("{other}", other)


def only_tid0_reads_after(src: Src, tree: TreeLoop) -> bool:
    """True when, after the tree loop, the array is only touched under ``if (tid == 0)``."""
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
