"""The precision rule on numpy arrays: honest float32 orders pass, float16 work fails."""

import numpy as np
import pytest

from structcover.tools.kernelbench.precision import PRECISION_FACTOR, judge, rule_text, squared_errors
from structcover.tools.verify.dtypes import float32_to_bfloat16_bits

RNG = np.random.default_rng(7)
F16, F32, F64 = np.float16, np.float32, np.float64


def _verdict(c, r, r64, dtype="float32", min_precision=None):
    return judge("output 0", squared_errors(c, r, r64, dtype), dtype, min_precision)


def _serial(x, dtype=F32):
    """Row sums added left to right in ``dtype`` (numpy's np.sum is pairwise)."""
    return np.add.accumulate(x.astype(dtype), axis=-1, dtype=dtype)[..., -1]


def _mask_to_half_mantissa(x):
    return (np.asarray(x, F32).view(np.uint32) & np.uint32(0xFFFFE000)).view(F32)


def test_serial_float32_sum_passes_where_float16_accumulation_fails():
    x = RNG.standard_normal((16, 1531)).astype(F32)
    r, r64 = x.sum(-1, dtype=F32), x.astype(F64).sum(-1)
    honest = _verdict(_serial(x), r, r64)
    assert honest.ok and honest.ratio < 32, honest
    cheat = _verdict(_serial(x, F16).astype(F32), r, r64)
    assert not cheat.ok and cheat.ratio > 30 * PRECISION_FACTOR
    assert "float32 reference's own rounding error" in cheat.detail


def test_longest_honest_serial_sum_on_the_cpu_path_is_inside_k():
    # The worst honest case K is sized for: 32761 same-sign terms (HuberLoss at the CPU path's
    # work budget) summed serially, about sqrt(n)/2.5 = 72x a pairwise sum's error.
    x = RNG.random((3, 32761)).astype(F32)
    r, r64 = x.sum(-1, dtype=F32), x.astype(F64).sum(-1)
    v = _verdict(_serial(x), r, r64)
    assert v.ok, v
    assert v.ratio > 20  # the case is a real test of K: a K of 16 would fail it


def test_gemm_from_half_inputs_fails_with_float_accumulation():
    a, b = RNG.standard_normal((64, 512)).astype(F32), RNG.standard_normal((512, 48)).astype(F32)
    r, r64 = a @ b, a.astype(F64) @ b.astype(F64)
    serial = np.add.accumulate(a[:, :, None] * b[None, :, :], axis=1, dtype=F32)[:, -1, :]
    assert _verdict(serial, r, r64).ok
    cheat = _verdict(a.astype(F16).astype(F32) @ b.astype(F16).astype(F32), r, r64)
    assert not cheat.ok and "float16 or tf32" in cheat.detail


def test_output_masked_to_half_mantissa_fails():
    a, b = RNG.standard_normal((40, 181)).astype(F32), RNG.standard_normal((181, 40)).astype(F32)
    r, r64 = a @ b, a.astype(F64) @ b.astype(F64)
    v = _verdict(_mask_to_half_mantissa(r), r, r64)
    assert not v.ok and v.ratio > 4 * PRECISION_FACTOR, v


def test_exact_reference_uses_the_output_rounding_floor():
    x = RNG.standard_normal(5000).astype(F32)
    relu = np.maximum(x, 0)  # exact in every precision: e_ref = 0
    assert _verdict(relu.copy(), relu, relu.astype(F64)) == judge("output 0", (0.0, 0.0, 1.0),
                                                                "float32")
    cheat = _verdict(relu.astype(F16).astype(F32), relu, relu.astype(F64))
    assert not cheat.ok and "float16" in cheat.detail


def test_limit_is_k_times_the_larger_of_the_two_scales():
    # ||r64|| = 1, e_ref = 10u: the scale is e_ref; an error of 256 e_ref is the limit.
    u = 2.0 ** -24
    at = judge("o", ((PRECISION_FACTOR * 10 * u) ** 2, (10 * u) ** 2, 1.0), "float32")
    past = judge("o", ((1.01 * PRECISION_FACTOR * 10 * u) ** 2, (10 * u) ** 2, 1.0), "float32")
    assert at.ok and at.ratio == pytest.approx(PRECISION_FACTOR)
    assert not past.ok
    # e_ref below the floor u*||r64||: the floor is the scale.
    floor = judge("o", ((100 * u) ** 2, (0.1 * u) ** 2, 1.0), "float32")
    assert floor.ratio == pytest.approx(100)


def test_min_precision_widens_the_limit_by_the_allowed_dtypes_roundoff():
    x = RNG.standard_normal((8, 1000)).astype(F32)
    r, r64 = x.sum(-1, dtype=F32), x.astype(F64).sum(-1)
    half = _serial(x, F16).astype(F32)
    assert not _verdict(half, r, r64).ok
    assert _verdict(half, r, r64, min_precision="float16").ok
    assert _verdict(half, r, r64, min_precision="any").ok
    assert not _verdict(half, r, r64, min_precision="float32").ok
    # The limit is K * scale * u(allowed) / u(dtype): 8192x wider for float16.
    u = 2.0 ** -24
    sums = (((PRECISION_FACTOR * 8192 * 1.01) * u) ** 2, 0.0, 1.0)
    assert not judge("o", sums, "float32", "float16").ok
    assert judge("o", sums, "float32", "bfloat16").ok
    assert "u(float16)/u(dtype)" in rule_text("float16")


def test_bfloat16_outputs_are_decoded_from_their_bits():
    x = RNG.standard_normal(4096)
    r = float32_to_bfloat16_bits(x.astype(F32))
    c = float32_to_bfloat16_bits((x * (1 + 2.0 ** -4)).astype(F32))
    values = (r.astype(np.uint32) << 16).view(F32).astype(F64)
    err, ref, norm = squared_errors(c, r, x, "bfloat16")
    assert ref == pytest.approx(np.sum((values - x) ** 2))
    assert norm == pytest.approx(np.sum(x ** 2))
    assert err == pytest.approx(np.sum(x ** 2) * 2.0 ** -8, rel=0.1)  # (2^-4)^2 relative
    assert _verdict(r.copy(), r, x, dtype="bfloat16").ok


def test_nonfinite_elements_are_left_to_the_flat_comparison():
    x = RNG.standard_normal(100).astype(F32)
    c = x.copy()
    c[3] = np.inf
    r = x.copy()
    r[3] = np.inf
    assert squared_errors(c, r, x.astype(F64), "float32") == (0.0, 0.0,
                                                              pytest.approx(np.sum(
                                                                  np.delete(x, 3).astype(F64) ** 2)))


def test_bad_input_is_a_clear_error():
    x = np.zeros(3, F32)
    with pytest.raises(ValueError, match="shapes differ"):
        squared_errors(x, x, np.zeros(4), "float32")
    with pytest.raises(ValueError, match="no unit roundoff for dtype 'int32'"):
        judge("o", (0.0, 0.0, 1.0), "int32")
    with pytest.raises(ValueError, match="MIN_PRECISION 'half'"):
        judge("o", (0.0, 0.0, 1.0), "float32", "half")
