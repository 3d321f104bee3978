"""Parallel strategy: one thread per element <-> grid-stride loop <-> coarsened <-> warp per row."""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter as ts

from structcover.tools.mutations._loops import canonical
from structcover.tools.mutations._patterns import (
    bound_of,
    grid_is_1d,
    has_barrier_or_shared,
    index_decl,
    is_global_index,
    is_grid_stride,
    kernel_launches,
)
from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    block_dims,
    find,
    indent_block,
    indent_of,
    inner_statements,
    kernels,
    launch_config,
    parse,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator

COARSEN = 4


@dataclass
class PerElement:
    """A kernel in the one-thread-per-element shape: ``i = gid; if (i < N) { BODY }``."""

    kernel: ts.Node
    start: int  # byte range replaced: index declaration .. end of the guarded body
    end: int
    var: str
    ctype: str
    bound: str
    body: str  # dedented statements
    indent: str


def per_element(src: Src, kernel: ts.Node) -> PerElement | None:
    """Recognise ``T i = gid; if (i < N) {BODY}`` or ``T i = gid; if (i >= N) return; BODY``."""
    stmts = [s for s in kernel.child_by_field_name("body").named_children if s.type != "comment"]
    for pos, stmt in enumerate(stmts):
        decl = index_decl(src, stmt)
        if decl is None:
            continue
        rest = stmts[pos + 1:]
        if not rest or rest[0].type != "if_statement":
            return None
        guard = rest[0]
        cond = guard.child_by_field_name("condition")
        if guard.child_by_field_name("alternative") is not None:
            return None
        bound = bound_of(src, cond.named_children[0] if cond.named_children else cond, decl.var)
        if bound is not None and len(rest) == 1:
            body_node = guard.child_by_field_name("consequence")
            body, end, nodes = inner_statements(src, body_node), guard.end_byte, [body_node]
        else:
            bound = bound_of(src, cond.named_children[0] if cond.named_children else cond,
                             decl.var, ">=")
            cons = guard.child_by_field_name("consequence")
            if bound is None or "return" not in src.of(cons) or len(rest) < 2:
                return None
            nodes = rest[1:]
            from structcover.tools.mutations._tree import dedented

            body = "\n".join(dedented(src, n) for n in nodes)
            end = nodes[-1].end_byte
        if any(has_barrier_or_shared(src, n) or find(n, "return_statement") or
               decl.var in assigned_names(src, n) for n in nodes):
            return None
        return PerElement(kernel, stmt.start_byte, end, decl.var, decl.ctype, bound, body,
                          indent_of(src, stmt))
    return None


def _wrap_grid(src: Src, kernel: ts.Node, fmt: str) -> list[tuple[int, int, str]] | None:
    """Edits rewriting every launch's grid of ``kernel`` as ``fmt.format(grid)``."""
    edits = []
    for call in kernel_launches(src, kernel):
        if not grid_is_1d(src, call):
            return None
        grid = launch_config(call)[0]
        edits.append((grid.start_byte, grid.end_byte, fmt.format(src.of(grid))))
    return edits or None


@operator("to_grid_stride", family="parallel_strategy")
def to_grid_stride(program: str) -> MutationResult:
    """Turn one-thread-per-element kernels into grid-stride loops.

    Moves:
        loop.grid_stride: up

    Applies to kernels shaped ``T i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) {...}``
    (or ``if (i >= N) return; ...``) whose guarded body has no barrier, warp collective,
    shared memory or ``return`` and does not assign ``i``. The launcher is unchanged: the loop
    covers any grid.
    """
    src = parse(program)
    b = Builder("to_grid_stride", program)
    edits = []
    for kernel in kernels(src):
        pe = per_element(src, kernel)
        if pe is None:
            continue
        text = (f"for ({pe.ctype} {pe.var} = blockIdx.x * blockDim.x + threadIdx.x; "
                f"{pe.var} < {pe.bound}; {pe.var} += blockDim.x * gridDim.x) {{\n"
                f"{indent_block(pe.body, pe.indent + '    ')}\n{pe.indent}}}")
        edits.append((pe.start, pe.end, text))
    if not edits:
        return b.done("no kernel in the one-thread-per-element shape")
    b.add(splice(src.text, edits))
    return b.done()


@operator("coarsen", family="parallel_strategy")
def coarsen(program: str) -> MutationResult:
    """Coarsen one-thread-per-element kernels: each thread handles 4 elements, a block-stride
    apart (so accesses stay coalesced), and the launcher's grid shrinks by 4.

    Moves:
        par.coarsening_loops: up

    Applies where ``to_grid_stride`` does and every launch of the kernel has a 1-D integer
    grid (a ``dim3`` grid is left alone: not applicable).
    """
    src = parse(program)
    b = Builder("coarsen", program)
    edits = []
    for kernel in kernels(src):
        pe = per_element(src, kernel)
        grid = _wrap_grid(src, kernel, f"(({{}}) + {COARSEN - 1}) / {COARSEN}") if pe else None
        if pe is None or grid is None:
            continue
        text = (f"for (int c_ = 0; c_ < {COARSEN}; ++c_) {{  // coarsened: {COARSEN} per thread\n"
                f"{pe.indent}    const {pe.ctype} {pe.var} = blockIdx.x * blockDim.x * {COARSEN} "
                f"+ c_ * blockDim.x + threadIdx.x;\n"
                f"{pe.indent}    if ({pe.var} < {pe.bound}) {{\n"
                f"{indent_block(pe.body, pe.indent + '        ')}\n{pe.indent}    }}\n{pe.indent}}}")
        edits += [(pe.start, pe.end, text), *grid]
    if not edits:
        return b.done("no one-thread-per-element kernel with a 1-D grid launch")
    b.add(splice(src.text, edits), factor=COARSEN)
    return b.done()


@operator("from_grid_stride", family="parallel_strategy")
def from_grid_stride(program: str) -> MutationResult:
    """Turn a top-level grid-stride loop into one thread per element, sizing the grid to N.

    Moves:
        loop.grid_stride: down

    Applies to a kernel-body statement ``for (T i = gid; i < N; i += blockDim.x * gridDim.x)``
    with no barrier or warp collective inside, where ``N`` is a kernel parameter and every
    launch has a 1-D integer grid and block; the grid becomes ``(n + block - 1) / block`` with
    the launch's own arguments.
    """
    src = parse(program)
    b = Builder("from_grid_stride", program)
    edits = []
    for kernel in kernels(src):
        params = [src.of(p.child_by_field_name("declarator")) for p in
                  find(kernel.child_by_field_name("declarator"), "parameter_declaration")]
        for stmt in kernel.child_by_field_name("body").named_children:
            loop = canonical(src, stmt) if stmt.type == "for_statement" else None
            if (loop is None or loop.op != "<" or not is_global_index(loop.start)
                    or not is_grid_stride(loop.step) or has_barrier_or_shared(src, loop.body)
                    or loop.bound.strip() not in params):
                continue
            calls = kernel_launches(src, kernel)
            if not calls or not all(grid_is_1d(src, c) and len(launch_config(c)) >= 2 and
                                    "dim3" not in src.of(launch_config(c)[1]) for c in calls):
                continue
            k_edits = []
            for call in calls:
                args = call.child_by_field_name("arguments").named_children
                n_arg = src.of(args[params.index(loop.bound.strip())])
                blk = src.of(launch_config(call)[1])
                grid = launch_config(call)[0]
                k_edits.append((grid.start_byte, grid.end_byte,
                                f"(({n_arg}) + ({blk}) - 1) / ({blk})"))
            ind = indent_of(src, stmt)
            body = inner_statements(src, loop.body)
            text = (f"const {loop.ctype} {loop.var} = {loop.start};\n{ind}if ({loop.var} < "
                    f"{loop.bound}) {{\n{indent_block(body, ind + '    ')}\n{ind}}}")
            edits += [(stmt.start_byte, stmt.end_byte, text), *k_edits]
            break
    if not edits:
        return b.done("no top-level grid-stride loop over a size parameter with a 1-D launch")
    b.add(splice(src.text, edits))
    return b.done()


@operator("warp_per_row", family="parallel_strategy")
def warp_per_row(program: str) -> MutationResult:
    """Give each row a warp instead of a thread: lanes stride the row's inner loop and a
    ``__shfl_down_sync`` tree combines the partial sums; the grid grows 32x.

    Moves:
        warp.shuffles: up

    Applies to one-thread-per-row kernels ``T r = gid; if (r < R) { T acc = 0; for (j...)
    { acc += ...; } <stores> }`` where the accumulator starts at zero, the loop only adds to
    it, the loop is ``for (T j = a; j < b; ++j)``, the block size is a constant multiple of 32
    and every launch has a 1-D integer grid.
    """
    import re

    src = parse(program)
    b = Builder("warp_per_row", program)
    edits = []
    for kernel in kernels(src):
        pe = per_element(src, kernel)
        calls = kernel_launches(src, kernel)
        if pe is None or not calls:
            continue
        dims = [block_dims(src, c) for c in calls]
        if any(d is None or len(d) != 1 or d[0] % 32 for d in dims):
            continue
        grid = _wrap_grid(src, kernel, "({}) * 32")
        body = parse(pe.body)
        stmts = body.root.named_children
        loops = [s for s in stmts if s.type == "for_statement"]
        if grid is None or len(loops) != 1:
            continue
        lp = canonical(body, loops[0])
        before = stmts[:stmts.index(loops[0])]
        after = stmts[stmts.index(loops[0]) + 1:]
        accs = {}
        for s in before:
            m = re.fullmatch(r"(float|double|int)\s+(\w+)\s*=\s*(0|0\.0f?|0\.f|0\.0)\s*;", body.of(s))
            if m:
                accs[m.group(2)] = m.group(1)
        if lp is None or lp.step.strip() != "1" or not accs or len(before) != len(accs):
            continue
        written = assigned_names(body, lp.body)
        adds = [n for n in find(lp.body, "assignment_expression")
                if body.of(n.child_by_field_name("operator")) == "+="]
        if not written <= set(accs) or \
                {body.of(n.child_by_field_name("left")) for n in adds} != written:
            continue
        ind, in2 = pe.indent, pe.indent + "    "
        lines = ["const int lane_ = threadIdx.x & 31;",
                 f"{ind}const {pe.ctype} {pe.var} = (blockIdx.x * blockDim.x + threadIdx.x) / 32;"
                 f"  // one warp per row",
                 f"{ind}if ({pe.var} < {pe.bound}) {{"]
        lines += [f"{in2}{body.of(s)}" for s in before]
        lines += [f"{in2}for ({lp.ctype} {lp.var} = {lp.start} + lane_; {lp.var} {lp.op} {lp.bound};"
                  f" {lp.var} += 32) {{",
                  indent_block(inner_statements(body, lp.body), in2 + "    "), f"{in2}}}",
                  f"{in2}for (int o_ = 16; o_ > 0; o_ >>= 1) {{"]
        lines += [f"{in2}    {a} += __shfl_down_sync(0xffffffff, {a}, o_);" for a in accs]
        lines += [f"{in2}}}", f"{in2}if (lane_ == 0) {{",
                  indent_block("\n".join(body.of(s) for s in after), in2 + "    "),
                  f"{in2}}}", f"{ind}}}"]
        edits += [(pe.start, pe.end, "\n".join(lines)), *grid]
    if not edits:
        return b.done("no one-thread-per-row kernel with a zero-initialised sum loop")
    b.add(splice(src.text, edits))
    return b.done()
