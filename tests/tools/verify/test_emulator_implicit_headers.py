"""Names nvcc's implicit host headers declare build on the emulator too (issue 27 point 6).

A public KernelBench max-pool judged correct on a GPU initialises its running maximum to
``-FLT_MAX`` without including <cfloat>: nvcc builds it, the emulator did not ("did not build").
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of, uniform  # noqa: E402

# Row maxima from -FLT_MAX, a count clamped with INT_MAX: neither header is included.
ROW_MAX = r"""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float m = -FLT_MAX;
    int lo = i > 3 ? i - 3 : 0, steps = INT_MAX;
    for (int j = lo; j <= i && steps-- > 0; ++j) m = fmaxf(m, x[j]);
    y[i] = m;
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    k<<<(n + 127) / 128, 128, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}"""


@needs_cxx
def test_flt_max_and_int_max_need_no_include(tmp_path_factory: pytest.TempPathFactory) -> None:
    n = 300
    spec = spec_of("rowmax", [("x", ["N"], "input"), ("y", ["N"], "output")], [("n", "N")],
                   {"N": n})
    x = uniform(n, seed=3)
    r = backend(session_cache(tmp_path_factory)).run(ROW_MAX, spec,
                                                     {"x": x, "y": np.zeros(n, np.float32)})
    assert r.status == "ok", f"{r.status}: {r.detail}"
    want = np.array([x[max(0, i - 3):i + 1].max() for i in range(n)], np.float32)
    np.testing.assert_array_equal(r.outputs["y"], want)
