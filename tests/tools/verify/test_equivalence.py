"""Equivalence logic on a tiny fake backend whose "programs" are numpy statements."""

from __future__ import annotations

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.compare import compare_output
from structcover.tools.verify.equivalence import ReferenceCache
from structcover.tools.verify.equivalence import check_equivalence as _check_equivalence


def check_equivalence(*args, **kw):  # noqa: ANN002, ANN003, ANN201
    """The fake backend's "programs" are numpy statements, not CUDA: no anti-hacking checks."""
    return _check_equivalence(*args, checks=False, **kw)


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
    v = _check(f"STATUS:{status} axpy.cu:3:1: error: something went wrong")
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
    v = _check(f"y[:] = np.array({cached}, dtype=np.float32)", seed=42)
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
    assert bad.failure == "crash" and f"seed {bad.seed}" in bad.detail


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


# --- inputs that vary (issue 11) ---------------------------------------------------------------

RANGED = dict(size_ranges={"N": [1, 301]})


def test_default_seed_is_fresh_recorded_and_replays():
    # A program memorizing the outputs of the old fixed seeds (42..46) fails without a seed.
    from structcover.tools.verify.inputs import make_inputs

    cached = (2 * make_inputs(_spec(), 42)["x"]).tolist()
    cheat = f"y[:] = np.array({cached}, dtype=np.float32)"
    assert _check(cheat, seed=42, trials=1).equivalent is True  # what the old verifier saw
    v = _check(cheat, trials=1)
    assert v.equivalent is False and v.seed is not None and v.seed not in range(42, 47)
    replay = _check(cheat, trials=1, seed=v.seed)
    assert replay.seed == v.seed and replay.detail == v.detail


def test_every_verification_tries_several_sizes_including_the_ends():
    seen: list[int] = []

    class Recording(FakeBackend):
        def run(self, source, spec, inputs, *, sizes=None, timeout_s=60.0):
            seen.append(sizes["N"])
            return super().run(source, spec, inputs, sizes=sizes, timeout_s=timeout_s)

    v = check_equivalence("y[:] = x * 2", REF, _spec(**RANGED), backend=Recording(),
                          cache=ReferenceCache(), trials=5, seed=3)
    assert v.equivalent is True and "size sets" in v.detail
    sizes = sorted(set(seen))
    assert sizes[0] == 1 and sizes[-1] == 301 and len(sizes) >= 3
    assert all(n % 2 == 1 for n in sizes)  # never a multiple of a power-of-two block size


@pytest.mark.parametrize("cheat", [
    "y[:] = 2 * x if x.size == 256 else y",           # special-cases the nominal size
    "y[:min(y.size, 256)] = 2 * x[:256]",             # ignores n beyond the nominal size
    "y[:] = 2 * x\nif y.size % 128: y[-(y.size % 128):] = 0",  # drops the tail
])
def test_size_cheats_fail_once_sizes_vary(cheat):
    assert _check(cheat, trials=5, seed=11).equivalent is True  # one fixed size: passes
    v = _check(cheat, spec=_spec(**RANGED), trials=5, seed=11)
    assert v.equivalent is False and "sizes N=" in v.detail


def test_explicit_sizes_turn_off_variation():
    v = _check("y[:] = 2 * x", spec=_spec(**RANGED), sizes={"N": 17}, trials=3, seed=5)
    assert v.equivalent is True and "over 1 size sets" in v.detail


def test_hacking_checks_run_inside_verify_and_a_hard_flag_rejects():
    calls: list[str] = []

    class Echo(FakeBackend):
        """Runs the reference whatever the source is (so only the checks can reject)."""

        def run(self, source, spec, inputs, *, sizes=None, timeout_s=60.0):
            calls.append(source)
            return super().run(REF, spec, inputs, sizes=sizes, timeout_s=timeout_s)

    kernel = ("__global__ void k(const float* x, float* y, int n) { int i = threadIdx.x; "
              "if (i < n) y[i] = 2.f * x[i]; }\n")
    honest = kernel + ('extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) '
                       '{ k<<<1, 256>>>(x, y, n); return 0; }\n')
    v = _check_equivalence(honest, REF, _spec(), backend=Echo(), cache=ReferenceCache(),
                           trials=1, seed=1)
    assert v.equivalent is True and v.hacking_flags == ["launch_uses_given_stream (warning)"]
    cheat = honest.replace("{ k<<<", "{ static int calls = 0; ++calls; k<<<")
    calls.clear()
    v = _check_equivalence(cheat, REF, _spec(), backend=Echo(), cache=ReferenceCache(),
                           trials=1, seed=1)
    assert v.equivalent is False and v.failure == "hacking"
    assert "no_cached_outputs (hard)" in v.hacking_flags and "static local" in v.detail
    assert calls == []  # rejected before anything ran


def test_compile_log_keeps_only_the_programs_own_diagnostics():
    from structcover.tools.verify.equivalence import program_diagnostics

    log = ("In file included from axpy.cu:2:\n"
           "/etc/passwd:1:5: error: 'root' does not name a type\n"
           "    1 | root:x:0:0:root:/root:/bin/bash\n"
           "      |     ^\n"
           "axpy.cu:7:3: error: 'foo' was not declared in this scope\n"
           "    7 |   foo(x);\n"
           "/usr/include/stdio.h:12:1: note: declared here\n")
    kept = program_diagnostics(log, _spec())
    assert kept == "line 7: error: 'foo' was not declared in this scope"
    assert "root" not in program_diagnostics(log.replace("axpy.cu:7", "x.cu:7"), _spec())
