"""Executed-operation counters of the CPU emulator's profile build (issue 26): counted by hand.

The rule (runtime/sc_prof.hpp, docs/EMULATOR.md "Profiles"): one count per thread per executed
arithmetic operator, compound assignment, ``++`` / ``--`` or math call of device code, in the
class of the C++ type of its result (float fp32, double fp64, __half fp16, __nv_bfloat16 bf16,
integers and pointers int); a product written directly as an operand of ``+`` / ``-`` (or the
right side of ``+=`` / ``-=``) is one ``fma`` of its class. Comparisons are not counted. The
usual index ``blockIdx.x * blockDim.x + threadIdx.x`` is one integer fma (IMAD) per thread.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import needs_cxx, session_cache, spec_of

from structcover.config import VerifySettings
from structcover.tools.verify.jailed_cpu import run_many, run_profiled
from structcover.tools.verify.profile import OPS, profile_program

pytestmark = [needs_cxx, pytest.mark.slow]


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return VerifySettings(cache_dir=session_cache(tmp_path_factory))


def _ops(total: dict) -> dict[str, int]:
    """The nonzero op counters."""
    return {k: total[k] for k in OPS if total[k]}


VADD = r"""
#include <cuda_runtime.h>
__global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t s) {
    vadd<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
"""


def test_vadd(settings):
    # n = 300 in blocks of 256: 2 blocks, 512 threads, each computes its index (1 int fma);
    # the 300 with i < n do one fp32 add. The host's `(n + 255) / 256` is not device code.
    spec = spec_of("vadd", [("a", [300], "input"), ("b", [300], "input"), ("c", [300], "output")],
                   [("n", 300)])
    r = profile_program(VADD, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 512, "ops_fp32_add": 300}
    assert _ops(r.kernels["vadd"]) == _ops(r.total)
    assert r.launches[0]["ops_fp32_add"] == 300
    assert r.per_output_element["ops_fp32_add"] == pytest.approx(1.0)


SAXPY = r"""
#include <cuda_runtime.h>
__global__ void saxpy(const float* x, const float* b, float* y, float* z, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + b[i];
        z[i] = (a * x[i]) + b[i];
    }
}
extern "C" int launch(const float* x, const float* b, float* y, float* z, float a, int n,
                      cudaStream_t s) {
    saxpy<<<(n + 127) / 128, 128, 0, s>>>(x, b, y, z, a, n);
    return (int)cudaGetLastError();
}
"""


def test_saxpy_fma_and_parenthesized_product(settings):
    # n = 100, one block of 128: 128 index IMADs. `a * x[i] + b[i]` is one fp32 fma per
    # element (100); the parenthesized `(a * x[i]) + b[i]` is counted as a mul and an add (the
    # rule fuses only a product written directly as the operand), 100 each.
    spec = spec_of("saxpy", [("x", [100], "input"), ("b", [100], "input"), ("y", [100], "output"),
                             ("z", [100], "output")], [("a", 2.5, "float"), ("n", 100)])
    r = profile_program(SAXPY, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 128, "ops_fp32_fma": 100, "ops_fp32_mul": 100,
                             "ops_fp32_add": 100}


DOUBLE = r"""
#include <cuda_runtime.h>
__global__ void dbl(const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = sqrt(x[i]) / 3.0 - x[i] * x[i];
}
extern "C" int launch(const double* x, double* y, int n, cudaStream_t s) {
    dbl<<<1, 64, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}
"""


def test_double_kernel(settings):
    # 64 threads, all with i < n = 64: per thread 1 int fma (index), and in double: sqrt (a
    # special function), `/ 3.0` (a div) and `q - x * x` (a product feeding a difference: one
    # fp64 fma). Nothing is fp32.
    spec = spec_of("dbl", [("x", [64], "input", "float64"), ("y", [64], "output", "float64")],
                   [("n", 64)])
    r = profile_program(DOUBLE, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 64, "ops_fp64_special": 64, "ops_fp64_div": 64,
                             "ops_fp64_fma": 64}


FOLDED = r"""
#include <cuda_runtime.h>
#include <cmath>
__global__ void gelu_like(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float k = sqrt(2.0f / M_PI) * (1.0f / 3);
        y[i] = v * k + (2.0f * 3.0f) + tanhf(0.5f);
    }
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    gelu_like<<<1, 64, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}
"""


def test_constant_expressions_are_folded_not_counted(settings):
    # nvcc folds `sqrt(2.0f / M_PI) * (1.0f / 3)`, `(2.0f * 3.0f)` and `tanhf(0.5f)` at compile
    # time (math library calls included: no MUFU or DFMA in the SASS), so per thread only the
    # index (1 int fma), `v * k + c` (a product feeding a sum: 1 fp32 fma) and the `+` of the
    # folded tanhf (1 fp32 add) run; the double `sqrt` and divide are not fp64 work.
    spec = spec_of("gelu_like", [("x", [64], "input"), ("y", [64], "output")], [("n", 64)])
    r = profile_program(FOLDED, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 64, "ops_fp32_fma": 64, "ops_fp32_add": 64}


HALF = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void halfk(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half x = __float2half(a[i]), y = __float2half(b[i]);
        __half s = __hadd(x, y);
        __half p = __hmul(s, y);
        __half f = p * x + s;
        __nv_bfloat16 q = __float2bfloat16(a[i]) * __float2bfloat16(b[i]);
        c[i] = __half2float(f) + __bfloat162float(q);
    }
}
extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t s) {
    halfk<<<1, 32, 0, s>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
"""


def test_half_and_bfloat16(settings):
    # 32 threads, n = 20 active. Per active thread: __hadd (fp16 add), __hmul (fp16 mul),
    # `p * x + s` on __half operators (one fp16 fma), a bf16 product (bf16 mul), and the final
    # float `+` (fp32 add). Conversions are not counted. Index: 32 int fmas.
    spec = spec_of("halfk", [("a", [20], "input"), ("b", [20], "input"), ("c", [20], "output")],
                   [("n", 20)])
    r = profile_program(HALF, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 32, "ops_fp16_add": 20, "ops_fp16_mul": 20,
                             "ops_fp16_fma": 20, "ops_bf16_mul": 20, "ops_fp32_add": 20}


INTS = r"""
#include <cuda_runtime.h>
__global__ void ints(const int* a, int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = a[i];
        int w = v;
        w += 3;
        w <<= 1;
        w *= 5;
        b[i] = ((v << 2) ^ (v >> 1)) % 7 + v / 3 - w;
    }
}
extern "C" int launch(const int* a, int* b, int n, cudaStream_t s) {
    ints<<<2, 64, 0, s>>>(a, b, n);
    return (int)cudaGetLastError();
}
"""


def test_integer_kernel(settings):
    # 128 threads (2 blocks of 64), n = 100 active. Per active thread: `+= 3` (add), `<<= 1`
    # (logic), `*= 5` (mul), then `<<`, `>>`, `^` (3 logic), `%` and `/` (2 div), `+` and `-`
    # (2 add). Index: 128 int fmas. So add 300, logic 400, mul 100, div 200.
    spec = spec_of("ints", [("a", [100], "input", "int32"), ("b", [100], "output", "int32")],
                   [("n", 100)])
    r = profile_program(INTS, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 128, "ops_int_add": 300, "ops_int_logic": 400,
                             "ops_int_mul": 100, "ops_int_div": 200}


LOOP = r"""
#include <cuda_runtime.h>
__global__ void loop(const float* x, float* y, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < iters; ++k)
        acc += expf(x[i]) * 0.5f;
    float r = acc + __expf(x[i]) + tanhf(x[i]);
    r *= 2.0f;
    r /= 3.0f;
    y[i] = r;
}
extern "C" int launch(const float* x, float* y, int n, int iters, cudaStream_t s) {
    loop<<<(n + 31) / 32, 32, 0, s>>>(x, y, n, iters);
    return (int)cudaGetLastError();
}
"""


def test_special_functions_in_a_loop(settings):
    # n = 96: 3 blocks of 32, all active; iters = 5. Per thread: index (1 int fma); the loop
    # runs 5 times: `++k` (int add), expf (special) and `acc += e * 0.5f` (a product into
    # += : one fp32 fma); then __expf and tanhf (2 special), two fp32 adds, `*= 2` (mul),
    # `/= 3` (div). Totals: int fma 96, int add 480, special 96 * 7 = 672, fma 480, add 192,
    # mul 96, div 96.
    spec = spec_of("loop", [("x", [96], "input"), ("y", [96], "output")],
                   [("n", 96), ("iters", 5)])
    r = profile_program(LOOP, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 96, "ops_int_add": 480, "ops_fp32_special": 672,
                             "ops_fp32_fma": 480, "ops_fp32_add": 192, "ops_fp32_mul": 96,
                             "ops_fp32_div": 96}


@pytest.mark.parametrize("source,tensors,scalars", [
    (LOOP, [("x", [96], "input"), ("y", [96], "output")], [("n", 96), ("iters", 5)]),
    (DOUBLE, [("x", [64], "input", "float64"), ("y", [64], "output", "float64")], [("n", 64)]),
    (HALF, [("a", [20], "input"), ("b", [20], "input"), ("c", [20], "output")], [("n", 20)]),
    (INTS, [("a", [100], "input", "int32"), ("b", [100], "output", "int32")], [("n", 100)]),
], ids=["loop", "double", "half", "ints"])
def test_counting_changes_no_result(settings, source, tensors, scalars):
    # The profile build computes the very expressions it counts: the same bits as the plain
    # build's forward run.
    from structcover.tools.verify.inputs import make_inputs

    spec = spec_of("k", tensors, scalars)
    inputs = make_inputs(spec, 3, spec.sizes)
    prof, _, _ = run_profiled(source, spec, inputs, settings=settings)
    plain = run_many(source, spec, [inputs], settings=settings, schedules=("forward",))[0]
    assert prof.status == plain.status == "ok", (prof.detail, plain.detail)
    for t in tensors:
        if t[2] == "output":
            np.testing.assert_array_equal(prof.outputs[t[0]], plain.outputs[t[0]])


HOSTDEV = r"""
#include <cuda_runtime.h>
__host__ __device__ int cdiv(int a, int b) { return (a + b - 1) / b; }
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * (float)cdiv(n, 32);
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    scale<<<cdiv(n, 64), 64, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}
"""


def test_host_device_function_counts_only_on_the_device(settings):
    # n = 64: one block of 64 threads, all active. Per thread: the index (int fma), cdiv's
    # `a + b - 1` (2 int adds) and `/ b` (int div), and the float product (fp32 mul). The
    # launcher's own cdiv call runs on the host: counted into a sink, not reported.
    spec = spec_of("scale", [("x", [64], "input"), ("y", [64], "output")], [("n", 64)])
    r = profile_program(HOSTDEV, spec, settings=settings)
    assert _ops(r.total) == {"ops_int_fma": 64, "ops_int_add": 128, "ops_int_div": 64,
                             "ops_fp32_mul": 64}
