"""One walk over a Triton kernel body: accesses, dots, reductions, loops, branches.

The walk evaluates every expression into a :class:`~structcover.tools.features.
triton_access.Val` (the address algebra), follows local assignments in statement order
(``+=`` included), inlines jitted helpers at their first call (parameters bound to the
caller's arguments, like the CUDA path's ``__device__`` helpers), and records what the
features count in a :class:`KernelStats`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from fractions import Fraction

from structcover.tools.features.triton_access import (
    Coef,
    StrideRule,
    Val,
    binop,
    classify,
    const,
    negate,
    reindex,
    symbol,
    transpose,
    union,
)
from structcover.tools.features.triton_ast import TritonKernel, TritonModule, canonical

UNKNOWN_TRIP = 16  # the CUDA path's weight for a loop whose trip count the source leaves open


@dataclass
class KernelStats:
    """What one kernel's walk found."""

    accesses: list[tuple[str, str, int | None, float]] = field(default_factory=list)
    dots: int = 0
    dot_flops: list[int | None] = field(default_factory=list)
    dot_fp32: bool = False
    reductions: int = 0
    atomics: int = 0
    barriers: int = 0
    loops: int = 0
    max_depth: int = 0
    static_unroll: int = 0
    range_stages: int = 0
    branches: int = 0
    selects: int = 0
    fast_math: int = 0
    math_fns: set[str] = field(default_factory=set)
    accumulators: dict[str, tuple[int | None, int]] = field(default_factory=dict)
    loads_in_loops: int = 0
    block_elements: int = 0
    block_pointers: int = 0
    grouped: bool = False
    flops: float = 0.0


class KernelWalker:
    """Walks one kernel (and the helpers it calls) recording :class:`KernelStats`."""

    def __init__(self, module: TritonModule, kernel: TritonKernel, strides: StrideRule):
        self.m, self.k, self.strides = module, kernel, strides
        self.stats = KernelStats()
        self.env: dict[str, Val] = {}
        self.depth = 0
        self.weight = 1.0
        self.recording = True
        self.inlined: set[str] = set()
        self.desc_params: set[str] = set()
        self.ret: Val | None = None

    # -- statements ---------------------------------------------------------------------
    def run(self) -> KernelStats:
        """Walk the kernel body."""
        self.block(self.k.node.body)
        return self.stats

    def block(self, body: list[ast.stmt]) -> None:
        """Walk a statement list in order."""
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> None:  # noqa: C901 - one branch per statement kind
        """Walk one statement."""
        if isinstance(s, ast.Assign):
            v = self.eval(s.value)
            for t in s.targets:
                self.bind(t, s.value, v)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.bind(s.target, s.value, self.eval(s.value))
        elif isinstance(s, ast.AugAssign):
            v = self.eval(s.value)
            if isinstance(s.target, ast.Name):
                old = self.env.get(s.target.id, self.name(s.target.id))
                self.note_accumulator(s.target.id, old)
                self.env[s.target.id] = binop(s.op, old, v)
        elif isinstance(s, ast.For):
            self.loop(s)
        elif isinstance(s, ast.While):
            self.eval(s.test)
            self.enter_loop(None, s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.If):
            if not self.static(s.test):
                self.stats.branches += 1
            self.eval(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.Expr):
            self.eval(s.value)
        elif isinstance(s, ast.Return) and s.value is not None:
            self.ret = self.eval(s.value)
        elif isinstance(s, ast.With | ast.Try):
            self.block(s.body)

    def bind(self, target: ast.expr, value: ast.expr, v: Val) -> None:
        """Bind an assignment target (names and tuples of names)."""
        if isinstance(target, ast.Name):
            if self.depth and isinstance(value, ast.Call | ast.BinOp) \
                    and target.id in self._names(value) and target.id in self.env:
                self.note_accumulator(target.id, self.env[target.id])
            self.env[target.id] = v
        elif isinstance(target, ast.Tuple | ast.List):
            parts = value.elts if isinstance(value, ast.Tuple | ast.List) else None
            for i, t in enumerate(target.elts):
                sub = parts[i] if parts and i < len(parts) else value
                self.bind(t, sub, self.eval(sub) if parts else symbol("sym", pid=v.pid,
                                                                       loaded=v.loaded))

    def note_accumulator(self, name: str, old: Val) -> None:
        """A block allocated by tl.zeros/tl.full and updated inside a loop accumulates."""
        if self.depth and old.alloc is not None and self.recording:
            self.stats.accumulators.setdefault(name, old.alloc)

    def loop(self, s: ast.For) -> None:
        """``for`` over range / tl.range / tl.static_range."""
        trip: int | None = None
        if isinstance(s.iter, ast.Call):
            fn = canonical(s.iter.func, self.m.aliases) or ""
            args = [self.eval(a) for a in s.iter.args]
            for kw in s.iter.keywords:
                kv = self.eval(kw.value)
                if kw.arg == "num_stages" and kv.const is not None and self.recording:
                    self.stats.range_stages = max(self.stats.range_stages, int(kv.const))
            if fn.endswith("static_range") and self.recording:
                self.stats.static_unroll += 1
            bounds = [a.const for a in args]
            if bounds and all(b is not None for b in bounds):
                lo, hi = (Fraction(0), bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
                step = bounds[2] if len(bounds) > 2 and bounds[2] else Fraction(1)
                trip = max(int((hi - lo) / step), 0)
        else:
            self.eval(s.iter)
        if isinstance(s.target, ast.Name):
            self.env[s.target.id] = symbol(s.target.id)
        self.enter_loop(trip, s.body)
        self.block(s.orelse)

    def enter_loop(self, trip: int | None, body: list[ast.stmt]) -> None:
        """Walk a loop body one level deeper, weighted by its trip count."""
        if self.recording:
            self.stats.loops += 1
            self.stats.max_depth = max(self.stats.max_depth, self.depth + 1)
        self.depth += 1
        saved = self.weight
        self.weight *= trip if trip is not None else UNKNOWN_TRIP
        self.block(body)
        self.weight = saved
        self.depth -= 1

    def static(self, test: ast.expr) -> bool:
        """A condition on constexprs and constants only is resolved at compile time."""
        names = self._names(test)
        calls = [n for n in ast.walk(test) if isinstance(n, ast.Call)]
        return not calls and all(n in self.k.constexprs or n in self.m.constants
                                 or (n in self.env and self.env[n].const is not None)
                                 for n in names)

    @staticmethod
    def _names(node: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    # -- expressions ----------------------------------------------------------------------
    def name(self, n: str) -> Val:
        """A name not assigned in the body: constexpr value, parameter, module constant."""
        group = "GROUP" in n.upper()
        if n in self.env:
            return self.env[n]
        v = self.k.value(n) if n in self.k.constexprs else None
        if v is None and n in self.m.constants:
            v = self.m.constants[n]
        if v is not None:
            out = const(v)
            out.group = group
            return out
        return symbol(f"sym:{n}" if n in self.k.params else "sym", group=group)

    def eval(self, e: ast.expr) -> Val:  # noqa: C901 - one branch per expression kind
        """Evaluate one expression (recording the accesses it makes)."""
        if isinstance(e, ast.Name):
            return self.name(e.id)
        if isinstance(e, ast.Constant):
            if isinstance(e.value, bool) or not isinstance(e.value, int | float):
                return Val()
            return const(e.value)
        if isinstance(e, ast.BinOp):
            a, b = self.eval(e.left), self.eval(e.right)
            if isinstance(e.op, ast.FloorDiv) and a.pid and b.group and self.recording:
                self.stats.grouped = True
            out = binop(e.op, a, b)
            if out.data and self.recording:
                self.stats.flops += (out.elements() or 1) * self.weight
            return out
        if isinstance(e, ast.UnaryOp):
            v = self.eval(e.operand)
            return negate(v) if isinstance(e.op, ast.USub) else v
        if isinstance(e, ast.BoolOp | ast.Compare):
            parts = [*e.values] if isinstance(e, ast.BoolOp) else [e.left, *e.comparators]
            out = union(*(self.eval(p) for p in parts))
            out.coefs, out.data = {}, True
            return out
        if isinstance(e, ast.IfExp):
            if self.recording:
                self.stats.branches += 1
                self.stats.selects += 1
            self.eval(e.test)
            return union(self.eval(e.body), self.eval(e.orelse))
        if isinstance(e, ast.Subscript):
            return reindex(self.eval(e.value), e.slice)
        if isinstance(e, ast.Attribute):
            if e.attr == "T":
                return transpose(self.eval(e.value))
            base = self.eval(e.value) if isinstance(e.value, ast.Name | ast.Call) else Val()
            return Val(loaded=base.loaded, pid=base.pid, sym="sym")
        if isinstance(e, ast.Tuple | ast.List):
            vals = [self.eval(x) for x in e.elts]
            return Val(loaded=any(v.loaded for v in vals), sym="sym")
        if isinstance(e, ast.Call):
            from structcover.tools.features.triton_calls import call

            return call(self, e)
        return Val(unknown=True)

    def access(self, kind: str, ptr: Val, order_stride: Coef | None = None) -> None:
        """Record a load or store through ``ptr``."""
        if not self.recording:
            return
        cls = classify(ptr, self.strides, order_stride)
        elems = ptr.elements()
        self.stats.accesses.append((kind, cls, elems, self.weight))
        if elems:
            self.stats.block_elements = max(self.stats.block_elements, elems)
        if kind == "load" and self.depth:
            self.stats.loads_in_loops += 1
