"""Flatten a 2-D one-thread-per-element kernel onto a 1-D grid.

Kernels over matrices (naive GEMM, transpose, element-wise 2-D maps) are written with a 2-D
grid: ``c = blockIdx.x * blockDim.x + threadIdx.x; r = blockIdx.y * blockDim.y + threadIdx.y;
if (r < R && c < C) {...}``. Policies write the same work on a flat grid as often, one thread
per element of the row-major ``R x C`` index space, ``r = i / C, c = i % C``. The flat form is
also the one-thread-per-element shape every thread-mapping operator takes
(:mod:`~structcover.tools.mutations.thread_mapping`): those operators flatten a 2-D kernel
with :func:`flattened` first, which opens naive GEMM, transposes and other matrix maps to every
(access, sync) pair. The flattening is not an operator of its own: it moves no pattern level
(the planner could never choose it), and only two corpus families have the shape, too few for
the operator statistics' three-family bar.

Applies to kernels whose body is exactly ``T x = blockIdx.x * blockDim.x + threadIdx.x;
T y = blockIdx.y * blockDim.y + threadIdx.y; if (y < R && x < C) {...}`` (the declarations in
either order, the conditions too) where ``R`` and ``C`` are kernel parameters and the guarded
body has no barrier, warp collective, shared memory, ``return`` or thread index of its own and
does not assign ``x`` or ``y``. Every launch is rewritten (256-thread blocks, the grid from the
launch's own row and column arguments); the launcher's old ``dim3`` values are left unused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from structcover.tools.mutations._patterns import (
    has_barrier_or_shared,
    is_global_index,
    kernel_launches,
)
from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    find,
    identifiers,
    indent_block,
    indent_of,
    inner_statements,
    kernels,
    launch_config,
    param_names,
    parse,
    splice,
)

#: Threads per block of the flat launch.
FLAT_BLOCK = 256
_INT_TYPES = r"(?:unsigned\s+)?(?:int|long long|long|size_t|unsigned)"
#: The flat index the rewrite declares.
FLAT_VAR = "e_"


@dataclass
class Grid2D:
    """A kernel shaped ``x = gid.x; y = gid.y; if (y < R && x < C) { BODY }``."""

    kernel: ts.Node
    start: int  # byte range replaced: first index declaration .. end of the guard
    end: int
    ctype: str
    x: str  # column index (threadIdx.x's)
    y: str  # row index
    rows: str  # parameter bounding y
    cols: str  # parameter bounding x
    body: str
    indent: str


def _axis_index(src: Src, stmt: ts.Node) -> tuple[str, str, str] | None:
    """``(axis, var, type)`` for ``T v = blockIdx.A * blockDim.A + threadIdx.A;``."""
    if stmt.type != "declaration":
        return None
    m = re.fullmatch(rf"(?:const\s+)?({_INT_TYPES})\s+(\w+)\s*=\s*(.+?)\s*;", src.of(stmt), re.S)
    if m is None:
        return None
    for axis in "xy":
        if is_global_index(m.group(3), axis):
            return axis, m.group(2), m.group(1)
    return None


def _bounds(src: Src, cond: ts.Node, x: str, y: str) -> tuple[str, str] | None:
    """``(rows, cols)`` when ``cond`` is ``y < R && x < C`` in either order."""
    while cond.type in ("parenthesized_expression", "condition_clause") and cond.named_children:
        cond = cond.named_children[0]
    if cond.type != "binary_expression" or src.of(cond.child_by_field_name("operator")) != "&&":
        return None
    found: dict[str, str] = {}
    for side in (cond.child_by_field_name("left"), cond.child_by_field_name("right")):
        m = re.fullmatch(r"\(?\s*(\w+)\s*<\s*(\w+)\s*\)?", src.of(side))
        if m is None or m.group(1) not in (x, y) or m.group(1) in found:
            return None
        found[m.group(1)] = m.group(2)
    return (found[y], found[x]) if len(found) == 2 else None


def grid_2d(src: Src, kernel: ts.Node) -> Grid2D | None:
    """Recognise the 2-D shape: two index declarations, then one guard and nothing after it.
    The bounds must be int parameters (the launch passes their values) and the body must not
    synchronize, touch shared memory, return, or assign either index."""
    stmts = [s for s in kernel.child_by_field_name("body").named_children if s.type != "comment"]
    if len(stmts) != 3 or stmts[2].type != "if_statement":
        return None
    first, second = _axis_index(src, stmts[0]), _axis_index(src, stmts[1])
    if first is None or second is None or {first[0], second[0]} != {"x", "y"}:
        return None
    x, y = (first, second) if first[0] == "x" else (second, first)
    guard = stmts[2]
    if guard.child_by_field_name("alternative") is not None:
        return None
    bounds = _bounds(src, guard.child_by_field_name("condition"), x[1], y[1])
    names = param_names(src, kernel)
    if bounds is None or not all(b in names for b in bounds):
        return None
    cons = guard.child_by_field_name("consequence")
    if has_barrier_or_shared(src, cons) or find(cons, "return_statement") or \
            {x[1], y[1]} & assigned_names(src, cons) or FLAT_VAR in identifiers(src, kernel) or \
            re.search(r"\b(?:threadIdx|blockIdx|blockDim|gridDim)\b", src.of(cons)):
        return None
    body = inner_statements(src, cons) if cons.type == "compound_statement" else src.of(cons)
    ctype = x[2] if x[2] == y[2] else "int"
    return Grid2D(kernel, stmts[0].start_byte, guard.end_byte, ctype, x[1], y[1], bounds[0],
                  bounds[1], body, indent_of(src, stmts[0]))


def _launch_edits(src: Src, g: Grid2D) -> list[tuple[int, int, str]] | None:
    """Every launch of the kernel on a flat grid of :data:`FLAT_BLOCK`-thread blocks sized
    from the launch's own row and column arguments."""
    names = param_names(src, g.kernel)
    edits = []
    for call in kernel_launches(src, g.kernel):
        args = call.child_by_field_name("arguments").named_children
        cfg = launch_config(call)
        if len(args) != len(names) or len(cfg) < 2:
            return None
        rows, cols = (src.of(args[names.index(b)]) for b in (g.rows, g.cols))
        total = f"(long long)({rows}) * ({cols})"
        grid = f"(unsigned)(({total} + {FLAT_BLOCK - 1}) / {FLAT_BLOCK})"
        edits.append((cfg[0].start_byte, cfg[1].end_byte, f"{grid}, {FLAT_BLOCK}"))
    return edits or None


def flattened(program: str) -> str | None:
    """``program`` with every 2-D one-thread-per-element kernel on a flat grid (the text, not
    compiled), or None when it has none."""
    src = parse(program)
    edits: list[tuple[int, int, str]] = []
    for kernel in kernels(src):
        g = grid_2d(src, kernel)
        launch = _launch_edits(src, g) if g else None
        if g is None or launch is None:
            continue
        inner = "\n".join([f"const {g.ctype} {g.y} = {FLAT_VAR} / {g.cols};",
                           f"const {g.ctype} {g.x} = {FLAT_VAR} % {g.cols};", g.body])
        text = "\n".join([
            f"const {g.ctype} {FLAT_VAR} = blockIdx.x * blockDim.x + threadIdx.x;  // one thread "
            f"per element of the row-major {g.rows} x {g.cols} space",
            f"if ({FLAT_VAR} < {g.rows} * {g.cols}) {{", indent_block(inner, "    "), "}"])
        edits += [(g.start, g.end, indent_block(text, g.indent)[len(g.indent):]), *launch]
    return splice(src.text, edits) if edits else None
