"""Tree-sitter helpers shared by the mutation operators: parse, find, and splice text.

Operators edit source text by byte ranges found on the tree-sitter-cuda tree, so everything
they do not touch keeps its original formatting.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

import tree_sitter as ts

from structcover.arith import ExprError, eval_int_expr, from_c
from structcover.tools.cuda_ast import parser, walk
from structcover.tools.mutations._node_index import NodeIndex, lookup, register, unregister


@dataclass(frozen=True)
class Src:
    """A parsed program: its bytes and tree (shared between callers: never edited)."""

    text: bytes
    tree: ts.Tree

    @property
    def root(self) -> ts.Node:
        """The translation unit."""
        return self.tree.root_node

    def of(self, node: ts.Node | None) -> str:
        """Source text of ``node`` ("" for None)."""
        return "" if node is None else self.text[node.start_byte:node.end_byte].decode()


#: Parses kept (with their node indexes), most recently used last.
PARSES = 256
_PARSED: OrderedDict[str, tuple[Src, NodeIndex]] = OrderedDict()
_PARSED_LOCK = threading.Lock()


def parse(source: str) -> Src:
    """Parse CUDA source (cached: a campaign dry-runs every operator on each parent, and each
    operator parses it; operators only read the tree and splice text, so one parse serves
    them all). A cached parse is indexed, so :func:`find` on its nodes walks nothing."""
    with _PARSED_LOCK:
        hit = _PARSED.get(source)
        if hit is not None:
            _PARSED.move_to_end(source)
            return hit[0]
    data = source.encode()
    src = Src(data, parser().parse(data))
    index = NodeIndex(src.root)
    with _PARSED_LOCK:
        hit = _PARSED.get(source)
        if hit is not None:  # another thread parsed it meanwhile: keep one parse per text
            return hit[0]
        _PARSED[source] = (src, index)
        register(index)
        while len(_PARSED) > PARSES:
            unregister(_PARSED.popitem(last=False)[1][1])
    return src


def find(node: ts.Node, *types: str) -> list[ts.Node]:
    """All descendants (and ``node`` itself) of the given types, in document order."""
    found = lookup(node, types)
    return found if found is not None else [n for n in walk(node) if n.type in types]


def splice(text: bytes, edits: list[tuple[int, int, str]]) -> str:
    """Apply non-overlapping (start, end, replacement) byte edits to ``text``.

    Raises:
        ValueError: Two edits overlap.
    """
    out, pos = [], 0
    for start, end, rep in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:start].decode())
        out.append(rep)
        pos = end
    out.append(text[pos:].decode())
    return "".join(out)


def is_kernel(fn: ts.Node) -> bool:
    """True for a ``__global__`` function definition."""
    return fn.type == "function_definition" and any(
        c.type == "__global__" for c in fn.children)


def is_device_code(fn: ts.Node) -> bool:
    """True for ``__global__`` or ``__device__`` function definitions."""
    return fn.type == "function_definition" and any(
        c.type in ("__global__", "__device__") for c in fn.children)


def functions(src: Src) -> list[ts.Node]:
    """Every function definition, in document order."""
    return find(src.root, "function_definition")


def function_name(src: Src, fn: ts.Node) -> str:
    """Name of a function definition."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    name = decl.child_by_field_name("declarator") if decl is not None else None
    return src.of(name)


def kernels(src: Src) -> list[ts.Node]:
    """Every ``__global__`` function definition."""
    return [f for f in functions(src) if is_kernel(f)]


def launches(src: Src) -> list[ts.Node]:
    """Every ``kernel<<<...>>>(...)`` call expression."""
    return [c for c in find(src.root, "call_expression")
            if any(ch.type == "kernel_call_syntax" for ch in c.children)]


def launch_config(call: ts.Node) -> list[ts.Node]:
    """The grid, block, smem and stream nodes of a launch (as many as given)."""
    ksyn = next(ch for ch in call.children if ch.type == "kernel_call_syntax")
    return [ch for ch in ksyn.named_children]


def enclosing(node: ts.Node, *types: str) -> ts.Node | None:
    """Nearest ancestor of one of ``types``."""
    cur = node.parent
    while cur is not None and cur.type not in types:
        cur = cur.parent
    return cur


def identifiers(src: Src, node: ts.Node) -> set[str]:
    """Names of the identifiers used under ``node``."""
    return {src.of(n) for n in find(node, "identifier")}


def rename_text(src: Src, node: ts.Node, mapping: dict[str, str]) -> str:
    """Text of ``node`` with identifiers renamed (whole identifiers only, via the tree)."""
    edits = [(n.start_byte - node.start_byte, n.end_byte - node.start_byte, mapping[src.of(n)])
             for n in find(node, "identifier") if src.of(n) in mapping]
    return splice(src.text[node.start_byte:node.end_byte], edits)


def indent_of(src: Src, node: ts.Node) -> str:
    """Leading whitespace of the line ``node`` starts on."""
    line_start = src.text.rfind(b"\n", 0, node.start_byte) + 1
    line = src.text[line_start:node.start_byte].decode()
    return re.match(r"[ \t]*", line).group(0)


def reindent(text: str, extra: str) -> str:
    """Add ``extra`` to the indentation of every line after the first."""
    lines = text.split("\n")
    return "\n".join([lines[0]] + [(extra + ln) if ln.strip() else ln for ln in lines[1:]])


def int_constants(src: Src) -> dict[str, int]:
    """Integer constants a program names: ``#define X 16``, ``const int X = 16`` and
    ``constexpr int X = 16`` anywhere (last definition wins; good enough for launch config)."""
    consts: dict[str, int] = {}
    for node in find(src.root, "preproc_def"):
        value = src.of(node.child_by_field_name("value")).strip()
        if re.fullmatch(r"\(?\d+\)?", value):
            consts[src.of(node.child_by_field_name("name"))] = int(value.strip("()"))
    for decl in find(src.root, "declaration"):
        text = src.of(decl)
        m = re.match(r"(?:static\s+)?(?:const|constexpr)\s+(?:int|unsigned|unsigned int|size_t)\s+"
                     r"(\w+)\s*=\s*(\d+)\s*;", text)
        if m:
            consts[m.group(1)] = int(m.group(2))
    return consts


def eval_int(text: str, consts: dict[str, int]) -> int | None:
    """Value of a constant integer expression over ``consts``; None when not constant."""
    try:
        return eval_int_expr(from_c(text), consts)
    except ExprError:  # an unknown name or anything beyond arithmetic means "not constant"
        return None


def block_dims(src: Src, call: ts.Node) -> tuple[int, ...] | None:
    """Constant block dimensions of a launch (``256``, ``BLOCK``, ``dim3 b(16, 16)``)."""
    cfg = launch_config(call)
    if len(cfg) < 2:
        return None
    consts = int_constants(src)
    block = cfg[1]
    text = src.of(block)
    if block.type == "identifier":
        fn = enclosing(call, "function_definition")
        for decl in find(fn, "declaration") if fn else []:
            dtext = src.of(decl)
            m = re.match(r"dim3\s+" + re.escape(text) + r"\s*[({]([^)}]*)[)}]", dtext)
            if m is None:
                m = re.match(r"dim3\s+" + re.escape(text) + r"\s*=\s*dim3\s*\(([^)]*)\)", dtext)
            if m:
                vals = [eval_int(p, consts) for p in m.group(1).split(",")]
                return None if None in vals else tuple(vals)
            m = re.match(r"(?:const\s+)?int\s+" + re.escape(text) + r"\s*=\s*([^;]+);", dtext)
            if m:
                val = eval_int(m.group(1), consts)
                return None if val is None else (val,)
    m = re.fullmatch(r"dim3\s*\(([^)]*)\)", text)
    if m:
        vals = [eval_int(p, consts) for p in m.group(1).split(",")]
        return None if None in vals else tuple(vals)
    val = eval_int(text, consts)
    return None if val is None else (val,)


def _parameters(fn: ts.Node) -> list[ts.Node]:
    """The parameter declarations of a function definition, in order."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    return [] if decl is None else find(decl.child_by_field_name("parameters"),
                                        "parameter_declaration")


def param_names(src: Src, fn: ts.Node) -> list[str]:
    """A function's parameter names, in order (empty for an unnamed one)."""
    names = []
    for param in _parameters(fn):
        ids = find(param, "identifier")
        names.append(src.of(ids[-1]) if ids else "")
    return names


def pointer_params(src: Src, fn: ts.Node) -> dict[str, str]:
    """Pointer parameters of a function: name -> element type text (e.g. ``float``)."""
    out: dict[str, str] = {}
    for param in _parameters(fn):
        ptr = param.child_by_field_name("declarator")
        if ptr is not None and ptr.type == "pointer_declarator":
            name = ptr.child_by_field_name("declarator")
            out[src.of(name)] = src.of(param.child_by_field_name("type"))
    return out


def is_read(sub: ts.Node) -> bool:
    """True when the subscript expression ``sub`` reads its element: it is not an
    assignment's target, an increment's operand or an address taken (``&p[i]``)."""
    parent = sub.parent
    if parent is None:
        return True
    if parent.type in ("pointer_expression", "update_expression"):
        return False
    return not (parent.type == "assignment_expression"
                and parent.child_by_field_name("left") == sub)


def assigned_names(src: Src, node: ts.Node) -> set[str]:
    """Names written under ``node``: ``x = ``, ``x += ``, ``x++``, ``a[i] = `` (gives ``a``)."""
    out: set[str] = set()
    for n in find(node, "assignment_expression", "update_expression"):
        target = n.child_by_field_name("left") or n.child_by_field_name("argument")
        while target is not None and target.type in (
                "subscript_expression", "parenthesized_expression", "field_expression",
                "pointer_expression"):
            target = target.child_by_field_name("argument") or (
                target.named_children[0] if target.named_children else None)
        if target is not None and target.type == "identifier":
            out.add(src.of(target))
    for n in find(node, "call_expression"):
        # atomicAdd(&x[i], v) writes x
        if src.of(n.child_by_field_name("function")).startswith("atomic"):
            args = n.child_by_field_name("arguments")
            if args is not None and args.named_children:
                out |= {src.of(i) for i in find(args.named_children[0], "identifier")[:1]}
    return out


def declared_names(src: Src, node: ts.Node) -> set[str]:
    """Names declared under ``node`` (local variables, loop variables)."""
    out: set[str] = set()
    for decl in find(node, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator")
            if d is not None:
                out.add(src.of(d))
    return out


def dedented(src: Src, node: ts.Node) -> str:
    """Text of ``node`` with its lines' common indentation removed (the first line counts at
    the indentation of the line ``node`` starts on)."""
    import textwrap

    return textwrap.dedent(indent_of(src, node) + src.of(node)).strip("\n")


def inner_statements(src: Src, body: ts.Node) -> str:
    """The statements of a block body without its braces, dedented; a single statement as is."""
    import textwrap

    if body.type != "compound_statement":
        return dedented(src, body)
    inner = src.text[body.start_byte + 1:body.end_byte - 1].decode()
    return textwrap.dedent(inner.strip("\n")).strip("\n").strip() if "\n" not in inner.strip() \
        else textwrap.dedent(inner.strip("\n").rstrip()).strip("\n")


def indent_block(text: str, prefix: str) -> str:
    """Prefix every non-empty line of ``text`` with ``prefix``."""
    return "\n".join((prefix + ln) if ln.strip() else ln for ln in text.split("\n"))
