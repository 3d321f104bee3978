"""Seeded input generation for a TaskSpec (docs/ARCHITECTURE.md).

Every backend receives the same arrays for the same ``(spec, seed, sizes)``: one array per
tensor argument, in launcher order. Inputs follow their ``TensorArg.distribution``; outputs are
pre-filled with a *poison* value so that an element the program never writes is visible (a NaN
with a recognisable payload for floats, ``0xDEADBEEF``-style patterns for integers).

Each argument draws from its own generator seeded by ``(seed, crc32(name))``, so adding an
argument to a task does not change the data of the others.

Structured generators fill several arguments at once; ``csr`` is the only one so far.

**Inputs that vary.** A program that ignores ``n``, special-cases the tested shape or memorizes
the outputs for known seeds must fail, so one verification runs ``trials`` different input
sets, planned from one seed by :func:`plan_trials`: the sizes cycle through the low end of
every ``TaskSpec.size_ranges`` entry, the high end, and odd sizes drawn between (odd, so never a
multiple of a power-of-two block size); the input profiles cycle through the task's
``input_profiles`` (large magnitudes, ties, edge values, specials where the task allows). The
plan is a pure function of ``(spec, seed, trials)``, so the verdict's seed replays it exactly.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from structcover.schema import DTYPES, TaskSpec, TensorArg

#: Raw bit patterns written into outputs before a call, per dtype.
POISON_BITS: dict[str, int] = {
    "float32": 0x7FC0DEAD,          # quiet NaN with a payload
    "float64": 0x7FF8DEADBEEFDEAD,  # quiet NaN with a payload
    "float16": 0x7E5A,              # quiet NaN with a payload
    "bfloat16": 0x7FDA,             # quiet NaN with a payload (bits, stored as uint16)
    "int8": 0xAB,
    "uint8": 0xAB,
    "int32": 0xDEADBEEF,
    "uint32": 0xDEADBEEF,
    "int64": 0xDEADBEEFDEADBEEF,
}

_BITS_VIEW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that stores a task dtype (bfloat16 travels as uint16 bits)."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {sorted(DTYPES)}")
    return np.dtype(DTYPES[dtype])


def poison_array(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """An array of ``shape`` whose every element holds the poison pattern of ``dtype``."""
    np_dtype = numpy_dtype(dtype)
    bits = np.full(shape, POISON_BITS[dtype], dtype=_BITS_VIEW[np_dtype.itemsize])
    return bits.view(np_dtype)


def is_poison(array: np.ndarray, dtype: str) -> np.ndarray:
    """Boolean mask of the elements of ``array`` that still hold ``dtype``'s poison bits."""
    np_dtype = numpy_dtype(dtype)
    view = np.ascontiguousarray(array).view(_BITS_VIEW[np_dtype.itemsize])
    return view == POISON_BITS[dtype]


def float32_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even) and return the raw uint16 bits."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(values)
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0
    return out


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen raw bfloat16 bits (uint16) to float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def as_float64(array: np.ndarray, dtype: str) -> np.ndarray:
    """Values of a buffer of task dtype ``dtype`` as float64 (bfloat16 bits are decoded)."""
    if dtype == "bfloat16":
        return bfloat16_bits_to_float32(array).astype(np.float64)
    return np.asarray(array).astype(np.float64)


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode())])


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    """Cast float64 draws to the storage dtype (bfloat16 rounded to bits)."""
    if dtype == "bfloat16":
        return float32_to_bfloat16_bits(values.astype(np.float32))
    np_dtype = numpy_dtype(dtype)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        values = np.clip(np.floor(values), info.min, info.max)
    return values.astype(np_dtype)


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
    return _cast(values, arg.dtype)


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


@dataclass(frozen=True)
class Trial:
    """One planned input set of a verification."""

    seed: int
    sizes: dict[str, int]
    profile: str

    def describe(self) -> str:
        """``seed S, sizes N=…, profile P`` for verdict messages."""
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"seed {self.seed}, sizes {sizes or '-'}, profile {self.profile}"


def fresh_seed() -> int:
    """A seed no program can predict (31 bits, from the OS's entropy pool)."""
    return secrets.randbits(31)


def _odd_in(rng: np.random.Generator, low: int, high: int) -> int:
    """An odd integer in ``[low, high]`` (``low`` itself when the range holds no odd number)."""
    value = int(rng.integers(low, high + 1))
    if value % 2 == 0:
        value = value + 1 if value + 1 <= high else value - 1
    return value if low <= value <= high else low


def size_plan(spec: TaskSpec, seed: int, count: int) -> list[dict[str, int]]:
    """``count`` size assignments for one verification (see the module doc).

    The first is the low end of every range, the second the high end, the rest odd sizes drawn
    uniformly in between (one draw per three further trials, shared by them). Without
    ``size_ranges`` every entry is the task's own sizes.

    Raises:
        ValueError: ``count`` < 1, or a drawn size makes a shape expression invalid.
    """
    if count < 1:
        raise ValueError(f"size_plan: count must be >= 1, got {count}")
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(b"sizes")])
    # Trials of one size run in one sandbox child, so the draws between the ends are shared by
    # up to three trials (3 size sets for 5 trials): the draw is what a program cannot guess,
    # the ends are what breaks size assumptions.
    pool = [{name: _odd_in(rng, low, high) for name, (low, high) in spec.size_ranges.items()}
            for _ in range(max(1, (count - 2) // 3))]
    plans: list[dict[str, int]] = []
    for index in range(count):
        sizes = dict(spec.sizes)
        for name, (low, high) in spec.size_ranges.items():
            sizes[name] = low if index == 0 else high if index == 1 else \
                pool[(index - 2) % len(pool)][name]
        if spec.generator == "csr" and "N" in spec.size_ranges and "NNZ" in sizes:
            # NNZ follows N for the csr generator; a range on NNZ itself would be inconsistent.
            sizes["NNZ"] = csr_nnz(str(spec.generator_params.get("pattern")), sizes["N"],
                                   spec.generator_params)
        for arg in spec.tensors:
            if any(d < 0 for d in spec.shape_of(arg.name, sizes)):
                raise ValueError(f"task {spec.task_id}: sizes {sizes} give {arg.name} a negative "
                                 "dimension; narrow size_ranges")
        plans.append(sizes)
    return plans


def plan_trials(spec: TaskSpec, seed: int, trials: int, *, vary: bool = True) -> list[Trial]:
    """The input sets of one verification: per-trial seed, sizes and profile.

    Args:
        spec: The task.
        seed: The verification's seed (recorded in the verdict; replays the plan).
        trials: Number of input sets.
        vary: False keeps the task's own sizes and the nominal profile for every trial (an
            explicit ``sizes`` override, or a caller that wants the old fixed behaviour).

    Returns:
        ``trials`` trials with seeds ``seed, seed+1, …``. Sizes: low end, high end, then
        odd draws; profiles cycle through ``spec.input_profiles`` starting at the third trial,
        so the size extremes are always tried on nominal data too.
    """
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not vary:
        return [Trial(seed + t, dict(spec.sizes), "nominal") for t in range(trials)]
    sizes = size_plan(spec, seed, trials)
    # The size extremes run on nominal data; the other trials cycle the non-nominal profiles.
    extra: list[str] = [p for p in spec.input_profiles if p != "nominal"] or ["nominal"]
    plan = []
    for t in range(trials):
        profile = "nominal" if t < 2 else extra[(t - 2) % len(extra)]
        plan.append(Trial(seed + t, sizes[t], profile))
    return plan


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
    rows: list[np.ndarray] = []
    if pattern == "diagonal":
        rows = [np.array([i]) for i in range(n)]
    elif pattern == "banded":
        b = int(params.get("half_width", 1))
        rows = [np.arange(max(0, i - b), min(n - 1, i + b) + 1) for i in range(n)]
    else:
        k = int(params["per_row"])
        rows = [np.sort(rng.choice(n, size=k, replace=False)) for _ in range(n)]
    counts = np.array([len(r) for r in rows], dtype=np.int64)
    row_ptr = np.concatenate([[0], np.cumsum(counts)])
    col_idx = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    vals_arg = args["vals"]
    vals = rng.uniform(vals_arg.low, vals_arg.high, size=nnz) if vals_arg.high > vals_arg.low \
        else np.full(nnz, vals_arg.low)
    out = {"row_ptr": _cast(row_ptr.astype(np.float64), args["row_ptr"].dtype),
           "col_idx": _cast(col_idx.astype(np.float64), args["col_idx"].dtype),
           "vals": _cast(vals, vals_arg.dtype)}
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
