"""Triton block sizes: halve and double a ``tl.constexpr`` tile size at a launch or in configs."""

from __future__ import annotations

import ast

from structcover.tools.mutations._triton import (
    Launch,
    TritonSource,
    builder,
    dotted,
    has_mask,
    int_value,
    is_call,
    is_constexpr,
    loads_stores,
    parse_triton,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator

#: Tile sizes a ``tl.dot`` operand may take (16 is its minimum; 256 keeps the tiles of two or
#: three pipeline stages within shared memory), and the range for other blocks.
DOT_RANGE = (16, 256)
BLOCK_RANGE = (16, 8192)


def _pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _meta_keys(node: ast.AST) -> set[str]:
    """``P`` for every ``meta["P"]`` subscript (a grid lambda reading a launch meta-parameter)."""
    return {n.slice.value for n in ast.walk(node)
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)
            and isinstance(n.slice.value, str)}


def _loop_tiled(func: ast.FunctionDef, param: str) -> bool:
    """Whether the kernel steps a loop by ``param`` (``range(0, n, BLOCK)``, ``tl.cdiv``)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and dotted(node.func) in ("range", "tl.range",
                                                                "tl.static_range"):
            if any(isinstance(n, ast.Name) and n.id == param
                   for a in node.args for n in ast.walk(a)):
                return True
    return False


def _block_access(func: ast.FunctionDef, call: ast.Call) -> bool:
    """Whether an access's address is a block (depends on a ``tl.arange``): a scalar access
    (``tl.store(out + row, total)``) needs no mask whatever the block size."""
    blocks: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AugAssign)) and (
                    any(is_call(n, "arange") for n in ast.walk(node.value))
                    or any(isinstance(n, ast.Name) and n.id in blocks
                           for n in ast.walk(node.value))):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                new = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if not new <= blocks:
                    blocks |= new
                    changed = True
    pointer = call.args[0] if call.args else call
    return any(is_call(n, "arange") or (isinstance(n, ast.Name) and n.id in blocks)
               for n in ast.walk(pointer))


def _grid(src: TritonSource, launch: Launch) -> ast.AST:
    """The launch's grid expression, following ``grid = ...`` assigned once in its scope."""
    grid: ast.AST = launch.grid
    if isinstance(grid, ast.Name):
        assigns = src.assignments(launch.scope, grid.id)
        if len(assigns) == 1:
            grid = assigns[0].value
    return grid


def _limits(func: ast.FunctionDef) -> tuple[int, int]:
    return DOT_RANGE if any(is_call(n, "dot") for n in ast.walk(func)) else BLOCK_RANGE


def _launch_edits(src: TritonSource, launch: Launch, param: str
                  ) -> tuple[int, list[ast.Constant], str] | str:
    """(value, literal nodes to rewrite together, where) for ``param`` at a launch, or why not."""
    func = src.kernels[launch.kernel]
    arg = src.argument(launch, param)
    if arg is None:
        return "not passed at the launch"
    grid = _grid(src, launch)
    if isinstance(arg, ast.Name):
        assigns = src.assignments(launch.scope, arg.id)
        if len(assigns) != 1 or src.binds(launch.scope, arg.id) != 1 \
                or int_value(assigns[0].value) is None:
            return f"{arg.id} is not one integer constant of the launching function"
        lit = assigns[0].value
        assert isinstance(lit, ast.Constant)
        tied = arg.id in {n.id for n in ast.walk(grid) if isinstance(n, ast.Name)}
        nodes, where = [lit], f"{arg.id} = {int_value(lit)}"
    else:
        value = int_value(arg)
        if value is None:
            return "not an integer literal or a named constant"
        assert isinstance(arg, ast.Constant)
        # Other meta-parameters of this launch (BLOCK_N=16 beside BLOCK_M=16) are their own.
        own = {id(kw.value) for kw in launch.call.keywords} | {id(arg)}
        same = [n for n in ast.walk(launch.scope) if isinstance(n, ast.Constant)
                and int_value(n) == value and id(n) not in own]
        in_grid = [n for n in ast.walk(grid) if isinstance(n, ast.Constant)
                   and int_value(n) == value]
        if len(same) != len(in_grid):
            return f"the literal {value} also appears outside the grid (it may size more)"
        tied = param in _meta_keys(grid) or bool(in_grid)
        nodes, where = [arg, *in_grid], f"{param}={value}"
    if not (tied or _loop_tiled(func, param)):
        return "neither the grid nor a loop of the kernel is tiled by it (it covers a whole extent)"
    return int(nodes[0].value), nodes, where


def _add_scaled(b: Builder, src: TritonSource, nodes: list[ast.Constant], value: int,
                limits: tuple[int, int], **params: str | int) -> None:
    """Halve and double every node (configs may differ; a launch's ties are equal)."""
    values = [int(n.value) for n in nodes]
    for num, den in ((1, 2), (2, 1)):
        new = [v * num // den for v in values]
        if all(limits[0] <= v <= limits[1] for v in new):
            text = src.apply([(src.start(n), src.end(n), str(v))
                              for n, v in zip(nodes, new, strict=True)])
            b.add(text, old=value, new=value * num // den, **params)


def _configs(func: ast.FunctionDef) -> list[ast.Dict]:
    """The meta-parameter dicts of ``triton.Config({...})`` in the kernel's decorators."""
    out: list[ast.Dict] = []
    for dec in func.decorator_list:
        for node in ast.walk(dec):
            if isinstance(node, ast.Call) and dotted(node.func).endswith("Config") \
                    and node.args and isinstance(node.args[0], ast.Dict):
                out.append(node.args[0])
    return out


def _config_edits(src: TritonSource, func: ast.FunctionDef, param: str
                  ) -> list[ast.Constant] | None:
    nodes: list[ast.Constant] = []
    for cfg in _configs(func):
        for key, value in zip(cfg.keys, cfg.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == param:
                if int_value(value) is None or not _pow2(int_value(value) or 0):
                    return None
                assert isinstance(value, ast.Constant)
                nodes.append(value)
    return nodes or None


@operator("triton_block_size", family="triton_block_size", language="triton")
def triton_block_size(program: str) -> MutationResult:
    """Halve and double a Triton kernel's ``tl.constexpr`` block size.

    Moves:
        triton.block_elements: set

    Applies to a constexpr parameter that is a power of two and tiles the work: at a launch
    site (``kernel[grid](..., BLOCK_SIZE=1024)``, or a launcher constant ``BLOCK = 1024``
    passed by name) it must be read by the grid (``meta["BLOCK_SIZE"]``, the named constant,
    or the same literal, which is edited with it) or step a loop of the kernel
    (``range(0, n, BLOCK)``); in ``triton.Config({...})`` lists every config's value is
    scaled. Every load and store of the kernel must be masked (``mask=`` or a block pointer's
    ``boundary_check``), so that a larger block cannot touch the tail. New sizes stay within
    16..256 for kernels that call ``tl.dot`` and 16..8192 otherwise. Does not apply to blocks
    that cover a whole extent (a row's ``next_power_of_2``), computed values, or unmasked
    kernels: the reason names the parameter.
    """
    parsed = parse_triton(program)
    if isinstance(parsed, str):
        return MutationResult(operator="triton_block_size", not_applicable=parsed)
    src = parsed
    b = builder("triton_block_size", program)
    reasons: list[str] = []
    for name, func in src.kernels.items():
        params = [a.arg for a in func.args.args if is_constexpr(a)]
        if not params:
            continue
        unmasked = [c for c, store in loads_stores(func)
                    if not has_mask(c, store) and _block_access(func, c)]
        if unmasked:
            reasons.append(f"{name}: an unmasked load/store (line {unmasked[0].lineno}): "
                           "a larger block could run past the tail")
            continue
        limits = _limits(func)
        for param in params:
            nodes = _config_edits(src, func, param)
            if nodes:
                _add_scaled(b, src, nodes, int(nodes[0].value), limits, param=param,
                            site="triton.Config")
                continue
            for launch in src.launches(name):
                found = _launch_edits(src, launch, param)
                if isinstance(found, str):
                    reasons.append(f"{name}.{param}: {found}")
                    continue
                value, lits, where = found
                if not _pow2(value) or any(int_value(n) != value for n in lits[:1]):
                    reasons.append(f"{name}.{param}: {value} is not a power of two")
                    continue
                _add_scaled(b, src, lits, value, limits, param=param, site=where)
                break
    return b.done("; ".join(reasons) or "no kernel has a tl.constexpr block parameter")
