"""Pointer expressions reduced to (base array, memory space, element offset, vector width).

Follows what real kernels do with pointers: parameters advanced in place
(``A += cRow * BM * K``), local aliases (``float* q = &x[i]``, ``auto p = A + off``,
``&tile[r][c]``), casts to vector types (``reinterpret_cast<const float4*>(x + off)``, which
re-express the offset in the new element unit), and helper parameters bound at their call
site (``load(A + row * K, k)``).
"""

from __future__ import annotations

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.dataflow import Resolver, resolver_for
from structcover.tools.features.model import Facts, Func, vector_width
from structcover.tools.features.poly import Indirect, NotAffine, Poly, add, mul

_F_ARGUMENT = field_id("argument")
_F_ARGUMENTS = field_id("arguments")
_F_FUNCTION = field_id("function")
_F_INDICES = field_id("indices")
_F_LEFT = field_id("left")
_F_OPERATOR = field_id("operator")
_F_RIGHT = field_id("right")
_F_TYPE = field_id("type")
_F_VALUE = field_id("value")

_CASTS = (b"reinterpret_cast", b"static_cast", b"const_cast")


class Skip(Exception):
    """Not a memory access we classify (local array, struct field, unknown base)."""


def base_space(facts: Facts, func: Func, name: bytes) -> str | None:
    """Memory space of a named base: shared, global, constant, or None (registers/unknown)."""
    if name in func.shared or name in facts.file_shared:
        return "shared"
    param = func.params.get(name)
    if param is not None:
        if not param.pointer:
            return None
        return "shared" if (func.name, name) in facts.shared_params else "global"
    if name in facts.constant_vars:
        return "constant"
    if name in facts.device_globals:
        return "global"
    return None


def address_space(facts: Facts, func: Func, addr: Node) -> str:
    """``shared`` or ``global``: the space of the array an address expression points into
    (``&s[i]``, ``s + k``, a local pointer to it), read off its base name; an atomic's
    first argument is one."""
    node: Node | None = addr
    for _ in range(32):
        if node is None:
            break
        t = node.type
        if t == "identifier":
            space = base_space(facts, func, node.text)
            if space is None and node.text in func.local_ptrs:
                defs = func.defs.get(node.text, [])
                node = defs[0][1] if defs else None
                continue
            return "shared" if space == "shared" else "global"
        if t in ("pointer_expression", "subscript_expression", "parenthesized_expression",
                 "cast_expression", "field_expression"):
            node = node.child_by_field_id(_F_ARGUMENT) or node.child_by_field_id(_F_VALUE) \
                or (node.named_children[-1] if node.named_children else None)
        elif t == "binary_expression":
            node = node.child_by_field_id(_F_LEFT)
        else:
            break
    return "global"


def pointer_form(facts: Facts, func: Func, res: Resolver, node: Node,
                 depth: int = 0) -> tuple[bytes, str, Poly, int]:
    """Reduce a pointer expression to (base name, space, element offset, vector width).

    Raises:
        Skip: The base is not a global/shared/constant array.
        NotAffine, Indirect: The offset does not reduce.
    """
    if depth > 16:
        raise Skip
    t = node.type
    if t == "identifier":
        name = node.text
        space = base_space(facts, func, name)
        if space is not None:
            param = func.params.get(name)
            form = None
            if param is not None and func.kind == "device" and depth < 8:
                form = _bound_pointer(facts, func, name, depth)
            if form is None:
                if param is not None:
                    width = param.vector
                else:  # a shared array of a vector type (__shared__ float4 buf[...])
                    arr = func.shared.get(name) or facts.file_shared.get(name)
                    width = vector_width(arr.type_text) if arr is not None else 1
                form = name, space, {}, width
            return _advanced(func, res, name, form)
        if name not in func.local_arrays:
            # A local pointer (`float* q = &x[i]`, `auto p = A + off`): the definitions that
            # reach this use (one pointer name may be declared in sibling blocks).
            defs = [v for op, v in res.definitions_at(name, node.start_byte)
                    if op in ("decl", "=")]
            if len(defs) == 1:
                form = pointer_form(facts, func, res, defs[0], depth + 1)
                return _advanced(func, res, name, form)
            for value in defs:
                try:
                    pointer_form(facts, func, res, value, depth + 1)
                except Skip:
                    continue
                except (NotAffine, Indirect):
                    pass
                # Reassigned to point into memory: an access, though its offset has no one
                # form (counted unknown, never dropped).
                raise NotAffine("pointer with several definitions")
        raise Skip
    if t == "parenthesized_expression" and node.named_children:
        return pointer_form(facts, func, res, node.named_children[-1], depth + 1)
    if t == "binary_expression":
        op = node.child_by_field_id(_F_OPERATOR)
        left = node.child_by_field_id(_F_LEFT)
        right = node.child_by_field_id(_F_RIGHT)
        if op is None or left is None or right is None or op.type not in ("+", "-"):
            raise Skip
        name, space, off, width = pointer_form(facts, func, res, left, depth + 1)
        extra, _ = res.resolve(right)
        sign = 1.0 if op.type == "+" else -1.0
        merged = dict(off)
        for m, c in extra.items():
            merged[m] = merged.get(m, 0.0) + sign * c
        return name, space, merged, width
    if t == "pointer_expression" and node.child(0).type == "&":
        arg = node.child_by_field_id(_F_ARGUMENT)
        if arg is not None and arg.type == "subscript_expression":
            indices: list[Node] = []
            base = arg
            while base is not None and base.type == "subscript_expression":
                idx = index_node(base)
                if idx is None:
                    raise Skip
                indices.append(idx)
                base = base.child_by_field_id(_F_ARGUMENT)
            if base is None:
                raise Skip
            indices.reverse()
            name, space, off, width = pointer_form(facts, func, res, base, depth + 1)
            sizes: list[Node] = []
            if len(indices) > 1:  # &tile[r][c]: row-major over the declared sizes
                arr = func.shared.get(name) or facts.file_shared.get(name)
                if arr is None or len(arr.dims) != len(indices):
                    raise Skip
                sizes = arr.dims
            merged = dict(off)
            for i, idx in enumerate(indices):
                term, _ = res.resolve(idx)
                for dim in sizes[i + 1:]:
                    term = mul(term, res.resolve(dim)[0])
                merged = add(merged, term)
            return name, space, merged, width
        raise Skip
    if t == "call_expression" and facts.shared_handles:
        fn = node.child_by_field_id(_F_FUNCTION)
        handle = fn.text.split(b"<", 1)[0].strip() if fn is not None else b""
        if handle in facts.shared_handles:
            return handle, "shared", {}, 1
    if t in ("call_expression", "cast_expression"):
        if t == "call_expression":
            fn = node.child_by_field_id(_F_FUNCTION)
            if fn is None or fn.type != "template_function" or not fn.text.startswith(_CASTS):
                raise Skip
            args = node.child_by_field_id(_F_ARGUMENTS)
            inner = args.named_children[0] if args is not None and args.named_children else None
            type_text = fn.text
        else:
            inner = node.child_by_field_id(_F_VALUE)
            tnode = node.child_by_field_id(_F_TYPE)
            type_text = tnode.text if tnode is not None else b""
        if inner is None:
            raise Skip
        name, space, off, width = pointer_form(facts, func, res, inner, depth + 1)
        new_width = vector_width(type_text)
        # Offsets so far are in the old element unit; re-express them in the new one.
        scale = width / new_width
        return name, space, {m: c * scale for m, c in off.items()}, new_width
    raise Skip


def _advanced(func: Func, res: Resolver, name: bytes,
              form: tuple[bytes, str, Poly, int]) -> tuple[bytes, str, Poly, int]:
    """Add the pointer's own increments (``A += cRow * BM * K``, ``p -= k``) to its offset.

    Every increment in the function is added once: a loop-carried step (``A += BK`` per
    tile) is warp-uniform, so the sum keeps the per-lane coefficient the classification
    reads.
    """
    base, space, off, width = form
    incs = [(op, v) for op, v in func.defs.get(name, ()) if op in ("+=", "-=")]
    if not incs:
        return form
    merged = dict(off)
    for op, value in incs:
        extra, _ = res.resolve(value)
        sign = 1.0 if op == "+=" else -1.0
        for m, c in extra.items():
            merged[m] = merged.get(m, 0.0) + sign * c
    return base, space, {m: c for m, c in merged.items() if c != 0}, width


def _bound_pointer(facts: Facts, func: Func, name: bytes,
                   depth: int) -> tuple[bytes, str, Poly, int] | None:
    """A helper's pointer parameter as its first caller passes it (``load(A + row * K)``),
    in the caller's terms; None when there is no caller or the argument does not reduce."""
    sites = facts.calls_to.get(func.name)
    if not sites:
        return None
    caller, call = sites[0]
    args = call.child_by_field_id(_F_ARGUMENTS)
    index = list(func.params).index(name)
    if args is None or index >= len(args.named_children):
        return None
    res = resolver_for(facts, caller)
    try:
        return pointer_form(facts, caller, res, args.named_children[index], depth + 4)
    except (Skip, NotAffine, Indirect):
        return None


def index_node(sub: Node) -> Node | None:
    idx = sub.child_by_field_id(_F_INDICES) or sub.child_by_field_name("index")
    if idx is not None and idx.type == "subscript_argument_list":
        return idx.named_children[0] if idx.named_children else None
    return idx


def cast_width(node: Node) -> int:
    """Lanes of the vector type an access goes through (``reinterpret_cast<float4*>(p)[0]``),
    read off its base when the offset did not reduce; 1 for scalars."""
    base = node.child_by_field_id(_F_ARGUMENT)
    while base is not None and base.type == "parenthesized_expression" and base.named_children:
        base = base.named_children[-1]
    if base is None:
        return 1
    if base.type == "call_expression":
        fn = base.child_by_field_id(_F_FUNCTION)
        if fn is not None and fn.type == "template_function" and fn.text.startswith(_CASTS):
            return vector_width(fn.text)
    elif base.type == "cast_expression":
        tnode = base.child_by_field_id(_F_TYPE)
        return vector_width(tnode.text) if tnode is not None else 1
    return 1
