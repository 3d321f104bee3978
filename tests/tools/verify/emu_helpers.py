"""Shared helpers for the CPU-emulator tests: a task spec builder and a runner."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from structcover.config import VerifySettings
from structcover.schema import TaskSpec
from structcover.tools.verify.cpu_backend import CpuEmulatorBackend

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                               reason="the CPU emulator needs g++ or clang++")


def spec_of(task_id: str, tensors: list[tuple], scalars: list[tuple] = (), sizes: dict | None = None,
            **kw) -> TaskSpec:
    """tensors: (name, shape, role[, dtype]); scalars: (name, value[, ctype])."""
    args = []
    for t in tensors:
        name, shape, role = t[:3]
        args.append({"name": name, "shape": shape, "role": role, "dtype": t[3] if len(t) > 3 else "float32"})
    for s in scalars:
        args.append({"name": s[0], "kind": "scalar", "value": s[1], "ctype": s[2] if len(s) > 2 else "int"})
    return TaskSpec(task_id=task_id, args=args, sizes=sizes or {}, **kw)


def backend(cache: Path, **kw) -> CpuEmulatorBackend:
    """A backend whose build cache lives under the session's temp dir."""
    return CpuEmulatorBackend(VerifySettings(cache_dir=cache), **kw)


def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One emulator build cache for the whole test session (the runtime compiles once)."""
    return tmp_path_factory.getbasetemp() / "emu-cache"


def prebuild(source: str, be: CpuEmulatorBackend) -> None:
    """Compile ``source`` into the backend's cache so a timed run measures only the run."""
    from structcover.tools.verify.emulator import build_library
    from structcover.tools.verify.rewriter import rewrite

    build_library(rewrite(source).source, Path(be.settings.cache_dir))


def uniform(shape, seed: int = 0, dtype=np.float32) -> np.ndarray:
    """Seeded uniform(-1, 1) data."""
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)
