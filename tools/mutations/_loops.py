"""Canonical counted loops (``for (int i = a; i < b; i += c)``) found on the tree."""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from structcover.tools.mutations._tree import Src, enclosing, find, is_device_code


@dataclass
class Loop:
    """A counted loop whose variable is declared in its header."""

    node: ts.Node
    var: str
    ctype: str
    start: str
    op: str  # "<" or "<="
    bound: str
    step: str
    body: ts.Node


def canonical(src: Src, node: ts.Node) -> Loop | None:
    """The loop's parts when ``node`` is ``for (T i = a; i < b; i++ | ++i | i += c)``."""
    init = node.child_by_field_name("initializer")
    cond = node.child_by_field_name("condition")
    upd = node.child_by_field_name("update")
    body = node.child_by_field_name("body")
    if init is None or cond is None or upd is None or body is None or init.type != "declaration":
        return None
    m = re.fullmatch(r"((?:const\s+)?(?:unsigned\s+)?(?:int|long long|long|size_t|unsigned))\s+(\w+)"
                     r"\s*=\s*(.+?);?", src.of(init).strip(), re.S)
    if not m:
        return None
    ctype, var, start = m.group(1), m.group(2), m.group(3).strip().rstrip(";")
    if cond.type != "binary_expression":
        return None
    op = src.of(cond.child_by_field_name("operator"))
    if op not in ("<", "<=") or src.of(cond.child_by_field_name("left")) != var:
        return None
    bound = src.of(cond.child_by_field_name("right"))
    utext = re.sub(r"\s+", "", src.of(upd))
    if utext in (f"{var}++", f"++{var}"):
        step = "1"
    else:
        um = re.fullmatch(re.escape(var) + r"\+=(.+)", utext)
        if not um:
            return None
        step = src.of(upd.child_by_field_name("right"))
    if var in {src.of(n) for n in find(cond.child_by_field_name("right"), "identifier")}:
        return None
    return Loop(node, var, ctype, start, op, bound, step, body)


def breaks_out(loop_node: ts.Node) -> bool:
    """True when the loop body has a break/continue that targets this loop."""
    body = loop_node.child_by_field_name("body")
    for stmt in find(body, "break_statement", "continue_statement"):
        owner = enclosing(stmt, "for_statement", "while_statement", "do_statement",
                          "switch_statement")
        if owner == loop_node:
            return True
    return False


def device_loops(src: Src) -> list[ts.Node]:
    """``for`` loops inside ``__global__``/``__device__`` functions, in document order."""
    out = []
    for fn in find(src.root, "function_definition"):
        if is_device_code(fn):
            out.extend(find(fn, "for_statement"))
    return out


def pragma_before(src: Src, node: ts.Node) -> ts.Node | None:
    """The ``#pragma unroll`` directly before ``node``, if any."""
    prev = node.prev_sibling
    if prev is not None and prev.type == "preproc_call" and "unroll" in src.of(prev):
        return prev
    return None
