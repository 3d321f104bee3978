"""The source rewriter: launches, __shared__ declarations, unsupported constructs, line mapping."""

from __future__ import annotations

import pytest

from structcover.tools.verify.rewriter import rewrite

KERNEL = """#include <cuda_runtime.h>
template <int T>
__global__ void k(float* a, int n) {
    __shared__ float tile[T][T + 1], total;
    extern __shared__ __align__(16) float dyn[];
    volatile __shared__ int flag;
    tile[0][0] = a[0]; total = 1.0f; dyn[0] = 2.0f; flag = 3;
    __syncthreads();
}
extern "C" int launch(float* a, int n, cudaStream_t stream) {
    dim3 grid(n / 32);
    k<32><<<grid,
            32, 64, stream>>>(a,
                                n);
    return (int)cudaGetLastError();
}
"""


def _line_of(text: str, needle: str) -> int:
    """1-based line of ``needle`` counted after the #line directive."""
    body = text.split("\n", 2)[2] if text.startswith("#include") else text.split("\n", 3)[3]
    for no, line in enumerate(body.splitlines(), 1):
        if needle in line:
            return no
    raise AssertionError(f"{needle!r} not found")


def test_launch_becomes_runtime_call_and_keeps_line_numbers():
    r = rewrite(KERNEL, filename="prog.cu")
    assert r.unsupported == [] and r.launches == 1 and r.kernels == ["k"]
    assert "<<<" not in r.source
    assert "::sc::launch((grid), (32), (64), (stream), [&](auto... __sc_a)" in r.source
    assert "k<32>(__sc_a...)" in r.source
    assert '#line 1 "prog.cu"' in r.source
    # Code after the (multi-line) launch stays on its original line.
    assert _line_of(r.source, "return (int)cudaGetLastError()") == 15
    assert r.source.count("\n") - 2 == KERNEL.count("\n")


def test_missing_launch_config_fields_default_to_zero():
    r = rewrite('__global__ void k(int* p) {}\nvoid h(int* p) { k<<<1, 2>>>(p); }\n')
    assert "::sc::launch((1), (2), (0), (0)," in r.source


def test_shared_declarations_become_arena_slots():
    r = rewrite(KERNEL)
    assert "__shared__" not in r.source.split('#line', 1)[1]
    assert "typedef float __sc_t0_0[T][T + 1]; __sc_t0_0& tile" in r.source
    assert "__sc_t0_1& total" in r.source
    assert "::sc::dynamic_shared()" in r.source and "(*__sc_t1_0)" in r.source
    assert "typedef volatile int __sc_t2_0; __sc_t2_0& flag" in r.source
    assert r.source.count("::sc::shared_slot(") == 3


def test_sync_free_program_is_marked_for_the_serial_path():
    launch = 'void run(float* y) { k<<<1, 32>>>(y); }\n'
    plain = '__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n' + launch
    assert not rewrite(plain).has_sync
    assert rewrite(plain).source.rstrip().endswith("(y), true); }")
    synced = '__global__ void k(float* y) { __syncthreads(); y[threadIdx.x] = 1.0f; }\n' + launch
    assert rewrite(synced).has_sync
    assert rewrite(synced).source.rstrip().endswith("(y), false); }")
    # The program text itself defines nothing the (precompiled) runtime header reads.
    assert rewrite(plain).source.startswith('#include "sc_emu.hpp"\n#line 1')
    assert rewrite(KERNEL).has_sync
    # A barrier hidden behind a macro still counts.
    assert rewrite("#define SYNC __syncthreads()\n__global__ void k() { SYNC; }\n").has_sync


@pytest.mark.parametrize("snippet,reason", [
    ("namespace cg = cooperative_groups; cg::this_grid().sync();", "grid-wide synchronization"),
    ('asm volatile("membar.gl;");', "inline assembly"),
    ("float v = tex1Dfetch<float>(t, 0);", "textures and surfaces"),
    ("int v = __shfl(1, 0);", "legacy warp intrinsic __shfl"),
    ("child<<<1, 1>>>();", "dynamic parallelism"),
])
def test_unsupported_constructs_are_named(snippet, reason):
    src = f"__global__ void child() {{}}\n__global__ void k() {{\n    {snippet}\n}}\n"
    r = rewrite(src)
    assert any(reason in u for u in r.unsupported), r.unsupported


def test_launch_hidden_in_a_macro_is_unsupported():
    r = rewrite("#define RUN(k, n) k<<<(n + 255) / 256, 256>>>(n)\n__global__ void k(int n) {}\n"
                "void h(int n) { RUN(k, n); }\n")
    assert any("kernel launch inside a macro" in u for u in r.unsupported)


def test_library_headers_are_unsupported_but_emulated_headers_are_not():
    assert rewrite("#include <cub/cub.cuh>\n").unsupported == ["header <cub/cub.cuh>"]
    ok = "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n#include <stdint.h>\n"
    assert rewrite(ok).unsupported == []


def test_namespace_scope_shared_is_unsupported():
    r = rewrite("__shared__ float g[32];\n__global__ void k() { g[0] = 1; }\n")
    assert any("namespace-scope __shared__" in u for u in r.unsupported)


def test_launch_in_host_helper_and_qualified_kernel_name():
    src = ("namespace ns { __global__ void k(int* p, int v) { p[0] = v; } }\n"
           "static void run(int* p, cudaStream_t s) { ns::k<<<dim3(1, 1), dim3(32), 0, s>>>(p, 1 + 2); }\n")
    r = rewrite(src)
    assert "::sc::launch((dim3(1, 1)), (dim3(32)), (0), (s)," in r.source
    assert "ns::k(__sc_a...)" in r.source and "(p, 1 + 2), true)" in r.source
