"""Find kernel launches (``k<<<grid, block, smem, stream>>>``) and their block sizes.

The block size decides occupancy. It is read from the launch when it is a literal, a simple
constant (``#define``, ``const``/``constexpr`` int, a ``dim3`` built from those) or arithmetic
over them; anything else is reported as unknown and the caller uses a stated default.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser

from structcover.arith import LAUNCH_CALLS, ExprError, eval_int_expr, from_c

#: Block size assumed when a launch's block is not a compile-time constant.
DEFAULT_BLOCK_SIZE = 256


@functools.lru_cache(maxsize=1)
def cuda_parser() -> Parser:
    """A tree-sitter parser for CUDA (cached: building it costs a few milliseconds)."""
    return Parser(Language(tree_sitter_cuda.language()))


def parse(source: str) -> Node:
    """Parse CUDA source and return the root node."""
    return cuda_parser().parse(source.encode("utf-8", "surrogatepass")).root_node


def node_text(node: Node) -> str:
    """The source text of ``node``."""
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


@dataclass(frozen=True)
class LaunchSite:
    """One ``<<<...>>>`` launch in the program's host code."""

    kernel: str
    #: The launched expression as written, e.g. ``scale<4>`` for a template kernel.
    expression: str
    grid: str
    block: str
    line: int
    #: Threads per block when the block is a compile-time constant, else None.
    block_size: int | None
    #: Dynamic shared memory bytes (third launch argument) when constant; 0 when absent.
    dynamic_smem: int | None = 0


def _walk(node: Node):
    cursor = node.walk()
    visited_children = False
    while True:
        if not visited_children:
            yield cursor.node
            if cursor.goto_first_child():
                continue
        if cursor.goto_next_sibling():
            visited_children = False
            continue
        if not cursor.goto_parent():
            return
        visited_children = True


def _constants(root: Node) -> dict[str, str]:
    """Names bound to simple expressions: #define, const/constexpr ints, dim3 variables."""
    table: dict[str, str] = {}
    for node in _walk(root):
        if node.type == "preproc_def":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None:
                table[node_text(name)] = node_text(value).strip()
        elif node.type == "declaration":
            text = node_text(node)
            is_dim3 = re.match(r"\s*(?:const\s+)?dim3\b", text) is not None
            if not is_dim3 and not re.search(r"\b(const|constexpr)\b", text):
                continue
            for decl in node.children_by_field_name("declarator"):
                if decl.type == "function_declarator" and is_dim3:
                    # `dim3 b(TILE, TILE);` parses as a function prototype (C++'s vexing
                    # parse); the parameter "types" are the constant names.
                    name, params = decl.child_by_field_name("declarator"), \
                        decl.child_by_field_name("parameters")
                    if name is not None and params is not None:
                        table[node_text(name)] = f"dim3{node_text(params)}"
                elif decl.type == "init_declarator":
                    name, value = decl.child_by_field_name("declarator"), \
                        decl.child_by_field_name("value")
                    if name is None or value is None:
                        continue
                    value_text = node_text(value)
                    if value.type == "argument_list":  # dim3 b(16, 16)
                        value_text = f"dim3{value_text}"
                    elif value.type == "initializer_list" and is_dim3:  # dim3 b{16, 16}
                        value_text = f"dim3({value_text.strip('{}')})"
                    table[node_text(name)] = value_text
    return table


def _safe_eval(expr: str, table: dict[str, str], depth: int = 0) -> int | None:
    """Evaluate integer arithmetic over known constants; dim3(a, b, c) is a*b*c."""
    if depth > 16:
        return None

    def resolve(name: str) -> int | None:
        return _safe_eval(table[name], table, depth + 1) if name in table else None

    try:
        return eval_int_expr(from_c(expr), resolve, calls=LAUNCH_CALLS)
    except ExprError:
        return None


def find_launches(source: str) -> list[LaunchSite]:
    """Every kernel launch in ``source``, in document order.

    Args:
        source: A CUDA program.

    Returns:
        One :class:`LaunchSite` per ``<<<...>>>`` call.
    """
    root = parse(source)
    table = _constants(root)
    sites: list[LaunchSite] = []
    for node in _walk(root):
        if node.type != "call_expression":
            continue
        config = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
        func = node.child_by_field_name("function")
        if config is None or func is None:
            continue
        args = config.named_children
        if len(args) < 2:
            continue
        name_node = func.child_by_field_name("name") if func.type == "template_function" else func
        kernel = node_text(name_node if name_node is not None else func).split("::")[-1]
        block = node_text(args[1])
        sites.append(LaunchSite(kernel=kernel, expression=node_text(func), grid=node_text(args[0]),
                                block=block, line=node.start_point[0] + 1,
                                block_size=_safe_eval(block, table),
                                dynamic_smem=_safe_eval(node_text(args[2]), table)
                                if len(args) > 2 else 0))
    return sites


def block_size_for(kernel: str, launches: list[LaunchSite],
                   default: int = DEFAULT_BLOCK_SIZE) -> tuple[int, str]:
    """Block size to use for ``kernel`` and where it came from.

    Returns:
        ``(size, source)`` with source ``"launch"`` (a constant block in a launch of this
        kernel; the largest when launched several ways) or ``"default"``.
    """
    sizes = [s.block_size for s in launches
             if s.kernel == kernel and s.block_size is not None and s.block_size > 0]
    if sizes:
        return max(sizes), "launch"
    return default, "default"
