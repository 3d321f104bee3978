"""Grouped (L2-friendly) tile ordering for a 2-D tiled Triton kernel, as in Triton's matmul
tutorial: consecutive programs walk ``GROUP_SIZE_M`` tile rows before moving to the next tile
column, so the tiles they read stay in L2."""

from __future__ import annotations

import ast

from structcover.tools.mutations._triton import TritonSource, builder, fresh, int_value, is_call, parse_triton
from structcover.tools.mutations.base import MutationResult, operator

GROUP_SIZES = (4, 8)


def _bodies(func: ast.FunctionDef) -> list[list[ast.stmt]]:
    """Every statement list in the kernel (its body, loop and branch bodies)."""
    out: list[list[ast.stmt]] = []
    for node in ast.walk(func):
        for name in ("body", "orelse"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                out.append(stmts)
    return out


def _target(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    return None


def _axis(value: ast.expr) -> int | None:
    """``k`` for ``tl.program_id(k)`` / ``tl.program_id(axis=k)``."""
    if not is_call(value, "program_id"):
        return None
    assert isinstance(value, ast.Call)
    node = value.args[0] if value.args else next(
        (kw.value for kw in value.keywords if kw.arg == "axis"), None)
    return int_value(node)


def _split(src: TritonSource, s1: ast.stmt, s2: ast.stmt
           ) -> tuple[str, str, str, str] | None:
    """(pid, slow name, fast name, X) for ``slow = pid // X`` and ``fast = pid % X``."""
    t1, t2 = _target(s1), _target(s2)
    if t1 is None or t2 is None:
        return None
    ops = {}
    for name, value in (t1, t2):
        if not (isinstance(value, ast.BinOp) and isinstance(value.left, ast.Name)
                and isinstance(value.op, (ast.FloorDiv, ast.Mod))):
            return None
        ops[type(value.op)] = (name, value.left.id, src.of(value.right))
    if set(ops) != {ast.FloorDiv, ast.Mod}:
        return None
    (slow, pid_a, x_a), (fast, pid_b, x_b) = ops[ast.FloorDiv], ops[ast.Mod]
    if pid_a != pid_b or x_a != x_b or pid_a in (slow, fast):
        return None
    return pid_a, slow, fast, x_a


def _grouped(names: dict[str, str], pid: str, slow: str, fast: str, num_slow: str,
             num_fast: str, ind: str) -> str:
    """The tutorial's grouped mapping of ``pid`` to (``slow``, ``fast``) tile indices."""
    g, grp, gid, first, size = (names[k] for k in ("G", "in_group", "group_id", "first", "size"))
    return (f"{grp} = {g} * {num_fast}\n"
            f"{ind}{gid} = {pid} // {grp}\n"
            f"{ind}{first} = {gid} * {g}\n"
            f"{ind}{size} = tl.minimum({num_slow} - {first}, {g})\n"
            f"{ind}{slow} = {first} + (({pid} % {grp}) % {size})\n"
            f"{ind}{fast} = ({pid} % {grp}) // {size}")


def _signature_edit(src: TritonSource, func: ast.FunctionDef, param: str,
                    value: int) -> tuple[int, int, str] | None:
    args = func.args
    if args.vararg or args.kwarg or args.kwonlyargs or not args.args:
        return None
    last: ast.AST = args.defaults[-1] if args.defaults else args.args[-1]
    at = src.end(last)
    return at, at, f", {param}: tl.constexpr = {value}"


@operator("triton_grouped_ordering", family="triton_grouped_ordering", language="triton")
def triton_grouped_ordering(program: str) -> MutationResult:
    """Map a 2-D tiled kernel's programs to tiles in grouped (``GROUP_SIZE_M``) order.

    Moves:
        triton.grouped_ordering: set

    Applies to a kernel that splits one program id row-major (``pid_m = pid // num_pid_n``
    then ``pid_n = pid % num_pid_n``, consecutive statements, either order) or reads two
    axes (``pid_m = tl.program_id(0)`` then ``pid_n = tl.program_id(1)``). The pair becomes
    the grouped mapping of Triton's matmul tutorial with a new parameter ``GROUP_SIZE_M:
    tl.constexpr`` (default 4 or 8, so no launch changes): a bijection of the same tiles.
    Tile-row counts come from the grid (``tl.num_programs``), which must be the tile-grid's
    size (the row-major split implies it); two-axis grids stay two-dimensional, linearized
    in launch order (axis 0 fastest). Does not apply to kernels already grouped (a
    ``GROUP_SIZE_M`` parameter), with ``*args``/keyword-only parameters, or without the pair.
    """
    parsed = parse_triton(program)
    if isinstance(parsed, str):
        return MutationResult(operator="triton_grouped_ordering", not_applicable=parsed)
    src = parsed
    b = builder("triton_grouped_ordering", program)
    reasons: list[str] = []
    for kname, func in src.kernels.items():
        params = {a.arg for a in func.args.args}
        if any(p.upper().startswith("GROUP") for p in params):
            reasons.append(f"{kname}: already grouped (a GROUP... parameter)")
            continue
        for body in _bodies(func):
            for s1, s2 in zip(body, body[1:], strict=False):
                split = _split(src, s1, s2)
                t1, t2 = _target(s1), _target(s2)
                two_axes = (t1 is not None and t2 is not None and _axis(t1[1]) == 0
                            and _axis(t2[1]) == 1)
                if split is None and not two_axes:
                    continue
                for g in GROUP_SIZES:
                    used = src.names_used(func)
                    names = {"G": "GROUP_SIZE_M", "in_group": fresh(used, "num_pid_in_group"),
                             "group_id": fresh(used, "group_id"),
                             "first": fresh(used, "first_pid_m"),
                             "size": fresh(used, "group_size_m")}
                    ind = src.indent(s1)
                    if split is not None:
                        pid, slow, fast, x = split
                        num_slow = fresh(used, "num_pid_m")
                        head = ""
                        if x.isidentifier():
                            num_fast = x
                        else:  # evaluated once, like the split did
                            num_fast = fresh(used, "num_pid_n")
                            head = f"{num_fast} = {x}\n{ind}"
                        head += f"{num_slow} = tl.num_programs(0) // {num_fast}\n{ind}"
                    else:
                        assert t1 is not None and t2 is not None
                        slow, fast = t1[0], t2[0]
                        pid = fresh(used, "pid")
                        num_slow, num_fast = fresh(used, "num_pid_m"), fresh(used, "num_pid_n")
                        head = (f"{num_slow} = tl.num_programs(0)\n"
                                f"{ind}{num_fast} = tl.num_programs(1)\n"
                                f"{ind}{pid} = tl.program_id(1) * {num_slow} + "
                                "tl.program_id(0)  # launch order\n"
                                f"{ind}")
                    text = head + _grouped(names, pid, slow, fast, num_slow, num_fast, ind)
                    sig = _signature_edit(src, func, "GROUP_SIZE_M", g)
                    if sig is None:
                        reasons.append(f"{kname}: *args or keyword-only parameters")
                        break
                    b.add(src.apply([(src.start(s1), src.end(s2), text), sig]),
                          kernel=kname, group_size_m=g,
                          form="row-major split" if split else "two program axes")
                if b.result.variants:
                    return b.done()
        reasons.append(f"{kname}: no row-major pid split or program_id(0)/(1) pair")
    return b.done("; ".join(reasons))
