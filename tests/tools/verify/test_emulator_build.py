"""Building emulator libraries: content-hash cache, concurrent builders, schedules, entry point."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of, uniform  # noqa: E402

from structcover.tools.verify.backend import ExecutionBackend  # noqa: E402
from structcover.tools.verify.cpu_backend import CpuEmulatorBackend, run_program  # noqa: E402
from structcover.tools.verify.emulator import (  # noqa: E402
    CXXFLAGS,
    RUNTIME_DIR,
    EmulatorLibrary,
    build_library,
    compiler,
    prepare_runtime,
    runtime_objects,
    runtime_pch,
)
from structcover.tools.verify.rewriter import rewrite  # noqa: E402

pytestmark = [needs_cxx, pytest.mark.slow]

SAXPY = r"""
#include <cuda_runtime.h>
__global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    saxpy<<<(n + 127) / 128, 128, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
"""
SPEC = spec_of("saxpy", [("x", ["N"], "input"), ("y", ["N"], "inout")], [("a", 0.5, "float"), ("n", "N")],
               {"N": 3000})


def test_backend_implements_the_execution_contract():
    be = CpuEmulatorBackend()
    assert isinstance(be, ExecutionBackend) and be.name == "cpu"
    ok, why = be.available()
    assert ok, why


def test_build_is_cached_by_content(tmp_path):
    cpp = rewrite(SAXPY).source
    first = build_library(cpp, tmp_path)
    second = build_library(cpp, tmp_path)
    assert not first.cached and second.cached and first.path == second.path
    other = build_library(cpp.replace("a * x[i]", "x[i] * a"), tmp_path)
    assert other.path != first.path
    assert not list(tmp_path.glob("*.tmp"))


def test_concurrent_builders_of_one_program_agree(tmp_path):
    cpp = rewrite(SAXPY.replace("128", "64")).source
    runtime_objects(tmp_path)  # shared by both builders
    paths, errors = [], []

    def work():
        try:
            paths.append(build_library(cpp, tmp_path).path)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(paths)) == 1
    EmulatorLibrary(paths[0])  # loads


def test_inout_argument_and_float_scalar(tmp_path_factory):
    be = backend(session_cache(tmp_path_factory))
    x, y = uniform(3000, 1), uniform(3000, 2)
    r = be.run(SAXPY, SPEC, {"x": x, "y": y.copy()})
    assert r.status == "ok", r.detail
    np.testing.assert_allclose(r.outputs["y"], np.float32(0.5) * x + y, rtol=1e-6)
    np.testing.assert_array_equal(r.inputs_after["x"], x)


def test_cuda_vector_headers_are_found(tmp_path_factory):
    # A public H100 solution included <vector_types.h> itself and failed to build on the CPU
    # path ("No such file or directory"): the CUDA headers of float4 and make_float4 exist.
    source = SAXPY.replace("#include <cuda_runtime.h>", "#include <cuda_runtime.h>\n"
                           "#include <vector_types.h>\n#include <vector_functions.h>")
    source = source.replace("if (i < n) y[i] = a * x[i] + y[i];",
                            "float4 v = make_float4(a, 0.f, 0.f, 0.f);\n"
                            "    if (i < n) y[i] = v.x * x[i] + y[i];")
    be = backend(session_cache(tmp_path_factory))
    x, y = uniform(3000, 1), uniform(3000, 2)
    r = be.run(source, SPEC, {"x": x, "y": y.copy()})
    assert r.status == "ok", r.detail
    np.testing.assert_allclose(r.outputs["y"], np.float32(0.5) * x + y, rtol=1e-6)


def test_unknown_schedule_is_rejected(tmp_path_factory):
    be = backend(session_cache(tmp_path_factory), schedules=["sideways"])
    with pytest.raises(ValueError, match="schedule 'sideways'"):
        be.run(SAXPY, SPEC, {"x": uniform(3000), "y": uniform(3000)})


def test_run_program_entry_point(tmp_path_factory):
    x, y = uniform(3000, 3), uniform(3000, 4)
    r = run_program(SAXPY, SPEC, {"x": x, "y": y.copy()}, schedules=["reverse"],
                    cache_dir=str(session_cache(tmp_path_factory)))
    assert r.status == "ok" and r.backend == "cpu", r.detail
    np.testing.assert_allclose(r.outputs["y"], np.float32(0.5) * x + y, rtol=1e-6)


def test_runtime_is_built_once_and_programs_reuse_its_precompiled_header(tmp_path):
    objects = prepare_runtime(tmp_path)
    stub = runtime_pch(tmp_path)
    assert stub is not None and stub.with_name(stub.name + ".gch").is_file()
    reused = [*objects, stub.with_name(stub.name + ".gch")]
    stamps = {p: p.stat().st_mtime_ns for p in reused}
    for k in (64, 96):
        build_library(rewrite(SAXPY.replace("128", str(k))).source, tmp_path)
    # Program builds compiled nothing of the runtime again.
    assert {p: p.stat().st_mtime_ns for p in reused} == stamps
    assert sorted(tmp_path.glob("*.o")) == sorted(objects)
    # The precompiled header is valid for programs compiled with the emulator's flags
    # (g++ -H marks a used precompiled header with "!"); otherwise it would be silently ignored.
    if "g++" not in Path(compiler()).name:
        pytest.skip("the -H check is specific to g++")
    prog = tmp_path / "p.cpp"
    prog.write_text(rewrite(SAXPY).source)
    out = subprocess.run([compiler(), *CXXFLAGS, "-I", str(RUNTIME_DIR), "-include", str(stub), "-H",
                          "-fsyntax-only", str(prog)], capture_output=True, text=True, check=True)
    assert f"! {stub}.gch" in out.stderr


_WITH_REAL_CUDART = r"""
import ctypes, sys
import numpy as np
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # as torch does: the real CUDA runtime
sys.path.insert(0, sys.argv[3])
from test_emulator_build import SAXPY, SPEC
from structcover.tools.verify.cpu_backend import run_program
x = np.arange(3000, dtype=np.float32)
r = run_program(SAXPY, SPEC, {"x": x, "y": x.copy()}, cache_dir=sys.argv[2])
print(r.status, r.detail)
"""


def test_programs_keep_their_own_runtime_beside_the_real_libcudart(tmp_path_factory):
    """A process that loaded NVIDIA's libcudart globally (importing torch does) must still run
    emulated programs on the emulator's runtime: without -Bsymbolic their cudaGetLastError
    bound to the real one and every launch failed with cudaErrorInsufficientDriver."""
    import glob
    import site

    found = [p for d in site.getsitepackages()
             for p in glob.glob(f"{d}/nvidia/*/lib/libcudart.so*")]
    if not found:
        pytest.skip("no libcudart wheel (nvidia-cuda-runtime) installed")
    out = subprocess.run([sys.executable, "-c", _WITH_REAL_CUDART, found[0],
                          str(session_cache(tmp_path_factory)), str(Path(__file__).parent)],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok"), out.stdout + out.stderr[-2000:]
