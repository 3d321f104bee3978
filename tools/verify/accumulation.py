"""Tolerance that grows with accumulation depth, for scans and long reductions.

A flat ``atol + rtol * |r|`` cannot judge a long floating-point sum: rounding error grows with the
number of terms and with their magnitudes, not with the result (a prefix sum that crosses zero has
a tiny ``|r|`` and an error set by the terms before it). The verifier therefore allows, per output
element ``i``, an extra ::

    allowance_i = c * u * g(n_i) * A_i

* ``u``: the output dtype's unit roundoff (fp32: 2**-24, fp16: 2**-11, fp64: 2**-53).
* ``n_i``: terms summed into element ``i`` (a scan: ``i + 1`` along the last axis; a reduction:
  the input's size divided by the output's).
* ``A_i = sum |x_j|`` over those terms (a scan: the prefix sum of ``|x|``).
* ``g(n)``: ``sqrt(n)`` for ``order: serial``, ``log2(n) + 1`` for ``order: tree``.

Derivation. Recursive (serial) summation of ``n`` terms has the worst-case bound
``|s_hat - s| <= gamma_{n-1} * sum |x_j|`` with ``gamma_k = k u / (1 - k u)`` (Higham, *Accuracy
and Stability of Numerical Algorithms*, 2nd ed., eq. 4.4); pairwise (tree) summation replaces
``n - 1`` by ``ceil(log2 n)`` (ibid., eq. 4.6). The worst case is reached only when every
rounding error has the same sign; for rounding errors that behave as independent zero-mean
variables the error is at most ``lambda * sqrt(n) * u * sum |x_j|`` with probability at least
``1 - 2 exp(-lambda**2 / 2)`` (Higham and Mary, *A New Approach to Probabilistic Rounding Error
Analysis*, SIAM J. Sci. Comput. 41(5), 2019, Theorem 3.1). Both the reference and the candidate
carry such an error, in orders the verifier does not know (any honest program may sum serially),
so the task declares the least accurate order it admits and ``c`` covers both sides and ``lambda``
(``c = 4``: two programs, ``lambda ~ 2``). The bound is absolute and per element: it never loosens
the elements whose sums are short, which is where a wrong program (a scan shifted by one element,
a missing term, fp16 accumulation: ``u`` 8192 times larger) shows first.

What it cannot catch: one missing term of magnitude ``|x|`` deep in a long fp32 sum, where
``c * u * sqrt(n) * A_n`` exceeds ``|x|`` (around ``n`` of 2.6e4 terms of similar size); at that
depth a serial fp32 sum's own noise is of that size too, so no tolerance that admits a serial
scan could.
"""

from __future__ import annotations

import math

import numpy as np

from structcover.schema import Accumulation, TaskSpec

#: Unit roundoff per dtype (half the machine epsilon).
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24,
                 "float64": 2.0 ** -53}


def applies(spec: TaskSpec, output: str, dtype: str) -> Accumulation | None:
    """The task's accumulation rule for ``output``, or None (flat tolerance only)."""
    acc = spec.accumulation
    if acc is None or dtype not in UNIT_ROUNDOFF:
        return None
    if acc.outputs and output not in acc.outputs:
        return None
    return acc


def _growth(n: np.ndarray, order: str) -> np.ndarray:
    n = np.maximum(n, 1.0)
    return np.sqrt(n) if order == "serial" else np.log2(n) + 1.0


def allowance(acc: Accumulation, x: np.ndarray, out_shape: tuple[int, ...],
              dtype: str) -> np.ndarray:
    """Per-element extra absolute tolerance of an accumulated output (see the module doc).

    Args:
        acc: The task's rule.
        x: The summed input (as given to both programs).
        out_shape: The output's shape.
        dtype: The output's dtype (its unit roundoff).

    Returns:
        An array of ``out_shape`` (broadcastable), in float64.
    """
    u = UNIT_ROUNDOFF[dtype]
    mags = np.abs(np.asarray(x, dtype=np.float64))
    mags = np.where(np.isfinite(mags), mags, 0.0)  # specials are compared by their own rule
    if acc.kind == "scan":
        if mags.shape != out_shape or mags.ndim == 0:
            mags = mags.reshape(out_shape) if mags.size == math.prod(out_shape) else \
                np.broadcast_to(mags.sum(), out_shape)
        depth = np.arange(1, mags.shape[-1] + 1, dtype=np.float64) if mags.ndim else 1.0
        total = np.cumsum(mags, axis=-1) if mags.ndim else mags
        return acc.c * u * _growth(np.asarray(depth), acc.order) * total
    size = max(math.prod(out_shape), 1)
    if mags.size % size == 0 and mags.size:
        per = mags.reshape(size, -1)
        terms = float(per.shape[1])
        total = per.sum(axis=1).reshape(out_shape)
    else:  # shapes that do not split evenly: the whole input bounds every element
        terms = float(mags.size)
        total = np.full(out_shape, mags.sum())
    return acc.c * u * float(_growth(np.asarray(terms), acc.order)) * total


def rule_text(acc: Accumulation) -> str:
    """One line naming the rule applied, for the verdict."""
    g = "sqrt(n)" if acc.order == "serial" else "(log2(n)+1)"
    return (f"{acc.kind} over {acc.over}: |c-r| <= atol + rtol*|r| + {acc.c:g}*u*{g}*sum|{acc.over}| "
            "per element (docs/EMULATOR.md)")
