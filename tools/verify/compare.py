"""Compare one output buffer of a candidate against the reference's (docs/ARCHITECTURE.md).

Rules, in order:

1. **Shape and dtype** must match exactly.
2. **Integers** must match exactly.
3. **Special values**: a NaN must sit where the reference has a NaN, an infinity where the
   reference has the same infinity. An element still holding the *poison* pattern (never
   written) where the reference wrote a value is reported as unwritten.
4. **Tolerance**: ``|c - r| <= atol + rtol * |r|`` elementwise (numpy ``isclose``), with
   ``(atol, rtol) = spec.tolerance(dtype)``, plus a per-element ``allowance`` for outputs that
   are long sums (``tools/verify/accumulation.py``: it grows with the accumulation depth).
5. **Magnitude guard**: let ``s = max |r|`` over the reference's finite values. When
   ``s < GUARD_FACTOR * atol`` the absolute tolerance is as large as the signal itself, so rule 4
   would pass a candidate that writes zeros (or any values of the same tiny size). In that
   regime the absolute term is rescaled to the output's own scale: ``|c - r| <= atol * s +
   rtol * |r|``. An all-zero candidate then fails, because at the reference's largest element
   ``|0 - r| = s > atol * s``; a correct candidate, whose error is a few ulps of ``s``, passes.
   A reference that is exactly all zeros (``s == 0``) requires exact zeros and is noted as weak.
   A candidate that passes rule 4 but fails the guard gets failure ``magnitude-guard``.

Messages carry counts, indices and error sizes (absolute and relative differences), never the
values themselves: a verdict goes back to whoever wrote the program, and data must not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from structcover.tools.verify.dtypes import as_float64, is_poison

#: The guard applies when the reference's largest magnitude is below this many ``atol``.
GUARD_FACTOR = 10.0
_INTEGER = {"int8", "uint8", "int32", "uint32", "int64"}


@dataclass
class Comparison:
    """Result of comparing one output buffer."""

    ok: bool
    failure: str | None = None  # shape-mismatch, dtype-mismatch, mismatch, nan-mismatch,
    #                              unwritten-output, magnitude-guard
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    first_mismatch: list[int] | None = None
    detail: str = ""
    notes: list[str] = field(default_factory=list)


def _first(mask: np.ndarray) -> list[int] | None:
    flat = np.flatnonzero(mask.ravel())
    if flat.size == 0:
        return None
    return [int(i) for i in np.unravel_index(int(flat[0]), mask.shape)]


def _fmt(idx: list[int] | None) -> str:
    return "[" + ", ".join(map(str, idx or [])) + "]"


def compare_output(name: str, candidate: np.ndarray, reference: np.ndarray, dtype: str,
                   atol: float, rtol: float, allowance: np.ndarray | None = None) -> Comparison:
    """Compare one output buffer under the rules of this module.

    Args:
        name: Output name (for messages).
        candidate: The candidate's buffer.
        reference: The reference's buffer.
        dtype: The task dtype of the buffer (``bfloat16`` buffers hold uint16 bits).
        atol: Absolute tolerance.
        rtol: Relative tolerance.
        allowance: Extra absolute tolerance per element (broadcast to the output), for
            accumulated outputs; None: none.

    Returns:
        The comparison, with errors measured over finite elements and the first mismatch.
    """
    if candidate.shape != reference.shape:
        return Comparison(False, "shape-mismatch",
                          detail=f"{name}: shape {candidate.shape} != reference {reference.shape}")
    if candidate.dtype != reference.dtype:
        return Comparison(False, "dtype-mismatch",
                          detail=f"{name}: dtype {candidate.dtype} != reference {reference.dtype}")
    if candidate.size == 0:
        return Comparison(True)
    unwritten = is_poison(candidate, dtype) & ~is_poison(reference, dtype)
    if dtype in _INTEGER:
        bad = (candidate != reference) | unwritten
        diff = np.abs(candidate.astype(np.float64) - reference.astype(np.float64))
        idx = _first(bad)
        if idx is None:
            return Comparison(True)
        kind = "unwritten-output" if unwritten.any() else "mismatch"
        t = tuple(idx)
        what = "never written (poison)" if unwritten[t] else f"differs by {diff[t]:.6g}"
        return Comparison(False, kind, float(diff.max()), float(diff.max()), idx,
                          f"{name}{_fmt(idx)} {what}; {int(bad.sum())} of {bad.size} elements "
                          f"differ (integers must match exactly)")
    c, r = as_float64(candidate, dtype), as_float64(reference, dtype)
    c_nan, r_nan = np.isnan(c), np.isnan(r)
    special = (c_nan != r_nan) | (np.isinf(r) & (c != r)) | (np.isinf(c) & (c != r))
    finite = np.isfinite(c) & np.isfinite(r)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(c - r), 0.0)
    scale = float(np.abs(np.where(np.isfinite(r), r, 0.0)).max())
    # Relative error only where the reference is not negligible (else it is noise over ~0).
    meaningful = finite & (np.abs(r) > max(atol, np.finfo(np.float64).tiny))
    rel = np.where(meaningful, diff / np.maximum(np.abs(r), np.finfo(np.float64).tiny), 0.0)
    max_abs = float(diff.max())
    max_rel = float(rel.max())
    extra = 0.0 if allowance is None else np.broadcast_to(allowance, r.shape)
    plain_ok = finite & (diff <= atol + rtol * np.abs(r) + extra)
    guarded = scale < GUARD_FACTOR * atol
    notes = []
    if guarded:
        ok_elem = finite & (diff <= atol * scale + rtol * np.abs(r) + extra)
        notes.append(f"{name}: magnitude guard on (reference's largest magnitude below "
                     f"{GUARD_FACTOR:g}*atol)" + ("; reference is all zeros: weak test"
                                                 if scale == 0 else ""))
    else:
        ok_elem = plain_ok
    bad = unwritten | special | (finite & ~ok_elem)
    idx = _first(bad)
    if idx is None:
        return Comparison(True, None, max_abs, max_rel, None, "", notes)
    t = tuple(idx)
    count = f"{int(bad.sum())} of {bad.size} elements differ"
    if unwritten[t]:
        kind = "unwritten-output"
        detail = (f"{name}{_fmt(idx)} never written (poison) where the reference wrote a value; "
                  f"{int(unwritten.sum())} of {bad.size} elements unwritten")
    elif special[t]:
        kind = "nan-mismatch"
        detail = (f"{name}{_fmt(idx)}: {_category(c[t])} where the reference has "
                  f"{_category(r[t])}; {count}")
    elif guarded and plain_ok.all() and not special.any() and not unwritten.any():
        kind = "magnitude-guard"
        detail = (f"{name}{_fmt(idx)}: |diff| {diff[t]:.3g}; passes plain allclose only because "
                  f"the reference's largest magnitude is below the tolerance; {count}")
    else:
        kind = "mismatch"
        grown = "" if allowance is None else f", accumulation allowance {float(np.broadcast_to(extra, r.shape)[t]):.3g}"
        detail = (f"{name}{_fmt(idx)}: |diff| {diff[t]:.3g}, relative {rel[t]:.3g} (atol "
                  f"{atol:g}, rtol {rtol:g}{grown}); {count}")
    return Comparison(False, kind, max_abs, max_rel, idx, detail, notes)


def _category(value: float) -> str:
    """NaN, +inf, -inf or finite: what kind of value, not which."""
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return "a finite value"
