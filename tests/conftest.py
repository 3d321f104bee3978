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


#: Modules that run on one xdist worker, first (``--dist loadgroup`` hands out the largest group
#: first): between them they build every trusted entry of the shared KernelBench emulator cache
#: cold (runtime, module library, the clang and g++ light/device and full precompiled headers:
#: minutes each, one compiler each, under a per-entry lock), and test_kb_profile's module
#: fixture is built once instead of once per worker.
KB_COLD_GROUP = "kernelbench-cold"
KB_COLD_MODULES = frozenset({"tests/tools/kernelbench/test_cpu_build.py",
                             "tests/tools/kernelbench/test_cpu_light.py",
                             "tests/tools/simulation/test_kb_profile.py"})


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Order the suite so that no xdist worker waits on another's cold KernelBench build.

    Spread over both workers, the second worker to reach a trusted cache entry sat idle on its
    lock for up to two minutes at a time. Now the modules that build those entries form one
    group, run first on one worker while the other runs the rest of the suite, and the other
    KernelBench tests (which only read the entries) come last, slow ones first, when the
    entries are built. A wrapper: it marks before xdist's hook of this name names the groups.
    """
    for item in items:
        if item.nodeid.split("::", 1)[0] in KB_COLD_MODULES:  # rootdir-relative path
            item.add_marker(pytest.mark.xdist_group(KB_COLD_GROUP))

    def late(item: pytest.Item) -> tuple[bool, bool]:
        kb = (item.get_closest_marker("kernelbench") is not None
              and item.get_closest_marker("xdist_group") is None)
        return kb, kb and item.get_closest_marker("slow") is None

    items[:] = sorted(items, key=late)  # stable: the same order on every worker
    result = yield
    if getattr(config.option, "loadgroup", False):
        _name_groups(items)
    return result


def _name_groups(items: list[pytest.Item]) -> None:
    """Give each ``xdist_group`` test the ``@group`` suffix xdist's loadgroup scheduler reads.

    xdist (3.8) sets the suffix on ``item._nodeid``, which pytest 9 no longer reads (the id is
    ``item._id``): there its groups were silently ignored. Where xdist's suffix took, no-op.
    """
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if not names:
            continue
        suffix = "@" + "_".join(names)
        if item.nodeid.endswith(suffix):
            continue
        node_id = getattr(item, "_id", None)
        if node_id is not None and hasattr(node_id, "parse"):
            item._id = type(node_id).parse(item.nodeid + suffix)
        else:
            item._nodeid = item.nodeid + suffix


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
