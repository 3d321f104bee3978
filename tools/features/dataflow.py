"""Data flow inside a function: def-use chains of index variables to affine forms.

An index expression is followed through the definitions of the variables it reads until it
is a polynomial over thread indices (``tid.x`` …), block indices and sizes (``bid.x``,
``bdim.x`` …), loop variables and other symbols (parameters, template arguments). A value
loaded from memory inside the index makes it *indirect*; anything not reducible (calls,
ternaries, division that does not divide) makes it *unknown* — counted, never guessed
(docs/FEATURES.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id, walk
from structcover.tools.features.model import Facts, Func
from structcover.tools.features.poly import (
    Indirect,
    NotAffine,
    Poly,
    _add,
    _mul,
    const_of,
    lane_part,
    thread_dependent,
    thread_part,
)
from structcover.tools.features.poly import parse_number as _number
from structcover.tools.features.scopes import OuterScope, macro_expression  # noqa: F401 - re-exported

_F_ARGUMENT = field_id("argument")
_F_ARGUMENTS = field_id("arguments")
_F_DECLARATOR = field_id("declarator")
_F_FIELD = field_id("field")
_F_FUNCTION = field_id("function")
_F_LEFT = field_id("left")
_F_OPERATOR = field_id("operator")
_F_RIGHT = field_id("right")
_F_VALUE = field_id("value")

_BUILTIN = {b"threadIdx": "tid", b"blockIdx": "bid", b"blockDim": "bdim", b"gridDim": "gdim"}
_MAX_DEPTH = 120  # deeper expressions are "unknown" (keeps recursion far from Python's limit)
_LANE_CALLS = {b".thread_rank", b"__lane_id", b"laneid"}
_LOAD_CALLS = {b"__ldg", b"__ldcg", b"__ldca", b"__ldcs", b"__ldlu", b"__ldcv"}


@dataclass
class Resolver(OuterScope):
    """Resolves expressions of one function to polynomials, memoizing variables."""

    facts: Facts
    func: Func
    memo: dict[tuple[bytes, int], tuple[Poly | None, str, int]] = field(default_factory=dict)
    active: set[tuple[bytes, int]] = field(default_factory=set)
    max_chain: int = 0
    #: name -> its declared definitions as (value start, visible scope, op, value): the
    #: byte positions are read off the nodes once, not at every use of the name.
    decls: dict[bytes, list[tuple[int, tuple[int, int] | None, str, Node]]] = field(
        default_factory=dict)
    #: (name, declaration start) -> whether any of its definitions reads memory.
    loaded: dict[tuple[bytes, int], bool] = field(default_factory=dict)

    def resolve(self, node: Node) -> tuple[Poly, int]:
        """Polynomial of ``node`` and the length of the def-use chain followed.

        Raises:
            NotAffine: The expression is not affine-reducible.
            Indirect: The expression reads memory.
        """
        try:
            return self._eval(node, 0)
        except NotAffine:
            # A loaded value anywhere makes the address indirect, even where the affine
            # evaluation gave up first (``min(col[k], n)``, a local assigned a loaded value
            # after a declaration the evaluator cannot reduce): loads are never "unknown".
            if self.loads(node):
                raise Indirect("loaded") from None
            raise

    def loads(self, node: Node) -> bool:
        """Whether ``node``'s value depends on memory: a subscript, a dereference, an
        ``__ldg``, or a variable with any definition in scope (its declaration, a later
        assignment, a compound update) that does."""
        for n in walk(node):
            t = n.type
            if t == "subscript_expression":
                return True
            if t == "pointer_expression" and n.child(0) is not None and n.child(0).type == "*":
                return True
            if t == "call_expression":
                fn = n.child_by_field_id(_F_FUNCTION)
                if fn is not None and fn.text in _LOAD_CALLS:
                    return True
            elif t == "identifier" and self._name_loads(n.text, n.start_byte):
                return True
        return False

    def _name_loads(self, name: bytes, at: int) -> bool:
        start, decl = self._visible_decl(name, at)
        key = (name, start)
        known = self.loaded.get(key)
        if known is not None:
            return known
        self.loaded[key] = False  # a cycle (k = k + 1) adds no load of its own
        found = any(self.loads(value) for _, value in self._definitions(name, decl))
        self.loaded[key] = found
        return found

    def definitions_at(self, name: bytes, at: int) -> list[tuple[str, Node]]:
        """(op, value) of every definition of ``name`` that can reach a use at byte ``at``:
        the innermost declaration visible there and the assignments in its scope."""
        return self._definitions(name, self._visible_decl(name, at)[1])

    def _definitions(self, name: bytes, decl: tuple[str, Node] | None
                     ) -> list[tuple[str, Node]]:
        """The visible declaration (if any) and every other definition of ``name`` in its
        scope, as (op, value)."""
        defs = self.func.defs.get(name, [])
        if decl is None:
            return [(op, v) for op, v in defs if op not in ("decl", "for")]
        lo, hi = self.func.def_scope.get(decl[1].start_byte, (0, 1 << 62))
        return [decl, *((op, v) for op, v in defs
                        if op not in ("decl", "for") and lo <= v.start_byte < hi)]

    def variable(self, name: bytes, at: int | None = None) -> tuple[Poly, int]:
        """Polynomial of a variable through its definitions (a symbol when it has none).

        Args:
            name: The variable.
            at: Byte offset of the use: picks the innermost declaration visible there, so
                two variables of one name in different blocks stay apart.
        """
        start, decl = self._visible_decl(name, at)
        key = (name, start)
        if key in self.memo:
            poly, err, chain = self.memo[key]
            if err == "indirect":
                raise Indirect(name)
            if err == "unknown":
                raise NotAffine(name)
            return poly, chain
        if key in self.active:  # a cycle (x = x + 1): the variable varies, keep it a symbol
            return {(name.decode("utf-8", "replace"),): 1.0}, 0
        self.active.add(key)
        try:
            poly, chain = self._variable(name, decl)
        except Indirect:
            self.memo[key] = (None, "indirect", 0)
            raise
        except NotAffine:
            self.memo[key] = (None, "unknown", 0)
            raise
        finally:
            self.active.discard(key)
        self.memo[key] = (poly, "", chain)
        return poly, chain

    def _visible_decl(self, name: bytes, at: int | None) -> tuple[int, tuple[str, Node] | None]:
        """(start of its value, (op, value)) of the declaration of ``name`` visible at
        ``at`` (the first one when ``at`` is None); (-1, None) when there is none."""
        entries = self.decls.get(name)
        if entries is None:
            scopes = self.func.def_scope
            entries = []
            for op, value in self.func.defs.get(name, ()):
                if op == "decl" or op == "for":
                    start = value.start_byte
                    entries.append((start, scopes.get(start), op, value))
            self.decls[name] = entries
        if not entries:
            return -1, None
        if at is None:
            return entries[0][0], (entries[0][2], entries[0][3])
        best = None
        best_start = -1
        for start, scope, op, value in entries:
            if scope is not None and scope[0] <= at < scope[1] and start < at \
                    and (best is None or start > best_start):
                best = (op, value)
                best_start = start
        return best_start, best

    def _variable(self, name: bytes, decl: tuple[str, Node] | None) -> tuple[Poly, int]:
        sym = {(name.decode("utf-8", "replace"),): 1.0}
        others = self._definitions(name, decl)[1 if decl is not None else 0:]
        # Updates are not evaluated below (``k += 2`` only makes k vary), and only the first
        # assignments are: one that reads memory (``idx += col[j]``, a fifth ``v = x[i]``)
        # must still make the variable loaded.
        if any(self.loads(v) for op, v in others):
            raise Indirect(name)
        if decl is None:
            plain = [v for op, v in others if op == "="]
            if not plain:
                if not others:
                    bound = self._outer(name)
                    if bound is not None:
                        return bound
                return sym, 0
            base, rest = plain[0], plain[1:]
            varies = len(others) > 1 or name in self.func.loop_vars
        else:
            base, rest = decl[1], [v for op, v in others if op == "="]
            varies = bool(others) or decl[0] == "for"
        poly, chain = self._eval(base, 1)
        for value in rest[:3]:
            other, _ = self._eval(value, 1)
            if thread_part(other) != thread_part(poly):
                raise NotAffine(name)
        if varies:
            poly = _add(poly, sym)
        return poly, chain + 1

    def _eval(self, node: Node, depth: int) -> tuple[Poly, int]:
        if depth > _MAX_DEPTH:
            raise NotAffine("too deep")
        t = node.type
        if t == "number_literal":
            try:
                return {(): _number(node.text)}, 0
            except ValueError as exc:
                raise NotAffine("number") from exc
        if t == "identifier":
            poly, chain = self.variable(node.text, node.start_byte)
            self.max_chain = max(self.max_chain, chain)
            return poly, chain
        if t == "field_expression":
            arg = node.child_by_field_id(_F_ARGUMENT)
            fld = node.child_by_field_id(_F_FIELD)
            if arg is not None and fld is not None and arg.type == "identifier":
                prefix = _BUILTIN.get(arg.text)
                if prefix is not None:
                    return {(f"{prefix}.{fld.text.decode('ascii', 'replace')}",): 1.0}, 0
            return {(node.text.decode("utf-8", "replace"),): 1.0}, 0
        if t in ("parenthesized_expression", "cast_expression"):
            inner = node.child_by_field_id(_F_VALUE) or (node.named_children[-1]
                                                          if node.named_children else None)
            if inner is None:
                raise NotAffine(t)
            return self._eval(inner, depth + 1)
        if t == "binary_expression":
            return self._binary(node, depth)
        if t == "unary_expression":
            op = node.child_by_field_id(_F_OPERATOR)
            arg = node.child_by_field_id(_F_ARGUMENT)
            if arg is None or op is None:
                raise NotAffine(t)
            poly, chain = self._eval(arg, depth + 1)
            if op.type == "-":
                return {m: -c for m, c in poly.items()}, chain
            if op.type == "+":
                return poly, chain
            raise NotAffine(t)
        if t in ("subscript_expression", "pointer_expression"):
            if t == "pointer_expression" and node.child(0).type == "&":
                raise NotAffine("address")
            raise Indirect(t)
        if t == "call_expression":
            fn = node.child_by_field_id(_F_FUNCTION)
            ftext = fn.text if fn is not None else b""
            if fn is not None and fn.type == "field_expression":
                f = fn.child_by_field_id(_F_FIELD)
                ftext = b"." + (f.text if f is not None else b"")
            if ftext in _LANE_CALLS:
                return {("tid.x",): 1.0}, 0
            if ftext in _LOAD_CALLS:
                raise Indirect("ldg")
            raise NotAffine("call")
        if t in ("sizeof_expression", "true", "false", "null", "char_literal"):
            return {(node.text.decode("utf-8", "replace"),): 1.0}, 0
        raise NotAffine(t)

    def _binary(self, node: Node, depth: int) -> tuple[Poly, int]:
        kids = node.children
        if len(kids) == 3 and not kids[1].is_named:
            # left, operator, right: one children list is cheaper than three field lookups
            # (the operator is the only anonymous child; comments or errors fall through).
            left, op, right = kids
        else:
            left = node.child_by_field_id(_F_LEFT)
            right = node.child_by_field_id(_F_RIGHT)
            op = node.child_by_field_id(_F_OPERATOR)
        if left is None or right is None or op is None:
            raise NotAffine("binary")
        o = op.type
        a, ca = self._eval(left, depth + 1)
        b, cb = self._eval(right, depth + 1)
        chain = max(ca, cb)
        if o == "+":
            return _add(a, b), chain
        if o == "-":
            return _add(a, b, -1.0), chain
        if o == "*":
            return _mul(a, b), chain
        kb = const_of(b)
        if o == "<<" and kb is not None:
            return {m: c * (2.0 ** kb) for m, c in a.items()}, chain
        if o in ("/", ">>"):
            d = (2.0 ** kb if o == ">>" else kb) if kb is not None else None
            if d is not None and d != 0 and all(c % d == 0 for c in a.values()):
                return {m: c / d for m, c in a.items()}, chain
            if thread_dependent(b):
                raise NotAffine("divide by thread index")
            if not thread_dependent(a):
                return {("~q:" + node.text.decode("utf-8", "replace"),): 1.0}, chain
            if d is not None and d < 32 and lane_part(a):
                raise NotAffine("sub-warp division")
            # A thread index divided by >= a warp (or by a size) is uniform within a warp:
            # a thread-derived symbol with no lane component (warp id, row of a 2-D index).
            return {("~tq:" + node.text.decode("utf-8", "replace"),): 1.0}, chain
        if o in ("%", "&"):
            if thread_dependent(b):
                raise NotAffine("modulo by thread index")
            if o == "&" and (kb is None or (int(kb) + 1) & int(kb) != 0):
                raise NotAffine("mask")
            # x % n keeps x's per-lane step (it wraps at most once across a warp for n >= 32).
            lane = {m: c for m, c in a.items() if "tid.x" in m}
            modulus = (kb + 1 if o == "&" else kb) if kb is not None else None
            if modulus is not None and modulus < 32 and lane:
                raise NotAffine("sub-warp modulo")
            # The remainder of a thread-derived value stays thread-derived ("~t" prefix).
            tag = "~tr:" if thread_dependent(a) else "~r:"
            return _add(lane, {(tag + node.text.decode("utf-8", "replace"),): 1.0}), chain
        raise NotAffine(o)


def resolver_for(facts: Facts, func: Func) -> Resolver:
    """The resolver of ``func``, shared through ``facts.resolvers`` (made on first use)."""
    return Resolver.of(facts, func)
