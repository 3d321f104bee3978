"""Emulator holes closed in issue 27 item 4: every out-of-bounds access faults whatever the
value is used for, uninitialised locals hold the poison, host threads count as host access.

The attacks themselves are in the adversarial suite (tests/data/adversarial/cheating/emu_*.cu,
run through the whole verifier by test_adversarial.py); here are the rewrite's unit tests, the
honest programs the new checks must leave alone, and the run-time thread count, which the link
check normally pre-empts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of, uniform  # noqa: E402

from structcover.tools.verify.rewriter import rewrite  # noqa: E402


def _body(src: str) -> str:
    return rewrite(src).source


@pytest.mark.parametrize("decl,poisoned", [
    ("float acc;", ["acc"]),
    ("float part[4];", ["part"]),
    ("int i, j = 0;", ["i"]),
    ("float4 v; unsigned mask;", ["v", "mask"]),
    ("static float keep;", []),
    ("float a = 0.0f;", []),
    ("int a = f(), b;", []),
    ("float& r = x[0];", []),
])
def test_uninitialised_device_locals_get_the_poison(decl, poisoned):
    src = ("__device__ int f() { return 1; }\n"
           f"__global__ void k(float* x) {{ {decl} x[0] = 1.0f; }}\n")
    out = _body(src)
    for name in poisoned:
        assert f"::sc::poison_local({name});" in out, out
    assert out.count("::sc::poison_local(") == len(poisoned), out


def test_host_code_loop_initialisers_and_shared_memory_are_not_poisoned():
    src = ("__global__ void k(float* x) { __shared__ float s[4]; for (int i; false;) {}\n"
           "  if (x) { float t; t = 1.0f; x[0] = t + s[0]; } }\n"
           "extern \"C\" int launch(float* x) { float host_only; (void)host_only; return 0; }\n")
    out = _body(src)
    assert out.count("::sc::poison_local(") == 1 and "poison_local(t);" in out, out
    assert out.count("\n") == src.count("\n") + 2  # the header lines only: #line stays right


def test_the_profile_variant_is_not_poisoned():
    assert "poison_local" not in rewrite("__global__ void k(float* x) { float a; a = 1; x[0] = a; }",
                                         profile=True).source


VEC = [("x", ["N"], "input"), ("y", ["N"], "output")]

HONEST = {
    # float4 body with a scalar tail on an odd size: the buffer stays 16-byte aligned (the trap
    # page lets its last bytes through), and its in-bounds tail reads do not fault.
    "float4 with a tail, odd size": r"""
#include <cuda_runtime.h>
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x *= 2.0f; v.y *= 2.0f; v.z *= 2.0f; v.w *= 2.0f;
        reinterpret_cast<float4*>(y)[i] = v;
    }
    if (i < n - 4 * n4) y[4 * n4 + i] = 2.0f * x[4 * n4 + i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    k<<<(n / 4 + 127) / 128 + 1, 128, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}""",
    # Locals declared without an initializer but written before they are read, a struct with
    # default member initializers (not poisoned), a volatile local and a local array.
    "locals written before read": r"""
#include <cuda_runtime.h>
struct Acc { float sum = 0.0f; int count = 0; };
__device__ float twice(float v) { float r; r = v + v; return r; }
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float t; volatile float w; float arr[3];
    Acc acc;
    if (i >= n) return;
    for (int j = 0; j < 3; ++j) arr[j] = (float)j;
    t = x[i]; w = arr[2] - 2.0f;
    acc.sum += twice(t); acc.count++;
    y[i] = acc.sum + w + (float)(acc.count - 1);
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    k<<<(n + 127) / 128, 128, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}""",
}


@pytest.fixture(scope="module")
def be(tmp_path_factory):
    return backend(session_cache(tmp_path_factory))


@needs_cxx
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HONEST))
@pytest.mark.parametrize("n", [1001, 4096])
def test_honest_program_still_passes(be, name, n):
    spec = spec_of("scale", VEC, [("n", "N")], {"N": n})
    x = uniform(n, seed=5)
    r = be.run(HONEST[name], spec, {"x": x, "y": np.zeros(n, np.float32)})
    assert r.status == "ok", f"{name}: {r.status}: {r.detail}"
    np.testing.assert_allclose(r.outputs["y"], 2.0 * x, rtol=1e-6)


THREAD_BY_LIBRARY = r"""
#include <cuda_runtime.h>
#include <signal.h>
#include <time.h>
static void body(union sigval v) { *static_cast<volatile int*>(v.sival_ptr) = 1; }
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    static int flag = 0;
    struct sigevent sev = {};
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = body;
    sev.sigev_value.sival_ptr = &flag;
    timer_t t;
    if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0) return 77;  // no thread: nothing to see
    k<<<(n + 127) / 128, 128, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}"""


#: Runs THREAD_BY_LIBRARY once in a fresh interpreter and prints the verdict as JSON.
_FRESH_RUN = """
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[1])
from emu_helpers import backend, spec_of, uniform
from test_emulator_holes import THREAD_BY_LIBRARY, VEC
spec = spec_of("scale", VEC, [("n", "N")], {"N": 256})
x = uniform(256, seed=2)
r = backend(Path(sys.argv[2])).run(THREAD_BY_LIBRARY, spec, {"x": x, "y": np.zeros(256, np.float32)})
print(json.dumps({"status": r.status, "detail": r.detail}))
"""


@needs_cxx
@pytest.mark.slow
def test_a_thread_started_inside_a_library_call_is_host_access(tmp_path_factory):
    # timer_create(SIGEV_THREAD) starts glibc's helper thread: no thread entry in the object,
    # so the link check lets it through and the run-time thread count must see it. The count
    # is sound in the jailed runner, a process of its own whose only other threads are the
    # runtime's workers; in a pytest worker other tests' threads come and go (one ending
    # between the baseline and the check hides the new one), and glibc's helper thread lives
    # as long as the process (a second run would count it in the baseline). So the run gets
    # an interpreter of its own, as the runner does.
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-c", _FRESH_RUN, str(Path(__file__).parent),
                          str(session_cache(tmp_path_factory))],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if r["status"] == "launch-error" and "77" in r["detail"]:
        pytest.skip("timer_create failed here, so the attack started no thread")
    assert r["status"] == "crash" and "host code started a thread of its own" in r["detail"], r
