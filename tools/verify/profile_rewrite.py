"""The profile variant's source pass: wrap device memory accesses and branch conditions.

``instrument(source)`` runs before ``rewriter.rewrite`` (which then does its usual edits on the
result) and only inserts text, so line numbers and every other edit stay as they were:

* an access to memory in a ``__global__`` / ``__device__`` function (``a[i]``, ``*p``, ``p->x``,
  ``s[i][j]``, ``a[i].x``, a ``__shared__`` scalar) becomes ``::sc::prof_mem(E, SITE, KIND)``,
  which notes the address and returns ``E`` itself (same reference, same value), KIND being load,
  store (left of ``=``) or read-modify-write (left of ``+=``, ``++``);
* the address argument of an ``atomic*`` call becomes ``::sc::prof_atom(ADDR, SITE)``;
* the condition of an ``if`` / ``while`` / ``for`` / ``do`` becomes ``::sc::prof_br(C, SITE)``
  (the same truth value);
* arithmetic, compound assignments, increments and math calls go through the counting helpers
  of ``runtime/sc_prof.hpp`` (``profile_ops``: classified by the compiler, by C++ types).

What is not wrapped: thread-private storage (non-pointer locals, local arrays, by-value
parameters), ``__constant__`` arrays, operands of ``&``, ``sizeof``, ``decltype``; macro bodies
(text to the parser). ``a[i][j]`` counts as one access (a 2-D array); through ``float** p`` it
would be two on a GPU. Each site gets a number; ``Site`` says where it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from structcover.tools.cuda_ast import parser, walk
from structcover.tools.verify.profile_ops import op_edits
from structcover.tools.verify.strict_rewrite import local_names

KINDS = ("load", "store", "rmw", "atomic", "branch")
_ALIGN = re.compile(r"__align__\s*\(\s*\d+\s*\)")
_CONSTANT = re.compile(r"__constant__[^;{}()]*?\b([A-Za-z_]\w*)\s*(?:\[|=|;)")
_NO_ACCESS = ("sizeof_expression", "alignof_expression", "decltype", "offsetof_expression",
              "template_argument_list", "type_descriptor")
_COMPOUND = re.compile(r"^(?:<<=|>>=|[-+*/%&|^]=)$")


@dataclass(frozen=True)
class Site:
    """One instrumented place in the program."""

    site: int
    kind: str      # one of KINDS
    line: int      # 1-based line in the original source
    text: str      # the expression (shortened)


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _strip(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def _arg(node: Node) -> Node:
    return node.child_by_field_name("argument") or node.named_children[0]


def _op(node: Node, src: bytes) -> str:
    op = node.child_by_field_name("operator")
    return _text(op, src) if op is not None else ""


class _Pass:
    def __init__(self, src: bytes, constants: set[str]):
        self.src = src
        self.constants = constants
        self.wraps: list[tuple[int, int, str, str]] = []
        self.subs: list[tuple[int, int, str]] = []
        self.sites: list[Site] = []

    def new_site(self, node: Node, kind: str) -> int:
        k = len(self.sites)
        text = " ".join(_text(node, self.src).split())
        self.sites.append(Site(k, kind, node.start_point[0] + 1, text[:60]))
        return k

    def private_base(self, node: Node, local: set[str]) -> bool:
        """Whether a subscript's base is thread-private (a local array) or constant memory."""
        node = _strip(node)
        if node.type == "subscript_expression":
            return self.private_base(_arg(node), local)
        if node.type == "field_expression" and _op(node, self.src) == ".":
            return self.private_base(_arg(node), local)
        if node.type == "identifier":
            name = _text(node, self.src)
            return name in local or name in self.constants
        return False

    def is_access(self, node: Node, local: set[str], shared: set[str]) -> bool:
        kind = node.type
        if kind == "subscript_expression":
            return not self.private_base(_arg(node), local)
        if kind == "pointer_expression":
            return _op(node, self.src) == "*"
        if kind == "field_expression":
            if _op(node, self.src) == "->":
                return True
            inner = _strip(_arg(node))
            return self.is_access(inner, local, shared)
        if kind == "identifier":
            return _text(node, self.src) in shared
        return False

    def access_kind(self, node: Node) -> str | None:
        """load / store / rmw for an outermost access, None where it is no access at all."""
        child, parent = node, node.parent
        while parent is not None and parent.type == "parenthesized_expression":
            child, parent = parent, parent.parent
        if parent is None:
            return "load"
        ptype = parent.type
        if ptype in ("subscript_expression", "field_expression") and _arg(parent).id == child.id:
            if ptype == "field_expression" and _op(parent, self.src) == "->":
                return "load"  # `a[i]->x`: the pointer itself is loaded
            return None  # part of a larger access (`s[i][j]`, `a[i].x`)
        fn = parent.child_by_field_name("function")
        if ptype == "call_expression" and fn is not None and fn.id == child.id:
            return None
        if ptype == "pointer_expression" and _op(parent, self.src) == "&":
            return None
        left = parent.child_by_field_name("left")
        if ptype == "assignment_expression" and left is not None and left.id == child.id:
            return "rmw" if _COMPOUND.match(_op(parent, self.src)) else "store"
        if ptype == "update_expression":
            return "rmw"
        return "load"

    def function(self, fn: Node) -> None:
        src = self.src
        local = local_names(fn, src)
        shared: set[str] = set()
        for node in walk(fn):
            if node.type == "declaration" and any(
                    c.type == "type_qualifier" and _text(c, src) == "__shared__" for c in node.children):
                for decl in node.children_by_field_name("declarator"):
                    if decl.type == "init_declarator":
                        decl = decl.child_by_field_name("declarator") or decl
                    if decl.type == "identifier":
                        shared.add(_text(decl, src))
        stack = [fn]
        while stack:
            node = stack.pop()
            kind = node.type
            if kind in _NO_ACCESS or (kind == "declaration" and node.parent is not None
                                      and node.parent.type == "translation_unit"):
                continue
            if kind == "declaration" and node.id != fn.id:
                # Declarators are not accesses; only their initializers are code.
                for decl in node.children_by_field_name("declarator"):
                    value = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
                    if value is not None:
                        stack.append(value)
                continue
            if self.is_access(node, local, shared):
                how = self.access_kind(node)
                if how is not None:
                    k = self.new_site(node, how)
                    self.wraps.append((node.start_byte, node.end_byte, "::sc::prof_mem(",
                                       f", {k}, {KINDS.index(how)})"))
            if kind == "call_expression":
                self.atomic(node)
            if kind in ("if_statement", "while_statement", "for_statement", "do_statement"):
                self.branch(node)
            stack.extend(node.named_children)

    def atomic(self, call: Node) -> None:
        fn = call.child_by_field_name("function")
        args = call.child_by_field_name("arguments")
        if fn is None or fn.type != "identifier" or not _text(fn, self.src).startswith("atomic"):
            return
        if args is None or not args.named_children:
            return
        first = args.named_children[0]
        k = self.new_site(call, "atomic")
        self.wraps.append((first.start_byte, first.end_byte, "::sc::prof_atom(", f", {k})"))

    def branch(self, stmt: Node) -> None:
        if stmt.type == "if_statement" and any(_text(c, self.src) == "constexpr" for c in stmt.children):
            return
        cond = stmt.child_by_field_name("condition")
        if cond is None:
            return
        if cond.type in ("condition_clause", "parenthesized_expression"):
            value = cond.child_by_field_name("value") if cond.type == "condition_clause" else None
            inner = [c for c in cond.named_children if c.type != "comment"]
            cond = value if value is not None else (inner[0] if len(inner) == 1 else None)
        if cond is None or cond.type in ("declaration", "init_statement", "comma_expression") \
                or cond.type.endswith("declarator"):
            return
        k = self.new_site(cond, "branch")
        self.wraps.append((cond.start_byte, cond.end_byte, "::sc::prof_br(", f", {k})"))


def _apply(src: bytes, wraps: list[tuple[int, int, str, str]],
           subs: Sequence[tuple[int, int, str]] = ()) -> bytes:
    """Insert every wrapper's prefix and suffix (nested wrappers nest properly) and replace the
    ``subs`` ranges (operator tokens: no wrapper starts or ends inside one)."""
    events: list[tuple[int, int, int, int, str, int]] = []
    for i, (start, end, pre, post) in enumerate(wraps):
        span = end - start
        events.append((start, 2, -span, i, pre, start))   # opens: outermost (then first made) first
        events.append((end, 0, span, -i, post, end))      # closes before opens; innermost first
    for start, end, text in subs:
        events.append((start, 1, 0, 0, text, end))        # after the closes at its start
    events.sort(key=lambda e: e[:4])
    out, pos = [], 0
    for at, _, _, _, text, skip_to in events:
        out.append(src[pos:at])
        out.append(text.encode())
        pos = skip_to
    out.append(src[pos:])
    return b"".join(out)


def instrument(source: str) -> tuple[str, list[Site]]:
    """The profile variant of ``source`` (same lines) and its numbered sites."""
    raw = source.encode("utf-8", "surrogatepass")
    parsed = _ALIGN.sub(lambda m: " " * len(m.group(0).encode()), source).encode("utf-8", "surrogatepass")
    tree = parser().parse(parsed)
    p = _Pass(parsed, set(_CONSTANT.findall(source)))
    for node in walk(tree.root_node):
        if node.type == "function_definition" and any(
                c.type in ("__global__", "__device__") for c in node.children):
            p.function(node)
            body = node.child_by_field_name("body")
            if body is not None:
                wraps, subs = op_edits(body, parsed)
                p.wraps.extend(wraps)
                p.subs.extend(subs)
    return _apply(raw, p.wraps, p.subs).decode("utf-8", "surrogatepass"), p.sites
