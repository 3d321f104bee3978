"""Load the fake world of tests/agents for the graph tests (tests are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _load() -> None:
    if "campaign_fakes" not in sys.modules:
        fakes = Path(__file__).parent.parent / "agents" / "fakes.py"
        spec = importlib.util.spec_from_file_location("campaign_fakes", fakes)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["campaign_fakes"] = module
        spec.loader.exec_module(module)


_load()
