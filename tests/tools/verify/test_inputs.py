"""Seeded input generation: distributions, dtypes, poison, and the csr generator."""

from __future__ import annotations

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.verify.inputs import (
    bfloat16_bits_to_float32,
    csr_nnz,
    float32_to_bfloat16_bits,
    is_poison,
    make_inputs,
)


def _spec(**kw) -> TaskSpec:
    base = dict(task_id="t", sizes={"N": 64}, args=[
        {"name": "x", "dtype": "float32", "shape": ["N"]},
        {"name": "h", "dtype": "float16", "shape": ["N"], "distribution": "normal", "high": 2.0},
        {"name": "b", "dtype": "bfloat16", "shape": ["N"], "low": 1.0, "high": 2.0},
        {"name": "i", "dtype": "int32", "shape": ["N", 2], "distribution": "randint",
         "low": 3, "high": 7},
        {"name": "z", "dtype": "float32", "shape": [4], "distribution": "zeros"},
        {"name": "io", "dtype": "float32", "shape": ["N"], "role": "inout",
         "distribution": "ones"},
        {"name": "y", "dtype": "float32", "shape": ["N"], "role": "output"},
        {"name": "yi", "dtype": "int32", "shape": ["N"], "role": "output"},
        {"name": "n", "kind": "scalar", "value": "N"},
    ])
    base.update(kw)
    return TaskSpec.model_validate(base)


def test_same_seed_same_bits_other_seed_other_data():
    spec = _spec()
    a, b, c = make_inputs(spec, 42), make_inputs(spec, 42), make_inputs(spec, 43)
    assert list(a) == ["x", "h", "b", "i", "z", "io", "y", "yi"]
    for name in a:
        assert a[name].tobytes() == b[name].tobytes()
    assert not np.array_equal(a["x"], c["x"])


def test_distributions_dtypes_and_shapes():
    arrays = make_inputs(_spec(), 7)
    x = arrays["x"]
    assert x.dtype == np.float32 and x.shape == (64,) and x.min() >= -1 and x.max() < 1
    assert arrays["h"].dtype == np.float16 and arrays["h"].std() > 0.5
    bvals = bfloat16_bits_to_float32(arrays["b"])
    assert arrays["b"].dtype == np.uint16 and bvals.min() >= 1.0 and bvals.max() <= 2.0
    i = arrays["i"]
    assert i.dtype == np.int32 and i.shape == (64, 2) and set(np.unique(i)) <= {3, 4, 5, 6}
    assert not arrays["z"].any()
    assert (arrays["io"] == 1).all()


def test_outputs_are_poisoned():
    arrays = make_inputs(_spec(), 1)
    assert is_poison(arrays["y"], "float32").all() and np.isnan(arrays["y"]).all()
    assert is_poison(arrays["yi"], "int32").all()
    assert not is_poison(arrays["x"], "float32").any()


def test_size_override():
    arrays = make_inputs(_spec(), 1, sizes={"N": 10})
    assert arrays["x"].shape == (10,) and arrays["i"].shape == (10, 2)


def test_bfloat16_round_trip_rounds_to_nearest_even():
    vals = np.array([1.0, 1.00390625, 1.01171875, -3.5, 0.0], dtype=np.float32)
    back = bfloat16_bits_to_float32(float32_to_bfloat16_bits(vals))
    # 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1.0); 1 + 3*2^-8 rounds up.
    assert back.tolist() == [1.0, 1.0, 1.015625, -3.5, 0.0]


def _csr_spec(pattern: str, n: int, nnz: int, **params) -> TaskSpec:
    return TaskSpec.model_validate(dict(
        task_id="spmv", sizes={"N": n, "NNZ": nnz}, generator="csr",
        generator_params={"pattern": pattern, **params}, args=[
            {"name": "row_ptr", "dtype": "int32", "shape": ["N+1"], "distribution": "structured"},
            {"name": "col_idx", "dtype": "int32", "shape": ["NNZ"], "distribution": "structured"},
            {"name": "vals", "dtype": "float32", "shape": ["NNZ"], "distribution": "structured"},
            {"name": "x", "dtype": "float32", "shape": ["N"]},
            {"name": "y", "dtype": "float32", "shape": ["N"], "role": "output"},
        ]))


@pytest.mark.parametrize("pattern,params", [
    ("diagonal", {}), ("banded", {"half_width": 2}), ("random", {"per_row": 5}),
    ("random", {"per_row": 16}),  # dense rows: drawn by ranking random keys, not redraws
])
def test_csr_patterns_are_valid_matrices(pattern, params):
    n = 40
    nnz = csr_nnz(pattern, n, params)
    arrays = make_inputs(_csr_spec(pattern, n, nnz, **params), 3)
    row_ptr, col_idx, vals = arrays["row_ptr"], arrays["col_idx"], arrays["vals"]
    assert row_ptr.dtype == np.int32 and col_idx.dtype == np.int32 and vals.dtype == np.float32
    assert row_ptr[0] == 0 and row_ptr[-1] == nnz and (np.diff(row_ptr) >= 0).all()
    for r in range(n):
        cols = col_idx[row_ptr[r]:row_ptr[r + 1]]
        assert (np.diff(cols) > 0).all() and cols.min() >= 0 and cols.max() < n
        if pattern == "diagonal":
            assert cols.tolist() == [r]
        if pattern == "banded":
            assert cols.tolist() == list(range(max(0, r - 2), min(n, r + 3)))
        if pattern == "random":
            assert len(cols) == params["per_row"]
    if pattern == "random":  # rows differ: columns are drawn per row, not one set for all
        assert len({tuple(col_idx[row_ptr[r]:row_ptr[r + 1]]) for r in range(n)}) > n // 2


def test_banded_nnz_formula():
    assert csr_nnz("banded", 4, {"half_width": 1}) == 10
    assert csr_nnz("random", 8, {"per_row": 3}) == 24


def test_csr_rejects_inconsistent_nnz():
    with pytest.raises(ValueError, match="NNZ"):
        make_inputs(_csr_spec("banded", 40, 100, half_width=2), 0)
    with pytest.raises(ValueError, match="per_row"):
        make_inputs(_csr_spec("random", 4, 20, per_row=5), 0)


# --- inputs that vary (issue 11) ---------------------------------------------------------------

from structcover.tools.verify.compare import compare_output  # noqa: E402
from structcover.tools.verify.inputs import PROFILES  # noqa: E402
from structcover.tools.verify.trials import plan_trials, size_plan  # noqa: E402


def _ranged(**kw) -> TaskSpec:
    return _spec(sizes={"N": 64}, size_ranges={"N": [3, 1001]}, **kw)


def test_size_plan_has_both_ends_and_odd_draws_and_is_seeded():
    plan = size_plan(_ranged(), seed=9, count=8)
    assert [p["N"] for p in plan[:2]] == [3, 1001]
    assert all(3 <= p["N"] <= 1001 and p["N"] % 2 == 1 for p in plan)
    assert len({p["N"] for p in plan}) == 4  # both ends and two draws shared by 3 trials each
    assert len({p["N"] for p in size_plan(_ranged(), seed=9, count=5)}) == 3
    assert size_plan(_ranged(), seed=9, count=8) == plan
    assert size_plan(_ranged(), seed=10, count=8) != plan


def test_plan_cycles_profiles_after_the_size_extremes():
    spec = _ranged(input_profiles=["large", "ties"])
    plan = plan_trials(spec, 100, 5)
    assert [t.seed for t in plan] == [100, 101, 102, 103, 104]
    assert [t.profile for t in plan] == ["nominal", "nominal", "large", "ties", "large"]
    fixed = plan_trials(spec, 100, 3, vary=False)
    assert {t.profile for t in fixed} == {"nominal"} and all(t.sizes == {"N": 64} for t in fixed)


def test_size_ranges_are_validated():
    with pytest.raises(ValueError, match="not a size"):
        _spec(size_ranges={"M": [1, 4]})
    with pytest.raises(ValueError, match="low <= high"):
        _spec(size_ranges={"N": [0, 4]})


def test_csr_nnz_follows_a_drawn_n():
    spec = TaskSpec.model_validate(dict(
        task_id="spmv", sizes={"N": 10, "NNZ": 28}, size_ranges={"N": [4, 41]},
        generator="csr", generator_params={"pattern": "banded", "half_width": 1}, args=[
            {"name": "row_ptr", "dtype": "int32", "shape": ["N+1"], "distribution": "structured"},
            {"name": "col_idx", "dtype": "int32", "shape": ["NNZ"], "distribution": "structured"},
            {"name": "vals", "shape": ["NNZ"], "distribution": "structured"},
            {"name": "y", "shape": ["N"], "role": "output"}]))
    for sizes in size_plan(spec, 1, 4):
        arrays = make_inputs(spec, 1, sizes)
        nnz = csr_nnz("banded", sizes["N"], {"half_width": 1})
        assert arrays["row_ptr"][-1] == sizes["NNZ"] == nnz


@pytest.mark.parametrize("profile", PROFILES)
def test_profiles_shape_the_data(profile):
    spec = _spec(sizes={"N": 4096})
    x = make_inputs(spec, 3, profile=profile)["x"].astype(np.float64)
    nominal = make_inputs(spec, 3)["x"].astype(np.float64)
    finite = x[np.isfinite(x)]
    if profile == "nominal":
        assert np.array_equal(x, nominal)
    elif profile == "large":
        assert np.abs(x).max() > 100 and np.abs(x).max() <= 1000
    elif profile == "ties":
        assert len(np.unique(x)) <= 4
    elif profile == "edges":
        assert set(np.unique(x)) <= {-1.0, 0.0, np.float32(np.nextafter(1.0, -1.0))}
    elif profile == "special":
        assert np.isnan(x).any() and np.isinf(x).any() and finite.size > 0.9 * x.size
    elif profile == "sparse":
        assert 0 < np.count_nonzero(x) < x.size / 64
    # integer arguments stay inside their range whatever the profile
    ints = make_inputs(spec, 3, profile=profile)["i"]
    assert ints.min() >= 3 and ints.max() < 7


@pytest.mark.parametrize("dtype,every", [("float32", 128), ("float64", 128), ("float16", 128),
                                         ("bfloat16", 64)])  # bf16: 1/128 is one ulp
@pytest.mark.parametrize("n", [128, 1001, 65537])
def test_default_tolerance_catches_a_reduction_that_skips_1_in_128(dtype, every, n):
    from structcover.schema import DEFAULT_TOLERANCE
    from structcover.tools.verify.dtypes import cast_draws as _cast

    atol, rtol = DEFAULT_TOLERANCE[dtype]
    x = np.random.default_rng(n).uniform(0.0, 1.0, n)
    full = _cast(np.array([x.sum()]), dtype)
    skipped = _cast(np.array([x[np.arange(n) % every != every - 1].sum()]), dtype)
    assert compare_output("out", full, full, dtype, atol, rtol).ok
    assert not compare_output("out", skipped, full, dtype, atol, rtol).ok


def test_mismatch_messages_carry_no_values():
    ref = np.array([1234.5678, 2.0, 3.0], np.float32)
    cand = np.array([8765.4321, 2.0, 3.0], np.float32)
    cmp = compare_output("y", cand, ref, "float32", 1e-4, 1e-4)
    assert not cmp.ok and cmp.first_mismatch == [0] and "1 of 3" in cmp.detail
    assert "1234" not in cmp.detail and "8765" not in cmp.detail
    ints = compare_output("h", np.array([7, 99991], np.int32), np.array([7, 12345], np.int32),
                          "int32", 0, 0)
    assert not ints.ok and "12345" not in ints.detail and "99991" not in ints.detail
