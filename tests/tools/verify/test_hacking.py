"""Anti-hacking checks: every adversarial program is caught by its check; the corpus is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.schema import TaskSpec
from structcover.tools.data.corpus import load_corpus
from structcover.tools.verify.hacking import (
    CHECKS,
    check_device_globals,
    check_no_library_delegation,
    check_no_precision_downgrade,
    check_no_timing_tampering,
    hard_failures,
    run_checks,
)

ADVERSARIAL = Path(__file__).resolve().parents[2] / "data" / "adversarial"
CHECK_NAMES = {c.__name__.removeprefix("check_") for c, _ in CHECKS}
#: The task most top-level fixtures implement: y = x * x over n floats.
SQUARE = TaskSpec.model_validate(dict(task_id="square", sizes={"N": 1000}, args=[
    {"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
    {"name": "n", "kind": "scalar", "value": "N"}]))


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
    spec = SQUARE if intended == "launcher_signature" else None
    results = {r.name: r for r in run_checks(path.read_text(), spec)}
    assert not results[intended].ok, results[intended].reason
    assert results[intended].reason


def _corpus_programs():  # noqa: ANN202
    return [pytest.param(p, spec, id=f"{spec.task_id}/{p.name}")
            for fam in load_corpus() for spec in fam.tasks[:1] for p in fam.programs]


def test_corpus_is_not_empty() -> None:
    assert _corpus_programs(), "the sample corpus is empty: the no-false-positive test is void"


@pytest.mark.parametrize("program,spec", _corpus_programs())
def test_no_corpus_program_fails_a_hard_check(program, spec) -> None:  # noqa: ANN001
    failures = hard_failures(run_checks(program.source, spec))
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
    as_float = source.replace("const __half* x, __half* y, int n",
                              "const float* x, float* y, int n")
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


HONEST_KERNELBENCH = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    auto out = torch::zeros_like(a);
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                         out.data_ptr<float>(), n);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) printf("CUDA error: %s\\\\n", cudaGetErrorString(err));
    return out;
}
"""
cpp_source = "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);"
add_ext = load_inline(name="add_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                      functions=["add_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.add = add_ext

    def forward(self, a, b):
        return self.add.add_cuda(a.contiguous(), b.contiguous())
'''


def test_honest_kernelbench_file_passes_every_hard_check() -> None:
    # Before issue 11 every KernelBench file failed no_cached_outputs (its CUDA string was
    # read as a mutable host global).
    results = run_checks(HONEST_KERNELBENCH)
    assert not hard_failures(results), [f"{r.name}: {r.reason}" for r in hard_failures(results)]
    assert {r.name for r in results} == CHECK_NAMES


@pytest.mark.parametrize("edit,check", [
    ("        return self.add.add_cuda(a, b) + torch.relu(a)", "no_library_delegation"),
    ("        return a @ b", "no_library_delegation"),
    ("        self.last = a\n        return self.add.add_cuda(a, b)", "no_cached_outputs"),
    ("        a.mul_(2.0)\n        return self.add.add_cuda(a, b)", "inputs_not_modified"),
    ("        print(a)\n        return self.add.add_cuda(a, b)", "no_host_output"),
    ("        return eval('torch.add')(a, b)", "no_library_delegation"),
    ("        return self.add.add_cuda(a.half(), b)", "no_precision_downgrade"),
])
def test_kernelbench_cheats_are_flagged(edit: str, check: str) -> None:
    body = "        return self.add.add_cuda(a.contiguous(), b.contiguous())"
    cheat = HONEST_KERNELBENCH.replace(body, edit)
    assert cheat != HONEST_KERNELBENCH
    results = {r.name: r for r in run_checks(cheat)}
    assert not results[check].ok, results[check].reason


def test_python_import_aliases_do_not_hide_calls() -> None:
    aliased = HONEST_KERNELBENCH.replace(
        "import torch.nn as nn\n", "import torch.nn as nn\nfrom torch import matmul as fast\n"
    ).replace("        return self.add.add_cuda(a.contiguous(), b.contiguous())",
              "        return fast(a, b)")
    results = {r.name: r for r in run_checks(aliased)}
    assert not results["no_library_delegation"].ok
    assert "torch.matmul" in results["no_library_delegation"].reason


_KERNEL = ('__global__ void k(const float* x, float* y, int n) { int i = threadIdx.x; '
           'if (i < n) y[i] = x[i]; }\n')
_LAUNCH = ('extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) '
           '{{ {body} k<<<1, 32, 0, stream>>>(x, y, n); return 0; }}\n')


@pytest.mark.parametrize("prelude,body,check", [
    ("#define CAT(a, b) a##b\n", "cudaEvent_t e; CAT(cudaEvent, Create)(&e);",
     "no_timing_tampering"),
    ("#define GO(x) x\n", "GO(std::thread)([]{}).detach();", "no_threads"),
    ("#define ATTEMPT try\n", "ATTEMPT { } catch (...) { }", "no_fallback"),
    ("#define KEEP static\n", "KEEP int calls = 0; ++calls;", "no_cached_outputs"),
    ("", "static const float* saved = nullptr; saved = x;", "no_cached_outputs"),
    ("const float* g_last = nullptr;\n", "g_last = x;", "no_cached_outputs"),
    ("#define LOW __half\n", "LOW h = __float2half(1.f); (void)h;", "no_precision_downgrade"),
    ("#define SAY printf\n", "SAY(\"%f\", x[0]);", "no_host_output"),
    ("#ifndef __CUDA_ARCH__\n#define HOSTONLY cudaStreamCreate\n#endif\n",
     "cudaStream_t s2; HOSTONLY(&s2);", "no_timing_tampering"),
])
def test_macro_renamings_do_not_hide_a_cheat(prelude: str, body: str, check: str) -> None:
    source = prelude + _KERNEL + _LAUNCH.format(body=body)
    results = {r.name: r for r in run_checks(source)}
    assert not results[check].ok, results[check].reason
    honest = {r.name: r for r in run_checks(_KERNEL + _LAUNCH.format(body=""))}
    assert honest[check].ok, honest[check].reason


def test_inactive_code_comments_and_strings_do_not_trigger_checks() -> None:
    source = ("#if 0\nvoid old() { cudaEvent_t e; cudaEventCreate(&e); std::thread t; }\n#endif\n"
              "// cublasSgemm would be slower\n"
              'static const char* const kNote = "try { cublasSgemm } catch";\n'
              + _KERNEL + _LAUNCH.format(body=""))
    failures = hard_failures(run_checks(source))
    assert not failures, [f"{f.name}: {f.reason}" for f in failures]


def test_includes_are_never_read_from_the_host() -> None:
    # An include of a host file is dropped before preprocessing: its text can't reach a reason.
    from structcover.tools.verify.preprocess import preprocess

    pp = preprocess('#include "/etc/passwd"\n%:include </etc/hostname>\nint x;\n')
    assert pp.includes == ["/etc/passwd", "/etc/hostname"]
    assert "root" not in pp.host + pp.device and pp.error is None


def test_launcher_signature_against_the_task() -> None:
    from structcover.tools.verify.hacking import check_launcher_signature, subject

    good = _KERNEL + _LAUNCH.format(body="")
    assert check_launcher_signature(subject(good, SQUARE))[0]
    swapped = good.replace("const float* x, float* y, int n", "const float* x, int n, float* y")
    ok, reason = check_launcher_signature(subject(swapped, SQUARE))
    assert not ok and "pointer" in reason
    typedefd = "typedef double real;\n" + good.replace(
        "const float* x, float* y, int n, cudaStream_t",
        "const real* x, real* y, int n, cudaStream_t")
    ok, reason = check_launcher_signature(subject(typedefd, SQUARE))
    assert not ok and "double" in reason
    extra = good.replace("int n, cudaStream_t", "int n, int m, cudaStream_t")
    assert not check_launcher_signature(subject(extra, SQUARE))[0]


def test_selecting_the_inputs_device_is_not_tampering():
    # A public KernelBench launcher selects the device its tensors live on before launching.
    ok, why = check_no_timing_tampering(
        "void run(torch::Tensor x) { cudaSetDevice(x.device().index()); k<<<1, 32>>>(); }")
    assert ok, why
    ok, why = check_no_timing_tampering("void run(torch::Tensor* x) { cudaSetDevice(x->get_device()); }")
    assert ok, why


def test_selecting_any_other_device_is_tampering():
    for call in ("cudaSetDevice(1)", "cudaSetDevice(dev)", "cudaSetDevice(x.device().index() + 1)",
                 "cudaSetDeviceFlags(cudaDeviceScheduleSpin)"):
        ok, why = check_no_timing_tampering(f"void run() {{ {call}; }}")
        assert not ok, call
        assert "device" in why, why
