"""Memory-hierarchy promotion: stage reused global tiles in shared memory; cache a reused
global value in a register."""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._loops import canonical
from structcover.tools.mutations._patterns import kernel_launches
from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    block_dims,
    dedented,
    find,
    identifiers,
    indent_block,
    indent_of,
    is_device_code,
    kernels,
    parse,
    pointer_params,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator


def _axis_var(src: Src, stmt: ts.Node, axis: str) -> str | None:
    """Name declared as ``blockIdx.<a> * ... + threadIdx.<a>`` along ``axis`` only."""
    m = re.fullmatch(r"(?:const\s+)?(?:int|unsigned)\s+(\w+)\s*=\s*(.+?);", src.of(stmt), re.S)
    if not m:
        return None
    rhs = m.group(2)
    other = "y" if axis == "x" else "x"
    if f"threadIdx.{axis}" in rhs and f"blockIdx.{axis}" in rhs and f"threadIdx.{other}" not in rhs \
            and f"blockIdx.{other}" not in rhs:
        return m.group(1)
    return None


def _guard_bounds(src: Src, cond: ts.Node, vx: str, vy: str) -> dict[str, str] | None:
    text = re.sub(r"\s+", " ", src.of(cond)).strip()[1:-1].strip()
    parts = [p.strip().strip("()") for p in text.split("&&")]
    bounds = {}
    for part in parts:
        m = re.fullmatch(r"(\w+)\s*<\s*(\w+)", part)
        if not m or m.group(1) not in (vx, vy):
            return None
        bounds[m.group(1)] = m.group(2)
    return bounds if set(bounds) == {vx, vy} else None


@operator("tile_smem", family="smem_promotion")
def tile_smem(program: str) -> MutationResult:
    """Stage the two operands of a dot-product loop in shared-memory tiles (classic GEMM
    tiling): per k-tile each thread loads one element of each tile (guarded, zero-filled),
    a barrier, the inner loop reads the tiles, a barrier.

    Moves:
        smem.tiled: up
        sync.block_barriers: up

    Applies to kernels with ``vx = blockIdx.x*blockDim.x + threadIdx.x`` and
    ``vy = ...y`` declared at top level, followed by a final ``if (vy < M && vx < N) { <acc
    declarations with constant initialisers>; for (int k = 0; k < K; ++k) <body>; <stores> }``,
    where the loop body reads exactly two global arrays, one indexed by ``vy`` and ``k`` only
    and one by ``vx`` and ``k`` only, writes only the accumulators, and every launch uses the
    same constant square block (T, T). Out-of-range threads still load and hit the barriers.

    Otherwise, in 1-D: a one-thread-per-output kernel (``i = gid; if (i >= N) return;`` or a
    final ``if (i < N) {...}``) whose single counted loop reads a broadcast operand (a
    read-only pointer parameter indexed by the loop variable and thread-independent names,
    read unconditionally: GEMV's ``x[k]``, a stencil's ``w[j + R]``) and that every launch
    runs with the same constant 1-D block T: the operand is staged T values at a time in a
    ``__shared__`` tile that every thread helps load, between barriers; the per-thread work
    stays guarded. See ``_tile1d.tile_broadcast_1d``.
    """
    src = parse(program)
    b = Builder("tile_smem", program)
    for kernel in kernels(src):
        body = kernel.child_by_field_name("body")
        stmts = [s for s in body.named_children if s.type != "comment"]
        vx = next((v for s in stmts if (v := _axis_var(src, s, "x"))), None)
        vy = next((v for s in stmts if (v := _axis_var(src, s, "y"))), None)
        guard = stmts[-1] if stmts else None
        if not vx or not vy or guard is None or guard.type != "if_statement" or \
                guard.child_by_field_name("alternative") is not None:
            continue
        bounds = _guard_bounds(src, guard.child_by_field_name("condition"), vx, vy)
        cons = guard.child_by_field_name("consequence")
        if bounds is None or cons.type != "compound_statement":
            continue
        inner = [s for s in cons.named_children if s.type != "comment"]
        loops = [s for s in inner if s.type == "for_statement"]
        if len(loops) != 1:
            continue
        lp = canonical(src, loops[0])
        pos = inner.index(loops[0])
        before, after = inner[:pos], inner[pos + 1:]
        if lp is None or lp.start.strip() != "0" or lp.op != "<" or lp.step.strip() != "1":
            continue
        accs = set()
        for s in before:
            if s.type != "declaration" or find(s, "subscript_expression", "call_expression"):
                break
            accs |= {src.of(n) for n in find(s, "identifier")[:1]}
        else:
            pass
        if len(accs) != len(before):
            continue
        if not assigned_names(src, lp.body) <= accs:
            continue
        params = pointer_params(src, kernel)
        subs = find(lp.body, "subscript_expression")
        roles: dict[str, tuple[str, str]] = {}  # array -> (axis, index text)
        ok = bool(subs)
        for s in subs:
            arr = src.of(s.child_by_field_name("argument"))
            idx_node = s.child_by_field_name("indices")
            names = identifiers(src, idx_node)
            if arr not in params or lp.var not in names or find(idx_node, "subscript_expression"):
                ok = False
                break
            axis = "y" if vy in names and vx not in names else "x" if vx in names and vy not in names else ""
            idx = src.of(idx_node)[1:-1]
            if not axis or roles.get(arr, (axis, idx)) != (axis, idx):
                ok = False
                break
            roles[arr] = (axis, idx)
        if not ok or sorted(a for a, _ in roles.values()) != ["x", "y"]:
            continue
        dims = {block_dims(src, c) for c in kernel_launches(src, kernel)}
        if len(dims) != 1 or None in dims:
            continue
        (dim,) = dims
        if len(dim) < 2 or dim[0] != dim[1] or any(d != 1 for d in dim[2:]):
            continue
        tile = dim[0]
        elem = {a: params[a].replace("const", "").strip() for a in roles}
        ind = indent_of(src, guard)
        kk, k0 = "kk_", "k0_"
        lines = [f"__shared__ {elem[a]} {a}_tile_[{tile}][{tile}];  "
                 f"// staged {'rows' if ax == 'y' else 'columns'} of {a}"
                 for a, (ax, _) in roles.items()]
        lines += [dedented(src, s) for s in before]
        lines.append(f"for (int {k0} = 0; {k0} < {lp.bound}; {k0} += {tile}) {{")
        for a, (ax, idx) in roles.items():
            along = "threadIdx.x" if ax == "y" else "threadIdx.y"
            own = bounds[vy] if ax == "y" else bounds[vx]
            var = vy if ax == "y" else vx
            idx_t = re.sub(r"\b" + re.escape(lp.var) + r"\b", f"({k0} + {along})", idx)
            lines.append(f"    {a}_tile_[threadIdx.y][threadIdx.x] = ({var} < {own} && {k0} + {along} < "
                         f"{lp.bound}) ? {a}[{idx_t}] : ({elem[a]})0;")
        lines.append("    __syncthreads();")
        lines.append(f"    for (int {kk} = 0; {kk} < {tile} && {k0} + {kk} < {lp.bound}; ++{kk}) {{")
        lines.append(f"        const int {lp.var} = {k0} + {kk};")
        edits = []
        for s in subs:
            a = src.of(s.child_by_field_name("argument"))
            rep = f"{a}_tile_[threadIdx.y][{kk}]" if roles[a][0] == "y" else f"{a}_tile_[{kk}][threadIdx.x]"
            edits.append((s.start_byte - lp.body.start_byte, s.end_byte - lp.body.start_byte, rep))
        new_body = splice(src.text[lp.body.start_byte:lp.body.end_byte], edits)
        new_body = re.sub(r"^\{|\}$", "", new_body.strip()).strip()
        lines.append(indent_block("\n".join(ln.strip() for ln in new_body.splitlines()), "        "))
        lines += ["    }", "    __syncthreads();", "}"]
        cond = src.of(guard.child_by_field_name("condition"))
        lines.append(f"if {cond} {{")
        lines += [indent_block(dedented(src, s), "    ") for s in after]
        lines.append("}")
        text = "\n".join(lines[:1] + [indent_block(ln, ind) for ln in lines[1:]])
        b.add(splice(src.text, [(guard.start_byte, guard.end_byte, text)]), tile=tile)
    if not b.result.variants:
        from structcover.tools.mutations._tile1d import tile_broadcast_1d
        from structcover.tools.mutations.sync_granularity import _thread_dependent

        for kernel in kernels(src):
            found = tile_broadcast_1d(src, kernel, _thread_dependent(src, kernel))
            if found is not None:
                b.add(found[0], tile=found[1], dims=1)
    return b.done("no dot-product kernel (vx/vy guard, k loop over two global operands) "
                  "launched with a constant square block, and no one-thread-per-output kernel "
                  "whose loop reads a broadcast operand, launched with a constant 1-D block")


_UNSAFE = ("if_statement", "conditional_expression", "for_statement", "while_statement",
           "do_statement", "switch_statement", "lambda_expression")


def _safe_path(node: ts.Node, stop: ts.Node) -> bool:
    """True when nothing between ``node`` and ``stop`` makes its evaluation conditional."""
    cur = node.parent
    while cur is not None and cur != stop:
        if cur.type in _UNSAFE:
            return False
        if cur.type == "binary_expression" and any(
                ch.type in ("&&", "||") for ch in cur.children):
            return False
        cur = cur.parent
    return cur == stop


@operator("cache_in_register", family="smem_promotion")
def cache_in_register(program: str) -> MutationResult:
    """Load a global value that a block of code reads several times once, into a register.

    Moves:
        mem.global_loads: down

    Applies to ``a[e]`` read two or more times in one ``{}`` block of device code, where
    ``a`` is a pointer parameter the function never writes, no name in ``e`` is assigned in
    that block, and every read is evaluated unconditionally in the block (no ``if``, loop,
    ``?:``, ``&&``/``||`` in between), so the hoisted load reads nothing the original did not.
    """
    src = parse(program)
    b = Builder("cache_in_register", program)
    edits: list[tuple[int, int, str]] = []
    count = 0
    for fn in find(src.root, "function_definition"):
        if not is_device_code(fn):
            continue
        params = pointer_params(src, fn)
        written = assigned_names(src, fn)
        for block in find(fn.child_by_field_name("body"), "compound_statement"):
            groups: dict[str, list[ts.Node]] = {}
            for sub in find(block, "subscript_expression"):
                arr = src.of(sub.child_by_field_name("argument"))
                if arr not in params or arr in written or not _safe_path(sub, block):
                    continue
                groups.setdefault(re.sub(r"\s+", "", src.of(sub)), []).append(sub)
            for subs in groups.values():
                if len(subs) < 2 or any(e[0] < subs[-1].end_byte and e[1] > subs[0].start_byte
                                        for e in edits):
                    continue
                idx_names = identifiers(src, subs[0].child_by_field_name("indices"))
                if idx_names & assigned_names(src, block):
                    continue
                first_stmt = subs[0]
                while first_stmt.parent != block:
                    first_stmt = first_stmt.parent
                if idx_names & {src.of(n) for n in find(first_stmt, "identifier")
                                if n.parent.type in ("init_declarator", "declaration")}:
                    continue
                count += 1
                arr = src.of(subs[0].child_by_field_name("argument"))
                name = f"{arr}_r{count}_"
                elem = params[arr].replace("const", "").strip()
                edits.append((first_stmt.start_byte, first_stmt.start_byte,
                              f"const {elem} {name} = {src.of(subs[0])};  // reused: load once\n"
                              f"{indent_of(src, first_stmt)}"))
                edits += [(s.start_byte, s.end_byte, name) for s in subs]
    if not edits:
        return b.done("no global value read twice unconditionally in one block")
    b.add(splice(src.text, edits), cached=count)
    return b.done()
