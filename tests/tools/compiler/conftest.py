"""Markers for tests that need a compiler; each skips with the reason when it is missing."""

from __future__ import annotations

import pytest

from structcover.tools.compiler import toolchain

needs_nvcc = pytest.mark.nvcc
needs_nvrtc = pytest.mark.skipif(not toolchain.nvrtc_available(),
                                 reason="NVRTC not importable (pip install structcover brings it)")
