"""AST family: kernels, device functions, loops, branches, templates, pragmas, launches."""

from __future__ import annotations

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.model import Facts
from structcover.tools.features.parallel import depends_on_thread
from structcover.tools.features.poly import Indirect, NotAffine, const_of

_F_ARGUMENTS = field_id("arguments")
_F_CONDITION = field_id("condition")


def _launch_config(facts: Facts, resolvers: dict[int, Resolver], call: Node
                   ) -> tuple[float | None, bool, bool]:
    """(threads per block when constant, dynamic smem given, stream given) of one launch."""
    cfg = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
    if cfg is None:
        return None, False, False
    args = cfg.named_children
    block = None
    if len(args) >= 2:
        host = facts.func_at(call.start_byte)
        block = _threads(facts, resolvers, host, args[1])
    smem = len(args) >= 3 and args[2].text.strip() not in (b"0", b"0u", b"nullptr")
    return block, smem, len(args) >= 4


def _threads(facts: Facts, resolvers: dict[int, Resolver], func, node: Node) -> float | None:
    if func is None:
        return None
    res = resolvers.setdefault(id(func), Resolver(facts, func))
    if node.type == "identifier":
        defs = func.defs.get(node.text, [])
        if defs and defs[0][1].type in ("argument_list", "initializer_list", "call_expression",
                                        "parameter_list"):
            node = defs[0][1]
    if node.type == "call_expression":  # dim3(32, 8)
        args = node.child_by_field_id(_F_ARGUMENTS)
        node = args if args is not None else node
    parts = node.named_children if node.type in ("argument_list", "initializer_list",
                                                 "parameter_list") else [node]
    total = 1.0
    for part in parts:
        try:
            if part.type == "parameter_declaration":  # a macro parsed as a type name
                value = const_of(res.variable(part.text.strip())[0])
            else:
                value = const_of(res.resolve(part)[0])
        except (NotAffine, Indirect):
            return None
        if value is None:
            return None
        total *= value
    return total


def ast_features(facts: Facts, resolvers: dict[int, Resolver]
                 ) -> dict[str, float | int | bool | None]:
    """``kernel.*``, ``loop.*`` (except grid-stride), ``branch.*``, ``launch.*`` values."""
    device = [f for f in facts.funcs if f.is_device]
    branches = sum(len(f.branches) for f in device)
    divergent = 0
    ternary = 0
    for func in device:
        res = resolvers.setdefault(id(func), Resolver(facts, func))
        for site in func.branches:
            if site.node.type == "conditional_expression":
                ternary += 1
            cond = site.node.child_by_field_id(_F_CONDITION)
            if cond is not None and depends_on_thread(cond, res):
                divergent += 1
    blocks = []
    dyn_smem = streams = False
    for call in facts.launches:
        block, smem, stream = _launch_config(facts, resolvers, call)
        if block is not None:
            blocks.append(block)
        dyn_smem = dyn_smem or smem
        streams = streams or stream
    return {
        "ast.nodes": facts.nodes,
        "kernel.count": len(facts.kernels),
        "kernel.device_functions": sum(1 for f in device if f.kind == "device"),
        "kernel.templates": facts.templates,
        "kernel.launch_bounds": facts.launch_bounds,
        "loop.count": sum(len(f.loops) for f in device),
        "loop.max_depth": max((f.max_loop_depth for f in device), default=0),
        "loop.unroll_pragmas": facts.pragmas_unroll,
        "branch.count": branches,
        "branch.divergent": divergent,
        "branch.ternary": ternary,
        "launch.count": len(facts.launches),
        "launch.block_size": max(blocks) if blocks else None,
        "launch.distinct_block_sizes": len(set(blocks)),
        "launch.dynamic_smem": dyn_smem,
        "launch.with_stream": streams,
    }
