"""Parallelization family: barriers and where they sit, warp primitives, atomics, grid-stride
loops, coarsening, reduction strategies, cooperative groups, tensor cores, async copies."""

from __future__ import annotations

import re

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.memory import MemoryFacts
from structcover.tools.features.model import Facts, Func
from structcover.tools.features.pointers import address_space
from structcover.tools.features.poly import Indirect, NotAffine, const_of, thread_dependent

_F_ARGUMENT = field_id("argument")
_F_ARGUMENTS = field_id("arguments")
_F_CONDITION = field_id("condition")
_F_FUNCTION = field_id("function")
_F_LEFT = field_id("left")
_F_RIGHT = field_id("right")
_F_UPDATE = field_id("update")
_F_VALUE = field_id("value")

_VOTES = (b"__ballot_sync", b"__any_sync", b"__all_sync", b"__uni_sync", b"__match_any_sync",
          b"__match_all_sync", b"__ballot", b"__any", b"__all", b".ballot", b".any", b".all",
          b".match_any", b".match_all")
_SHUFFLES = (b"__shfl", b".shfl")
_ASYNC = (b"memcpy_async", b"__pipeline_memcpy_async", b"cp_async", b"cp.async")
_FAST_MATH = frozenset({b"__expf", b"__logf", b"__sinf", b"__cosf", b"__tanf", b"__powf",
                        b"__fdividef", b"__exp10f", b"__log2f", b"__log10f", b"__saturatef",
                        b"__frcp_rn", b"__fsqrt_rn", b"__frsqrt_rn", b"__fmaf_rn"})
_HALVING = (b">>=", b"/=", b"*=", b"<<=")
_NAME = re.compile(rb"[A-Za-z_]\w*")


def depends_on_thread(node: Node, res: Resolver) -> bool:
    """True when ``node`` reads a thread index, directly or through variable definitions."""
    text = node.text
    if b"threadIdx" in text or b"thread_rank" in text:
        return True
    func = res.func
    # Names are read off the text (cheaper than walking the subtree's nodes); a name that is
    # not a local variable (a parameter, a field, a keyword) cannot carry a thread index.
    # Names go in document order, never a set's: the first thread-dependent one returns, and
    # which variables were resolved by then is what ``dataflow.index_vars`` counts (a set's
    # order follows PYTHONHASHSEED).
    for name in dict.fromkeys(_NAME.findall(text)):
        if name in func.defs:
            try:
                if thread_dependent(res.variable(name, node.start_byte)[0]):
                    return True
            except (NotAffine, Indirect):
                if any(b"threadIdx" in v.text or b"thread_rank" in v.text
                       for _, v in func.defs[name][:4]):
                    return True
    return False


def _is_block_sync(func: Func, name: bytes, node: Node) -> bool | None:
    """Block barrier True, warp/tile sync False, not a sync None."""
    if name.startswith(b"__syncthreads") or name in (b"cg::sync", b"cooperative_groups::sync",
                                                     b"__barrier_sync"):
        return True
    if name == b"__syncwarp":
        return False
    if name == b".sync":
        fn = node.child_by_field_id(_F_FUNCTION)
        obj = fn.child_by_field_id(_F_ARGUMENT) if fn is not None else None
        if obj is None:
            return True
        defs = func.defs.get(obj.text, [])
        if any(b"tiled_partition" in v.text or b"coalesced_threads" in v.text for _, v in defs):
            return False
        return True
    return None


def _grid_stride(func: Func, loop: Node) -> bool:
    if loop.type == "for_statement":
        upd = loop.child_by_field_id(_F_UPDATE)
        if upd is None:
            return False
        if b"gridDim" in upd.text or b"num_threads" in upd.text:
            return True
        return any(b"gridDim" in v.text for name in _NAME.findall(upd.text)
                   for _, v in func.defs.get(name, [])[:2])
    s, e = loop.start_byte, loop.end_byte
    for defs in func.defs.values():
        for op, v in defs:
            if op == "+=" and s <= v.start_byte and v.end_byte <= e:
                if b"gridDim" in v.text or any(b"gridDim" in w.text
                                               for _, w in func.defs.get(v.text, [])[:2]):
                    return True
    return False


def _halving(loop: Node) -> bool:
    if loop.type != "for_statement":
        return False
    upd = loop.child_by_field_id(_F_UPDATE)
    if upd is None:
        return False
    text = upd.text.replace(b" ", b"")
    return any(op in text for op in _HALVING) or b"/2" in text or b">>1" in text


def parallel_features(facts: Facts, mem: MemoryFacts,
                      resolvers: dict[int, Resolver]) -> dict[str, int | bool]:
    """``sync.*``, ``warp.*``, ``atomics.*``, ``loop.grid_stride``, ``reduce.*``, ``par.*``,
    ``cg.*``, ``tc.*``, ``async.copies`` and ``math.fast_intrinsics``."""
    v = dict.fromkeys(("sync.block_barriers", "sync.barriers_in_loops",
                       "sync.barriers_in_branches", "sync.barriers_divergent",
                       "sync.warp_syncs", "warp.shuffles", "warp.shuffles_in_loops",
                       "warp.votes", "warp.activemask", "atomics.global", "atomics.shared",
                       "loop.grid_stride", "par.coarsening_loops", "cg.tiled_partitions",
                       "tc.wmma_calls", "async.copies", "math.fast_intrinsics"), 0)
    shared_tree = False
    for func in facts.funcs:
        if not func.is_device:
            continue
        res = resolvers.setdefault(id(func), Resolver(facts, func))
        for name, site in func.calls:
            sync = _is_block_sync(func, name, site.node)
            if sync is True:
                v["sync.block_barriers"] += 1
                v["sync.barriers_in_loops"] += site.loop_depth > 0
                if site.branches:
                    v["sync.barriers_in_branches"] += 1
                    v["sync.barriers_divergent"] += any(depends_on_thread(c, res)
                                                        for c in site.branches)
            elif sync is False:
                v["sync.warp_syncs"] += 1
            elif name.startswith(_SHUFFLES):
                v["warp.shuffles"] += 1
                v["warp.shuffles_in_loops"] += site.loop_depth > 0
            elif name in _VOTES:
                v["warp.votes"] += 1
            elif name == b"__activemask":
                v["warp.activemask"] += 1
            elif name.startswith(b"atomic") or name.startswith(b"::atomic"):
                args = site.node.child_by_field_id(_F_ARGUMENTS)
                first = args.named_children[0] if args is not None and args.named_children \
                    else None
                v["atomics." + (address_space(facts, func, first) if first is not None
                                else "global")] += 1
            elif b"tiled_partition" in name:
                v["cg.tiled_partitions"] += 1
            elif b"wmma" in name or name.endswith(b"mma_sync") or name.startswith(b"__hmma"):
                v["tc.wmma_calls"] += 1
            elif any(a in name for a in _ASYNC):
                v["async.copies"] += 1
            elif name in _FAST_MATH:
                v["math.fast_intrinsics"] += 1
        for site in func.loops:
            loop = site.node
            if _grid_stride(func, loop):
                v["loop.grid_stride"] += 1
                continue
            if _halving(loop):
                s, e = loop.start_byte, loop.end_byte
                if any(a.space == "shared" and a.store and s <= a.site.node.start_byte < e
                       for a in mem.of(func)):
                    shared_tree = True
            if _coarsening(func, res, loop, mem):
                v["par.coarsening_loops"] += 1
    asm = b"\n".join(facts.asm)
    ptx_mma = asm.count(b"mma.sync") + asm.count(b"wgmma") + asm.count(b"ldmatrix")
    v["async.copies"] += asm.count(b"cp.async")
    cg = any(s in (b"cg", b"cooperative_groups") for s in facts.qualified) or any(
        b"this_thread_block" in n or b"tiled_partition" in n for n in facts.all_calls)
    v.update({
        "warp.shuffle_reduction": v["warp.shuffles_in_loops"] > 0 or v["warp.shuffles"] >= 3,
        "reduce.shared_tree": shared_tree,
        "reduce.atomic": v["atomics.global"] + v["atomics.shared"] > 0,
        "cg.used": cg,
        "tc.ptx_mma": ptx_mma,
        "tc.used": v["tc.wmma_calls"] > 0 or ptx_mma > 0 or b"wmma" in facts.qualified,
    })
    return v


def _coarsening(func: Func, res: Resolver, loop: Node, mem: MemoryFacts) -> bool:
    """A loop with a small constant trip count around thread-dependent global accesses:
    each thread handles several elements."""
    if loop.type != "for_statement":
        return False
    cond = loop.child_by_field_id(_F_CONDITION)
    if cond is None or cond.type != "binary_expression":
        return False
    right = cond.child_by_field_id(_F_RIGHT)
    if right is None:
        return False
    try:
        bound = const_of(res.resolve(right)[0])
    except (NotAffine, Indirect):
        return False
    if bound is None or not 1 < bound <= 64:
        return False
    s, e = loop.start_byte, loop.end_byte
    return any(a.space == "global" and a.kind in ("coalesced", "strided")
               and s <= a.site.node.start_byte < e for a in mem.of(func))
