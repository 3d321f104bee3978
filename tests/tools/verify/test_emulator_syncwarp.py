"""``__syncwarp()`` with and without a mask: compiles, orders shared memory, enforces its mask."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of

pytestmark = [needs_cxx, pytest.mark.slow]


@pytest.fixture(scope="module")
def be(tmp_path_factory):
    return backend(session_cache(tmp_path_factory))


# Each lane writes its slot, syncs, then reads its neighbour's slot. Under the reverse and
# random schedules a missing or non-blocking __syncwarp would read the poisoned arena.
ROTATE = r"""
#include <cuda_runtime.h>
__global__ void rotate(const int* x, int* full, int* half) {
    __shared__ int s[64];
    __shared__ int h[64];
    int t = threadIdx.x, lane = t & 31, base = t - lane;
    s[t] = x[t];
    __syncwarp();
    full[t] = s[base + ((lane + 1) & 31)];
    if (lane < 16) {
        h[t] = 2 * x[t];
        __syncwarp(0x0000ffffu);
        half[t] = h[base + ((lane + 1) & 15)];
    } else {
        half[t] = -1;
    }
}
extern "C" int launch(const int* x, int* full, int* half, cudaStream_t stream) {
    rotate<<<1, 64, 0, stream>>>(x, full, half);
    return (int)cudaGetLastError();
}
"""


def test_bare_and_masked_syncwarp_order_shared_memory(be):
    spec = spec_of("syncwarp", [("x", [64], "input", "int32"), ("full", [64], "output", "int32"),
                                ("half", [64], "output", "int32")])
    x = np.arange(64, dtype=np.int32) * 3 + 1
    r = be.run(ROTATE, spec, {"x": x, "full": np.zeros(64, np.int32), "half": np.zeros(64, np.int32)})
    assert r.status == "ok", r.detail
    t = np.arange(64)
    lane, base = t % 32, t - t % 32
    np.testing.assert_array_equal(r.outputs["full"], x[base + (lane + 1) % 32])
    want_half = np.where(lane < 16, 2 * x[base + (lane + 1) % 16], -1)
    np.testing.assert_array_equal(r.outputs["half"], want_half)


BARE_IN_BRANCH = r"""
#include <cuda_runtime.h>
__global__ void k(int* out) {
    // Lanes 16..31 return; the bare __syncwarp() names all 32 lanes, so it can never complete.
    if ((threadIdx.x & 31) >= 16) return;
    __syncwarp();
    out[threadIdx.x] = 1;
}
extern "C" int launch(int* out, cudaStream_t stream) {
    k<<<1, 32, 0, stream>>>(out);
    return (int)cudaGetLastError();
}
"""


def test_bare_syncwarp_waits_for_the_full_warp(be):
    spec = spec_of("syncwarp_bare", [("out", [32], "output", "int32")])
    r = be.run(BARE_IN_BRANCH, spec, {"out": np.zeros(32, np.int32)})
    assert r.status == "deadlock", (r.status, r.detail)
    assert "__syncwarp" in r.detail


MASK_WITHOUT_CALLER = r"""
#include <cuda_runtime.h>
__global__ void k(int* out) {
    __syncwarp(0x0000ffffu);   // lanes 16..31 call it with a mask that excludes them
    out[threadIdx.x] = 1;
}
extern "C" int launch(int* out, cudaStream_t stream) {
    k<<<1, 32, 0, stream>>>(out);
    return (int)cudaGetLastError();
}
"""


def test_masked_syncwarp_rejects_a_lane_outside_its_mask(be):
    spec = spec_of("syncwarp_mask", [("out", [32], "output", "int32")])
    r = be.run(MASK_WITHOUT_CALLER, spec, {"out": np.zeros(32, np.int32)})
    assert r.status == "crash", (r.status, r.detail)
    assert "__syncwarp" in r.detail and "not in its mask 0x0000ffff" in r.detail
