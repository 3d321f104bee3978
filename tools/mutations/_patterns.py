"""Recognisers for the thread-mapping patterns the parallel-strategy operators rewrite."""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from structcover.tools.mutations._tree import (
    Src,
    enclosing,
    find,
    function_name,
    kernels,
    launch_config,
    launches,
)

#: ``blockIdx.A * blockDim.A + threadIdx.A`` in every operand order, per axis A.
_GID_FORMS = {axis: {f"blockIdx.{axis}*blockDim.{axis}+threadIdx.{axis}",
                     f"blockDim.{axis}*blockIdx.{axis}+threadIdx.{axis}",
                     f"threadIdx.{axis}+blockIdx.{axis}*blockDim.{axis}",
                     f"threadIdx.{axis}+blockDim.{axis}*blockIdx.{axis}"} for axis in "xyz"}
_STRIDE_FORMS = {"blockDim.x*gridDim.x", "gridDim.x*blockDim.x"}


def is_global_index(text: str, axis: str = "x") -> bool:
    """True for ``blockIdx.x * blockDim.x + threadIdx.x`` (or that of ``axis``) in any
    operand order."""
    return re.sub(r"[\s()]", "", text) in _GID_FORMS[axis]


def is_grid_stride(text: str) -> bool:
    """True for ``blockDim.x * gridDim.x`` in either order."""
    return re.sub(r"[\s()]", "", text) in _STRIDE_FORMS


@dataclass
class IndexDecl:
    """``T i = blockIdx.x * blockDim.x + threadIdx.x;`` as a kernel body statement."""

    node: ts.Node
    var: str
    ctype: str


def index_decl(src: Src, stmt: ts.Node) -> IndexDecl | None:
    """Recognise a global-thread-index declaration statement."""
    if stmt.type != "declaration":
        return None
    m = re.fullmatch(r"(?:const\s+)?((?:unsigned\s+)?(?:int|long long|long|size_t|unsigned))\s+"
                     r"(\w+)\s*=\s*(.+?)\s*;", src.of(stmt), re.S)
    if m and is_global_index(m.group(3)):
        return IndexDecl(stmt, m.group(2), m.group(1))
    return None


def bound_of(src: Src, cond: ts.Node, var: str, op: str = "<") -> str | None:
    """``N`` when ``cond`` is ``(var < N)`` (or ``var >= N`` for ``op=">="``)."""
    while cond.type == "parenthesized_expression" and cond.named_children:
        cond = cond.named_children[0]
    if cond.type != "binary_expression" or src.of(cond.child_by_field_name("operator")) != op:
        return None
    if src.of(cond.child_by_field_name("left")) != var:
        return None
    return src.of(cond.child_by_field_name("right"))


def kernel_launches(src: Src, kernel: ts.Node) -> list[ts.Node]:
    """Launches of ``kernel`` anywhere in the program."""
    name = function_name(src, kernel)
    return [c for c in launches(src) if src.of(c.child_by_field_name("function")) == name]


def grid_is_1d(src: Src, call: ts.Node) -> bool:
    """True when the launch's grid is a plain integer expression (not a ``dim3``)."""
    grid = launch_config(call)[0]
    if "dim3" in src.of(grid):
        return False
    if grid.type == "identifier":
        fn = enclosing(call, "function_definition")
        for decl in find(fn, "declaration"):
            if re.match(r"dim3\s+" + re.escape(src.of(grid)) + r"\b", src.of(decl)):
                return False
    return True


def has_barrier_or_shared(src: Src, node: ts.Node) -> bool:
    """True when ``node`` calls a block/warp collective or touches ``__shared__`` memory."""
    text = src.of(node)
    return bool(re.search(r"__syncthreads|__syncwarp|__shfl|_sync\s*\(|\bcg::|this_thread_block",
                          text))


def simple_kernels(src: Src) -> list[ts.Node]:
    """Kernels, in document order."""
    return kernels(src)
