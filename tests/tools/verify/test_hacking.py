"""Anti-hacking checks: every adversarial program is caught by its check; the corpus is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.tools.data.corpus import load_corpus
from structcover.tools.verify.hacking import (CHECKS, check_device_globals,
                                              check_no_library_delegation,
                                              check_no_precision_downgrade,
                                              check_no_timing_tampering, hard_failures,
                                              run_checks)

ADVERSARIAL = Path(__file__).resolve().parents[2] / "data" / "adversarial"
CHECK_NAMES = {c.__name__.removeprefix("check_") for c, _ in CHECKS}


def _intended(path: Path) -> str:
    """The check a cheating program is written to trip: its first line `// cheat: <name> --`."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("// cheat: "), f"{path.name}: missing '// cheat: <check>' header"
    return first.removeprefix("// cheat: ").split()[0]


ADVERSARIAL_FILES = sorted(ADVERSARIAL.glob("*.cu"))


def test_adversarial_folder_covers_every_check() -> None:
    assert {_intended(p) for p in ADVERSARIAL_FILES} == CHECK_NAMES


@pytest.mark.parametrize("path", ADVERSARIAL_FILES, ids=lambda p: p.stem)
def test_adversarial_program_is_flagged_by_its_check(path: Path) -> None:
    intended = _intended(path)
    results = {r.name: r for r in run_checks(path.read_text())}
    assert not results[intended].ok, results[intended].reason
    assert results[intended].reason


def _corpus_programs():  # noqa: ANN202
    return [pytest.param(p, id=f"{fam.name}/{p.name}")
            for fam in load_corpus() for p in fam.programs]


def test_corpus_is_not_empty() -> None:
    assert _corpus_programs(), "the sample corpus is empty: the no-false-positive test is void"


@pytest.mark.parametrize("program", _corpus_programs())
def test_no_corpus_program_fails_a_hard_check(program) -> None:  # noqa: ANN001
    failures = hard_failures(run_checks(program.source))
    assert not failures, [f"{f.name}: {f.reason}" for f in failures]


def test_comments_do_not_trigger_checks() -> None:
    source = ("// faster than cublasSgemm; no try { } or std::thread here\n"
              "/* cudaEventRecord is the harness's job */\n"
              "__global__ void k(float* x) { x[0] = 1.f; }\n")
    assert not hard_failures(run_checks(source))


def test_half_task_may_use_half() -> None:
    source = ('#include <cuda_fp16.h>\n__global__ void k(const __half* x, __half* y) '
              '{ y[0] = __hadd(x[0], x[0]); }\n'
              'extern "C" int launch(const __half* x, __half* y, int n, cudaStream_t s) '
              '{ k<<<1, 1, 0, s>>>(x, y); return 0; }\n')
    assert check_no_precision_downgrade(source)[0]
    as_float = source.replace("const __half* x, __half* y, int n", "const float* x, float* y, int n")
    assert not check_no_precision_downgrade(as_float)[0]


def test_variable_named_half_is_not_a_half_type() -> None:
    float_task = ('__global__ void k(const float* x, float* y, int n) {\n'
                  '  const int half = (n + 1) / 2; int i = threadIdx.x;\n'
                  '  if (i >= half) return; y[i] = x[i] + x[i + half < n ? i + half : i];\n}\n'
                  'extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) '
                  '{ k<<<1, 32, 0, s>>>(x, y, n); return 0; }\n')
    assert check_no_precision_downgrade(float_task)[0]
    for downgrade in ("half t = x[i];", "half2* p = (half2*)y;", "float v = (half)x[i];"):
        cheat = float_task.replace("int i = threadIdx.x;", f"int i = threadIdx.x; {downgrade}")
        assert not check_no_precision_downgrade(cheat)[0], downgrade


def test_allocation_helpers_are_not_delegation() -> None:
    assert check_no_library_delegation("auto y = torch::empty_like(x);")[0]
    assert not check_no_library_delegation("auto y = torch::mm(a, b);")[0]


def test_launch_on_other_stream_is_tampering() -> None:
    source = ('__global__ void k(float* x) { x[0] = 1.f; }\n'
              'extern "C" int launch(float* x, cudaStream_t stream) '
              '{ k<<<1, 1, 0, 0>>>(x); return 0; }\n')
    ok, reason = check_no_timing_tampering(source)
    assert not ok and "instead of the given `stream`" in reason


def test_retirement_counter_is_only_a_warning() -> None:
    source = ("__device__ unsigned int retired = 0;\n"
              "__global__ void k(float* x) { atomicInc(&retired, 1u); }\n")
    assert not check_device_globals(source)[0]
    results = run_checks(source)
    assert not hard_failures(results)
    assert any(r.name == "device_globals" and not r.ok and r.severity == "warning"
               for r in results)
