"""The link check: a program's object may not reference the runtime's private symbols, thread
creation, signal handlers, memory protection or the dynamic loader, however the source spells it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of, uniform  # noqa: E402

from structcover.tools.verify.emulator import RUNTIME_DIR, runtime_objects  # noqa: E402
from structcover.tools.verify.link_check import (  # noqa: E402
    private_symbols,
    refused,
    undefined_in,
)

pytestmark = [needs_cxx, pytest.mark.slow]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return session_cache(tmp_path_factory)


@pytest.fixture(scope="module")
def private(cache):
    return private_symbols(tuple(runtime_objects(cache)), RUNTIME_DIR)


def test_private_set_holds_control_api_and_internals_not_the_public_api(private):
    for name in ("sc_configure", "sc_reset", "sc_status", "sc_device_alloc", "_ZN2sc1GEv"):
        assert name in private, name
    for name in ("cudaMalloc", "cudaGetLastError", "_ZN2sc12syncthreadsEiii",
                 "_ZN2sc9rmw_noteEPVKvi"):
        assert name not in private, name


def test_refused_names_each_kind_and_allows_ordinary_symbols(private):
    listing = "\n".join(f"{n} U" for n in (
        "sc_configure", "_ZN2sc1GEv", "pthread_create", "dlsym", "sigaction", "mprotect",
        "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
        "memcpy", "cudaMalloc", "_ZN2sc11launch_implE4dim3S0_mPFvPvES1_b", "expf"))
    reasons = refused(undefined_in(listing), private)
    text = "\n".join(reasons)
    assert "private symbol `sc_configure`" in text and "private symbol `sc::G()`" in text
    assert "`pthread_create`: starts a thread" in text and "std::thread::_M_start_thread" in text
    assert "`dlsym`" in text and "`sigaction`" in text and "`mprotect`" in text
    assert len(reasons) == 7, reasons


HONEST = r"""
#include <cuda_runtime.h>
#include <algorithm>
__device__ float twice(float v) { return 2.0f * v; }
__global__ void k(const float* x, float* y, int n) {
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = twice(s[threadIdx.x]) + fminf(0.0f, expf(-100.0f));
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    float* tmp;
    cudaMalloc(&tmp, std::max(n, 1) * sizeof(float));
    cudaFree(tmp);
    k<<<(n + 127) / 128, 128, 0, s>>>(x, y, n);
    cudaStreamSynchronize(s);
    return (int)cudaGetLastError();
}
"""


def test_an_honest_program_links_and_a_private_call_is_rejected_before_running(cache):
    spec = spec_of("scale", [("x", ["N"], "input"), ("y", ["N"], "output")], [("n", "N")],
                   {"N": 300})
    be = backend(cache)
    x = uniform(300, seed=1)
    inputs = {"x": x, "y": x * 0}
    ok = be.run(HONEST, spec, inputs)
    assert ok.status == "ok", ok.detail
    bad = HONEST.replace('extern "C" int launch',
                         'extern "C" void (sc_reset)(void);\nextern "C" int launch').replace(
        "cudaFree(tmp);", "cudaFree(tmp); if (n < 0) (sc_reset)();")
    r = be.run(bad, spec, inputs)
    assert r.status == "rejected" and "private symbol `sc_reset`" in r.detail, r.detail
