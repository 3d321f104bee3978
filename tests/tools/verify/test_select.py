"""Backend selection: names, auto fallback order, clear reasons when unavailable."""

from __future__ import annotations

import pytest

from structcover.tools.verify import select
from structcover.tools.verify.gpu_runner import GpuBackend


def test_unknown_backend_is_a_value_error():
    with pytest.raises(ValueError, match="tpu"):
        select.get_backend("tpu")


def test_unavailable_backend_names_the_reason(monkeypatch):
    monkeypatch.setattr(GpuBackend, "available", lambda self: (False, "no driver here"))
    with pytest.raises(RuntimeError, match="gpu: no driver here"):
        select.get_backend("gpu")


def test_auto_prefers_gpu_then_cpu_then_compile_only(monkeypatch):
    monkeypatch.setattr(GpuBackend, "available", lambda self: (True, "fake"))
    assert select.get_backend("auto").name == "gpu"
    monkeypatch.setattr(GpuBackend, "available", lambda self: (False, "none"))
    monkeypatch.setattr(select.CpuBackend, "available", lambda self: (True, "fake"))
    assert select.get_backend("auto").name == "cpu"
    monkeypatch.setattr(select.CpuBackend, "available", lambda self: (False, "none"))
    monkeypatch.setattr(select.CompileOnlyBackend, "available", lambda self: (False, "none"))
    with pytest.raises(RuntimeError) as info:
        select.get_backend("auto")
    assert "gpu: none" in str(info.value) and "cpu: none" in str(info.value)


@pytest.mark.nvcc
def test_compile_only_compiles_and_never_runs(tmp_path):
    from structcover.config import CompilerSettings

    backend = select.CompileOnlyBackend(CompilerSettings(cache_dir=tmp_path))
    assert backend.available()[0]
    src = """#include <cuda_runtime.h>
__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }
extern "C" int launch(float* y, cudaStream_t stream) { k<<<1, 32, 0, stream>>>(y); return 0; }
"""
    assert backend.compile(src)[0] is True
    ok, log = backend.compile(src.replace("1.0f", "undefined_thing"))
    assert ok is False and "undefined_thing" in log
    ok, log = backend.compile(src.replace("return 0;", 'system("ls"); return 0;'))
    assert ok is False and log.startswith("host policy")
