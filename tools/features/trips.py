"""Loop trip counts: ``for (i = a; i < b; i += c)`` with a, b and c constants the source fixes
(literals, macros, constexpr, template arguments), and per-access weights from them."""

from __future__ import annotations

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.poly import Indirect, NotAffine, const_of
from structcover.tools.features.poly import parse_number as _number

_F_CONDITION = field_id("condition")
_F_DECLARATOR = field_id("declarator")
_F_INITIALIZER = field_id("initializer")
_F_LEFT = field_id("left")
_F_OPERATOR = field_id("operator")
_F_RIGHT = field_id("right")
_F_UPDATE = field_id("update")
_F_VALUE = field_id("value")

#: Iterations assumed for a loop whose trip count the source does not fix (intensity only).
UNKNOWN_TRIPS = 16.0
_MAX_TRIPS = 4096.0


def trip_count(res: Resolver, loop: Node) -> float | None:
    """Iterations of ``for (i = a; i < b; i += c)`` when a, b and c are constants, else None."""
    if loop.type != "for_statement":
        return None
    cond = loop.child_by_field_id(_F_CONDITION)
    init = loop.child_by_field_id(_F_INITIALIZER)
    upd = loop.child_by_field_id(_F_UPDATE)
    if cond is None or upd is None or cond.type != "binary_expression":
        return None
    op = cond.child_by_field_id(_F_OPERATOR)
    left = cond.child_by_field_id(_F_LEFT)
    right = cond.child_by_field_id(_F_RIGHT)
    if op is None or left is None or right is None or op.type not in ("<", "<=", "!=", ">", ">="):
        return None
    bound = _const(res, right)
    if bound is None:
        return None
    start = 0.0
    if init is not None:
        value = None
        if init.type == "declaration":
            decl = init.child_by_field_id(_F_DECLARATOR)
            value = decl.child_by_field_id(_F_VALUE) if decl is not None else None
        elif init.type == "assignment_expression":
            value = init.child_by_field_id(_F_RIGHT)
        if value is not None:
            start_v = _const(res, value)
            if start_v is None:
                return None
            start = start_v
    step = _step(res, upd)
    if bound is None or step is None or step == 0:
        return None
    span = (bound - start) if op.type in ("<", "<=", "!=") else (start - bound)
    if op.type in ("<=", ">="):
        span += abs(step)
    trips = span / abs(step)
    if trips <= 0:
        return 0.0
    return min(float(int(trips + 0.999)), _MAX_TRIPS)


def _const(res: Resolver, node: Node) -> float | None:
    """Constant value of ``node``, None when it is not one. Literals and kernel parameters
    (symbols unless a template argument fixes them) are answered without the resolver."""
    t = node.type
    if t == "number_literal":
        try:
            return _number(node.text)
        except ValueError:
            return None
    if t == "identifier" and res.func.kind == "global":
        name = node.text
        if name in res.func.params and name not in res.func.template_values:
            return None
    try:
        return const_of(res.resolve(node)[0])
    except (NotAffine, Indirect):
        return None


def _step(res: Resolver, upd: Node) -> float | None:
    if upd.type == "update_expression":
        return 1.0
    if upd.type == "assignment_expression":
        op = upd.child_by_field_id(_F_OPERATOR)
        right = upd.child_by_field_id(_F_RIGHT)
        if op is None or right is None or op.type not in ("+=", "-="):
            return None
        return _const(res, right)
    return None


class Trips:
    """Memoized trip counts of one function's loops."""

    def __init__(self, res: Resolver) -> None:
        self.res = res
        self.cache: dict[int, float | None] = {}

    def of(self, loop: Node) -> float | None:
        key = loop.start_byte
        if key not in self.cache:
            self.cache[key] = trip_count(self.res, loop)
        return self.cache[key]

    def weight(self, loops: tuple[Node, ...], unknown: float) -> float:
        w = 1.0
        for loop in loops:
            t = self.of(loop)
            w *= unknown if t is None else t
        return w

    def weights(self, loops: tuple[Node, ...]) -> tuple[float, float]:
        """(unknown trips as 1, unknown trips as UNKNOWN_TRIPS) in one pass."""
        w = wu = 1.0
        for loop in loops:
            t = self.of(loop)
            if t is None:
                wu *= UNKNOWN_TRIPS
            else:
                w *= t
                wu *= t
        return w, wu
