"""compare_runs: shapes first, inputs unchanged, results cached across calls, values."""


import numpy as np
import pytest

from structcover.tools.kernelbench.outputs import compare_runs


def _write(folder, prefix, trials):
    folder.mkdir(parents=True, exist_ok=True)
    meta = []
    for t, arrays in enumerate(trials):
        np.savez(folder / f"{prefix}_{t}.npz", **{f"a{i}": a for i, a in enumerate(arrays)})
        meta.append([{"kind": "tensor", "dtype": str(a.dtype), "shape": list(a.shape)}
                     for a in arrays])
    return meta


def _runs(tmp_path, ref_out, cand_out, inputs, after=None):
    ref_dir, cand_dir = tmp_path / "ref", tmp_path / "cand"
    in_meta = _write(ref_dir, "in", inputs)
    ref_meta = _write(ref_dir, "out", ref_out)
    cand_meta = _write(cand_dir, "out", cand_out)
    _write(cand_dir, "after", after if after is not None else inputs)
    ref = {"trials": [{"inputs": i, "outputs": o} for i, o in zip(in_meta, ref_meta, strict=True)]}
    cand = {"trials": [{"inputs": i, "outputs": o} for i, o in zip(in_meta, cand_meta, strict=True)]}
    return compare_runs(ref, ref_dir, cand, cand_dir, atol=1e-2, rtol=1e-2, cpu_path=True)


RNG = np.random.default_rng(0)
X = [RNG.standard_normal(100).astype(np.float32) for _ in range(3)]


def test_equal_outputs_pass(tmp_path):
    out = _runs(tmp_path, [[x * 2] for x in X], [[x * 2 + 1e-4] for x in X], [[x] for x in X])
    assert out.failure is None and 0 < out.max_abs_error < 2e-4


def test_shape_is_checked_before_values(tmp_path):
    cand = [[x * 2] for x in X]
    cand[2] = [np.zeros(101, np.float32)]
    out = _runs(tmp_path, [[x * 2] for x in X], cand, [[x] for x in X])
    assert out.failure == "shape-mismatch" and "trial 2" in out.detail


def test_dtype_mismatch(tmp_path):
    out = _runs(tmp_path, [[x * 2] for x in X], [[(x * 2).astype(np.float64)] for x in X],
                [[x] for x in X])
    assert out.failure == "dtype-mismatch"


def test_modified_inputs(tmp_path):
    after = [[x] for x in X]
    after[1] = [X[1] * 0]
    out = _runs(tmp_path, [[x * 2] for x in X], [[x * 2] for x in X], [[x] for x in X], after)
    assert out.failure == "modified-inputs" and "trial 1" in out.detail


def test_result_cached_across_calls(tmp_path):
    out = _runs(tmp_path, [[x * 2] for x in X], [[X[0] * 2]] * 3, [[x] for x in X])
    assert out.failure == "cached-output" and "trial 1" in out.detail


def test_constant_problem_is_not_a_cache(tmp_path):
    same = [[np.ones(4, np.float32)]] * 3
    assert _runs(tmp_path, same, same, [[x] for x in X]).failure is None


def test_skipped_tail_and_uninitialised_read_are_told_apart(tmp_path):
    ref = [[x * 2] for x in X]
    tail = [[np.concatenate([x[:90] * 2, np.full(10, np.nan, np.float32)])] for x in X]
    out = _runs(tmp_path, ref, tail, [[x] for x in X])
    assert out.failure == "unwritten-output" and "last 10 of 100" in out.detail
    holes = [[np.where(np.arange(100) % 7 == 0, np.nan, x * 2).astype(np.float32)] for x in X]
    out = _runs(tmp_path / "b", ref, holes, [[x] for x in X])
    assert out.failure == "uninitialised-read"


@pytest.mark.parametrize("scale", [1e-4])
def test_magnitude_guard_fails_zeros_against_a_tiny_reference(tmp_path, scale):
    ref = [[x * scale] for x in X]
    out = _runs(tmp_path, ref, [[np.zeros(100, np.float32)] for _ in X], [[x] for x in X])
    assert out.failure == "magnitude-guard"


def test_wrong_values(tmp_path):
    out = _runs(tmp_path, [[x * 2] for x in X], [[x * 2.1] for x in X], [[x] for x in X])
    assert out.failure == "mismatch" and out.first_mismatch is not None


def _with_fp64(tmp_path, ref_out, cand_out, wide, min_precision=None, fp64=None):
    """_runs with the reference's float64 pass (``out64_{t}.npz``) present."""
    ref_dir, cand_dir = tmp_path / "ref", tmp_path / "cand"
    in_meta = _write(ref_dir, "in", [[x] for x in X])
    ref_meta = _write(ref_dir, "out", ref_out)
    _write(ref_dir, "out64", wide)
    cand_meta = _write(cand_dir, "out", cand_out)
    _write(cand_dir, "after", [[x] for x in X])
    ref = {"trials": [{"inputs": i, "outputs": o} for i, o in zip(in_meta, ref_meta, strict=True)],
           "fp64": fp64 or {"ran": True, "why": ""}}
    cand = {"trials": [{"inputs": i, "outputs": o} for i, o in zip(in_meta, cand_meta, strict=True)]}
    return compare_runs(ref, ref_dir, cand, cand_dir, atol=1e-2, rtol=1e-2, cpu_path=True,
                        min_precision=min_precision)


def test_half_precision_passes_the_flat_tolerance_but_fails_the_precision_check(tmp_path):
    wide = [[np.exp(x.astype(np.float64))] for x in X]
    ref = [[np.exp(x)] for x in X]
    half = [[np.exp(x).astype(np.float16).astype(np.float32)] for x in X]
    out = _with_fp64(tmp_path, ref, half, wide)
    assert out.failure == "precision" and "output 0" in out.detail and "float16" in out.detail
    assert out.precision_ratio > 1000
    honest = _with_fp64(tmp_path / "b", ref, [[np.exp(x) * np.float32(1 + 2.0 ** -23)] for x in X],
                        wide)
    assert honest.failure is None and honest.precision_ratio < 4
    assert "256 * max(||r-r64||" in honest.rule
    allowed = _with_fp64(tmp_path / "c", ref, half, wide, min_precision="float16")
    assert allowed.failure is None and "u(float16)" in allowed.rule


def test_no_precision_check_without_the_float64_pass(tmp_path):
    out = _runs(tmp_path, [[x * 2] for x in X], [[(x * 2).astype(np.float16).astype(np.float32)]
                                                 for x in X], [[x] for x in X])
    assert out.failure is None and out.precision_ratio is None and out.rule == ""
    failed = _with_fp64(tmp_path / "b", [[x * 2] for x in X], [[x * 2] for x in X],
                        [[x * 2.0] for x in X], fp64={"ran": False, "why": "the float64 run raised X"})
    assert failed.failure is None and failed.precision_ratio is None
    assert failed.notes == ["no precision check: the float64 run raised X"]
