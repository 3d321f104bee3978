"""Markers for tests that need a compiler; each skips with the reason when it is missing."""

from __future__ import annotations

import shutil

import pytest

from structcover.tools.compiler import toolchain

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and toolchain.find_nvcc() is None,
                                reason="nvcc not found (PATH, CUDA_HOME or nvidia-cuda-nvcc wheel)")
needs_nvrtc = pytest.mark.skipif(not toolchain.nvrtc_available(),
                                 reason="NVRTC not importable (pip install 'structcover[cuda]')")
