"""How task dtypes are stored in buffers: numpy types, poison patterns, bfloat16 bits, casts.

bfloat16 has no numpy type: its buffers hold the raw bits as ``uint16`` and are widened to
float32 to be compared. Outputs are pre-filled with a *poison* pattern per dtype (a NaN with a
recognisable payload for floats, ``0xDEADBEEF``-style patterns for integers) so that an
element a program never writes is visible.
"""

from __future__ import annotations

import numpy as np

from structcover.schema import DTYPES

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


def cast_draws(values: np.ndarray, dtype: str) -> np.ndarray:
    """Cast float64 draws to the storage dtype (bfloat16 rounded to bits)."""
    if dtype == "bfloat16":
        return float32_to_bfloat16_bits(values.astype(np.float32))
    np_dtype = numpy_dtype(dtype)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        values = np.clip(np.floor(values), info.min, info.max)
    return values.astype(np_dtype)
