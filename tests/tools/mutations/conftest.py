"""Fixtures for operator tests; the helpers live in mutation_cases.py (importable from tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mutation_cases import _cpu_backend  # noqa: E402


@pytest.fixture(scope="session")
def cpu_backend():
    """The sandboxed CPU emulator backend; skips when nvcc or the emulator is missing."""
    return _cpu_backend()
