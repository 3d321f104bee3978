"""Pointer arithmetic of Triton kernels: block values as affine forms over ``tl.arange`` axes.

A :class:`Val` is what an expression evaluates to, as far as addresses go: for each block
axis the coefficient its ``tl.arange`` carries (a number, or a symbol such as a stride
parameter) and the axis extent, plus flags (a loaded value took part, the form is not
reducible, the value derives from ``tl.program_id``). :func:`classify` turns the pointer of a
``tl.load`` / ``tl.store`` into coalesced / strided / broadcast / indirect / unknown with
the rule documented in docs/FEATURES.md ("Triton").
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from fractions import Fraction

#: A coefficient: a number, or ``"sym:<param>"`` (one stride parameter), or ``"sym"``.
Coef = Fraction | str

#: Divided by a symbol: adjacent lanes are at most one element apart.
SUB_UNIT = Fraction(1, 2)


@dataclass
class Val:
    """An evaluated expression (see the module docstring)."""

    ndim: int = 0
    coefs: dict[int, Coef] = field(default_factory=dict)
    extents: dict[int, int | None] = field(default_factory=dict)
    const: Fraction | None = None
    sym: str | None = None
    loaded: bool = False
    unknown: bool = False
    pid: bool = False
    group: bool = False
    data: bool = False
    #: "bp" (tl.make_block_ptr) or "desc" (tensor descriptor); info holds its call
    kind: str | None = None
    info: ast.Call | None = None
    #: (elements or None, ndim) of the tl.zeros / tl.full block this value started as
    alloc: tuple[int | None, int] | None = None

    def elements(self) -> int | None:
        """Elements of the block (None when an extent is unknown; 1 for scalars)."""
        n = 1
        for e in self.extents.values():
            if e is None:
                return None
            n *= e
        return n


def const(v: int | float) -> Val:
    """A scalar constant."""
    return Val(const=Fraction(v) if isinstance(v, int) else None, data=isinstance(v, float))


def symbol(name: str, **flags: bool) -> Val:
    """A scalar symbol (a parameter, a program id, a loop variable)."""
    return Val(sym=name, **flags)


def _align(v: Val, ndim: int) -> Val:
    shift = ndim - v.ndim
    if shift <= 0:
        return v
    return replace(v, ndim=ndim, coefs={a + shift: c for a, c in v.coefs.items()},
                   extents={a + shift: e for a, e in v.extents.items()})


def _flags(a: Val, b: Val) -> dict[str, bool]:
    return {"loaded": a.loaded or b.loaded, "unknown": a.unknown or b.unknown,
            "pid": a.pid or b.pid, "group": a.group or b.group, "data": a.data or b.data}


def _add_coef(x: Coef | None, y: Coef | None) -> Coef | None:
    if x is None:
        return y
    if y is None:
        return x
    if isinstance(x, Fraction) and isinstance(y, Fraction):
        return x + y
    return "sym"


def _mul_coef(c: Coef, factor: Fraction | str) -> Coef:
    if isinstance(c, Fraction) and isinstance(factor, Fraction):
        return c * factor
    if isinstance(factor, Fraction):
        return c if factor == 1 else ("sym" if factor else Fraction(0))
    if isinstance(c, Fraction):
        return factor if abs(c) == 1 else "sym"
    return "sym"


def union(*vals: Val) -> Val:
    """Elementwise combination (``+``, ``tl.where``, ``min``): axes and flags merged."""
    if not vals:
        return Val()
    nd = max(v.ndim for v in vals)
    out = Val(ndim=nd)
    for v in (_align(v, nd) for v in vals):
        for a, c in v.coefs.items():
            out.coefs[a] = _add_coef(out.coefs.get(a), c)
        for a, e in v.extents.items():
            # Broadcasting: an extent of 1 takes the other operand's extent.
            if out.extents.get(a, 1) == 1:
                out.extents[a] = e
        for k, flag in _flags(out, v).items():
            setattr(out, k, flag)
        out.alloc = out.alloc or v.alloc
    return out


def binop(op: ast.operator, a: Val, b: Val) -> Val:
    """``a op b`` on the affine forms."""
    if isinstance(op, ast.Add | ast.Sub):
        rb = b if isinstance(op, ast.Add) else negate(b)
        out = union(a, rb)
        if a.const is not None and b.const is not None:
            out.const = a.const + rb.const
        elif not out.coefs and (a.sym or b.sym or a.const is not None or b.const is not None):
            out.sym = "sym"
        out.kind = a.kind or b.kind
        out.info = a.info or b.info
        return out
    if isinstance(op, ast.Mult | ast.LShift):
        if isinstance(op, ast.LShift):
            b = const(2 ** int(b.const)) if b.const is not None and 0 <= b.const < 63 \
                else replace(b, const=None, sym="sym")
        if a.coefs and b.coefs:
            return replace(union(a, b), unknown=True)
        if b.coefs and not a.coefs:
            a, b = b, a
        out = union(a, b)
        if a.coefs:
            factor: Fraction | str = b.const if b.const is not None else (b.sym or "sym")
            out.coefs = {ax: _mul_coef(c, factor) for ax, c in a.coefs.items()}
        elif a.const is not None and b.const is not None:
            out.const = a.const * b.const
        elif a.sym or b.sym:
            out.sym = "sym"
        return out
    if isinstance(op, ast.FloorDiv | ast.Div | ast.RShift):
        out = union(a, b)
        if b.coefs:
            out.unknown = True
        elif a.coefs:
            if b.const:
                d = b.const if not isinstance(op, ast.RShift) else Fraction(2) ** int(b.const)
                out.coefs = {ax: (c / d if isinstance(c, Fraction) else "sym")
                             for ax, c in a.coefs.items()}
            else:
                out.coefs = {ax: SUB_UNIT for ax in a.coefs}
        elif a.const is not None and b.const:
            out.const = a.const // b.const if not isinstance(op, ast.Div) else a.const / b.const
        return out
    if isinstance(op, ast.Mod):
        out = union(a, b)
        out.coefs = dict(a.coefs) if a.coefs else {}
        if b.coefs:
            out.unknown = True
        return out
    out = union(a, b)
    if out.coefs:
        out.unknown = True
    return out


def negate(v: Val) -> Val:
    """``-v``."""
    return replace(v, coefs={a: (-c if isinstance(c, Fraction) else c)
                             for a, c in v.coefs.items()},
                   const=-v.const if v.const is not None else None)


def reindex(v: Val, index: ast.expr) -> Val:
    """``v[:, None]`` / ``v[None, :]`` / ``v[:]``: new axes inserted, old ones moved."""
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    if not all(isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and e.value is None)
               for e in elts):
        return replace(v, unknown=True)
    old = 0
    coefs: dict[int, Coef] = {}
    extents: dict[int, int | None] = {}
    for new, e in enumerate(elts):
        if isinstance(e, ast.Slice):
            if old in v.coefs:
                coefs[new] = v.coefs[old]
            if old in v.extents:
                extents[new] = v.extents[old]
            old += 1
        else:
            extents[new] = 1
    return replace(v, ndim=len(elts), coefs=coefs, extents=extents)


def transpose(v: Val) -> Val:
    """``v.T`` of a 2-D block."""
    if v.ndim != 2:
        return v
    swap = {0: 1, 1: 0}
    return replace(v, coefs={swap[a]: c for a, c in v.coefs.items()},
                   extents={swap[a]: e for a, e in v.extents.items()})


#: Stride resolution of a parameter: "unit", "strided" or None (unresolved).
StrideRule = dict[str, str | None]


def coef_kind(c: Coef, strides: StrideRule) -> str:
    """``unit``, ``strided`` or ``sym`` for one axis coefficient."""
    if isinstance(c, Fraction):
        if c == 0:
            return "none"
        return "unit" if abs(c) <= 1 else "strided"
    if c.startswith("sym:"):
        rule = strides.get(c[4:])
        if rule is not None:
            return rule
    return "sym"


def classify(ptr: Val, strides: StrideRule, order_stride: Coef | None = None) -> str:
    """The access class of a pointer value.

    Rule: a loaded value anywhere in the address -> indirect; not reducible -> unknown; a
    block pointer or tensor descriptor -> by the stride of its fastest axis (``order[0]``;
    a descriptor's last stride); no ``tl.arange`` axis -> broadcast; any axis with a unit
    stride -> coalesced (Triton's coalescing pass orders threads along the most contiguous
    axis); else a constant > 1 or a non-unit stride -> strided; a single axis with an
    unresolved symbolic stride -> strided (the CUDA rule for symbols); several axes all
    with unresolved symbolic strides -> unknown (the layout is decided at run time).
    """
    if ptr.loaded:
        return "indirect"
    if ptr.kind in ("bp", "desc"):
        if order_stride is None:
            return "coalesced"
        kind = coef_kind(order_stride, strides)
        return "strided" if kind == "strided" else "coalesced"
    if ptr.unknown:
        return "unknown"
    kinds = [coef_kind(c, strides) for a, c in ptr.coefs.items()
             if ptr.extents.get(a) != 1]
    kinds = [k for k in kinds if k != "none"]
    if not kinds:
        return "broadcast"
    if "unit" in kinds:
        return "coalesced"
    if "strided" in kinds:
        return "strided"
    return "strided" if len(kinds) == 1 else "unknown"


def stride_rules(params: list[str], launches: list[dict[str, ast.expr]]) -> StrideRule:
    """How each parameter is passed at the launch sites (the documented stride rule).

    A parameter is ``unit`` when every launch passes literal 1, ``t.stride(-1)`` or
    ``t.stride(i)`` with ``i`` the largest index passed for ``t`` at that launch (its last
    dimension); ``strided`` when every launch passes a literal > 1 or a smaller stride index;
    unresolved otherwise (no launch, or launches disagree).
    """
    out: StrideRule = {}
    for p in params:
        seen: set[str | None] = set()
        for bound in launches:
            expr = bound.get(p)
            seen.add(_passed_as(expr, bound) if expr is not None else None)
        out[p] = seen.pop() if len(seen) == 1 else None
    return out


def _stride_call(expr: ast.expr) -> tuple[str, int] | None:
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "stride" and len(expr.args) == 1
            and isinstance(expr.func.value, ast.Name)):
        try:
            idx = ast.literal_eval(expr.args[0])
        except (ValueError, TypeError, SyntaxError):
            return None
        if isinstance(idx, int):
            return expr.func.value.id, idx
    return None


def _passed_as(expr: ast.expr, bound: dict[str, ast.expr]) -> str | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int) \
            and not isinstance(expr.value, bool):
        return "unit" if expr.value == 1 else "strided"
    sc = _stride_call(expr)
    if sc is None:
        return None
    tensor, idx = sc
    if idx == -1:
        return "unit"
    used = [s[1] for s in (_stride_call(e) for e in bound.values()) if s and s[0] == tensor]
    if idx >= 0 and idx == max(used) and len(set(used)) > 1:
        return "unit"
    return "strided" if idx >= 0 and idx < max(used) else None
