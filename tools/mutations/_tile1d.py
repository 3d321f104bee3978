"""1-D shared-memory tiling of a broadcast operand (GEMV's ``x[k]``, a stencil's ``w[j + R]``):
the part of ``tile_smem`` for one-thread-per-output kernels launched with a 1-D block."""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._loops import breaks_out, canonical
from structcover.tools.mutations._patterns import has_barrier_or_shared, index_decl, kernel_launches
from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    block_dims,
    dedented,
    find,
    identifiers,
    indent_block,
    indent_of,
    pointer_params,
    splice,
)


def _negate_return_guard(src: Src, stmt: ts.Node, var: str) -> str | None:
    """``var < N`` when ``stmt`` is ``if (var >= N) return;`` (braced or not)."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    body = re.sub(r"[\s{}]", "", src.of(stmt.child_by_field_name("consequence")))
    m = re.fullmatch(r"\(\s*" + re.escape(var) + r"\s*>=\s*(\w+)\s*\)",
                     src.of(stmt.child_by_field_name("condition")).strip())
    return f"{var} < {m.group(1)}" if m and body == "return;" else None


def _final_guard(src: Src, stmt: ts.Node, var: str) -> str | None:
    """``var < N`` when ``stmt`` is ``if (var < N) { ... }`` without an else."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None or \
            stmt.child_by_field_name("consequence").type != "compound_statement":
        return None
    m = re.fullmatch(r"\(\s*" + re.escape(var) + r"\s*<\s*(\w+)\s*\)",
                     src.of(stmt.child_by_field_name("condition")).strip())
    return f"{var} < {m.group(1)}" if m else None


def _pure_decl(stmt: ts.Node) -> bool:
    """A declaration that reads no memory and calls nothing (safe for every thread to run)."""
    return stmt.type == "declaration" and not find(stmt, "subscript_expression", "call_expression")


def _safe(node: ts.Node, stop: ts.Node) -> bool:
    """True when nothing between ``node`` and ``stop`` makes its evaluation conditional."""
    cur = node.parent
    while cur is not None and cur != stop:
        if cur.type in ("if_statement", "conditional_expression", "for_statement",
                        "while_statement", "do_statement", "switch_statement"):
            return False
        if cur.type == "binary_expression" and any(c.type in ("&&", "||") for c in cur.children):
            return False
        cur = cur.parent
    return cur == stop


def tile_broadcast_1d(src: Src, kernel: ts.Node, thread_dep: set[str]) -> tuple[str, int] | None:
    """The kernel rewritten with its broadcast loop operands staged in shared memory, and the
    tile size; None when the kernel does not have the recognised shape.

    Shape: ``i = gid;`` then either ``if (i >= N) return; <rest>`` or ``if (i < N) { <rest> }``
    as the last statement, where ``<rest>`` is pure declarations, one counted loop (step 1, no
    barrier, no break) and anything without ``return`` after it. A broadcast operand is a
    never-written pointer parameter read unconditionally in the loop body with an index of the
    loop variable and thread-independent names only. Every launch uses one constant 1-D block
    ``T``; the tile is ``T`` elements and every thread loads one of them per step.
    """
    body = kernel.child_by_field_name("body")
    stmts = [s for s in body.named_children if s.type != "comment"]
    params = pointer_params(src, kernel)
    written = assigned_names(src, kernel)
    for pos, stmt in enumerate(stmts):
        decl = index_decl(src, stmt)
        if decl is None:
            continue
        rest_at = pos + 1
        if rest_at >= len(stmts) or not all(_pure_decl(s) for s in stmts[:pos]):
            return None
        guard = stmts[rest_at]
        cond = _negate_return_guard(src, guard, decl.var)
        if cond is not None:
            rest, end = stmts[rest_at + 1:], body.named_children[-1].end_byte
        else:
            cond = _final_guard(src, guard, decl.var)
            if cond is None or rest_at != len(stmts) - 1:
                return None
            rest = [s for s in guard.child_by_field_name("consequence").named_children
                    if s.type != "comment"]
            end = guard.end_byte
        break
    else:
        return None
    loops = [s for s in rest if s.type == "for_statement"]
    if len(loops) != 1 or any(find(s, "return_statement") for s in rest):
        return None
    at = rest.index(loops[0])
    before, after = rest[:at], rest[at + 1:]
    lp = canonical(src, loops[0])
    if lp is None or lp.step.strip() != "1" or not all(_pure_decl(s) for s in before) or \
            breaks_out(loops[0]) or has_barrier_or_shared(src, loops[0]):
        return None
    invariant = identifiers(src, loops[0].child_by_field_name("initializer")) | \
        identifiers(src, loops[0].child_by_field_name("condition"))
    if (invariant - {lp.var}) & (thread_dep | assigned_names(src, lp.body)):
        return None
    local = assigned_names(src, lp.body) | {decl.var} | thread_dep
    roles: dict[str, str] = {}  # broadcast array -> its index text
    subs: list[ts.Node] = []
    for sub in find(lp.body, "subscript_expression"):
        arr = src.of(sub.child_by_field_name("argument"))
        idx_node = sub.child_by_field_name("indices")
        names = identifiers(src, idx_node)
        if arr not in params or arr in written or lp.var not in names or names & (local - {lp.var}) \
                or find(idx_node, "subscript_expression", "call_expression"):
            continue
        if not _safe(sub, lp.body) and sub != lp.body:
            continue
        idx = src.of(idx_node)[1:-1]
        if roles.setdefault(arr, idx) != idx:
            return None
        subs.append(sub)
    if not roles:
        return None
    dims = {block_dims(src, c) for c in kernel_launches(src, kernel)}
    if len(dims) != 1 or None in dims:
        return None
    (dim,) = dims
    if any(d != 1 for d in dim[1:]) or dim[0] < 1:
        return None
    tile = dim[0]
    ind = indent_of(src, stmts[rest_at])
    k0, kk, op = "k0_", "kk_", lp.op
    lines = [f"__shared__ {params[a].replace('const', '').strip()} {a}_tile_[{tile}];"
             f"  // {tile} consecutive {a}[...] values, shared by the block" for a in roles]
    lines += [dedented(src, s) for s in before]
    lines.append(f"for ({lp.ctype} {k0} = {lp.start}; {k0} {op} {lp.bound}; {k0} += {tile}) {{")
    for a, idx in roles.items():
        elem = params[a].replace("const", "").strip()
        idx_t = re.sub(r"\b" + re.escape(lp.var) + r"\b", f"({k0} + (int)threadIdx.x)", idx)
        lines.append(f"    {a}_tile_[threadIdx.x] = ({k0} + (int)threadIdx.x {op} {lp.bound}) ? "
                     f"{a}[{idx_t}] : ({elem})0;")
    lines += ["    __syncthreads();  // every thread loads and reaches the barriers",
              f"    if ({cond}) {{",
              f"        for (int {kk} = 0; {kk} < {tile} && {k0} + {kk} {op} {lp.bound}; ++{kk}) {{",
              f"            const {lp.ctype} {lp.var} = {k0} + {kk};"]
    edits = [(s.start_byte - lp.body.start_byte, s.end_byte - lp.body.start_byte,
              f"{src.of(s.child_by_field_name('argument'))}_tile_[{kk}]") for s in subs]
    new_body = splice(src.text[lp.body.start_byte:lp.body.end_byte], edits).strip()
    if lp.body.type == "compound_statement":
        new_body = "\n".join(ln.strip() for ln in new_body[1:-1].strip().splitlines())
    lines += [indent_block(new_body, "            "), "        }", "    }",
              "    __syncthreads();", "}"]
    if after:
        lines.append(f"if ({cond}) {{")
        lines += [indent_block(dedented(src, s), "    ") for s in after]
        lines.append("}")
    text = "\n".join(lines[:1] + [indent_block(ln, ind) for ln in lines[1:]])
    if end == guard.end_byte:  # final-guard form: replace the guard statement
        return splice(src.text, [(guard.start_byte, guard.end_byte, text)]), tile
    last = body.named_children[-1]
    return splice(src.text, [(guard.start_byte, last.end_byte, text)]), tile
