"""Access kinds of an index polynomial: how neighbouring lanes' addresses relate.

The rules every access classification shares (global and shared memory, atomics): the
coefficient of ``threadIdx.x`` decides coalesced / strided / broadcast, and the element size
of a type turns elements into bytes.
"""

from __future__ import annotations

from structcover.tools.features.model import vector_width
from structcover.tools.features.poly import Poly, const_of

_ELEM_BYTES = [(b"double", 8), (b"long long", 8), (b"int64", 8), (b"half", 2),
               (b"bfloat16", 2), (b"short", 2), (b"char", 1), (b"int8", 1), (b"uint8", 1),
               (b"bool", 1)]


def elem_bytes(type_text: bytes) -> int:
    """Size in bytes of one element of the named type (4 when unknown)."""
    width = vector_width(type_text)
    for key, size in _ELEM_BYTES:
        if key in type_text:
            return size * width
    return 4 * width


def _lane_coefficient(poly: Poly) -> Poly | None:
    """The coefficient of ``threadIdx.x`` (a polynomial over the other symbols, zero terms
    dropped); None when ``threadIdx.x`` appears squared or worse."""
    coef: Poly = {}
    for m, c in poly.items():
        n = m.count("tid.x")
        if n > 1:
            return None
        if n == 1:
            rest = list(m)
            rest.remove("tid.x")
            coef[tuple(rest)] = coef.get(tuple(rest), 0.0) + c
    return {m: c for m, c in coef.items() if c != 0}


def classify(poly: Poly) -> str:
    """Coalesced / strided / broadcast from an index polynomial (in elements)."""
    coef = _lane_coefficient(poly)
    if coef is None:
        return "unknown"
    if not coef:
        return "broadcast"
    k = const_of(coef)
    if k is None:
        return "strided"
    return "coalesced" if abs(k) <= 1 else "strided"


def lane_stride(poly: Poly) -> float | None:
    """Constant coefficient of ``threadIdx.x`` (elements between neighbouring lanes), 0 when
    absent, None when it is symbolic or not linear."""
    coef = _lane_coefficient(poly)
    return None if coef is None else const_of(coef)
