"""Facts read from declarations: functions and their parameters, shared arrays, and which
device-function parameters receive shared arrays from their callers."""

from __future__ import annotations

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.model import Facts, Func, Param, declarator_name, vector_width

_F_ARGUMENT = field_id("argument")
_F_ARGUMENTS = field_id("arguments")
_F_DECLARATOR = field_id("declarator")
_F_LEFT = field_id("left")
_F_PARAMETERS = field_id("parameters")
_F_SIZE = field_id("size")

_QUALS = frozenset({"__global__", "__device__", "__host__"})


def function_facts(node: Node, src: bytes) -> Func:
    """A function definition's kind (host/device/global), name and device parameters."""
    kind = "host"
    decl = node.child_by_field_id(_F_DECLARATOR)
    # The qualifier tokens precede the declarator: when its text holds none of them, the
    # walk over the children (one node object each) cannot find any.
    head = src[node.start_byte:decl.start_byte if decl is not None else node.end_byte]
    quals = b"__global__" in head or b"__device__" in head or b"__host__" in head
    for child in node.children if quals else ():
        if not child.is_named and child.type in _QUALS:
            if child.type == "__global__":
                kind = "global"
            elif kind == "host":
                kind = "device" if child.type == "__device__" else kind
    func = Func(node, declarator_name(decl) or b"", kind)
    if kind == "host":
        return func  # only device code reads parameters (memory spaces, shared bindings)
    plist = decl.child_by_field_id(_F_PARAMETERS) if decl is not None else None
    if plist is None and decl is not None:
        plist = next((c for c in decl.named_children if c.type == "parameter_list"), None)
    for p in (plist.named_children if plist is not None else ()):
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        text = p.text
        d = p.child_by_field_id(_F_DECLARATOR)
        name = declarator_name(d)
        if name is None:
            continue
        pointer = b"*" in text or b"[" in text
        func.params[name] = Param(name, pointer, b"__restrict__" in text or b"restrict" in text,
                                  text.lstrip().startswith(b"const") or b" const" in text,
                                  vector_width(text) if pointer else 1)
    return func


def shared_dims(decl: Node) -> tuple[bytes | None, list[Node]]:
    """Name and dimension-size nodes of a ``__shared__`` array declarator (outermost first)."""
    dims: list[Node] = []
    node = decl
    while node is not None and node.type in ("array_declarator", "init_declarator"):
        if node.type == "array_declarator":
            size = node.child_by_field_id(_F_SIZE)
            if size is not None:
                dims.append(size)
        node = node.child_by_field_id(_F_DECLARATOR)
    dims.reverse()
    return declarator_name(decl), dims


def mark_shared_params(facts: Facts) -> None:
    """Mark pointer parameters of device functions that callers pass shared arrays to, so
    accesses inside helpers (``block_reduce(float* red)``) count as shared."""
    callees = {f.name: f for f in facts.funcs if f.kind == "device"}
    if not callees:
        return
    for func in facts.funcs:
        for name, site in func.calls:
            callee = callees.get(name)
            args = site.node.child_by_field_id(_F_ARGUMENTS) if callee is not None else None
            if args is None:
                continue
            params = list(callee.params)
            for i, arg in enumerate(args.named_children[:len(params)]):
                base = arg
                for _ in range(8):  # &s[k], s + off, (s) -> s
                    if base.type == "identifier":
                        break
                    nxt = (base.child_by_field_id(_F_ARGUMENT) or base.child_by_field_id(_F_LEFT)
                           or (base.named_children[0] if base.named_children else None))
                    if nxt is None:
                        break
                    base = nxt
                if base.type == "identifier" and (base.text in func.shared
                                                  or base.text in facts.file_shared):
                    facts.shared_params.add((callee.name, params[i]))
