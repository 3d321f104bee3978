"""Shared-memory tiling: global data staged in shared memory, a barrier, then shared reads."""

from __future__ import annotations

import re

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.memory import MemoryFacts
from structcover.tools.features.model import Facts

_F_RIGHT = field_id("right")

_NAME = re.compile(rb"[A-Za-z_]\w*")


def tiling_features(facts: Facts, mem: MemoryFacts) -> dict[str, bool | int]:
    """Shared-memory staging: global data stored to shared, a barrier, then shared reads."""
    tiled = False
    reuse_in_loop = False
    for func in facts.funcs:
        if not func.is_device or not (func.shared or facts.file_shared):
            continue
        loads = mem.loads_by_func.get(id(func), [])
        barrier = any(n.startswith(b"__syncthreads") or n == b".sync" or n == b"__syncwarp"
                      for n, _ in func.calls)
        from_global = {name for name, defs in func.defs.items()
                       for _, v in defs[:1] if _contains(loads, v)}
        staged_depth = None
        shared_reads = []
        for acc in mem.of(func):
            if acc.space != "shared":
                continue
            if not acc.store:
                shared_reads.append(acc)
                continue
            assign = acc.site.node.parent
            right = assign.child_by_field_id(_F_RIGHT) if assign is not None else None
            if right is None:
                continue
            if _contains(loads, right) or _reads_any(right, from_global):
                depth = acc.site.loop_depth
                staged_depth = depth if staged_depth is None else min(staged_depth, depth)
        async_copy = any(b"memcpy_async" in n or b"cp_async" in n for n, _ in func.calls) or \
            any(b"cp.async" in a for a in facts.asm)
        # A WMMA fragment load from a shared array reads the staged tile too (no subscript).
        shared_names = set(func.shared) | set(facts.file_shared)
        read_depths = [r.site.loop_depth for r in shared_reads] + [
            site.loop_depth for n, site in func.calls
            if n.endswith(b"load_matrix_sync") and _reads_any(site.node, shared_names)]
        if (staged_depth is not None or async_copy) and barrier and read_depths:
            tiled = True
            base = staged_depth or 0
            reuse_in_loop = reuse_in_loop or any(d > base for d in read_depths)
    return {"smem.tiled": tiled, "smem.reuse_in_loop": reuse_in_loop}


def _contains(ranges: list[tuple[int, int]], node: Node) -> bool:
    s, e = node.start_byte, node.end_byte
    return any(s <= a and b <= e for a, b in ranges)


def _reads_any(node: Node, names: set[bytes]) -> bool:
    """True when ``node`` reads one of ``names`` (identifiers read off the text, no walk)."""
    if not names:
        return False
    return any(name in names for name in _NAME.findall(node.text))
