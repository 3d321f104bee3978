"""Precision: was the candidate computed at the task's precision? (docs/KERNELBENCH.md, "Precision").

KernelBench's flat ``atol = rtol = 1e-2`` passes a float32 problem computed in float16 (inputs
cast to half, a GEMM or a reduction accumulated in half, an output rounded to half by masking
its mantissa): float16's unit roundoff ``2**-11`` is 5e-4, well inside 1e-2. This module adds a
behaviour-based check per output tensor, measured from the reference itself.

The reference child also runs ``Model`` in float64 on the same inputs (CPU path only). With
``r`` the reference's output (task dtype), ``r64`` the float64 one and ``c`` the candidate's,
norms 2-norms over the jointly finite elements of every trial pooled::

    e_ref   = ||r - r64||               the reference's own rounding error for this operation
    e_floor = u(dtype) * ||r64||        the output's rounding alone (an exact op: ReLU, max)
    scale   = max(e_ref, e_floor) * max(1, u(allowed) / u(dtype))
    pass    when ||c - r64|| <= K * scale,  K = PRECISION_FACTOR = 256

``e_ref`` grows with the operation's depth and conditioning (a reduction, a scan or a GEMM
gets a larger scale than an elementwise op: the "per operation class" tolerance is measured,
not tabulated). ``K`` covers honest programs that sum in another order than torch: a serial
float32 sum of ``n`` same-sign terms is about ``sqrt(n) / 2.5`` times less accurate than a
pairwise one, 76x at the CPU path's largest sums (32 761 terms); computing in float16
instead multiplies every error by ``u(float16) / u(float32) = 8192``, which shows as 800x
and more (measured on GEMMs, reductions, softmax, scans and elementwise ops:
``bench/precision_calibration.py``). ``K = 256`` sits between the two, a factor 3 from each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from structcover.tools.verify.accumulation import UNIT_ROUNDOFF
from structcover.tools.verify.dtypes import as_float64

__all__ = ["PRECISION_FACTOR", "PRECISIONS", "PrecisionCheck", "judge", "rule_text",
           "squared_errors"]

#: K: how many times the reference's own rounding error an honest candidate may make.
PRECISION_FACTOR = 256.0
#: What a problem's ``MIN_PRECISION`` may name: a dtype (computing at that precision is
#: allowed), or ``any`` (no precision check).
PRECISIONS = ("float64", "float32", "float16", "bfloat16", "any")
#: Lower precisions a too-large error is compared with, to name the likely one in the detail
#: (tf32 has float16's 10-bit mantissa).
_LOWER = (("float32", 2.0 ** -24), ("float16 or tf32", 2.0 ** -11), ("bfloat16", 2.0 ** -8))


@dataclass(frozen=True)
class PrecisionCheck:
    """One output's verdict: ``ratio`` is ``||c - r64|| / scale`` (inf when the scale is 0)."""

    ok: bool
    ratio: float
    detail: str = ""


def squared_errors(candidate: np.ndarray, reference: np.ndarray, wide: np.ndarray,
                   dtype: str) -> tuple[float, float, float]:
    """``(||c - r64||^2, ||r - r64||^2, ||r64||^2)`` over the elements finite in all three.

    Args:
        candidate: The candidate's output (storage of ``dtype``: bfloat16 as uint16 bits).
        reference: The reference's output, same storage.
        wide: The float64 reference's output.
        dtype: The output's task dtype.

    Raises:
        ValueError: The three shapes differ (the callers compare shapes first).
    """
    if not candidate.shape == reference.shape == wide.shape:
        raise ValueError(f"precision: shapes differ (candidate {candidate.shape}, reference "
                         f"{reference.shape}, float64 reference {wide.shape})")
    c, r = as_float64(candidate, dtype), as_float64(reference, dtype)
    r64 = np.asarray(wide, dtype=np.float64)
    # Specials are the flat comparison's business (NaN/inf placement); here only values count.
    finite = np.isfinite(c) & np.isfinite(r) & np.isfinite(r64)
    c, r, r64 = c[finite], r[finite], r64[finite]
    return (float(np.sum((c - r64) ** 2)), float(np.sum((r - r64) ** 2)),
            float(np.sum(r64 ** 2)))


def _allowed_widening(dtype: str, min_precision: str | None) -> float:
    """How much coarser than ``dtype`` the problem lets a candidate compute (1: not at all)."""
    if min_precision is None or min_precision == "any":
        return 1.0
    return max(1.0, UNIT_ROUNDOFF[min_precision] / UNIT_ROUNDOFF[dtype])


def _looks_like(ratio: float, rel: float, dtype: str) -> str:
    """The lower precision whose unit roundoff the error matches (within 2 binades), if any.

    Two estimates of the precision the candidate worked at, the larger taken: ``u(dtype) *
    ratio`` (its error in units of the reference's own, times the task's roundoff) and the
    relative error ``||c - r64|| / ||r64||``. Computing at precision ``p`` gives about
    ``u(p)`` for the second (the first falls short of it where the reference's own error is
    an accumulation's, larger than the output's rounding: 800x-6000x is measured for
    float16, 8192x nominal).
    """
    effective = max(math.log2(UNIT_ROUNDOFF[dtype] * ratio) if ratio > 0 else -math.inf, rel)
    coarser = [(name, math.log2(u)) for name, u in _LOWER if u > UNIT_ROUNDOFF[dtype]]
    if not coarser or not math.isfinite(effective):
        return "computed at a lower precision, or approximated?"
    name, log_u = min(coarser, key=lambda p: abs(p[1] - effective))
    if abs(log_u - effective) <= 2.0:
        return f"computed in {name}?"
    return "computed at a lower precision (in part), or approximated?"


def judge(name: str, sums: tuple[float, float, float], dtype: str,
          min_precision: str | None = None) -> PrecisionCheck:
    """Apply the rule to one output's pooled squared errors (:func:`squared_errors`).

    Args:
        name: The output, for the detail (``output 0``).
        sums: ``(||c - r64||^2, ||r - r64||^2, ||r64||^2)`` over all trials.
        dtype: The output's task dtype (its unit roundoff is ``u``).
        min_precision: The problem's ``MIN_PRECISION`` (None: the output's own dtype).

    Raises:
        ValueError: ``dtype`` has no unit roundoff here, or ``min_precision`` is unknown.
    """
    if dtype not in UNIT_ROUNDOFF:
        raise ValueError(f"precision: no unit roundoff for dtype {dtype!r}; known: "
                         f"{sorted(UNIT_ROUNDOFF)}")
    if min_precision is not None and min_precision not in PRECISIONS:
        raise ValueError(f"precision: MIN_PRECISION {min_precision!r} is not one of "
                         f"{', '.join(PRECISIONS)}")
    err, ref, norm = (math.sqrt(max(s, 0.0)) for s in sums)
    own = max(ref, UNIT_ROUNDOFF[dtype] * norm)
    scale = own * _allowed_widening(dtype, min_precision)
    if scale == 0.0:
        # An exactly-zero reference: the flat comparison already demanded exact zeros.
        return PrecisionCheck(err == 0.0, 0.0 if err == 0.0 else math.inf,
                              "" if err == 0.0 else f"{name}: nonzero where the reference and "
                              "its float64 run are exactly zero")
    ratio = err / scale
    if min_precision == "any" or ratio <= PRECISION_FACTOR:
        return PrecisionCheck(True, ratio)
    rel = math.log2(err / norm) if norm > 0 else math.inf
    allowed = "" if min_precision is None else f", the problem allows {min_precision}"
    return PrecisionCheck(False, ratio, (
        f"{name}: error {ratio:.0f}x the {dtype} reference's own rounding error (limit "
        f"{PRECISION_FACTOR:g}x{allowed}; relative error 2^{rel:.1f} of the output's norm): "
        + _looks_like(err / own, rel, dtype)))


def rule_text(min_precision: str | None = None) -> str:
    """One line naming the rule applied, for the verdict's ``tolerance_rule``."""
    widen = "" if min_precision is None else f" * u({min_precision})/u(dtype) if larger"
    return (f"precision: ||c-r64|| <= {PRECISION_FACTOR:g} * max(||r-r64||, u(dtype)*||r64||)"
            f"{widen}, per output over all trials (r64: the reference in float64; "
            "docs/KERNELBENCH.md, Precision)")
