"""Seeded input generation for a TaskSpec (docs/ARCHITECTURE.md).

Every backend receives the same arrays for the same ``(spec, seed, sizes)``: one array per
tensor argument, in launcher order. Inputs follow their ``TensorArg.distribution``; outputs are
pre-filled with a *poison* value so that an element the program never writes is visible (a NaN
with a recognisable payload for floats, ``0xDEADBEEF``-style patterns for integers).

Each argument draws from its own generator seeded by ``(seed, crc32(name))``, so adding an
argument to a task does not change the data of the others.

Structured generators fill several arguments at once; ``csr`` is the only one so far.

Which sizes, profiles and seeds one verification tries is planned in
:mod:`structcover.tools.verify.trials`; how each dtype is stored and poisoned is
:mod:`structcover.tools.verify.dtypes`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np

from structcover.schema import TaskSpec, TensorArg
from structcover.tools.verify.dtypes import (
    POISON_BITS,
    as_float64,
    bfloat16_bits_to_float32,
    cast_draws,
    float32_to_bfloat16_bits,
    is_poison,
    numpy_dtype,
    poison_array,
)

# The dtype helpers are re-exported: inputs is where callers have always found them.
__all__ = ["GENERATORS", "POISON_BITS", "PROFILES", "as_float64", "bfloat16_bits_to_float32",
           "csr_nnz", "draw_tensor", "float32_to_bfloat16_bits", "is_poison", "make_inputs",
           "numpy_dtype", "poison_array"]


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode())])


def draw_tensor(arg: TensorArg, shape: tuple[int, ...], seed: int,
                profile: str = "nominal", large_scale: float = 1000.0) -> np.ndarray:
    """Draw one non-structured tensor following its distribution and an input profile.

    Args:
        arg: The tensor argument (dtype, distribution, low, high).
        shape: Its concrete shape.
        seed: The trial seed.
        profile: One of :data:`PROFILES` (``nominal`` draws the distribution unchanged).
        large_scale: Factor ``large`` applies to float bounds.

    Returns:
        An array of the argument's storage dtype.

    Raises:
        ValueError: The distribution is ``structured`` (a generator must fill it) or the
            bounds are empty.
    """
    rng = _rng(seed, arg.name)
    dist = arg.distribution
    if dist == "zeros":
        values = np.zeros(shape)
    elif dist == "ones":
        values = np.ones(shape)
    elif dist == "uniform":
        if not arg.high > arg.low:
            raise ValueError(f"{arg.name}: uniform needs high > low, got [{arg.low}, {arg.high})")
        values = rng.uniform(arg.low, arg.high, size=shape)
    elif dist == "normal":
        values = rng.normal(0.0, arg.high, size=shape)
    elif dist == "randint":
        low, high = int(np.ceil(arg.low)), int(np.ceil(arg.high))
        if high <= low:
            raise ValueError(f"{arg.name}: randint needs high > low, got [{arg.low}, {arg.high})")
        values = rng.integers(low, high, size=shape).astype(np.float64)
    else:
        raise ValueError(f"{arg.name}: distribution {dist!r} must be filled by the task's "
                         "generator")
    if profile != "nominal" and dist in ("uniform", "normal", "randint"):
        values = _apply_profile(values, arg, profile, rng, large_scale)
    return cast_draws(values, arg.dtype)


#: Input profiles a task may list in ``TaskSpec.input_profiles``.
PROFILES = ("nominal", "large", "ties", "edges", "special", "sparse")
_FLOATS = {"float32", "float64", "float16", "bfloat16"}
#: Largest magnitude ``large`` may reach per dtype (stays finite after a few products/sums).
_LARGE_CAP = {"float16": 2048.0, "bfloat16": 1e6, "float32": 1e6, "float64": 1e12}


def _apply_profile(values: np.ndarray, arg: TensorArg, profile: str, rng: np.random.Generator,
                   large_scale: float) -> np.ndarray:
    """Reshape nominal draws into ``profile`` (see :data:`PROFILES`); bounds stay respected."""
    if profile not in PROFILES:
        raise ValueError(f"{arg.name}: unknown input profile {profile!r}; known: {PROFILES}")
    if arg.distribution == "normal":
        low, high = -3.0 * arg.high, 3.0 * arg.high
    else:
        low, high = arg.low, arg.high
    if profile == "large":
        # Integers keep their range (it usually indexes something); floats grow.
        if arg.dtype not in _FLOATS:
            return values
        scale = min(large_scale, _LARGE_CAP[arg.dtype] / max(abs(low), abs(high), 1e-30))
        return values * scale
    if profile == "ties":
        # A handful of distinct values: equal maxima, duplicate keys, one histogram bin.
        pool = values.ravel()[:4] if values.size else values.ravel()
        if pool.size == 0:
            return values
        return rng.choice(pool, size=values.shape)
    if profile == "edges":
        if arg.distribution == "randint":
            choices = np.array([np.ceil(low), np.ceil(high) - 1])
        else:
            choices = np.array([low, (low + high) / 2, np.nextafter(high, low)])
        return rng.choice(choices, size=values.shape)
    if profile == "sparse":
        # Few nonzero spikes (1 in 256): a program that skips or subsamples elements and
        # rescales its partial result (an unbiased estimate) is off by whole spikes. Simulated
        # on reduction sizes, skip-1-in-128-and-rescale misses the fp32 reduction tolerance on
        # about 96% of such inputs, against about 10% on dense uniform inputs.
        keep = rng.random(values.shape) < 1 / 256
        zero = 0.0 if low <= 0.0 <= high else low
        return np.where(keep, values, zero)
    if profile == "special":
        if arg.dtype not in _FLOATS or values.size == 0:
            return values
        values = values.copy()
        flat = values.reshape(-1)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
        count = max(1, flat.size // 64)
        where = rng.choice(flat.size, size=min(count, flat.size), replace=False)
        flat[where] = rng.choice(specials, size=where.size)
        return values
    return values


def csr_nnz(pattern: str, n: int, params: dict) -> int:
    """Number of nonzeros the ``csr`` generator produces for ``pattern`` on an N×N matrix."""
    if pattern == "diagonal":
        return n
    if pattern == "banded":
        b = int(params.get("half_width", 1))
        if b < 0 or b >= n:
            raise ValueError(f"csr banded: half_width must be in [0, N), got {b} for N={n}")
        return n * (2 * b + 1) - b * (b + 1)
    if pattern == "random":
        k = int(params.get("per_row", 0))
        if not 0 < k <= n:
            raise ValueError(f"csr random: per_row must be in [1, N], got {k} for N={n}")
        return n * k
    raise ValueError(f"csr: unknown pattern {pattern!r}; known: diagonal, banded, random")


def _distinct_sorted_rows(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """``n`` rows of ``k`` distinct column indices in ``[0, n)``, each row sorted, uniform over
    the ``k``-subsets: whole-matrix draws, redrawing only the rows that repeat a column (one
    ``choice`` per row permutes all ``n`` columns, O(n^2) for the matrix)."""
    if 4 * k > n:  # dense rows: redraws would be frequent; rank random keys instead
        return np.sort(np.argsort(rng.random((n, n)), axis=1)[:, :k], axis=1)
    cols = np.sort(rng.integers(0, n, size=(n, k)), axis=1)
    repeat = (np.diff(cols, axis=1) == 0).any(axis=1)
    while repeat.any():
        cols[repeat] = np.sort(rng.integers(0, n, size=(int(repeat.sum()), k)), axis=1)
        repeat = (np.diff(cols, axis=1) == 0).any(axis=1)
    return cols


def _csr(spec: TaskSpec, sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Fill ``row_ptr``, ``col_idx``, ``vals`` of an N×N sparse matrix (program convention)."""
    params = spec.generator_params
    pattern = params.get("pattern")
    for key in ("N", "NNZ"):
        if key not in sizes:
            raise ValueError(f"task {spec.task_id}: csr generator needs size {key!r}")
    n, nnz = sizes["N"], sizes["NNZ"]
    expected = csr_nnz(str(pattern), n, params)
    if nnz != expected:
        raise ValueError(f"task {spec.task_id}: csr {pattern} with N={n} gives NNZ={expected}, "
                         f"but sizes say NNZ={nnz}")
    args = {a.name: a for a in spec.tensors}
    for name in ("row_ptr", "col_idx", "vals"):
        if name not in args:
            raise ValueError(f"task {spec.task_id}: csr generator needs a tensor argument {name!r}")
    rng = _rng(seed, "csr")
    if pattern == "diagonal":
        counts, col_idx = np.ones(n, dtype=np.int64), np.arange(n, dtype=np.int64)
    elif pattern == "banded":
        b = int(params.get("half_width", 1))
        lo = np.maximum(np.arange(n) - b, 0)
        counts = np.minimum(np.arange(n) + b, n - 1) - lo + 1
        # Row i holds lo[i], lo[i]+1, ...: its start plus the position within the row.
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        col_idx = np.repeat(lo, counts) + within
    else:
        k = int(params["per_row"])
        counts, col_idx = np.full(n, k, dtype=np.int64), _distinct_sorted_rows(rng, n, k).ravel()
    row_ptr = np.concatenate([[0], np.cumsum(counts)])
    vals_arg = args["vals"]
    vals = rng.uniform(vals_arg.low, vals_arg.high, size=nnz) if vals_arg.high > vals_arg.low \
        else np.full(nnz, vals_arg.low)
    out = {"row_ptr": cast_draws(row_ptr.astype(np.float64), args["row_ptr"].dtype),
           "col_idx": cast_draws(col_idx.astype(np.float64), args["col_idx"].dtype),
           "vals": cast_draws(vals, vals_arg.dtype)}
    for name, array in out.items():
        shape = spec.shape_of(name, sizes)
        if int(np.prod(shape)) != array.size:
            raise ValueError(f"task {spec.task_id}: {name} has shape {shape} but csr {pattern} "
                             f"produces {array.size} elements")
        out[name] = array.reshape(shape)
    return out


#: Structured generators by name: (spec, sizes, seed) -> arrays for the args they fill.
GENERATORS: dict[str, Callable[[TaskSpec, dict[str, int], int], dict[str, np.ndarray]]] = {
    "csr": _csr,
}


def make_inputs(spec: TaskSpec, seed: int, sizes: dict[str, int] | None = None,
                profile: str = "nominal") -> dict[str, np.ndarray]:
    """Build every tensor argument of ``spec`` for one trial.

    Args:
        spec: The task.
        seed: Trial seed; the same seed gives bit-identical arrays.
        sizes: Size overrides (the spec's sizes by default).
        profile: Input profile (:data:`PROFILES`) for the non-structured inputs.

    Returns:
        One C-contiguous array per tensor argument, keyed by name, in launcher order. Inputs
        and inouts hold drawn data; outputs hold the poison pattern of their dtype.

    Raises:
        ValueError: Unknown generator, inconsistent structured sizes, or empty bounds; the
            message names the task and argument.
    """
    sizes = {**spec.sizes, **(sizes or {})}
    structured: dict[str, np.ndarray] = {}
    if any(a.distribution == "structured" for a in spec.tensors if a.role != "output"):
        if spec.generator not in GENERATORS:
            raise ValueError(f"task {spec.task_id}: unknown generator {spec.generator!r}; "
                             f"known: {sorted(GENERATORS)}")
        structured = GENERATORS[spec.generator](spec, sizes, seed)
    arrays: dict[str, np.ndarray] = {}
    for arg in spec.tensors:
        shape = spec.shape_of(arg.name, sizes)
        if arg.role == "output":
            arrays[arg.name] = poison_array(arg.dtype, shape)
        elif arg.distribution == "structured":
            if arg.name not in structured:
                raise ValueError(f"task {spec.task_id}: generator {spec.generator!r} does not "
                                 f"fill {arg.name!r}")
            arrays[arg.name] = np.ascontiguousarray(structured[arg.name])
        else:
            arrays[arg.name] = np.ascontiguousarray(draw_tensor(arg, shape, seed, profile,
                                                                spec.large_scale))
    return arrays
