"""Light CPU builds (boxed entries, no pybind11 in the user's translation unit) behave as full
ones: the same calls give the same values, the same exception types and the same emulator
faults; text a light build cannot take is built in full."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench import cpu_build  # noqa: E402
from structcover.tools.kernelbench.candidate import InlineExtension  # noqa: E402
from structcover.tools.verify.jail import jail_status  # noqa: E402

pytestmark = [pytest.mark.kernelbench,
              pytest.mark.skipif(not jail_status()[0], reason="no compiler jail (bubblewrap) here")]

CUDA = r"""
#include <torch/extension.h>
#include <tuple>
#include <vector>

__global__ void scale_kernel(const float* x, float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}
__global__ void overrun_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i + 1];  // reads one past the end for the last thread
}

torch::Tensor scale(torch::Tensor x, double s, int64_t repeat, bool negate) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    float f = static_cast<float>(negate ? -s * repeat : s * repeat);
    scale_kernel<<<(n + 127) / 128, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), f, n);
    return y;
}
std::vector<torch::Tensor> halves(const torch::Tensor& x) {
    return {x.slice(0, 0, x.size(0) / 2).clone(), x.slice(0, x.size(0) / 2).clone()};
}
std::tuple<torch::Tensor, int64_t, double> shaped(torch::Tensor x, std::vector<int64_t> shape,
                                                  c10::optional<torch::Tensor> bias) {
    auto y = x.reshape(shape).clone();
    if (bias.has_value()) y.add_(*bias);
    return {y, y.dim(), 0.5};
}
torch::Tensor sized(torch::Tensor x, at::IntArrayRef shape) { return torch::zeros(shape, x.options()); }
torch::Tensor as_type(torch::Tensor x, at::ScalarType t) { return x.to(t); }
void fill(torch::Tensor x, float v) { x.fill_(v); }
torch::Tensor checked(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "checked: expected 2-D, got ", x.dim(), "-D");
    return x;
}
torch::Tensor overrun(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    overrun_kernel<<<1, n>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
CPP = """torch::Tensor scale(torch::Tensor x, double s, int64_t repeat, bool negate);
std::vector<torch::Tensor> halves(const torch::Tensor& x);
std::tuple<torch::Tensor, int64_t, double> shaped(torch::Tensor x, std::vector<int64_t> shape,
                                                  c10::optional<torch::Tensor> bias);
torch::Tensor sized(torch::Tensor x, at::IntArrayRef shape);
torch::Tensor as_type(torch::Tensor x, at::ScalarType t);
void fill(torch::Tensor x, float v);
torch::Tensor checked(torch::Tensor x);
torch::Tensor overrun(torch::Tensor x);
"""
FUNCTIONS = ["scale", "halves", "shaped", "sized", "as_type", "fill", "checked", "overrun"]

#: Runs in a child: every call on one module, each result or exception described as JSON.
CALLER = textwrap.dedent("""
    import importlib.util, json, sys, torch
    spec = importlib.util.spec_from_file_location(sys.argv[2], sys.argv[1])
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    x = torch.arange(8, dtype=torch.float32)

    def describe(value):
        if isinstance(value, torch.Tensor):
            return ["tensor", str(value.dtype), list(value.shape), value.double().sum().item()]
        if isinstance(value, (list, tuple)):
            return [type(value).__name__, [describe(v) for v in value]]
        return [type(value).__name__, value]

    calls = {
        "scale": lambda: m.scale(x, 1.5, 2, False),
        "scale_int_for_float": lambda: m.scale(x, 2, 1, True),
        "scale_float_for_int": lambda: m.scale(x, 1.0, 2.5, False),
        "scale_few_args": lambda: m.scale(x, 1.0),
        "scale_keyword": lambda: m.scale(x, 1.0, 1, negate=True),
        "scale_str_for_tensor": lambda: m.scale("x", 1.0, 1, False),
        "halves": lambda: m.halves(x),
        "shaped_none": lambda: m.shaped(x, [2, 4], None),
        "shaped_bias": lambda: m.shaped(x, (4, 2), torch.ones(2)),
        "shaped_size": lambda: m.shaped(x, torch.Size([8]), None),
        "sized": lambda: m.sized(x, [3, 2]),
        "as_type": lambda: m.as_type(x, torch.float64),
        "fill": lambda: (m.fill(x.clone(), 3), None)[1],
        "checked_ok": lambda: m.checked(x.view(2, 4)),
        "checked_fails": lambda: m.checked(x),
        "overrun": lambda: m.overrun(x),
    }
    out = {}
    for name, call in calls.items():
        try:
            out[name] = ["returned", describe(call())]
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            out[name] = ["raised", type(exc).__name__, isinstance(exc, RuntimeError), first]
    out["status"] = list(m._sc_status()[:1])
    print(json.dumps(out))
""")


def _ext() -> InlineExtension:
    return InlineExtension(name="kb_light_test", cpp_sources=[CPP], cuda_sources=[CUDA],
                           functions=FUNCTIONS)


def _call(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CALLER, str(path), "kb_light_test"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory, kb_emulator_cache: Path) -> dict:
    """The same extension built light and built full, each called in a child."""
    cache = kb_emulator_cache
    light_dir, full_dir = tmp_path_factory.mktemp("light"), tmp_path_factory.mktemp("full")
    light = cpu_build.build_cpu_extension(_ext(), light_dir, cache_dir=cache)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpu_build, "light_possible", lambda ext: False)
        full = cpu_build.build_cpu_extension(_ext(), full_dir, cache_dir=cache)
    return {"light": _call(light), "full": _call(full),
            "light_build": json.loads((light_dir / "build.json").read_text()),
            "full_build": json.loads((full_dir / "build.json").read_text())}


def test_light_and_full_builds_give_the_same_results_and_exception_types(both: dict) -> None:
    assert both["light_build"]["light"] and not both["full_build"]["light"]
    # No -D/-U flags: the emulator's headers and the boxed convention come precompiled.
    assert both["light_build"]["precompiled"] == "device"
    assert both["full_build"]["precompiled"] == "full"
    light, full = both["light"], both["full"]
    assert light.keys() == full.keys()
    for name in light:
        if light[name][0] == "raised":
            # Same exception type; pybind11's TypeError text lists the overloads, ours names
            # the argument, so only the kind is compared.
            assert light[name][:3] == full[name][:3], name
        else:
            assert light[name] == full[name], name


def test_light_build_values_are_the_functions_values(both: dict) -> None:
    calls = both["light"]
    assert calls["scale"] == ["returned", ["tensor", "torch.float32", [8], 3.0 * 28]]
    assert calls["scale_int_for_float"][1][3] == -2.0 * 28          # an int where a float goes
    for name in ("scale_float_for_int", "scale_few_args", "scale_keyword", "scale_str_for_tensor"):
        assert calls[name][:2] == ["raised", "TypeError"], name
    assert calls["halves"][1][0] == "list" and len(calls["halves"][1][1]) == 2
    tensor, dims, half = calls["shaped_bias"][1][1]
    assert calls["shaped_bias"][1][0] == "tuple" and dims == ["int", 2] and half == ["float", 0.5]
    assert tensor[2] == [4, 2] and tensor[3] == 28 + 8
    assert calls["sized"][1][2] == [3, 2] and calls["as_type"][1][1] == "torch.float64"
    assert calls["fill"] == ["returned", ["NoneType", None]]
    assert calls["checked_fails"][:3] == ["raised", "RuntimeError", True]
    assert "expected 2-D, got 1-D" in calls["checked_fails"][3]


def test_light_build_raises_emulator_faults(both: dict) -> None:
    kind, name, is_runtime_error, message = both["light"]["overrun"]
    assert (kind, name, is_runtime_error) == ("raised", "EmulatorFault", True)
    assert message.startswith("crash:") and "out-of-bounds" in message


def test_text_that_needs_pybind_is_built_in_full(tmp_path: Path,
                                                 kb_emulator_cache: Path) -> None:
    uses_py = InlineExtension(name="kb_py", cpp_sources=["int f();"], functions=["f"],
                              cuda_sources=["#include <torch/extension.h>\n"
                                            "int f() { return (int)pybind11::int_(3); }"])
    assert not cpu_build.light_possible(uses_py)
    assert cpu_build.light_possible(_ext())
    # No `functions`: the user's own PYBIND11_MODULE (full); a torch::nn text: full at once.
    assert not cpu_build.light_possible(InlineExtension(name="kb_own", cpp_sources=["int f();"],
                                                        cuda_sources=["int f() { return 1; }"]))
    # Text that passes the token check but needs a header torch/types.h lacks is built again in
    # full, and the light failure is kept for the next build of the same text.
    needs_more = InlineExtension(
        name="kb_more", cpp_sources=["int f();"], functions=["f"],
        cuda_sources=["#include <torch/extension.h>\n"
                      "int f() { return (int)torch::cuda::device_count() + 1; }"])
    cache = kb_emulator_cache
    cpu_build.build_cpu_extension(needs_more, tmp_path, cache_dir=cache)
    info = json.loads((tmp_path / "build.json").read_text())
    assert not info["light"] and "device_count" in info["light_error"]


@pytest.mark.skipif(shutil.which("clang++") is None or shutil.which("g++") is None,
                    reason="needs both clang++ and g++")
def test_light_builds_by_clang_and_by_gxx_give_the_same_results(
        tmp_path_factory: pytest.TempPathFactory, kb_emulator_cache: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # clang is the light builds' compiler when present (its PCH instantiates torch's templates
    # once); g++ is the fallback. Same module, same calls, same answers and faults.
    cache = kb_emulator_cache
    calls = {}
    for cxx in ("clang++", "g++"):
        monkeypatch.setenv("STRUCTCOVER_KB_LIGHT_CXX", cxx)
        folder = tmp_path_factory.mktemp(cxx.replace("+", "x"))
        calls[cxx] = _call(cpu_build.build_cpu_extension(_ext(), folder, cache_dir=cache))
        built = json.loads((folder / "build.json").read_text())
        assert built["light"] and built["compiler"] == cxx
    assert calls["clang++"] == calls["g++"]


def test_a_symbol_no_library_defines_fails_the_import_by_name(tmp_path: Path,
                                                              kb_emulator_cache: Path) -> None:
    # A light build links without naming torch's libraries (the module library depends on
    # them): a shared library may be linked with undefined symbols, so what no library
    # defines must still fail where the candidate is imported, naming the symbol.
    missing = InlineExtension(
        name="kb_missing", cpp_sources=["torch::Tensor f(torch::Tensor x);"], functions=["f"],
        cuda_sources=["#include <torch/extension.h>\n"
                      "void sc_test_never_defined(float* p);\n"
                      "torch::Tensor f(torch::Tensor x) {\n"
                      "    sc_test_never_defined(x.data_ptr<float>());\n"
                      "    return x; }\n"])
    path = cpu_build.build_cpu_extension(missing, tmp_path, cache_dir=kb_emulator_cache)
    assert json.loads((tmp_path / "build.json").read_text())["light"]
    proc = subprocess.run([sys.executable, "-c", CALLER, str(path), "kb_missing"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "sc_test_never_defined" in proc.stderr
    if shutil.which("readelf"):
        needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                                check=True).stdout
        assert "libtorch_cpu" not in needed and "libsc_kbpy" in needed
