"""Two measured sizes of a KernelBench problem that lie on one ray towards the problem's own sizes.

A profile's counters are extrapolated from two measured sizes to the problem's own as one power
of the work (``kb_profile_features``). That is exact for a counter that is any product of powers
of the sizes (``threads ~ M``, ``loads ~ M * K``) only when the step from the smaller measured
size to the larger is the same, in log space, in every size as the step from the larger to the
problem's: ``log(large_i / small_i) = t * log(full_i / large_i)`` for one ``t``. Shrinking every
size by one factor gives that, but the shrink's floor and kept alignment (16, multiples of 32)
break it. 90_cumprod (128 rows of 4000) was measured at 32 x 1504 and 32 x 512: the rows did not
grow between the two sizes, so a kernel with one thread per row kept 32 threads at the full size
and was modelled 50-100x too slow. 4_Matrix_vector (256 x 131072, measured at 32 x 1984 and
32 x 480) had the same fault.

:func:`ray_skew` measures how far a pair is from such a ray; :func:`ray_pair` searches the
budget's multiples for a larger size whose smaller partner lies on the ray, within a cost cap.
"""

from __future__ import annotations

import math

from structcover.tools.kernelbench.problem import _KEPT_ALIGNMENT, _MIN_SCALED, Problem

#: A pair is on the ray when every size's implied step to the problem's own size is within this
#: factor of the real one (log units): an extrapolated counter linear in one size is then off by
#: at most 1.5x from the pair's geometry.
RAY_TOLERANCE = math.log(1.5)
#: Multiples of the work budget tried for the larger size (each doubles the emulated inputs).
SEARCH_SCALES = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
#: The largest growth allowed in the product of the scaled sizes (a proxy for emulated operations:
#: a contraction's loop nest spans every named size) over the budget's own pair.
MAX_VOLUME_GROWTH = 40.0


def _scaled_names(full: dict[str, int]) -> list[str]:
    return [k for k, v in full.items() if v >= _MIN_SCALED]


def volume(sizes: dict[str, int]) -> float:
    """Product of the sizes that scale: what an emulated loop nest over them grows with."""
    return float(math.prod(v for v in sizes.values() if v >= _MIN_SCALED))


def ray_skew(full: dict[str, int], large: dict[str, int], small: dict[str, int]) -> float:
    """How far (large, small) is from one ray towards ``full``, in log units.

    ``t`` is fitted by least squares over the scaled sizes; the skew is the largest error in a
    size's implied step to ``full`` (``log(large_i / small_i) / t`` against
    ``log(full_i / large_i)``). 0 for a pair on the ray; ``inf`` where the sizes did not shrink
    towards the origin at all.
    """
    names = _scaled_names(full)
    to_full = {k: math.log(full[k] / large[k]) for k in names}
    step = {k: math.log(large[k] / small[k]) for k in names}
    norm = sum(v * v for v in to_full.values())
    if norm == 0.0:  # the larger size is the problem's own: any shrink extrapolates nothing
        return 0.0
    t = sum(to_full[k] * step[k] for k in names) / norm
    if t <= 0.0:
        return math.inf
    return max(abs(step[k] / t - to_full[k]) for k in names)


def proportional_small(problem: Problem, large: dict[str, int], fraction: float) -> dict[str, int]:
    """The smaller size on the ray from ``large`` towards the problem's sizes, with about
    ``fraction`` of ``large``'s work; floors and kept alignment as :meth:`Problem.shrunk`'s."""
    full = dict(problem.sizes)
    names = [k for k in _scaled_names(full) if large[k] < full[k]]
    to_full = {k: math.log(full[k] / large[k]) for k in names}
    step = {k: math.gcd(large[k], math.gcd(full[k], _KEPT_ALIGNMENT)) for k in names}

    def at(t: float) -> dict[str, int]:
        out = dict(large)
        for k in names:
            value = step[k] * round(large[k] * math.exp(-t * to_full[k]) / step[k])
            out[k] = min(large[k], max(_MIN_SCALED, step[k], value))
        return out

    target = fraction * problem.work(large)
    low, high = 0.0, 8.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if problem.work(at(mid)) > target else (low, mid)
    return at(high)


def ray_pair(problem: Problem, budget: float, fraction: float,
             base: list[dict[str, int]]) -> list[dict[str, int]] | None:
    """The cheapest (larger, smaller) pair on the ray, or ``None`` when none is within the caps.

    Larger sizes are :meth:`Problem.shrunk` at :data:`SEARCH_SCALES` times ``budget``; each
    must stay within :data:`MAX_VOLUME_GROWTH` of ``base``'s larger size and have at least
    twice its partner's work.
    """
    full = dict(problem.sizes)
    cap = MAX_VOLUME_GROWTH * volume(base[0])
    for scale in SEARCH_SCALES:
        large = problem.shrunk(budget * scale)
        if large == full or volume(large) > cap:
            return None
        small = proportional_small(problem, large, fraction)
        if problem.work(large) >= 2.0 * problem.work(small) and \
                ray_skew(full, large, small) <= RAY_TOLERANCE:
            return [large, small]
    return None
