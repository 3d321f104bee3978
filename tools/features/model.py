"""What one visit of a program's tree records: functions, parameters, shared arrays, the
sites of accesses, calls, loops and branches, and local definitions (def-use input)."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from structcover.tools.cuda_ast import Parsed, field_id

_F_DECLARATOR = field_id("declarator")

LOOPS = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})


@dataclass
class Param:
    """A function parameter."""

    name: bytes
    pointer: bool = False
    restrict: bool = False
    const: bool = False
    vector: int = 1  # elements per access when the pointee is a vector type (float4 -> 4)


@dataclass
class SharedArray:
    """A ``__shared__`` declaration."""

    name: bytes
    type_text: bytes
    dims: list[Node]
    extern: bool
    node: Node


@dataclass
class Site:
    """A node of interest with where it sits: loop depth and enclosing branch conditions."""

    node: Node
    loop_depth: int
    branches: tuple[Node, ...] = ()
    loops: tuple[Node, ...] = ()


@dataclass
class Func:
    """Facts about one function definition."""

    node: Node
    name: bytes
    kind: str  # "global", "device" or "host"
    params: dict[bytes, Param] = field(default_factory=dict)
    defs: dict[bytes, list[tuple[str, Node]]] = field(default_factory=dict)
    #: Byte range where a declared ("decl"/"for") definition is visible, by its value's start.
    def_scope: dict[int, tuple[int, int]] = field(default_factory=dict)
    loop_vars: dict[bytes, Node] = field(default_factory=dict)  # name -> for_statement
    local_ptrs: set[bytes] = field(default_factory=set)
    local_arrays: set[bytes] = field(default_factory=set)
    #: Dimension-size nodes of local (register) arrays, outermost first.
    local_array_dims: dict[bytes, list[Node]] = field(default_factory=dict)
    shared: dict[bytes, SharedArray] = field(default_factory=dict)
    calls: list[tuple[bytes, Site]] = field(default_factory=list)
    subscripts: list[Site] = field(default_factory=list)
    derefs: list[Site] = field(default_factory=list)
    loops: list[Site] = field(default_factory=list)
    branches: list[Site] = field(default_factory=list)
    stores: set[tuple[int, int]] = field(default_factory=set)
    max_loop_depth: int = 0
    #: Template parameters fixed by the source (launch site, explicit instantiation or
    #: default argument): name -> the argument's node.
    template_values: dict[bytes, Node] = field(default_factory=dict)

    @property
    def is_device(self) -> bool:
        """True for ``__global__`` and ``__device__`` functions."""
        return self.kind != "host"


@dataclass
class Facts:
    """Everything one walk learned about a program."""

    parsed: Parsed
    funcs: list[Func] = field(default_factory=list)
    macros: dict[bytes, bytes] = field(default_factory=dict)
    file_shared: dict[bytes, SharedArray] = field(default_factory=dict)
    #: Structs whose member functions hand out a shared array (the CUDA samples'
    #: ``SharedMemory<T>``: ``operator T*() { extern __shared__ int s[]; return (T*)s; }``):
    #: a pointer made from one (``T* sdata = SharedMemory<T>();``) points into shared memory.
    shared_handles: set[bytes] = field(default_factory=set)
    device_globals: set[bytes] = field(default_factory=set)
    constant_vars: set[bytes] = field(default_factory=set)
    pragmas_unroll: int = 0
    templates: int = 0
    launch_bounds: int = 0
    launches: list[Node] = field(default_factory=list)
    asm: list[bytes] = field(default_factory=list)
    qualified: Counter = field(default_factory=Counter)  # scope name -> uses (wmma, cg, torch…)
    host_calls: Counter = field(default_factory=Counter)
    all_calls: Counter = field(default_factory=Counter)
    includes: list[bytes] = field(default_factory=list)
    nodes: int = 0
    errors: int = 0
    _starts: list[int] = field(default_factory=list, repr=False)
    #: (device function, pointer parameter) pairs that callers bind to shared arrays.
    shared_params: set[tuple[bytes, bytes]] = field(default_factory=set)
    #: File-scope ``const``/``constexpr`` variables: name -> value node.
    file_consts: dict[bytes, Node] = field(default_factory=dict)
    #: Device function name -> its call sites in device code, as (caller, call node).
    calls_to: dict[bytes, list[tuple[Func, Node]]] = field(default_factory=dict)
    #: Per-function expression resolvers (``dataflow.Resolver``) by ``id(func)``, shared by
    #: the families so a helper's parameters resolve in its caller's resolver.
    resolvers: dict[int, Any] = field(default_factory=dict)
    #: Parsed ``#define`` bodies (tree kept alive with its value node), by macro name.
    macro_nodes: dict[bytes, tuple[Any, Node | None]] = field(default_factory=dict)

    def func_at(self, byte: int) -> Func | None:
        """The function whose body holds ``byte`` (functions are in document order)."""
        if len(self._starts) != len(self.funcs):
            self._starts = [f.node.start_byte for f in self.funcs]
        i = bisect.bisect_right(self._starts, byte) - 1
        if i >= 0 and byte < self.funcs[i].node.end_byte:
            return self.funcs[i]
        return None

    @property
    def kernels(self) -> list[Func]:
        """The ``__global__`` functions."""
        return [f for f in self.funcs if f.kind == "global"]


_VEC = re.compile(rb"\b(?:float|int|uint|double|half|__half|char|uchar|short|longlong|long|"
                  rb"__nv_bfloat16|bfloat16|nv_bfloat16)([1-4])\b")


def vector_width(type_text: bytes) -> int:
    """Lanes of the vector type named in ``type_text`` (``float4`` -> 4), 1 for scalars."""
    # Plain membership tests: most type texts hold no digit, and a generator over the three
    # digits costs more than the three tests (this runs for every pointer parameter).
    if b"2" not in type_text and b"3" not in type_text and b"4" not in type_text:
        return 1
    m = _VEC.search(type_text)
    return int(m.group(1)) if m else 1


#: Node types that name what a declarator declares (where :func:`declarator_name` stops).
NAME_TYPES = frozenset({"identifier", "field_identifier", "qualified_identifier",
                        "destructor_name", "operator_name"})


def declarator_name(node: Node | None) -> bytes | None:
    """The identifier a declarator declares (through pointers, arrays, references, inits)."""
    depth = 0
    while node is not None and depth < 64:
        if node.type in NAME_TYPES:
            return node.text
        nxt = node.child_by_field_id(_F_DECLARATOR)
        if nxt is None:
            nxt = next((c for c in node.named_children if c.type in (
                "identifier", "pointer_declarator", "reference_declarator", "array_declarator",
                "function_declarator", "init_declarator")), None)
        node = nxt
        depth += 1
    return None
