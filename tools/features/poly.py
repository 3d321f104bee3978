"""Affine forms as polynomials over index symbols, and their arithmetic.

A :data:`Poly` maps a monomial (a sorted tuple of symbols such as ``tid.x`` or ``bdim.x``) to
its coefficient. The data-flow resolver (``dataflow.py``) reduces index expressions to these;
the memory, pointer, parallel and expert families read them.
"""

from __future__ import annotations

Poly = dict[tuple[str, ...], float]
#: Thread-index symbols; a monomial holding one (or an opaque ``~t`` symbol) is thread-dependent.
THREAD = ("tid.x", "tid.y", "tid.z")


class NotAffine(Exception):
    """The expression does not reduce to an affine form."""


class Indirect(Exception):
    """The expression reads memory (``x[col[k]]``)."""


def mul(a: Poly, b: Poly) -> Poly:
    """Product of two polynomials."""
    return _mul(a, b)


def add(a: Poly, b: Poly) -> Poly:
    """Sum of two polynomials."""
    return _add(a, b)


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0.0) + ca * cb
    return {m: c for m, c in out.items() if c != 0}


def _add(a: Poly, b: Poly, sign: float = 1.0) -> Poly:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0.0) + sign * c
    return {m: c for m, c in out.items() if c != 0}


def const_of(p: Poly) -> float | None:
    """The value of a constant polynomial, else None."""
    if not p:
        return 0.0
    if len(p) == 1 and () in p:
        return p[()]
    return None


def thread_dependent(p: Poly) -> bool:
    """True when any monomial holds a thread index (or a thread-derived opaque symbol)."""
    return any(s in THREAD or s.startswith("~t") for m in p for s in m)


def parse_number(text: bytes) -> float:
    """The value of a C numeric literal (decimal, hex, binary; suffixes dropped)."""
    if text.isdigit():  # the common case: a plain decimal literal
        return float(text)
    t = text.decode("ascii", "replace").lower().rstrip("ulf").replace("'", "")
    if t.startswith("0x"):
        return float(int(t, 16))
    if t.startswith("0b"):
        return float(int(t[2:], 2))
    return float(t)


def lane_part(p: Poly) -> Poly:
    """Monomials that vary across the lanes of a warp (hold ``threadIdx.x``)."""
    return {m: c for m, c in p.items() if "tid.x" in m}


def thread_part(p: Poly) -> Poly:
    """Monomials that vary between threads (thread indices, thread-derived symbols)."""
    return {m: c for m, c in p.items() if any(s in THREAD or s.startswith("~t") for s in m)}
