"""Load the fake CUDA device for the KernelBench tests (tests are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _load() -> None:
    if "kb_fake_cuda" not in sys.modules:
        spec = importlib.util.spec_from_file_location("kb_fake_cuda",
                                                      Path(__file__).with_name("fake_cuda.py"))
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["kb_fake_cuda"] = module
        spec.loader.exec_module(module)


_load()
