"""Without a CUDA toolkit, nvcc comes from the ``cuda`` extra's wheel (issue 13).

The test guards (``@pytest.mark.nvcc`` in tests/conftest.py) and the mutation operators' compile
check ask ``find_nvcc()``; this test removes every toolkit from ``PATH`` and the environment and
checks that the wheel's nvcc is still found and compiles, so on a toolkit-less CI machine the
mutation and compiler tests run instead of skipping.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from structcover.tools.compiler.toolchain import find_nvcc


def _path_without_nvcc() -> str:
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "nvcc").exists()]
    return os.pathsep.join(keep)


def test_without_a_toolkit_the_wheels_nvcc_is_found_and_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _path_without_nvcc())
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    # find_nvcc caches its answer per process: ask afresh here, and leave no answer behind
    # that names this test's PATH.
    find_nvcc.cache_clear()
    try:
        nvcc = find_nvcc()
    finally:
        find_nvcc.cache_clear()
    if nvcc is None:
        pytest.skip("the nvidia-cuda-nvcc wheel is not installed")
    assert "site-packages" in str(nvcc) or "dist-packages" in str(nvcc), nvcc
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    done = subprocess.run([str(nvcc), "-ptx", str(src), "-o", str(tmp_path / "k.ptx")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert ".entry" in (tmp_path / "k.ptx").read_text()
    print(f"nvcc for toolkit-less machines: {nvcc}")
