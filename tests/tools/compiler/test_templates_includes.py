"""Template kernels are instantiated on both compile paths; include folders reach both compilers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.config import CompilerSettings
from structcover.tools.compiler.features import compiler_features
from structcover.tools.compiler.includes import inline_includes
from structcover.tools.compiler.launches import _constants, parse
from structcover.tools.compiler.service import compile_program
from structcover.tools.compiler.slicing import resolve_instantiation, slice_device_code

from .conftest import needs_nvcc, needs_nvrtc

# A KernelBench-style source: torch header, the user's own header, a template kernel whose
# tile sizes are a host-local constexpr and a literal. BM * BN floats of shared memory = 1 KiB.
TEMPLATE_PROGRAM = """#include <torch/extension.h>
#include <cstdint>
#include "tile_cfg.cuh"
template <int BM, int BN>
__global__ void sgemm(const float* A, float* C, int n) {
  __shared__ float tile[BM * BN];
  int i = threadIdx.x;
  tile[i] = A[i] * SCALE;
  __syncthreads();
  C[i] = tile[(i + 1) % (BM * BN)] * 2.0f;
}
torch::Tensor forward(torch::Tensor a) {
  constexpr int BM = 32;
  auto c = torch::empty_like(a);
  sgemm<BM, 8><<<1, BM * 8>>>(a.data_ptr<float>(), c.data_ptr<float>(), 4);
  return c;
}
"""

NEVER_INSTANTIATED = """template <int N>
__global__ void scale(float* x) { x[threadIdx.x] *= N; }
extern "C" int launch(float* x, cudaStream_t s) { return 0; }
"""


@pytest.fixture
def headers(tmp_path: Path) -> Path:
    folder = tmp_path / "inc"
    folder.mkdir()
    (folder / "tile_cfg.cuh").write_text("#define SCALE 3.0f\n")
    return folder


def test_instantiation_resolves_constants_and_keeps_types() -> None:
    table = _constants(parse("#define TN 4\nvoid f() { constexpr int BM = 64; }\n"))
    assert resolve_instantiation("sgemm<BM, TN * 2>", table) == "sgemm<64, 8>"
    assert resolve_instantiation("ns::k<float, 128>", table) == "ns::k<float, 128>"
    assert resolve_instantiation("k<const __half*>", table) == "k<const __half*>"
    # A launch inside a template host function: T is not fixed by the source.
    assert resolve_instantiation("k<T, 4>", table) is None
    assert resolve_instantiation("plain", table) is None


def test_nvcc_slice_drops_framework_headers_and_instantiates_after_the_program(
        headers: Path) -> None:
    sliced = slice_device_code(TEMPLATE_PROGRAM, target="nvcc", include_dirs=[headers])
    body = sliced.source.splitlines()[sliced.line_map.prelude_lines:]
    original = TEMPLATE_PROGRAM.splitlines()
    assert "torch/extension.h" not in sliced.source
    assert body[1] == original[1]  # <cstdint> kept: nvcc has the C++ library
    assert body[2] == original[2]  # the user's header, found in the include folder
    for no in range(4, 12):  # the kernel stays on its lines
        assert body[no - 1] == original[no - 1]
    assert sliced.name_expressions == ["sgemm<32, 8>"]
    assert "(void*)&sgemm<32, 8>;" in body[-1]
    assert "typedef int int32_t" not in sliced.source  # would clash with glibc's


def test_nvrtc_slice_drops_unknown_quoted_headers_without_include_dirs() -> None:
    sliced = slice_device_code(TEMPLATE_PROGRAM, target="nvrtc")
    assert '"tile_cfg.cuh"' not in sliced.source
    assert any("tile_cfg.cuh" in d for d in sliced.dropped)


def test_dependent_launch_is_reported_not_instantiated() -> None:
    src = ("template <typename T> __global__ void k(T* x) { x[0] = T(1); }\n"
           "template <typename T> void run(T* x) { k<T><<<1, 32>>>(x); }\n")
    sliced = slice_device_code(src, target="nvcc")
    assert sliced.name_expressions == []
    assert len(sliced.uninstantiated) == 1 and "k<T>" in sliced.uninstantiated[0]


def _template_features(via: str, headers: Path, tmp_path: Path) -> dict:
    settings = CompilerSettings(via=via, cache_dir=tmp_path / "cache")
    feats = compiler_features(TEMPLATE_PROGRAM, settings=settings, include_dirs=[headers])
    assert feats.result.ok, feats.result.errors
    assert feats.result.via == via
    assert [k.kernel for k in feats.kernels] == ["sgemm<32, 8>"]
    # Block size read from the launch through the host-local constexpr.
    assert feats.kernels[0].block_size == 256
    return feats.values()


@needs_nvcc
def test_template_kernel_through_nvcc_alone(headers: Path, tmp_path: Path) -> None:
    values = _template_features("nvcc", headers, tmp_path)
    assert values["compile.kernels_emitted"] == 1.0
    assert values["ptxas.registers"] > 0
    assert values["ptxas.smem_bytes"] == 32 * 8 * 4
    assert values["ptxas.barriers"] == 1.0
    assert values["compile.missing_reason"] == ""


@needs_nvrtc
def test_template_kernel_through_nvrtc(headers: Path, tmp_path: Path) -> None:
    values = _template_features("nvrtc", headers, tmp_path)
    assert values["compile.kernels_emitted"] == 1.0
    assert values["ptxas.smem_bytes"] == 32 * 8 * 4
    assert values["ptxas.registers"] > 0


@needs_nvcc
def test_missing_header_without_include_fails_with_the_header_named(tmp_path: Path) -> None:
    result = compile_program(TEMPLATE_PROGRAM, via="nvcc", cache_dir=tmp_path / "cache")
    assert not result.ok
    assert "tile_cfg.cuh" in result.log or "SCALE" in result.log


@needs_nvcc
@pytest.mark.parametrize("via", ["nvcc", "nvrtc"])
def test_no_kernel_emitted_is_missing_with_a_reason(via: str, tmp_path: Path) -> None:
    from structcover.tools.compiler import toolchain

    if via == "nvrtc" and not toolchain.nvrtc_available():
        pytest.skip("NVRTC not importable")
    settings = CompilerSettings(via=via, cache_dir=tmp_path / "cache")
    feats = compiler_features(NEVER_INSTANTIATED, settings=settings)
    values = feats.values()
    assert feats.result.ok
    assert values["compile.kernels_emitted"] == 0.0
    assert math.isnan(values["ptxas.registers"]) and math.isnan(values["ptx.ld_global"])
    assert "template kernel scale" in values["compile.missing_reason"]


def test_bad_include_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no-such-dir"):
        compile_program("__global__ void k() {}", include_dirs=[tmp_path / "no-such-dir"],
                        cache_dir=tmp_path / "cache")


@needs_nvcc
def test_compile_and_features_commands_take_include(headers: Path, tmp_path: Path) -> None:
    src = tmp_path / "prog.cu"
    src.write_text(TEMPLATE_PROGRAM)
    res = CliRunner().invoke(app, ["compile", str(src), "--via", "nvcc", "--include",
                                   str(headers), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["kernels_emitted"] == 1 and out["kernels"][0]["smem_bytes"] == 1024
    res = CliRunner().invoke(app, ["compile", str(src), "--via", "nvcc", "--json"])
    assert res.exit_code == 1  # the header is not found without --include
    res = CliRunner().invoke(app, ["features", str(src), "--compiler", "--include",
                                   str(headers), "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    values = json.loads(res.stdout)[0]["values"]
    assert values["ptxas.smem_bytes"] == 1024 and values["compile.kernels_emitted"] == 1


def test_inline_includes_pastes_found_headers_once(headers: Path) -> None:
    (headers / "a.cuh").write_text('#include "tile_cfg.cuh"\n#define A 1\n')
    src = '#include "a.cuh"\n#include "tile_cfg.cuh"\n#include <cuda_fp16.h>\nint x = A;\n'
    out = inline_includes(src, [headers])
    assert out.count("#define SCALE 3.0f") == 1
    assert "#define A 1" in out and "#include <cuda_fp16.h>" in out
    assert inline_includes(src, []) == src


def test_verify_takes_include_for_every_backend(tmp_path: Path) -> None:
    from structcover.tools.data.corpus import load_corpus

    family = next(f for f in load_corpus() if f.name == "vector_add")
    folder = tmp_path / "inc"
    folder.mkdir()
    (folder / "va_cfg.cuh").write_text("#define VA_SCALE 1.0f\n")
    cand = tmp_path / "cand.cu"
    cand.write_text('#include "va_cfg.cuh"\n'
                    + family.reference.source.replace("a[i] + b[i]", "VA_SCALE * a[i] + b[i]"))
    run = CliRunner().invoke
    for backend in ("compile-only", "cpu"):
        with_inc = run(app, ["verify", str(cand), "--task", "vector_add", "--backend", backend,
                             "--include", str(folder), "--json"])
        assert with_inc.exit_code == 0, with_inc.output
        verdict = json.loads(with_inc.stdout)
        assert verdict["compiled"] is True
        if backend == "cpu":
            assert verdict["equivalent"] is True
        without = run(app, ["verify", str(cand), "--task", "vector_add", "--backend", backend,
                            "--json"])
        # Without the folder the header is missing: no compile, no equivalence.
        key = "compiled" if backend == "compile-only" else "equivalent"
        assert json.loads(without.stdout)[key] is not True
    bad = run(app, ["verify", str(cand), "--task", "vector_add", "--include",
                    str(tmp_path / "missing")])
    assert bad.exit_code != 0 and "no such directory" in bad.output
