"""What WMMA calls do per thread: tensor-core FLOPs, fragment loads and stores, accumulators.

A ``wmma::mma_sync`` does no subscript and no arithmetic operator the expert family can see,
so without this a tensor-core GEMM reads as "no register tiling, intensity near zero, no
outputs": the opposite of what it is. Per warp, ``mma_sync(d, a, b, c)`` on an M x N x K
shape is ``2·M·N·K`` FLOPs; ``load_matrix_sync`` / ``store_matrix_sync`` move the fragment's
``rows x cols`` elements from / to the space its pointer names; an accumulator fragment that
``mma_sync`` updates inside a loop is a register tile of ``M·N`` elements. Per thread, each is
divided by the warp's 32 lanes. Fragment shapes come from the declaration's template
arguments (``fragment<matrix_a, 16, 16, 8, precision::tf32, row_major>``), resolved like any
index (macros, ``constexpr``, template parameters); a shape the source does not fix leaves the
call uncounted.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id, walk
from structcover.tools.features.access_rules import elem_bytes
from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.model import Facts, Func, declarator_name
from structcover.tools.features.pointers import Skip, pointer_form
from structcover.tools.features.poly import Indirect, NotAffine, const_of
from structcover.tools.features.trips import UNKNOWN_TRIPS, Trips

_F_ARGUMENTS = field_id("arguments")
_F_DECLARATOR = field_id("declarator")
_F_TYPE = field_id("type")
WARP = 32
_CALLS = (b"mma_sync", b"load_matrix_sync", b"store_matrix_sync")


@dataclass
class Fragment:
    """A declared WMMA fragment: its use, shape, element bytes and how many (arrays)."""

    use: str  # matrix_a, matrix_b or accumulator
    m: int
    n: int
    k: int
    elem: int
    count: int = 1

    @property
    def elements(self) -> int:
        """Elements of the matrix the fragment holds (per warp)."""
        if self.use == "matrix_a":
            return self.m * self.k
        if self.use == "matrix_b":
            return self.k * self.n
        return self.m * self.n


@dataclass
class WmmaWork:
    """Per-thread WMMA work of one function, in the expert family's units."""

    flops: float = 0.0
    global_bytes: float = 0.0
    outputs: float = 0.0
    smem_reads: float = 0.0
    smem_stores: float = 0.0
    accumulators: int = 0


def _const(res: Resolver, node: Node) -> int | None:
    try:
        if node.type == "type_descriptor":  # a template argument parses as a type name
            value = const_of(res.variable(node.text or b"", node.start_byte)[0])
        else:
            value = const_of(res.resolve(node)[0])
    except (NotAffine, Indirect):
        return None
    return int(value) if value is not None and value > 0 else None


def _fragments(func: Func, res: Resolver) -> dict[bytes, Fragment]:
    """Fragments declared in ``func`` (a parameter's fragment is not followed)."""
    out: dict[bytes, Fragment] = {}
    for node in walk(func.node):
        if node.type != "declaration":
            continue
        typ = node.child_by_field_id(_F_TYPE)
        while typ is not None and typ.type == "qualified_identifier":  # wmma::fragment<...>
            typ = typ.named_children[-1] if typ.named_children else None
        if typ is None or typ.type != "template_type" or b"fragment" not in (typ.text or b""):
            continue
        args = next((c for c in typ.named_children if c.type == "template_argument_list"), None)
        if args is None or len(args.named_children) < 4:
            continue
        first, *shape = args.named_children[:4]
        use = (first.text or b"").rsplit(b"::", 1)[-1].decode("ascii", "replace")
        if use not in ("matrix_a", "matrix_b", "accumulator"):
            continue
        dims = [_const(res, d) for d in shape]
        if any(d is None for d in dims):
            continue
        m, n, k = (int(d) for d in dims if d is not None)
        rest = b" ".join(c.text or b"" for c in args.named_children[4:5])
        elem = 4 if b"tf32" in rest else elem_bytes(rest) if rest else 2
        for decl in node.named_children[1:]:
            name = declarator_name(decl)
            if name is None:
                continue
            count = 1
            inner = decl
            while inner is not None and inner.type in ("array_declarator", "init_declarator"):
                if inner.type == "array_declarator":
                    size = inner.child_by_field_id(field_id("size"))
                    count *= (_const(res, size) or 1) if size is not None else 1
                inner = inner.child_by_field_id(_F_DECLARATOR)
            out[name] = Fragment(use, m, n, k, elem, count)
    return out


def _fragment_of(frags: dict[bytes, Fragment], node: Node) -> tuple[bytes, Fragment | None]:
    """The fragment an argument names (``acc``, ``a_frag[i]``, ``frag[i][j]``) and its name."""
    while node.type == "subscript_expression" and node.named_children:
        node = node.named_children[0]
    name = node.text or b""
    return name, frags.get(name) if node.type == "identifier" else None


def _space(facts: Facts, func: Func, res: Resolver, node: Node) -> str | None:
    try:
        return pointer_form(facts, func, res, node)[1]
    except (Skip, NotAffine, Indirect):
        return None


def wmma_work(facts: Facts, func: Func, res: Resolver, trips: Trips) -> WmmaWork:
    """The WMMA FLOPs, fragment traffic and accumulators of one device function.

    Loop bodies weigh their trip counts (unknown trips: 1, or :data:`UNKNOWN_TRIPS` for the
    FLOPs and global bytes, like the expert family's intensity estimate).
    """
    work = WmmaWork()
    sites = [(name, site) for name, site in func.calls if name.endswith(_CALLS)]
    if not sites:
        return work
    frags = _fragments(func, res)
    if not frags:
        return work
    accumulators: dict[bytes, Fragment] = {}
    for name, site in sites:
        call = site.node
        args_node = call.child_by_field_id(_F_ARGUMENTS)
        args = list(args_node.named_children) if args_node is not None else []
        w, wu = trips.weights(site.loops) if site.loops else (1.0, 1.0)
        if name.endswith(b"mma_sync") and not name.endswith(b"_matrix_sync"):
            if len(args) < 4:
                continue
            d_name, d = _fragment_of(frags, args[0])
            a = _fragment_of(frags, args[1])[1]
            if d is None or a is None:
                continue
            work.flops += 2.0 * d.m * d.n * a.k / WARP * trips.weight(site.loops, UNKNOWN_TRIPS)
            if site.loop_depth and d.use == "accumulator":
                accumulators[d_name] = d
            continue
        store = name.endswith(b"store_matrix_sync")
        if len(args) < 2:
            continue
        frag = _fragment_of(frags, args[1] if store else args[0])[1]
        if frag is None:
            continue
        per_thread = frag.elements / WARP
        space = _space(facts, func, res, args[0] if store else args[1])
        if space == "global":
            work.global_bytes += frag.elem * per_thread * wu
            if store:
                work.outputs += per_thread * w
        elif space == "shared":
            if store:
                work.smem_stores += per_thread * w
            else:
                work.smem_reads += per_thread * w
    work.accumulators = sum(f.m * f.n * f.count // WARP for f in accumulators.values())
    return work
