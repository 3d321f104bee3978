"""Shared fixtures: keep caches and state of every test inside its tmp dir."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the tool's caches at a per-session temp dir, never the user's home."""
    cache = tmp_path_factory.getbasetemp() / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("STRUCTCOVER_COMPILER__CACHE_DIR", str(cache / "compile"))
    monkeypatch.setenv("STRUCTCOVER_FEATURES__CACHE_DIR", str(cache / "features"))
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_DIR", str(cache / "emulator"))
