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
_F_DEFAULT_TYPE = field_id("default_type")
_F_DEFAULT_VALUE = field_id("default_value")
_F_FUNCTION = field_id("function")
_F_NAME = field_id("name")

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
    accesses inside helpers (``block_reduce(float* red)``) count as shared, and record every
    device function's call sites (``facts.calls_to``) so its parameters can be bound."""
    callees = {f.name: f for f in facts.funcs if f.kind == "device"}
    if not callees:
        return
    for func in facts.funcs:
        for name, site in func.calls:
            # ``wt::load(...)``: a helper in a namespace is called by its qualified name.
            callee = callees.get(name) or callees.get(name.rsplit(b"::", 1)[-1])
            args = site.node.child_by_field_id(_F_ARGUMENTS) if callee is not None else None
            if callee is None or args is None:
                continue
            if func.is_device and callee is not func:
                facts.calls_to.setdefault(callee.name, []).append((func, site.node))
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


def _template_params(tdecl: Node) -> list[tuple[bytes, Node | None]]:
    """(name, default value node) of each parameter of a template declaration."""
    plist = next((c for c in tdecl.named_children if c.type == "template_parameter_list"), None)
    out: list[tuple[bytes, Node | None]] = []
    for p in plist.named_children if plist is not None else ():
        name_node = p.child_by_field_id(_F_DECLARATOR)
        if name_node is None:
            name_node = next((c for c in p.named_children
                              if c.type in ("identifier", "type_identifier")), None)
        default = p.child_by_field_id(_F_DEFAULT_VALUE) or p.child_by_field_id(_F_DEFAULT_TYPE)
        if name_node is not None:
            out.append((name_node.text, default))
    return out


def _instantiations(facts: Facts) -> dict[bytes, list[Node]]:
    """Template arguments of the first instantiation of each function, by function name:
    launch sites (``k<128, 8><<<...>>>``) first, then explicit instantiations."""
    found: dict[bytes, list[Node]] = {}
    fns = [c.child_by_field_id(_F_FUNCTION) for c in facts.launches]
    root = facts.parsed.root
    for child in root.children if facts.templates else ():
        if child.type == "template_instantiation":
            decl = child.child_by_field_id(_F_DECLARATOR)
            fns.append(decl.child_by_field_id(_F_DECLARATOR) if decl is not None else None)
    for fn in fns:
        if fn is None or fn.type != "template_function":
            continue
        name = fn.child_by_field_id(_F_NAME)
        args = fn.child_by_field_id(_F_ARGUMENTS)
        if name is not None and args is not None and name.text not in found:
            found[name.text] = list(args.named_children)
    return found


def bind_templates(facts: Facts) -> None:
    """Fix template parameters of function templates where the source does: the first
    launch or explicit instantiation, else the parameter's default argument."""
    if not facts.templates:
        return
    inst: dict[bytes, list[Node]] | None = None
    for func in facts.funcs:
        parent = func.node.parent
        if parent is None or parent.type != "template_declaration":
            continue
        if inst is None:
            inst = _instantiations(facts)
        args = inst.get(func.name, [])
        for i, (name, default) in enumerate(_template_params(parent)):
            value = args[i] if i < len(args) else default
            if value is not None:
                func.template_values[name] = value


def mark_shared_handles(facts: Facts) -> None:
    """Record the structs whose member functions declare a shared array
    (``facts.shared_handles``; a specialization ``S<double>`` counts as ``S``)."""
    for func in facts.funcs:
        if not func.shared or func.node.parent is None \
                or func.node.parent.type != "field_declaration_list":
            continue
        owner = func.node.parent.parent
        name = owner.child_by_field_id(_F_NAME) if owner is not None else None
        if owner is not None and owner.type in ("struct_specifier", "class_specifier") \
                and name is not None:
            facts.shared_handles.add(name.text.split(b"<", 1)[0].strip())


def _member(func: Func) -> bool:
    parent = func.node.parent
    return parent is not None and parent.type == "field_declaration_list"


def drop_unreachable_helpers(facts: Facts) -> None:
    """Drop ``__device__`` helpers that no kernel or host function calls, directly or
    through other helpers: dead code is not the kernel's structure, and an unused helper
    full of shuffles must not make a kernel read as warp-level. Programs without a kernel
    (a header of helpers) keep everything; struct members (called implicitly, like a
    conversion operator) are kept."""
    if not any(f.kind == "global" for f in facts.funcs):
        return
    helpers: dict[bytes, list[Func]] = {}
    for func in facts.funcs:
        if func.kind == "device" and not _member(func):
            helpers.setdefault(func.name, []).append(func)
    if not helpers:
        return
    reached: set[bytes] = set()
    todo = [f for f in facts.funcs if f.kind != "device" or _member(f)]
    while todo:
        func = todo.pop()
        for name, _ in func.calls:
            for key in (name, name.rsplit(b"::", 1)[-1]):
                if key in helpers and key not in reached:
                    reached.add(key)
                    todo.extend(helpers[key])
    facts.funcs = [f for f in facts.funcs
                   if f.kind != "device" or _member(f) or f.name in reached]
