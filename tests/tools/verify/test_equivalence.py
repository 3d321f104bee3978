"""Equivalence logic on a tiny fake backend whose "programs" are numpy statements."""

from __future__ import annotations

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.compare import compare_output
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence


class FakeBackend:
    """Runs a "program" that is Python over the input arrays; "STATUS:x detail" fakes a status."""

    name = "cpu"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def available(self) -> tuple[bool, str]:
        return True, ""

    def run(self, source, spec, inputs, *, sizes=None, timeout_s=60.0):
        self.calls.append(source)
        if source.startswith("STATUS:"):
            status, _, detail = source[7:].partition(" ")
            return RunResult(status=status, detail=detail, backend=self.name)
        env = {"np": np, **inputs}
        exec(source, env)  # noqa: S102 - test programs only
        outs = {a.name: inputs[a.name] for a in spec.tensors if a.role != "input"}
        after = {a.name: inputs[a.name] for a in spec.tensors if a.role == "input"}
        return RunResult(status="ok", outputs=outs, inputs_after=after, backend=self.name)


def _spec(**kw) -> TaskSpec:
    base = dict(task_id="axpy", sizes={"N": 256}, args=[
        {"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
        {"name": "n", "kind": "scalar", "value": "N"}])
    base.update(kw)
    return TaskSpec.model_validate(base)


REF = "y[:] = 2 * x"


def _check(cand, ref=REF, spec=None, **kw):
    return check_equivalence(cand, ref, spec or _spec(), backend=FakeBackend(),
                             cache=ReferenceCache(), **kw)


def test_equivalent_program_passes_and_names_backend():
    v = _check("y[:] = x + x")
    assert v.equivalent is True and v.backend == "cpu" and v.failure is None
    assert v.max_abs_error == 0.0 and "5 trials" in v.detail


def test_wrong_values_give_first_mismatch_and_errors():
    v = _check("y[:] = 2 * x\ny[37] += 0.5")
    assert v.equivalent is False and v.failure == "mismatch"
    assert v.first_mismatch == [37] and v.max_abs_error == pytest.approx(0.5, rel=1e-5)


def test_off_by_one_leaves_last_element_unwritten():
    v = _check("y[:-1] = 2 * x[:-1]")
    assert v.equivalent is False and v.failure == "unwritten-output"
    assert v.first_mismatch == [255]


def test_shape_mismatch_reported_first():
    spec = _spec()

    class Reshaper(FakeBackend):
        def run(self, source, spec, inputs, **kw):
            res = super().run(source, spec, inputs, **kw)
            if source.endswith("# bad"):
                res.outputs["y"] = res.outputs["y"][:10]
            return res

    v = check_equivalence("y[:] = 0  # bad", "y[:] = 0", spec, backend=Reshaper(),
                          cache=ReferenceCache())
    assert v.failure == "shape-mismatch" and "(10,)" in v.detail


def test_modified_inputs_rejected():
    v = _check("y[:] = 2 * x\nx[0] = 7")
    assert v.equivalent is False and v.failure == "modified-inputs" and "'x'" in v.detail


@pytest.mark.parametrize("status", ["race", "deadlock", "crash", "timeout", "unsupported",
                                    "compile-error", "rejected", "launch-error"])
def test_backend_statuses_become_failures(status):
    v = _check(f"STATUS:{status} something went wrong")
    assert v.equivalent is False and v.failure == status and "something went wrong" in v.detail
    assert v.compiled is {"compile-error": False, "rejected": None}.get(status, True)


def test_failing_reference_gives_no_verdict():
    v = _check("y[:] = 2 * x", ref="STATUS:crash boom")
    assert v.equivalent is None and v.failure == "reference-failed" and "boom" in v.detail


def test_nan_where_reference_is_finite_fails():
    v = _check("y[:] = 2 * x\ny[3] = np.nan")
    assert v.failure == "nan-mismatch" and v.first_mismatch == [3]


def test_nan_in_both_passes():
    v = _check("y[:] = 2 * x\ny[3] = np.nan", ref="y[:] = 2 * x\ny[3] = np.nan")
    assert v.equivalent is True


def test_tolerance_is_per_dtype_and_overridable():
    near = "y[:] = 2 * x * (1 + 5e-4)"
    assert _check(near).equivalent is False  # fp32 default 1e-4
    assert _check(near, spec=_spec(rtol=1e-3)).equivalent is True


def test_magnitude_guard_rejects_zeros_against_tiny_reference():
    tiny = "y[:] = 1e-6 * x"
    assert _check("y[:] = 0", ref=tiny).failure == "magnitude-guard"
    # Plain allclose alone would have passed it:
    ref = 1e-6 * np.linspace(-1, 1, 50)
    assert np.allclose(np.zeros(50), ref, atol=1e-4, rtol=1e-4)
    # ...while a correct computation of the tiny values still passes.
    assert _check("y[:] = x * 1e-6", ref=tiny).equivalent is True


def test_all_zero_reference_requires_exact_zero_and_is_noted():
    v = _check("y[:] = 0", ref="y[:] = 0 * x")
    assert v.equivalent is True and "weak test" in v.detail
    assert _check("y[:] = 1e-9", ref="y[:] = 0 * x").equivalent is False


def test_integer_outputs_exact():
    out = np.array([1, 2, 3], np.int32)
    assert compare_output("c", out, out.copy(), "int32", 1e-4, 1e-4).ok
    res = compare_output("c", out + np.array([0, 1, 0], np.int32), out, "int32", 10, 10)
    assert not res.ok and res.first_mismatch == [1]


def test_first_mismatch_is_multi_dimensional():
    ref = np.zeros((4, 5), np.float32) + 1
    cand = ref.copy()
    cand[2, 3] = 5
    res = compare_output("C", cand, ref, "float32", 1e-4, 1e-4)
    assert res.first_mismatch == [2, 3] and res.max_abs_error == 4.0


def test_bfloat16_compared_as_values():
    from structcover.tools.verify.inputs import float32_to_bfloat16_bits

    ref = float32_to_bfloat16_bits(np.array([1.0, 2.0, 3.0], np.float32))
    close = float32_to_bfloat16_bits(np.array([1.0, 2.0078125, 3.0], np.float32))
    far = float32_to_bfloat16_bits(np.array([1.0, 2.5, 3.0], np.float32))
    assert compare_output("o", close, ref, "bfloat16", 1e-2, 1e-2).ok
    assert compare_output("o", far, ref, "bfloat16", 1e-2, 1e-2).first_mismatch == [1]


def test_reference_runs_once_per_seed_across_candidates():
    backend, cache, spec = FakeBackend(), ReferenceCache(), _spec()
    for cand in ("y[:] = x * 2", "y[:] = x + x", "y[:] = 2.0 * x"):
        assert check_equivalence(cand, REF, spec, backend=backend, cache=cache, trials=3).equivalent
    assert backend.calls.count(REF) == 3 and len(backend.calls) == 3 + 9
    assert cache.hits == 6


def test_disk_cache_shared_between_instances(tmp_path):
    spec, b1, b2 = _spec(), FakeBackend(), FakeBackend()
    check_equivalence("y[:] = x * 2", REF, spec, backend=b1, cache=ReferenceCache(tmp_path),
                      trials=2)
    v = check_equivalence("y[:] = x * 2", REF, spec, backend=b2, cache=ReferenceCache(tmp_path),
                          trials=2)
    assert v.equivalent is True and REF not in b2.calls


def test_trials_use_distinct_seeds():
    # A candidate that hard-codes the outputs of seed 42 passes trial 1 but not trial 2.
    from structcover.tools.verify.inputs import make_inputs

    cached = (2 * make_inputs(_spec(), 42)["x"]).tolist()
    v = _check(f"y[:] = np.array({cached}, dtype=np.float32)")
    assert v.equivalent is False and "seed 43" in v.detail


def test_rejects_zero_trials():
    with pytest.raises(ValueError, match="trials"):
        _check("y[:] = 2 * x", trials=0)


def test_batching_backend_gets_one_call_per_program():
    class Batching(FakeBackend):
        def __init__(self):
            super().__init__()
            self.batches = []

        def run_many(self, source, spec, inputs_batch, *, sizes=None, timeout_s=60.0):
            self.batches.append((source, len(inputs_batch)))
            out = []
            for inputs in inputs_batch:
                out.append(self.run(source, spec, inputs))
                if out[-1].status != "ok":
                    break
            return out

    backend = Batching()
    v = check_equivalence("y[:] = x * 2", REF, _spec(), backend=backend, cache=ReferenceCache())
    assert v.equivalent is True
    assert backend.batches == [(REF, 5), ("y[:] = x * 2", 5)]
    bad = check_equivalence("STATUS:crash boom", REF, _spec(), backend=backend,
                            cache=ReferenceCache())
    assert bad.failure == "crash" and "seed 42" in bad.detail


def test_failed_reference_runs_are_not_cached():
    cache = ReferenceCache()

    class Flaky(FakeBackend):
        def __init__(self):
            super().__init__()
            self.fail = True

        def run(self, source, spec, inputs, **kw):
            if source == REF and self.fail:
                self.fail = False
                return RunResult(status="timeout", detail="machine overloaded", backend=self.name)
            return super().run(source, spec, inputs, **kw)

    backend = Flaky()
    first = check_equivalence("y[:] = x * 2", REF, _spec(), backend=backend, cache=cache, trials=1)
    assert first.failure == "reference-failed"
    second = check_equivalence("y[:] = x * 2", REF, _spec(), backend=backend, cache=cache, trials=1)
    assert second.equivalent is True


def test_reference_cache_never_mixes_backend_implementations() -> None:
    """A test double named like a real backend must not poison the real backend's entries."""

    class ZerosNamedCpu(FakeBackend):
        def run(self, source, spec, inputs, **kw):  # noqa: ANN001, ANN003
            return RunResult(status="ok", backend="cpu",
                             outputs={"y": np.zeros_like(inputs["y"])})

    cache, spec = ReferenceCache(), _spec()
    check_equivalence("y[:] = x * 2", REF, spec, backend=ZerosNamedCpu(), cache=cache, trials=1)
    verdict = check_equivalence("y[:] = x * 2", REF, spec, backend=FakeBackend(), cache=cache,
                                trials=1)
    assert verdict.equivalent is True
