"""Loop fusion and fission, where the statements involved are independent."""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._loops import breaks_out, canonical, device_loops
from structcover.tools.mutations._patterns import has_barrier_or_shared
from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    declared_names,
    dedented,
    identifiers,
    indent_block,
    indent_of,
    parse,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator


def _independent(src: Src, first: list[ts.Node], second: list[ts.Node], loop_var: str) -> bool:
    """True when neither group writes a name the other reads or writes (the loop variable
    aside), so running all of one group's iterations before the other's changes nothing."""
    def names(nodes: list[ts.Node], fn) -> set[str]:
        out: set[str] = set()
        for n in nodes:
            out |= fn(src, n)
        return out

    w1, w2 = names(first, assigned_names), names(second, assigned_names)
    r1, r2 = names(first, identifiers), names(second, identifiers)
    d1 = names(first, declared_names)
    if loop_var in w1 | w2:
        return False
    if d1 & r2:  # a local of the first group used by the second
        return False
    return not (w1 & (r2 | w2)) and not (w2 & r1)


def _header(src: Src, node: ts.Node) -> str:
    body = node.child_by_field_name("body")
    return src.text[node.start_byte:body.start_byte].decode().rstrip()


def _statements(body: ts.Node) -> list[ts.Node]:
    return [s for s in body.named_children if s.type != "comment"]


@operator("loop_fission", family="fusion")
def loop_fission(program: str) -> MutationResult:
    """Split a device loop into two loops over the same range, at the first point where the
    two statement groups are independent.

    Moves:
        loop.count: up

    Applies to counted loops with a braced body of two or more statements, no barrier, warp
    collective or shared memory, no break/continue, where the groups share no written name
    (neither writes what the other reads or writes, and the first declares nothing the
    second uses). Not applicable when no such split exists.
    """
    src = parse(program)
    b = Builder("loop_fission", program)
    for node in device_loops(src):
        loop = canonical(src, node)
        if loop is None or loop.body.type != "compound_statement" or breaks_out(node) or \
                has_barrier_or_shared(src, loop.body):
            continue
        stmts = _statements(loop.body)
        bound_names = identifiers(src, node.child_by_field_name("condition"))
        if bound_names & assigned_names(src, loop.body):
            continue
        for k in range(1, len(stmts)):
            if not _independent(src, stmts[:k], stmts[k:], loop.var):
                continue
            ind = indent_of(src, node)
            head = _header(src, node)
            parts = [head + " {", indent_block("\n".join(dedented(src, s) for s in stmts[:k]),
                                                ind + "    "), ind + "}",
                     ind + head + " {", indent_block("\n".join(dedented(src, s) for s in stmts[k:]),
                                                      ind + "    "), ind + "}"]
            b.add(splice(src.text, [(node.start_byte, node.end_byte, "\n".join(parts))]),
                  split_at=k)
            return b.done()
    return b.done("no device loop whose body splits into independent statement groups")


@operator("loop_fusion", family="fusion")
def loop_fusion(program: str) -> MutationResult:
    """Fuse two adjacent device loops with the same header into one loop.

    Moves:
        loop.count: down

    Applies to consecutive sibling counted loops whose headers are identical and whose
    bodies are independent (as for ``loop_fission``), with no barrier, warp collective,
    shared memory or break/continue. Not applicable otherwise.
    """
    src = parse(program)
    b = Builder("loop_fusion", program)
    for node in device_loops(src):
        nxt = node.next_named_sibling
        while nxt is not None and nxt.type == "comment":
            nxt = nxt.next_named_sibling
        if nxt is None or nxt.type != "for_statement":
            continue
        l1, l2 = canonical(src, node), canonical(src, nxt)
        if l1 is None or l2 is None:
            continue
        if re.sub(r"\s+", "", _header(src, node)) != re.sub(r"\s+", "", _header(src, nxt)):
            continue
        if any(breaks_out(n) or has_barrier_or_shared(src, n) for n in (node, nxt)):
            continue
        if identifiers(src, node.child_by_field_name("condition")) & (
                assigned_names(src, l1.body) | assigned_names(src, l2.body)):
            continue
        if not _independent(src, [l1.body], [l2.body], l1.var) or \
                declared_names(src, l1.body) & declared_names(src, l2.body):
            continue
        ind = indent_of(src, node)
        from structcover.tools.mutations._tree import inner_statements

        text = "\n".join([_header(src, node) + " {",
                          indent_block(inner_statements(src, l1.body), ind + "    "),
                          indent_block(inner_statements(src, l2.body), ind + "    "), ind + "}"])
        b.add(splice(src.text, [(node.start_byte, nxt.end_byte, text)]))
        return b.done()
    return b.done("no two adjacent device loops with the same header and independent bodies")
