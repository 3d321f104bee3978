"""The CPU build of load_inline extensions: built in the jail against torch and the emulator,
called from Python on CPU tensors (in a child process, so the emulator's allocator and signal
handlers stay out of the test process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench.candidate import InlineExtension  # noqa: E402
from structcover.tools.kernelbench.cpu_build import (  # noqa: E402
    ExtensionBuildError,
    UnsupportedConstruct,
    build_cpu_extension,
    translation_unit,
)
from structcover.tools.verify.jail import jail_status  # noqa: E402

pytestmark = [pytest.mark.kernelbench,
              pytest.mark.skipif(not jail_status()[0], reason="no compiler jail (bubblewrap) here")]

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <vector>
#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")

__global__ void scale_add(const float* a, const float* b, float* out, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = s * a[i] + b[i];
}
__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float buf[128];
  int t = threadIdx.x;
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) acc += x[i];
  buf[t] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}
__global__ void racy_sum(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[0] += x[i];
}
__global__ void copy_past_end(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n + 512) out[i] = a[i % n];
}
__global__ void copy_but_last(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) out[i] = a[i];
}

torch::Tensor axpy(torch::Tensor a, torch::Tensor b, double s) {
  CHECK_CUDA(a);
  TORCH_CHECK(b.device().is_cuda() && b.device().type() == torch::kCUDA, "b on the GPU");
  const at::cuda::OptionalCUDAGuard guard(device_of(a));
  auto out = torch::empty_like(a);
  int n = a.numel();
  auto stream = at::cuda::getCurrentCUDAStream();
  scale_add<<<(n + 255) / 256, 256, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                 out.data_ptr<float>(), (float)s, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
torch::Tensor total(torch::Tensor x) {
  auto partial = torch::empty({4}, torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA));
  block_sum<<<4, 128>>>(x.data_ptr<float>(), partial.data_ptr<float>(), x.numel());
  return partial.sum();
}
torch::Tensor racy(torch::Tensor x) {
  auto out = torch::zeros({1}, x.options());
  int n = x.numel();
  racy_sum<<<(n + 127) / 128, 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
torch::Tensor overrun(torch::Tensor a) {
  auto out = torch::empty_like(a);
  int n = a.numel();
  copy_past_end<<<(n + 512 + 255) / 256, 256>>>(a.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
torch::Tensor tail(torch::Tensor a) {
  auto out = torch::empty_like(a);
  int n = a.numel();
  copy_but_last<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
std::vector<std::string> device_info(torch::Tensor a) {
  c10::cuda::CUDAGuard guard(a.device());
  auto cur = at::cuda::getCurrentCUDAStream();
  auto side = at::cuda::getStreamFromPool();
  auto made = torch::ones({2}, torch::dtype(torch::kFloat32).device(torch::kCUDA, 0));
  return {at::cuda::getCurrentDeviceProperties()->name, std::to_string((long)cur.stream()),
          std::to_string(side != cur), std::to_string(a.is_cuda()), made.device().str(),
          std::to_string(FACTOR)};
}
"""
CPP = """torch::Tensor axpy(torch::Tensor a, torch::Tensor b, double s);
torch::Tensor total(torch::Tensor x);
torch::Tensor racy(torch::Tensor x);
torch::Tensor overrun(torch::Tensor a);
torch::Tensor tail(torch::Tensor a);
std::vector<std::string> device_info(torch::Tensor a);
"""
FUNCTIONS = ["axpy", "total", "racy", "overrun", "tail", "device_info"]

#: Runs in a child: import the module, call every function, print what happened as JSON.
CALLER = textwrap.dedent("""
    import importlib.util, json, sys, torch
    spec = importlib.util.spec_from_file_location("kb_cpu_test", sys.argv[1])
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    torch.manual_seed(0)
    a, b, x = torch.randn(1000), torch.randn(1000), torch.randn(3000)
    out = {"axpy": (m.axpy(a, b, 2.5) - (2.5 * a + b)).abs().max().item(),
           "total": [m.total(x).item(), x.double().sum().item()],
           "info": m.device_info(a)}
    for name in ("racy", "overrun"):
        try:
            getattr(m, name)(x)
            out[name] = ["returned", *m._sc_status()[:2]]
        except Exception as exc:
            out[name] = [type(exc).__name__, isinstance(exc, RuntimeError), str(exc), m._sc_status()[0]]
    tails = []
    for schedule in (0, 1):
        m._sc_configure(schedule=schedule)
        tails.append(m.tail(a)[-1].item())
    out["tail"] = [tails, (m.tail(a)[:-1] == a[:-1]).all().item()]
    m._sc_configure()  # the default: forward, reverse, random, ... one per call
    out["rotate"] = [m.tail(a)[-1].item() for _ in range(3)]
    print(json.dumps(out))
""")


def _ext(name: str = "kb_cpu_test", **kw) -> InlineExtension:
    return InlineExtension(name=name, cpp_sources=[CPP], cuda_sources=[CUDA], functions=FUNCTIONS,
                           extra_cuda_cflags=["-O3", "--use_fast_math", "-DFACTOR=7"], **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, kb_emulator_cache: Path) -> dict:
    """One extension with every kernel (one build: the cold precompiled header alone is most of
    this module's budget), called once in a child process."""
    work = tmp_path_factory.mktemp("kbcpu")
    path = build_cpu_extension(_ext(), work, cache_dir=kb_emulator_cache)
    proc = subprocess.run([sys.executable, "-c", CALLER, str(path)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"path": path, "work": work, "calls": json.loads(proc.stdout.strip().splitlines()[-1]),
            "build": json.loads((work / "build.json").read_text())}


def test_elementwise_and_shared_memory_reduction_give_torch_values(built: dict) -> None:
    calls = built["calls"]
    assert calls["axpy"] < 1e-5
    got, want = calls["total"]
    assert got == pytest.approx(want, rel=1e-4, abs=1e-3)
    assert built["path"].name == "kb_cpu_test.so" and built["path"].is_file()
    # The module finds the emulator runtime beside it (the work folder is self-contained).
    assert any(p.name.startswith("libsc_kbrt-") for p in built["work"].iterdir())


def test_shims_map_cuda_device_stream_and_guard_to_the_emulator(built: dict) -> None:
    name, stream, side_differs, is_cuda, made_on, factor = built["calls"]["info"]
    # The emulator's device properties, not the real CUDA runtime torch loaded (no GPU here).
    assert name == "NVIDIA H100 80GB HBM3"
    assert stream == "0" and side_differs == "1"          # default stream is the null stream
    assert is_cuda == "1" and made_on == "cpu"             # is_cuda() / kCUDA mean the CPU
    assert factor == "7"                                   # -D from extra_cuda_cflags applies
    # ... before every header, as nvcc applies it: not on the precompiled emulator headers.
    assert built["build"]["precompiled"] == "light"
    assert {"-O3", "--use_fast_math"} <= set(built["build"]["ignored_flags"])


def test_racy_kernel_is_reported_as_a_race(built: dict) -> None:
    kind, is_runtime_error, message, status = built["calls"]["racy"]
    assert kind == "EmulatorFault" and is_runtime_error
    assert status == "race" and message.startswith("race: data race")


def test_out_of_bounds_write_and_unwritten_output_show(built: dict) -> None:
    kind, _, message, status = built["calls"]["overrun"]
    assert kind == "EmulatorFault" and status == "crash" and "out-of-bounds" in message
    (forward, reverse), rest_ok = built["calls"]["tail"]
    # The unwritten last element holds the schedule's poison (about +1e38, then -1e38).
    assert rest_ok and forward > 1e37 and reverse < -1e37
    # Unconfigured, successive calls rotate the schedules, so a harness's trials differ.
    first, second, _ = built["calls"]["rotate"]
    assert first > 1e37 and second < -1e37


def test_same_extension_builds_from_the_cache(built: dict, tmp_path: Path,
                                              kb_emulator_cache: Path) -> None:
    again = build_cpu_extension(_ext(), tmp_path, cache_dir=kb_emulator_cache)
    info = json.loads((tmp_path / "build.json").read_text())
    assert info["cached"] and info["library"] == built["build"]["library"]
    assert again.read_bytes() == built["path"].read_bytes()


def test_compile_error_carries_the_compiler_log_on_the_users_lines(
        tmp_path: Path, kb_emulator_cache: Path) -> None:
    ext = InlineExtension(name="kb_broken", cpp_sources=["int f();"],
                          cuda_sources=["// line 1\n#include <no_such_header.h>\nint f() { return 1; }"],
                          functions=["f"])
    with pytest.raises(ExtensionBuildError) as err:
        build_cpu_extension(ext, tmp_path, cache_dir=kb_emulator_cache)
    assert "no_such_header.h" in err.value.log and "cuda.cu:5" in err.value.log


@pytest.mark.parametrize(("source", "ldflags", "construct"), [
    ("cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();", [], "cuBLAS"),
    ("__global__ void k(int* p) { asm volatile(\"membar.gl;\"); }", [], "inline PTX"),
    ("#include <cutlass/gemm/device/gemm.h>", [], "header <cutlass/gemm/device/gemm.h>"),
    ("__global__ void k(cudaTextureObject_t t, float* o) { o[0] = tex1Dfetch<float>(t, 0); }", [],
     "textures and surfaces"),
    ("#include <ATen/cuda/CUDABlas.h>", [], "torch CUDA header <ATen/cuda/CUDABlas.h>"),
    ("int f();", ["-lcublas"], "library cublas"),
    # Forging the verdict: clearing the emulator's status after a racy launch, or swapping the
    # allocator whose guard pages find out-of-bounds accesses.
    ('extern "C" void sc_kb_begin(void);\nvoid f() { sc_kb_begin(); }', [], "internal API"),
    ("void f() { c10::SetCPUAllocator(nullptr, 255); }", [], "replacing torch's allocator"),
    ("void f() { mprotect(nullptr, 0, 3); }", [], "page protections"),
])
def test_unsupported_constructs_are_named_before_building(source: str, ldflags: list[str],
                                                          construct: str) -> None:
    ext = InlineExtension(name="kb_unsup", cuda_sources=[source], cpp_sources=[""], functions=[],
                          extra_ldflags=ldflags)
    with pytest.raises(UnsupportedConstruct) as err:
        translation_unit(ext)
    assert construct in err.value.construct


def test_constructs_named_only_in_comments_or_strings_are_not_refused() -> None:
    src = '// uses cublas? no.\n/* asm( */ const char* s = "cudnnConvolution";\nint f() { return 1; }'
    text, _ = translation_unit(InlineExtension(name="kb_ok", cuda_sources=[src], functions=["f"]))
    assert "PYBIND11_MODULE(kb_ok, m)" in text and "::sc_kb::guard(torch::wrap_pybind_function(f))" in text


def test_user_macros_end_before_the_generated_module_code() -> None:
    src = "#define check() 0\n#define ONE 1\nint f() { return ONE; }"
    text, _ = translation_unit(InlineExtension(name="kb_m", cuda_sources=[src], functions=["f"],
                                               extra_cflags=["-DTWO=2"]))
    module = text[text.index('#line 1 "module.cpp"') - 60:]
    assert "#undef check" in text and "#undef ONE" in text and "#undef TWO" in text
    assert text.index("#undef check") < text.index('#include "sc_kb_module.hpp"')
    assert "sc_kb_module.hpp" in module
    with pytest.raises(UnsupportedConstruct, match="internal header"):
        translation_unit(InlineExtension(name="kb_m", cuda_sources=['#include "sc_kb_module.hpp"'],
                                         functions=[]))


@pytest.mark.parametrize("field", ["name", "functions"])
def test_names_that_are_not_identifiers_are_refused(field: str) -> None:
    kw = {"name": "ok_name", "functions": ["f"]}
    kw[field] = "bad name); system(\"x\"" if field == "name" else ["f); system(\"x\""]
    with pytest.raises(ValueError, match="identifier"):
        translation_unit(InlineExtension(cuda_sources=["int f();"], **kw))
