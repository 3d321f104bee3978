"""Seeded input generation for a TaskSpec (DESIGN.md §6, program convention).

Every backend receives the same arrays for the same ``(spec, seed, sizes)``: one array per
tensor argument, in launcher order. Inputs follow their ``TensorArg.distribution``; outputs are
pre-filled with a *poison* value so that an element the program never writes is visible (a NaN
with a recognisable payload for floats, ``0xDEADBEEF``-style patterns for integers).

Each argument draws from its own generator seeded by ``(seed, crc32(name))``, so adding an
argument to a task does not change the data of the others.

Structured generators fill several arguments at once; ``csr`` is the only one so far.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

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


def draw_tensor(arg: TensorArg, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Draw one non-structured tensor following its distribution.

    Args:
        arg: The tensor argument (dtype, distribution, low, high).
        shape: Its concrete shape.
        seed: The trial seed.

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
        raise ValueError(f"{arg.name}: distribution {dist!r} must be filled by the task's generator")
    return _cast(values, arg.dtype)


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
                ) -> dict[str, np.ndarray]:
    """Build every tensor argument of ``spec`` for one trial.

    Args:
        spec: The task.
        seed: Trial seed; the same seed gives bit-identical arrays.
        sizes: Size overrides (the spec's sizes by default).

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
            arrays[arg.name] = np.ascontiguousarray(draw_tensor(arg, shape, seed))
    return arrays
