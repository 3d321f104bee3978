"""Memory access family: classify every global access, shared-memory tiling and padding.

Classification (docs/FEATURES.md): the index is reduced to an affine form (see ``dataflow``);
the coefficient of ``threadIdx.x`` in elements of the accessed type decides: ±1 (or a
fraction) coalesced, a constant > 1 or a symbol strided, absent broadcast; a load inside
the index is indirect; anything else unknown. ``reinterpret_cast<float4*>`` changes the
element unit, so ``reinterpret_cast<float4*>(a)[i]`` is a coalesced *vector* access.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.access_rules import classify, elem_bytes, lane_stride
from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.model import Facts, Func, Site
from structcover.tools.features.pointers import (  # noqa: F401 - base_space re-exported
    Skip,
    address_space,
    base_space,
    cast_width,
    index_node,
    pointer_form,
)
from structcover.tools.features.poly import Indirect, NotAffine, Poly, add, const_of, mul

_F_ARGUMENT = field_id("argument")
_F_ARGUMENTS = field_id("arguments")
_F_FUNCTION = field_id("function")
_F_INDICES = field_id("indices")
_F_LEFT = field_id("left")
_F_OPERATOR = field_id("operator")
_F_RIGHT = field_id("right")
_F_TYPE = field_id("type")
_F_VALUE = field_id("value")

@dataclass
class Access:
    """One classified access."""

    site: Site
    space: str  # "global", "shared", "constant"
    kind: str  # coalesced / strided / broadcast / indirect / unknown
    store: bool
    vector: int
    base: bytes
    #: Elements between neighbouring lanes (coefficient of threadIdx.x) when constant.
    stride: float | None = None


@dataclass
class MemoryFacts:
    """Classified accesses of a program, reused by the parallel and data-flow families."""

    accesses: list[Access] = field(default_factory=list)
    by_func: dict[int, list[Access]] = field(default_factory=dict)  # id(func) -> accesses
    loads_by_func: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def of(self, func: Func) -> list[Access]:
        """Accesses inside ``func``."""
        return self.by_func.get(id(func), [])


#: Bytes that may sit between an access and a parent that changes how it counts: the `[`
#: of an outer subscript after it, the `&` of an address before it, or anything that could
#: hide one (a comment, a line continuation, a directive, a long run of spaces).
_MAYBE_AFTER = frozenset({b"[", b"/", b"\\", b"#", b""})
_MAYBE_BEFORE = frozenset({b"&", b"/", b"\\", b"#", b""})


def _parent_matters(src: bytes, node: Node) -> bool:
    """False when the source around ``node`` rules out an outer subscript or an address-of
    as its parent (reading the parent walks down from the root, so skip it when we can)."""
    s, e = node.start_byte, node.end_byte
    return src[e:e + 32].lstrip()[:1] in _MAYBE_AFTER \
        or src[max(0, s - 32):s].rstrip()[-1:] in _MAYBE_BEFORE


def _classify_site(facts: Facts, func: Func, res: Resolver, site: Site,
                   clean: bool = False, atomic: bool = False) -> Access | None:
    """Classify one access; ``clean`` (a tree without errors) allows the source pre-check
    on the parent (a MISSING token in a broken tree has no bytes to see); ``atomic``: the
    site is the location an atomic updates (its address is taken, and it is a store)."""
    node = site.node
    parent = None if atomic else node.parent if not clean or _parent_matters(
        facts.parsed.src, node) else None
    if parent is not None:
        if parent.type == "subscript_expression" and parent.start_byte == node.start_byte:
            return None  # inner part of a multi-dimensional access; the outer one counts
        if parent.type == "pointer_expression" and parent.child(0).type == "&":
            # An address is taken: nothing is accessed here, unless it feeds a load
            # intrinsic (__ldg(&x[i]) reads x[i] through the read-only path).
            args = parent.parent
            call = args.parent if args is not None and args.type == "argument_list" else None
            fn = call.child_by_field_id(_F_FUNCTION) if call is not None else None
            if fn is None or not fn.text.startswith(b"__ld"):
                return None
    store = atomic or (node.start_byte, node.end_byte) in func.stores
    try:
        if node.type == "subscript_expression":
            base = node.child_by_field_id(_F_ARGUMENT)
            idx = index_node(node)
            if base is None or idx is None:
                return None
            dims = 1
            while base.type == "subscript_expression":
                dims += 1
                base = base.child_by_field_id(_F_ARGUMENT)
                if base is None:
                    return None
            name, space, off, width = pointer_form(facts, func, res, base)
            if space == "shared" and dims > 1:
                return _shared_access(facts, func, res, site, store, name, off, width, dims)
            if dims > 1:  # a[y][x] through a global pointer-to-array: not reduced here
                return Access(site, space, "unknown", store, width, name)
        else:
            arg = node.child_by_field_id(_F_ARGUMENT)
            if arg is None:
                return None
            name, space, off, width = pointer_form(facts, func, res, arg)
            idx = None
    except Skip:
        return None
    except Indirect:
        return Access(site, "global", "indirect", store, cast_width(node), b"")
    except NotAffine:
        return Access(site, "global", "unknown", store, cast_width(node), b"")
    stride = None
    try:
        poly = dict(off)
        if idx is not None:
            ip, _ = res.resolve(idx)
            for m, c in ip.items():
                poly[m] = poly.get(m, 0.0) + c
        kind = classify(poly)
        stride = lane_stride(poly)
    except Indirect:
        kind = "indirect"
    except NotAffine:
        kind = "unknown"
    return Access(site, space, kind, store, width, name, stride)


def _shared_access(facts: Facts, func: Func, res: Resolver, site: Site, store: bool,
                   name: bytes, off: Poly, width: int, ndims: int) -> Access:
    """Classify a multi-dimensional shared access on its row-major linear index (the
    declared sizes multiply the outer indices), so ``s[threadIdx.x][k]`` with ``s[32][33]``
    has a lane stride of 33 words: strided, but free of bank conflicts."""
    arr = func.shared.get(name) or facts.file_shared.get(name)
    indices: list[Node] = []
    node: Node | None = site.node
    while node is not None and node.type == "subscript_expression":
        ix = index_node(node)
        if ix is None:
            return Access(site, "shared", "unknown", store, width, name)
        indices.append(ix)
        node = node.child_by_field_id(_F_ARGUMENT)
    indices.reverse()
    if arr is None or len(arr.dims) != len(indices) or len(indices) != ndims:
        return Access(site, "shared", "unknown", store, width, name)
    try:
        linear: Poly = dict(off)
        for i, ix in enumerate(indices):
            term, _ = res.resolve(ix)
            for dim in arr.dims[i + 1:]:
                term = mul(term, res.resolve(dim)[0])
            linear = add(linear, term)
        return Access(site, "shared", classify(linear), store, width, name, lane_stride(linear))
    except Indirect:
        return Access(site, "shared", "indirect", store, width, name)
    except NotAffine:
        return Access(site, "shared", "unknown", store, width, name)


def bank_conflicted(acc: Access) -> bool:
    """A shared access whose lanes are an even (or unknown, symbolic) number of 4-byte words
    apart: two lanes of a warp hit one bank (a stride of 33 after padding does not)."""
    if acc.space != "shared" or acc.kind != "strided":
        return False
    if acc.stride is None:
        return True
    words = abs(acc.stride) * acc.vector
    return words > acc.vector and float(words).is_integer() and int(words) % 2 == 0


def _atomic_address(facts: Facts, func: Func, res: Resolver, call: Site) -> Access | None:
    """The location an atomic updates (``atomicAdd(&y[i], v)``, ``atomicExch(y + i, v)``,
    ``atomicAdd(out, v)``): a read-modify-write, counted as a store and classified like one.
    Without it an atomic hides its address: a strided store made ``atomicExch`` would read as
    no store at all."""
    args = call.node.child_by_field_id(_F_ARGUMENTS)
    if args is None or not args.named_children:
        return None
    addr = args.named_children[0]
    inner = addr.child_by_field_id(_F_ARGUMENT) if addr.type == "pointer_expression" \
        and addr.child(0).type == "&" else None
    if inner is not None and inner.type in ("subscript_expression", "pointer_expression"):
        # &y[i], &tile[r][c], &*p: the subscript is classified as the access it addresses.
        return _classify_site(facts, func, res, Site(inner, call.loop_depth, call.branches,
                                                     call.loops), atomic=True)
    site = Site(addr, call.loop_depth, call.branches, call.loops)
    try:
        name, space, off, width = pointer_form(facts, func, res, addr)
    except Skip:
        return None
    except (Indirect, NotAffine) as exc:
        kind = "indirect" if isinstance(exc, Indirect) else "unknown"
        return Access(site, address_space(facts, func, addr), kind, True, 1, b"")
    try:
        kind, stride = classify(dict(off)), lane_stride(dict(off))
    except (Indirect, NotAffine):
        kind, stride = "unknown", None
    return Access(site, space, kind, True, width, name, stride)


def collect_accesses(facts: Facts, resolvers: dict[int, Resolver]) -> MemoryFacts:
    """Classify every subscript and dereference in device code."""
    out = MemoryFacts()
    clean = not facts.parsed.root.has_error
    for func in facts.funcs:
        if not func.is_device:
            continue
        res = resolvers.setdefault(id(func), Resolver(facts, func))
        atomics = [_atomic_address(facts, func, res, site) for name, site in func.calls
                   if name.startswith((b"atomic", b"::atomic"))]
        for acc in (*(_classify_site(facts, func, res, site, clean)
                      for site in (*func.subscripts, *func.derefs)), *atomics):
            if acc is None:
                continue
            out.accesses.append(acc)
            out.by_func.setdefault(id(func), []).append(acc)
            if acc.space == "global" and not acc.store:
                out.loads_by_func.setdefault(id(func), []).append(
                    (acc.site.node.start_byte, acc.site.node.end_byte))
    return out


def _dims_bytes(res: Resolver, arr) -> int | None:
    total = elem_bytes(arr.type_text)
    for dim in arr.dims:
        try:
            poly, _ = res.resolve(dim)
        except (NotAffine, Indirect):
            return None
        value = const_of(poly)
        if value is None:
            return None
        total *= int(value)
    return total


def _padded(res: Resolver, arr) -> bool:
    if len(arr.dims) < 2:
        return False
    last = arr.dims[-1]
    if last.type == "binary_expression":
        op = last.child_by_field_id(_F_OPERATOR)
        right = last.child_by_field_id(_F_RIGHT)
        if op is not None and op.type == "+" and right is not None \
                and right.type == "number_literal":
            return True
    try:
        value = const_of(res.resolve(last)[0])
    except (NotAffine, Indirect):
        return False
    if value is None or value < 9:
        return False
    v = int(value) - 1
    return v & (v - 1) == 0  # one past a power of two: 17, 33, 65 …


def memory_features(facts: Facts, mem: MemoryFacts,
                    resolvers: dict[int, Resolver]) -> dict[str, float | int | bool]:
    """``mem.*`` and ``smem.*`` values from the classified accesses."""
    counts = {"coalesced": 0, "strided": 0, "broadcast": 0, "indirect": 0, "unknown": 0}
    loads = stores = vec = smem_acc = strided_loads = strided_stores = 0
    smem_strided = conflicts = 0
    for acc in mem.accesses:
        if acc.vector > 1:
            vec += 1
        if acc.space == "shared":
            smem_acc += 1
            smem_strided += acc.kind == "strided"
            conflicts += bank_conflicted(acc)
            continue
        if acc.space != "global":
            continue
        counts[acc.kind] += 1
        if acc.store:
            stores += 1
            strided_stores += acc.kind == "strided"
        else:
            loads += 1
            strided_loads += acc.kind == "strided"
    total = sum(counts.values())
    known = counts["coalesced"] + counts["strided"]
    static_bytes = 0
    unresolved = 0
    padded = dynamic = False
    n_arrays = 0
    restrict = ldg = const_params = 0
    first_device = next((f for f in facts.funcs if f.is_device), None)
    for func in facts.funcs:
        if not func.is_device:
            continue
        res = resolvers.setdefault(id(func), Resolver(facts, func))
        arrays = list(func.shared.values())
        if func is first_device:  # file-scope __shared__ arrays, counted once
            arrays += list(facts.file_shared.values())
        for arr in arrays:
            n_arrays += 1
            if arr.extern:
                dynamic = True
                continue
            size = _dims_bytes(res, arr)
            if size is None:
                unresolved += 1
            else:
                static_bytes += size
            padded = padded or _padded(res, arr)
        for p in func.params.values():
            restrict += p.restrict and p.pointer
            const_params += p.const and p.pointer
        ldg += sum(1 for name, _ in func.calls if name.startswith(b"__ldg") or name in (
            b"__ldcg", b"__ldca", b"__ldcs", b"__ldlu", b"__ldcv"))
    return {
        "mem.global_accesses": total,
        "mem.global_loads": loads,
        "mem.global_stores": stores,
        "mem.global_strided_loads": strided_loads,
        "mem.global_strided_stores": strided_stores,
        "mem.global_coalesced": counts["coalesced"],
        "mem.global_strided": counts["strided"],
        "mem.global_broadcast": counts["broadcast"],
        "mem.global_indirect": counts["indirect"],
        "mem.global_unknown": counts["unknown"],
        "mem.coalesced_fraction": (counts["coalesced"] / known) if known else None,
        "mem.vector_loads": vec,
        "mem.restrict_params": restrict,
        "mem.const_params": const_params,
        "mem.ldg": ldg,
        "mem.constant_memory": bool(facts.constant_vars),
        "smem.arrays": n_arrays,
        "smem.static_bytes": static_bytes,
        "smem.unresolved_sizes": unresolved,
        "smem.dynamic": dynamic,
        "smem.padded": padded,
        "smem.accesses": smem_acc,
        "smem.strided_accesses": smem_strided,
        "smem.bank_conflicts": conflicts,
    }
