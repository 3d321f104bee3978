"""A library header that the program never uses is boilerplate, not delegation (issue 27 point 6).

Public KernelBench solutions judged correct on a GPU were rejected for ``#include <cublas_v2.h>``
above a hand-written kernel that calls nothing of cuBLAS. The include alone now passes both the
anti-hacking check and the CPU build's scan; any use of the library (call, handle type, constant,
a macro that spells the name) is still refused.
"""

from __future__ import annotations

import pytest

from structcover.tools.kernelbench.cpu_scan import (
    drop_unused_library_headers,
    scan_sources,
    unused_library_header,
)
from structcover.tools.verify.hacking import check_no_library_delegation

KERNEL = ("#include <cuda_runtime.h>\n{include}\n"
          "__global__ void k(const float* a, float* c, int n) {{\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = 2.0f * a[i];\n}}\n"
          "void run(const float* a, float* c, int n) {{ {host} k<<<(n + 255) / 256, 256>>>(a, c, n); }}\n")


def _program(include: str, host: str = "") -> str:
    return KERNEL.format(include=include, host=host)


@pytest.mark.parametrize("header", ["cublas_v2.h", "cublas.h", "cudnn.h", "curand.h", "cufft.h"])
def test_unused_library_header_is_not_delegation(header: str) -> None:
    ok, reason = check_no_library_delegation(_program(f"#include <{header}>"))
    assert ok, reason


@pytest.mark.parametrize("include,host", [
    ("#include <cublas_v2.h>", "cublasHandle_t h; cublasCreate(&h);"),
    ("#include <cublas_v2.h>", "auto f = &cublasSgemm_v2; (void)f;"),  # no call parenthesis
    ("#include <cublas_v2.h>\n#define MAKE(h) cublasCreate(h)", "cublasHandle_t* h = 0; MAKE(h);"),
    ("#include <cudnn.h>", "int s = CUDNN_STATUS_SUCCESS; (void)s;"),
    ("#include <thrust/sort.h>", ""),  # not a prefix-named C library: the include still counts
])
def test_used_library_header_is_still_delegation(include: str, host: str) -> None:
    ok, reason = check_no_library_delegation(_program(include, host))
    assert not ok
    assert "library" in reason


def test_cpu_build_drops_only_an_unused_library_include() -> None:
    unused = _program("#include <cublas_v2.h>")
    (cpp,), (cuda,) = drop_unused_library_headers(["torch::Tensor run(torch::Tensor a);"], [unused])
    assert "cublas" not in cuda
    assert scan_sources([cuda]) == []
    assert cpp == "torch::Tensor run(torch::Tensor a);"
    used = _program("#include <cublas_v2.h>", "cublasHandle_t h;")
    assert drop_unused_library_headers([used]) == [[used]]
    assert any("cuBLAS" in c for c in scan_sources(drop_unused_library_headers([used])[0]))


def test_use_in_another_source_keeps_the_include() -> None:
    # cpp_sources naming cuBLAS need the header that cuda_sources include.
    cuda = _program("#include <cublas_v2.h>")
    groups = drop_unused_library_headers(["cublasHandle_t handle();"], [cuda])
    assert groups[1] == [cuda]


def test_the_include_directive_itself_is_not_a_use() -> None:
    assert unused_library_header("cublas_v2.h", "__global__ void k() {}")
    assert not unused_library_header("cublas_v2.h", "cublasHandle_t h;")
    assert not unused_library_header("cuda_runtime.h", "")  # not a library header at all
