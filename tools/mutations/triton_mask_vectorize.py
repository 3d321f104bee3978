"""Element-per-program Triton kernels become masked block kernels.

LLM-written Triton often launches one program per element (``i = tl.program_id(0)``, scalar
loads and stores, ``grid = (n,)``): every program moves one element, the warps of a program
instance do the same scalar work, and the launch has ``n`` programs. The block form (``i =
pid * BLOCK + tl.arange(0, BLOCK)``, every access masked by ``i < n``, ``grid = (cdiv(n,
BLOCK),)``) is the layout Triton is written for; the tail moves from the grid's exact size to
the mask. That is why this operator, among the possible "tail handling" rewrites: it is the
change that moves a kernel from scalar to block work, and the mask is what keeps it correct.
"""

from __future__ import annotations

import ast

from structcover.tools.mutations._triton import (
    Launch,
    TritonSource,
    builder,
    dotted,
    fresh,
    is_call,
    parse_triton,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator

BLOCKS = (128, 1024)
#: Calls whose result mixes lanes: a vectorized index would change what they compute.
_CROSS = ("sum", "max", "min", "reduce", "cumsum", "cumprod", "argmax", "argmin", "dot",
          "associative_scan", "sort", "histogram", "xor_sum", "reshape", "view", "trans",
          "permute", "broadcast_to", "expand_dims")


def _pid_stmt(func: ast.FunctionDef) -> tuple[int, str] | str:
    """(index in the body, name) of ``i = tl.program_id(0)``, or why the kernel is not 1-D."""
    found = None
    for idx, stmt in enumerate(func.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and is_call(stmt.value, "program_id"):
            call = stmt.value
            assert isinstance(call, ast.Call)
            axis = call.args[0] if call.args else next(
                (kw.value for kw in call.keywords if kw.arg == "axis"), None)
            if not (isinstance(axis, ast.Constant) and axis.value == 0) or found:
                return "not a 1-D grid"
            found = (idx, stmt.targets[0].id)
    if found is None:
        return "no top-level i = tl.program_id(0)"
    calls = [n for n in ast.walk(func) if is_call(n, "program_id", "num_programs")]
    if len(calls) != 1:
        return "the program id is read more than once (or tl.num_programs is used)"
    return found


def _taint(func: ast.FunctionDef, name: str) -> set[str]:
    names = {name}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                    isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id not in names:
                            names.add(n.id)
                            changed = True
    return names


def _uses(node: ast.AST | None, names: set[str]) -> bool:
    return node is not None and any(isinstance(n, ast.Name) and n.id in names
                                    for n in ast.walk(node))


def _guard(stmt: ast.stmt, pid: str) -> ast.expr | None:
    """``X`` for ``if pid >= X: return`` (or ``X <= pid``)."""
    if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1
            and isinstance(stmt.body[0], ast.Return) and stmt.body[0].value is None
            and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1):
        return None
    left, op, right = stmt.test.left, stmt.test.ops[0], stmt.test.comparators[0]
    if isinstance(op, ast.GtE) and isinstance(left, ast.Name) and left.id == pid:
        return right
    if isinstance(op, ast.LtE) and isinstance(right, ast.Name) and right.id == pid:
        return left
    return None


def _blockers(func: ast.FunctionDef, taint: set[str], skip: ast.stmt | None) -> str | None:
    """Why a per-element index could not become a block of them, or None."""
    for node in ast.walk(func):
        if node is skip:
            continue
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) and _uses(node.test, taint):
            return f"control flow depends on the element (line {node.lineno})"
        if isinstance(node, ast.For) and _uses(node.iter, taint):
            return f"a loop's range depends on the element (line {node.lineno})"
        if isinstance(node, ast.Call) and (is_call(node, *_CROSS)
                                           or dotted(node.func).startswith("tl.atomic_")
                                           or is_call(node, "arange")):
            if is_call(node, "arange"):
                return "already a block kernel (tl.arange)"
            if _uses(node, taint):
                return f"{dotted(node.func)} mixes elements (line {node.lineno})"
        if isinstance(node, ast.Subscript) and _uses(node, taint):
            return f"a subscript of a per-element value (line {node.lineno})"
    return None


def _mask_edit(src: TritonSource, call: ast.Call, store: bool, mask: str
               ) -> tuple[int, int, str]:
    existing = next((kw.value for kw in call.keywords if kw.arg == "mask"), None)
    if existing is None and len(call.args) > (2 if store else 1):
        existing = call.args[2 if store else 1]
    if existing is not None:
        return src.start(existing), src.end(existing), f"({src.of(existing)}) & {mask}"
    at = max(src.end(n) for n in [*call.args, *call.keywords])
    return at, at, f", mask={mask}"


def _extent(src: TritonSource, launch: Launch) -> str | None:
    grid: ast.AST = launch.grid
    if isinstance(grid, ast.Name):
        assigns = src.assignments(launch.scope, grid.id)
        if len(assigns) != 1 or src.binds(launch.scope, grid.id) != 1:
            return None
        grid = assigns[0].value
    if isinstance(grid, ast.Tuple) and len(grid.elts) == 1:
        return src.of(grid.elts[0])
    return None


def _grid_edit(src: TritonSource, launch: Launch, new: str) -> tuple[int, int, str]:
    grid: ast.AST = launch.grid
    if isinstance(grid, ast.Name):
        grid = src.assignments(launch.scope, grid.id)[0].value
    assert isinstance(grid, ast.Tuple)
    elt = grid.elts[0]
    return src.start(elt), src.end(elt), new


@operator("triton_mask_vectorize", family="triton_mask_vectorize", language="triton")
def triton_mask_vectorize(program: str) -> MutationResult:
    """Turn a one-element-per-program Triton kernel into a masked block kernel.

    Moves:
        triton.block_elements: up

    Applies to a kernel with one launch site on a 1-D grid given as a tuple ``(E,)`` (a
    literal, or ``grid = (E,)`` assigned once), whose body reads ``i = tl.program_id(0)``
    once, has no ``tl.arange`` yet, and uses the element only elementwise: not in branch or
    loop conditions, subscripts, reductions, dots, reshapes or atomics, and every store
    through a pointer that depends on it. ``i`` becomes ``pid * BLOCK + tl.arange(0, BLOCK)``
    (BLOCK 128 or 1024, a new ``tl.constexpr`` parameter), each load and store through it is
    masked by ``i < n`` (and'ed with an existing mask), and the grid becomes ``cdiv(E,
    BLOCK)``. ``n`` is the bound of a leading guard ``if i >= n: return`` (the guard goes:
    the mask does its job), else ``E``, passed as a new parameter. Does not apply to kernels
    with ``*args``, keyword-only or defaulted parameters, or launched with a grid function.
    """
    parsed = parse_triton(program)
    if isinstance(parsed, str):
        return MutationResult(operator="triton_mask_vectorize", not_applicable=parsed)
    src = parsed
    b = builder("triton_mask_vectorize", program)
    reasons: list[str] = []
    for kname, func in src.kernels.items():
        why = _kernel_variants(src, b, kname, func)
        if why:
            reasons.append(f"{kname}: {why}")
    return b.done("; ".join(reasons))


def _kernel_variants(src: TritonSource, b: Builder, kname: str, func: ast.FunctionDef
                     ) -> str | None:
    """Add the kernel's variants to ``b``; the reason when there are none."""
    args = func.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or not args.args:
        return "*args, keyword-only or defaulted parameters"
    launches = src.launches(kname)
    if len(launches) != 1:
        return f"{len(launches)} launch sites (one is needed)"
    launch = launches[0]
    extent = _extent(src, launch)
    if extent is None:
        return "the grid is not a one-element tuple (E,)"
    found = _pid_stmt(func)
    if isinstance(found, str):
        return found
    idx, pid = found
    pid_stmt = func.body[idx]
    guard_stmt = func.body[idx + 1] if idx + 1 < len(func.body) else None
    bound = _guard(guard_stmt, pid) if guard_stmt is not None else None
    if bound is None:
        guard_stmt = None
    taint = _taint(func, pid)
    blocked = _blockers(func, taint, guard_stmt)
    if blocked:
        return blocked
    accesses = [(n, is_call(n, "store")) for n in ast.walk(func)
                if isinstance(n, ast.Call) and is_call(n, "load", "store")]
    for call, store in accesses:
        pointer = call.args[0] if call.args else next(
            (kw.value for kw in call.keywords if kw.arg == "pointer"), None)
        if store and not _uses(pointer, taint):
            return f"a store whose address does not depend on the element (line {call.lineno})"
    masked = [(c, s) for c, s in accesses if _uses(c.args[0] if c.args else c, taint)]
    for block in BLOCKS:
        used = src.names_used(func)
        bname, mname = fresh(used, "BLOCK_SIZE"), fresh(used, "mask")
        ind = src.indent(pid_stmt)
        edits: list[tuple[int, int, str]] = []
        if bound is not None:
            n_text, n_sig, n_arg = src.of(bound), "", ""
        else:
            n_param = fresh(used, "n_elements")
            n_text, n_sig, n_arg = n_param, f", {n_param}", f", {n_param}={extent}"
        call = pid_stmt.value  # type: ignore[attr-defined]
        edits.append((src.start(call), src.end(call),
                      f"{src.of(call)} * {bname} + tl.arange(0, {bname})\n"
                      f"{ind}{mname} = {pid} < {n_text}"))
        if guard_stmt is not None:
            edits.append((src.line_start(guard_stmt), src.line_end(guard_stmt), ""))
        edits += [_mask_edit(src, c, s, mname) for c, s in masked]
        last = func.args.args[-1]
        edits.append((src.end(last), src.end(last), f"{n_sig}, {bname}: tl.constexpr"))
        items: list[ast.AST] = [*launch.call.args, *launch.call.keywords]
        at = max(src.end(n) for n in items) if items else src.end(launch.call) - 1
        edits.append((at, at, _launch_keywords(items, n_arg, bname, block)))
        edits.append(_grid_edit(src, launch, f"(({extent}) + {block - 1}) // {block}"))
        try:
            text = src.apply(edits)
        except ValueError:
            return "overlapping edits"
        b.add(text, kernel=kname, block=block, bound="guard" if bound is not None else "grid")
    return None if b.result.variants else "no variant"


def _launch_keywords(items: list[ast.AST], n_arg: str, bname: str, block: int) -> str:
    """The launch keywords to append (the new bound, if any, and the block)."""
    parts = [p for p in (n_arg.lstrip(", "), f"{bname}={block}") if p]
    return (", " if items else "") + ", ".join(parts)
