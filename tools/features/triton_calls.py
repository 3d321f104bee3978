"""Calls inside Triton kernels: what each ``tl.*`` call does to addresses and counts.

Split from :mod:`structcover.tools.features.triton_walk` (one job: the call table).
"""

from __future__ import annotations

import ast
from fractions import Fraction
from typing import TYPE_CHECKING

from structcover.tools.features.triton_access import Coef, Val, reindex, symbol, union
from structcover.tools.features.triton_ast import canonical

REDUCTIONS = {"sum", "max", "min", "reduce", "cumsum", "cumprod", "argmax", "argmin",
              "xor_sum", "associative_scan", "prod", "histogram"}

if TYPE_CHECKING:
    from structcover.tools.features.triton_walk import KernelWalker

_ATOMIC = "atomic_"
_DESC_LOAD = {"load_tensor_descriptor", "_experimental_descriptor_load"}
_DESC_STORE = {"store_tensor_descriptor", "_experimental_descriptor_store"}


def _kw(node: ast.Call, name: str, pos: int | None = None) -> ast.expr | None:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    if pos is not None and pos < len(node.args):
        return node.args[pos]
    return None


def _shape(w: KernelWalker, node: ast.expr | None) -> tuple[int | None, int]:
    """(elements or None, ndim) of a shape argument ``(BM, BN)`` / ``[BLOCK]``."""
    if node is None:
        return None, 0
    elts = node.elts if isinstance(node, ast.Tuple | ast.List) else [node]
    n: int | None = 1
    for x in elts:
        v = w.eval(x).const
        n = n * int(v) if n is not None and v is not None else None
    return n, len(elts)


def _alloc(w: KernelWalker, node: ast.Call, shape: ast.expr | None) -> Val:
    elems, nd = _shape(w, shape)
    if elems and w.recording:
        w.stats.block_elements = max(w.stats.block_elements, elems)
    extents = {}
    if isinstance(shape, ast.Tuple | ast.List):
        for i, x in enumerate(shape.elts):
            c = w.eval(x).const
            extents[i] = int(c) if c is not None else None
    return Val(ndim=nd, extents=extents, data=True, alloc=(elems, nd))


def _order_stride(w: KernelWalker, bp: Val) -> Coef | None:
    """The stride of a block pointer's fastest axis (``order[0]``; a descriptor: last)."""
    info = bp.info
    if info is None:
        return None
    strides = _kw(info, "strides", 2)
    if not isinstance(strides, ast.Tuple | ast.List) or not strides.elts:
        return None
    axis = len(strides.elts) - 1
    if bp.kind == "bp":
        order = _kw(info, "order", 5)
        try:
            first = ast.literal_eval(order)[0] if order is not None else None
        except (ValueError, TypeError, SyntaxError, IndexError, KeyError):
            first = None
        if not isinstance(first, int) or not 0 <= first < len(strides.elts):
            return None
        axis = first
    v = w.eval(strides.elts[axis])
    if v.const is not None:
        return v.const
    return v.sym if v.sym and v.sym.startswith("sym:") else None


def _block_ptr(w: KernelWalker, node: ast.Call, kind: str) -> Val:
    base = w.eval(node.args[0]) if node.args else w.eval(_kw(node, "base") or node)
    shape = _kw(node, "block_shape", 4 if kind == "bp" else 3)
    elems, nd = _shape(w, shape)
    if w.recording:
        w.stats.block_pointers += 1
        if elems:
            w.stats.block_elements = max(w.stats.block_elements, elems)
    extents = {i: None for i in range(nd)}
    if isinstance(shape, ast.Tuple | ast.List):
        for i, x in enumerate(shape.elts):
            c = w.eval(x).const
            extents[i] = int(c) if c is not None else None
    return Val(ndim=nd, extents=extents, kind=kind, info=node, loaded=base.loaded)


def _descriptor(w: KernelWalker, node: ast.expr) -> Val:
    v = w.eval(node)
    if v.kind is None and isinstance(node, ast.Name) and node.id in w.k.params:
        if node.id not in w.desc_params and w.recording:
            w.desc_params.add(node.id)
            w.stats.block_pointers += 1
        return Val(kind="desc")
    return v if v.kind else Val(kind="desc", loaded=v.loaded)


def _dot(w: KernelWalker, node: ast.Call, args: list[Val]) -> Val:
    a, b = (args + [Val(), Val()])[:2]
    acc = args[2] if len(args) > 2 else (w.eval(_kw(node, "acc")) if _kw(node, "acc") else None)
    m, k = a.extents.get(0), a.extents.get(1)
    n = b.extents.get(1)
    flops = 2 * m * n * k if m and n and k else None
    out_dtype = _kw(node, "out_dtype")
    if w.recording:
        w.stats.dots += 1
        w.stats.dot_flops.append(int(flops * w.weight) if flops else None)
        fp32 = out_dtype is None or canonical(out_dtype, w.m.aliases) == "tl.float32"
        w.stats.dot_fp32 = w.stats.dot_fp32 or fp32
    return Val(ndim=2, extents={0: m, 1: n}, data=True,
               alloc=acc.alloc if acc is not None else None)


def _inline(w: KernelWalker, name: str, node: ast.Call, args: list[Val]) -> Val:
    """A jitted helper: walk its body with parameters bound to the caller's values."""
    helper = w.m.kernels[name]
    if name in w.inlined and not w.recording:
        return Val(data=True)
    saved = (w.env, w.k, w.ret, w.recording)
    env: dict[str, Val] = {}
    for p, v in zip(helper.params, args, strict=False):
        env[p] = v
    for kw in node.keywords:
        if kw.arg:
            env[kw.arg] = w.eval(kw.value)
    first = name not in w.inlined and len(w.inlined) < 16
    w.inlined.add(name)
    w.env, w.ret, w.recording = env, None, w.recording and first
    caller = w.k
    w.k = helper
    w.k.constexprs = helper.constexprs | {c for c in caller.constexprs if c in env}
    try:
        w.block(helper.node.body)
        out = w.ret if w.ret is not None else Val(data=True)
    finally:
        w.env, w.k, w.ret, w.recording = saved
    return out


def call(w: KernelWalker, node: ast.Call) -> Val:  # noqa: C901 - the call table
    """Evaluate a call inside a kernel."""
    fn = canonical(node.func, w.m.aliases) or ""
    short = fn.rsplit(".", 1)[-1] if fn else (
        node.func.attr if isinstance(node.func, ast.Attribute) else "")
    is_tl = fn.startswith("tl.") or fn.startswith("libdevice")
    method = isinstance(node.func, ast.Attribute) and not is_tl
    if short == "arange" and is_tl:
        lo, hi = (w.eval(a).const for a in (node.args + [node.args[0]])[:2]) \
            if len(node.args) >= 2 else (Fraction(0), None)
        ext = int(hi - lo) if hi is not None and lo is not None else None
        if ext and w.recording:
            w.stats.block_elements = max(w.stats.block_elements, ext)
        return Val(ndim=1, coefs={0: Fraction(1)}, extents={0: ext})
    if short in ("program_id", "num_programs") and is_tl:
        return symbol("sym", pid=True)
    if short in ("make_block_ptr",) and is_tl:
        return _block_ptr(w, node, "bp")
    if short == "make_tensor_descriptor" and is_tl:
        return _block_ptr(w, node, "desc")
    if short == "advance" and is_tl and node.args:
        return w.eval(node.args[0])
    if short in _DESC_LOAD or (method and short == "load"):
        desc = _descriptor(w, node.args[0] if short in _DESC_LOAD else node.func.value)  # type: ignore[attr-defined]
        for a in node.args[1 if short in _DESC_LOAD else 0:]:
            w.eval(a)
        w.access("load", desc, None)
        return Val(data=True, loaded=True, ndim=desc.ndim, extents=dict(desc.extents))
    if short in _DESC_STORE or (method and short == "store"):
        desc = _descriptor(w, node.args[0] if short in _DESC_STORE else node.func.value)  # type: ignore[attr-defined]
        for a in node.args[1 if short in _DESC_STORE else 0:]:
            w.eval(a)
        w.access("store", desc, None)
        return Val()
    args = [w.eval(a) for a in node.args]
    if is_tl and short in ("load", "store") or short.startswith(_ATOMIC) and is_tl:
        for kw in node.keywords:
            if kw.arg not in ("mask", "other", "boundary_check", "padding_option",
                              "cache_modifier", "eviction_policy", "volatile", "sem", "scope"):
                w.eval(kw.value)
        ptr = args[0] if args else w.eval(_kw(node, "pointer") or node.func)
        order = _order_stride(w, ptr) if ptr.kind else None
        if short == "load":
            w.access("load", ptr, order)
            return Val(data=True, loaded=True, ndim=ptr.ndim, extents=dict(ptr.extents))
        w.access("store", ptr, order)
        if short.startswith(_ATOMIC) and w.recording:
            w.stats.atomics += 1
        return Val(data=True, loaded=short.startswith(_ATOMIC))
    if is_tl and short == "dot":
        return _dot(w, node, args)
    if is_tl and short in ("zeros", "full", "zeros_like", "full_like"):
        return _alloc(w, node, node.args[0] if node.args else _kw(node, "shape"))
    if short in REDUCTIONS and (is_tl or method):
        src = args[0] if args else (w.eval(node.func.value)  # type: ignore[attr-defined]
                                    if method else Val())
        if w.recording:
            w.stats.reductions += 1
        if short in ("cumsum", "cumprod", "associative_scan"):
            return Val(data=True, ndim=src.ndim, extents=dict(src.extents), alloc=src.alloc)
        return Val(data=True, loaded=src.loaded)
    if is_tl and short == "where":
        if w.recording:
            w.stats.branches += 1
            w.stats.selects += 1
        return union(*args[1:]) if len(args) > 2 else union(*args)
    if is_tl and short == "debug_barrier":
        if w.recording:
            w.stats.barriers += 1
        return Val()
    if is_tl and short == "swizzle2d":
        if w.recording:
            w.stats.grouped = True
        return symbol("sym", pid=True)
    if is_tl and short == "expand_dims" and args:
        axis = args[1].const if len(args) > 1 else None
        v = args[0]
        if axis is None or not 0 <= int(axis) <= v.ndim:
            return union(*args)
        idx = [ast.Slice() for _ in range(v.ndim)]
        idx.insert(int(axis), ast.Constant(None))
        return reindex(v, ast.Tuple(elts=idx))
    if (is_tl or method) and short in ("to", "cast", *(("T",))) or short in (
            "multiple_of", "max_contiguous", "broadcast_to", "reshape", "view") and is_tl:
        base = args[0] if args and is_tl else (w.eval(node.func.value)  # type: ignore[attr-defined]
                                               if method else Val())
        return base
    if fn.startswith("libdevice") or fn.startswith("tl.math.fast") or ".libdevice." in fn:
        if w.recording:
            w.stats.fast_math += 1
            w.stats.math_fns.add(short)
        return union(*args) if args else Val(data=True)
    if is_tl and short in ("minimum", "maximum", "clamp", "cdiv", "abs"):
        return union(*args)
    if is_tl and (short in ("exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt",
                            "sigmoid", "tanh", "sin", "cos", "erf", "pow", "fdiv", "div_rn",
                            "softmax", "floor", "ceil") or fn.startswith("tl.math.")):
        if w.recording:
            w.stats.math_fns.add(short)
            out = union(*args)
            w.stats.flops += (out.elements() or 1) * w.weight
        return replace_data(union(*args))
    if fn in ("min", "max") and args:
        return union(*args)
    if fn in w.m.kernels and fn != w.k.name:
        # Helpers are inlined; a kernel called from a kernel is counted on its own.
        if w.m.kernels[fn].is_helper:
            return _inline(w, fn, node, args)
        return Val(data=True)
    for kw in node.keywords:
        args.append(w.eval(kw.value))
    out = union(*args) if args else Val(data=True)
    if out.coefs:
        out.unknown = True
    out.data = True
    return out


def replace_data(v: Val) -> Val:
    """``v`` marked as data (a computed value, not an address)."""
    v.data = True
    return v
