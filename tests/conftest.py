"""Shared fixtures: keep caches and state of every test inside its tmp dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from structcover.tools.compiler.toolchain import find_nvcc


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Name the nvcc the suite compiles with, so a CI log shows whether the toolkit or the
    ``cuda`` extra's wheel served the nvcc-marked and mutation tests."""
    nvcc = find_nvcc()
    if nvcc is None:
        return ["nvcc: none found (nvcc-marked tests skip)"]
    kind = "wheel (nvidia-cuda-nvcc)" if "site-packages" in str(nvcc) else "toolkit"
    return [f"nvcc: {nvcc} [{kind}]"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``@pytest.mark.nvcc`` tests only when the code itself would find no nvcc.

    The guard asks ``toolchain.find_nvcc()`` (PATH, CUDA_HOME, then the nvidia-cuda-nvcc
    wheel), never ``shutil.which``: on a toolkit-less CI machine nvcc comes from the wheel.
    """
    if item.get_closest_marker("nvcc") is not None and find_nvcc() is None:
        pytest.skip("nvcc not found (PATH, CUDA_HOME or nvidia-cuda-nvcc wheel)")


def _kb_emulator_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Under xdist the base temp is the worker's folder inside the session's folder.
    base = tmp_path_factory.getbasetemp()
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return session / "kernelbench-emulator-cache"


@pytest.fixture(scope="session")
def kb_emulator_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The emulator cache every KernelBench test of the session shares (all xdist workers):
    for tests that pass ``cache_dir`` themselves, so that they build torch's precompiled
    header into the same cache as the verifier's tests instead of a second one."""
    return _kb_emulator_cache(tmp_path_factory)


@pytest.fixture(autouse=True)
def _isolated_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the tool's caches at a per-session temp dir, never the user's home.

    KernelBench tests share one emulator cache across the session's xdist workers: its
    precompiled torch header (about 0.8 GB, about 50 CPU-s) and runtime library are built once
    instead of once per worker. The entries are content-addressed, sealed and built under a
    per-entry lock, exactly as concurrent users of one cache on a machine share them.
    """
    base = tmp_path_factory.getbasetemp()
    cache = base / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("STRUCTCOVER_COMPILER__CACHE_DIR", str(cache / "compile"))
    monkeypatch.setenv("STRUCTCOVER_FEATURES__CACHE_DIR", str(cache / "features"))
    emulator = cache / "emulator"
    if request.node.get_closest_marker("kernelbench") is not None:
        emulator = _kb_emulator_cache(tmp_path_factory)
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_DIR", str(emulator))
