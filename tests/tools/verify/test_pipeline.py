"""verify_for_bin: each stage fails with structured feedback; a good candidate passes."""

from __future__ import annotations

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.coverage.archive import GridArchive
from structcover.tools.coverage.bins import Dimension
from structcover.tools.data.corpus import load_corpus
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.equivalence import ReferenceCache
from structcover.tools.verify.pipeline import verify_for_bin

REUSE = ("none", "smem_staging", "smem_tiling", "register_tiling", "smem_and_register")
SYNC = ("none", "block", "warp", "block_and_warp", "atomic_or_grid")


class NumpyVectorAdd:
    """Test double for the execution backend: runs vector_add in numpy; a source whose body
    computes ``a[i] - b[i]`` gets the wrong sum (what a miscompiled mutant would do)."""

    name = "cpu"

    def __init__(self) -> None:
        self.runs = 0

    def available(self) -> tuple[bool, str]:
        return True, ""

    def run(self, source, spec, inputs, *, sizes=None, timeout_s=60.0):
        self.runs += 1
        a, b = inputs["a"], inputs["b"]
        c = a - b if "a[i] - b[i]" in source else a + b
        return RunResult(status="ok", outputs={"c": c.astype(np.float32)},
                         inputs_after={"a": a, "b": b}, backend=self.name)


@pytest.fixture(scope="module")
def task() -> tuple[TaskSpec, str]:
    fam = next(f for f in load_corpus() if f.name == "vector_add")
    ref = next(p for p in fam.programs if p.name == "reference")
    return fam.tasks[0], ref.source


@pytest.fixture
def archive() -> GridArchive:
    return GridArchive(dims=[Dimension("pattern.reuse", "categorical", levels=REUSE),
                             Dimension("pattern.sync", "categorical", levels=SYNC)])


def _opts() -> dict:
    return {"trials": 2, "seed": 7, "cache": ReferenceCache()}


def test_reference_in_its_own_bin_passes(task, archive) -> None:
    spec, ref = task
    backend = NumpyVectorAdd()
    v = verify_for_bin(ref, spec, "pattern.reuse=none,pattern.sync=none", archive, backend,
                       reference=ref, equivalence_options=_opts())
    assert v.passed and v.stage_failed is None, v.feedback
    assert [s.stage for s in v.stages] == ["compile", "structure", "hacking", "equivalence",
                                           "profile"]
    assert v.landed_bin == "pattern.reuse=none,pattern.sync=none"
    assert v.equivalent is True and backend.runs == 4  # 2 trials x (reference + candidate)
    assert v.features["pattern.reuse"] == "none" and v.compile_stats


def test_wrong_bin_names_the_bin_and_axis_and_runs_nothing(task, archive) -> None:
    spec, ref = task
    backend = NumpyVectorAdd()
    v = verify_for_bin(ref, spec, {"pattern.reuse": "smem_tiling"}, archive, backend,
                       reference=ref, equivalence_options=_opts())
    assert not v.passed and v.stage_failed == "structure"
    assert [(m.axis, m.got, m.wanted) for m in v.bin_misses] == [
        ("pattern.reuse", "none", "smem_tiling")]
    assert "landed in bin pattern.reuse=none,pattern.sync=none instead of " \
           "pattern.reuse=smem_tiling" in v.feedback
    assert backend.runs == 0  # no emulator time spent on a candidate in the wrong bin


def test_compile_errors_carry_lines(task, archive) -> None:
    spec, ref = task
    bad = ref.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + undefined_name;")
    v = verify_for_bin(bad, spec, {"pattern.reuse": "none"}, archive, NumpyVectorAdd(),
                       reference=ref, equivalence_options=_opts())
    assert v.stage_failed == "compile" and v.compile_errors
    line = next(i for i, t in enumerate(bad.splitlines(), 1) if "undefined_name" in t)
    assert any(e.line == line and "undefined_name" in e.message for e in v.compile_errors)
    assert f"line {line}:" in v.feedback


def test_hacking_stops_before_equivalence(task, archive) -> None:
    spec, ref = task
    cached = ref.replace("    const int block = 256;",
                         "    static int calls = 0;\n    calls++;\n    const int block = 256;")
    backend = NumpyVectorAdd()
    v = verify_for_bin(cached, spec, {"pattern.reuse": "none"}, archive, backend,
                       reference=ref, equivalence_options=_opts())
    assert v.stage_failed == "hacking", v.feedback
    assert any(f.startswith("no_cached_outputs") for f in v.hacking_flags)
    assert backend.runs == 0


def test_wrong_values_fail_equivalence_with_mismatch(task, archive) -> None:
    spec, ref = task
    wrong = ref.replace("a[i] + b[i]", "a[i] - b[i]")
    v = verify_for_bin(wrong, spec, {"pattern.reuse": "none"}, archive, NumpyVectorAdd(),
                       reference=ref, equivalence_options=_opts())
    assert v.stage_failed == "equivalence" and v.equivalent is False
    assert v.equivalence is not None and v.equivalence.first_mismatch is not None
    assert "not equivalent on cpu" in v.feedback and "first mismatch" in v.feedback


@pytest.mark.parametrize("junk", ["", "\x00\xff garbage", "int main() { return 0; }",
                                  "__global__ void k( {"])
def test_junk_is_a_verdict_not_an_exception(task, archive, junk: str) -> None:
    spec, ref = task
    v = verify_for_bin(junk, spec, {"pattern.reuse": "none"}, archive, NumpyVectorAdd(),
                       reference=ref, equivalence_options=_opts())
    assert not v.passed and v.stage_failed in ("compile", "structure", "hacking")
    assert v.feedback.startswith(f"{v.stage_failed} failed: ")


def test_bad_target_is_the_callers_error(task, archive) -> None:
    spec, ref = task
    with pytest.raises(ValueError, match="not an archive axis"):
        verify_for_bin(ref, spec, {"pattern.bogus": "x"}, archive, None, reference=ref)
    with pytest.raises(ValueError, match="is not one of"):
        verify_for_bin(ref, spec, {"pattern.reuse": "lots"}, archive, None, reference=ref)
    with pytest.raises(ValueError, match="bin label"):
        verify_for_bin(ref, spec, "pattern.sync=none", archive, None, reference=ref)


def test_reference_resolved_from_the_corpus_and_attempt_record(task, archive) -> None:
    spec, ref = task
    v = verify_for_bin(ref.replace("a[i] + b[i]", "a[i] - b[i]"), spec, {"pattern.reuse":
                       "none"}, archive, NumpyVectorAdd(), equivalence_options=_opts())
    assert v.stage_failed == "equivalence"  # judged against the corpus reference
    a = v.attempt(2, operators=["unroll_pragma"], parent_id="p0")
    assert (a.outcome, a.stage, a.round, a.candidate_id) == ("failed", "equivalence", 2,
                                                             v.program_id)
    assert v.stage == "equivalence" and not v.ok and v.backend == "cpu" and v.gpu_seconds == 0
    wrong = verify_for_bin(ref, spec, {"pattern.reuse": "smem_tiling"}, archive,
                           NumpyVectorAdd(), equivalence_options=_opts())
    assert wrong.attempt(2).outcome == "wrong_bin"
    assert wrong.attempt(2).landed_bin == "pattern.reuse=none,pattern.sync=none"
    orphan = spec.model_copy(update={"task_id": "nowhere", "reference": "nope.cu"})
    with pytest.raises(ValueError, match="task nowhere: no reference source"):
        verify_for_bin(ref, orphan, {"pattern.reuse": "none"}, archive, None)


@pytest.mark.slow
def test_cpu_emulator_end_to_end(task, archive) -> None:
    from structcover.tools.verify.select import get_backend

    spec, ref = task
    cpu = get_backend("cpu")
    ok, why = cpu.available()
    if not ok:
        pytest.skip(f"CPU emulator unavailable: {why}")
    good = verify_for_bin(ref, spec, {"pattern.reuse": "none"}, archive, cpu,
                          equivalence_options={"trials": 2, "seed": 11})
    assert good.passed and good.backend == "cpu" and good.profile is None, good.feedback
    # an off-by-one bounds check the policy might write: reads and writes one past the end
    bad = verify_for_bin(ref.replace("if (i < n)", "if (i <= n)"), spec,
                         {"pattern.reuse": "none"}, archive, cpu,
                         equivalence_options={"trials": 2, "seed": 11})
    assert bad.stage_failed == "equivalence" and not bad.passed, bad.feedback


@pytest.mark.gpu
def test_gpu_backend_profiles(task, archive) -> None:
    from structcover.tools.verify.gpu_runner import GpuBackend

    gpu = GpuBackend()
    ok, why = gpu.available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    spec, ref = task
    v = verify_for_bin(ref, spec, {"pattern.reuse": "none"}, archive, gpu,
                       equivalence_options={"trials": 2, "seed": 11})
    assert v.passed and v.backend == "gpu", v.feedback
    assert v.profile is not None and v.profile.median_ms > 0 and v.gpu_seconds > 0
