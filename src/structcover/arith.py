"""Integer arithmetic on size and launch expressions, safely.

The one evaluator for expressions such as ``"M*K"`` (a task's tensor shapes), ``BLOCK / 2``
or ``dim3(16, 16)`` (a program's launch configuration). Programs under test come from an RL
policy, so the text is hostile: it is parsed into a Python syntax tree and only integer
literals, known names, ``+ - * / // % << >> & | ^ ~ **`` and allowed calls are evaluated.
Every intermediate value must fit in :data:`MAX_BITS` bits, exponents and shift counts are
bounded, and the text length is capped, so ``9**9**9**9`` or ``1 << 10**9`` is refused at
once instead of hanging the process.

Division follows C: ``/`` and ``%`` on integers truncate toward zero.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping

#: Largest magnitude of any value, intermediate or final (sizes, byte counts, grid products).
MAX_BITS = 64
#: Longest expression text accepted (a size or launch expression is a few dozen characters).
MAX_LENGTH = 512

_INT_SUFFIX = re.compile(r"\b(\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b")
_C_CAST = re.compile(r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?"
                     r"(?:int|long|long\s+long|size_t|short|unsigned)\s*\)")

Resolver = Mapping[str, int] | Callable[[str], int | None]


class ExprError(ValueError):
    """An expression that is not constant integer arithmetic within the limits."""


def from_c(text: str) -> str:
    """Rewrite C integer syntax the Python parser does not know: ``16u``, ``(int)x``."""
    return _C_CAST.sub("", _INT_SUFFIX.sub(r"\1", text.strip()))


def _check(value: int) -> int:
    if abs(value).bit_length() > MAX_BITS:
        raise ExprError(f"value exceeds {MAX_BITS} bits")
    return value


def _cdiv(a: int, b: int) -> int:
    if b == 0:
        raise ExprError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - b * _cdiv(a, b)


def _pow(a: int, b: int) -> int:
    if b < 0 or b > MAX_BITS:
        raise ExprError(f"exponent {b} outside 0..{MAX_BITS}")
    # |a|**b has at least (bits(a) - 1) * b + 1 bits: refuse before computing a huge power.
    if abs(a) > 1 and (abs(a).bit_length() - 1) * b >= MAX_BITS + 1:
        raise ExprError(f"value exceeds {MAX_BITS} bits")
    return a ** b


def _shift(a: int, b: int, left: bool) -> int:
    if b < 0 or b >= MAX_BITS:
        raise ExprError(f"shift count {b} outside 0..{MAX_BITS - 1}")
    return a << b if left else a >> b


_BINOPS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _cdiv,
    ast.FloorDiv: _cdiv,
    ast.Mod: _cmod,
    ast.Pow: _pow,
    ast.LShift: lambda a, b: _shift(a, b, True),
    ast.RShift: lambda a, b: _shift(a, b, False),
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}
_UNOPS: dict[type[ast.unaryop], Callable[[int], int]] = {
    ast.USub: lambda a: -a, ast.UAdd: lambda a: a, ast.Invert: lambda a: ~a}


def _product(*dims: int) -> int:
    out = 1
    for d in dims:
        out = _check(out * d)
    return out


#: Calls a launch expression may contain: ``dim3(x, y, z)`` is its thread count.
LAUNCH_CALLS: dict[str, Callable[..., int]] = {"dim3": _product}


def eval_int_expr(text: str | int | float, names: Resolver | None = None, *,
                  calls: Mapping[str, Callable[..., int]] | None = None) -> int:
    """The value of an integer expression over ``names``.

    Args:
        text: The expression (or an int, returned as is).
        names: Values of the names it may use: a mapping, or a function returning None for
            an unknown name.
        calls: Functions it may call, by name (e.g. :data:`LAUNCH_CALLS`).

    Returns:
        The integer value.

    Raises:
        ExprError: (a ``ValueError``) the text is not integer arithmetic over known names and
            calls, divides by zero, or exceeds the limits; the message says which.
    """
    if isinstance(text, bool) or not isinstance(text, int | str):
        raise ExprError(f"expression must be an int or a string, got {type(text).__name__}")
    if isinstance(text, int):
        return _check(text)
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"{text!r} is not an arithmetic expression") from exc
    resolve = names if callable(names) else (names or {}).get
    try:
        return _Evaluator(resolve, calls or {}).visit(tree.body)
    except RecursionError as exc:
        raise ExprError(f"{text!r} is nested too deeply") from exc


class _Evaluator:
    def __init__(self, resolve: Callable[[str], int | None],
                 calls: Mapping[str, Callable[..., int]]) -> None:
        self.resolve = resolve
        self.calls = calls

    def visit(self, node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return _check(node.value)
        if isinstance(node, ast.Name):
            value = self.resolve(node.id)
            if value is None or isinstance(value, bool) or not isinstance(value, int):
                raise ExprError(f"unknown name {node.id!r}")
            return _check(value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = self.visit(node.left), self.visit(node.right)
            return _check(_BINOPS[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
            return _check(_UNOPS[type(node.op)](self.visit(node.operand)))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self.calls and not node.keywords
                and 1 <= len(node.args) <= 3):
            return _check(self.calls[node.func.id](*(self.visit(a) for a in node.args)))
        raise ExprError(f"unsupported syntax {ast.dump(node)[:40]!r}")
