"""Shared inputs of the executor tests: real corpus programs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[3] / "src" / "structcover" / "corpus"


@pytest.fixture(scope="session")
def corpus_programs() -> list[tuple[str, str]]:
    """``(relative path, source)`` of every corpus ``.cu`` file, sorted."""
    files = sorted(CORPUS.rglob("*.cu"))
    assert len(files) >= 40, "the corpus should hold dozens of programs"
    return [(str(p.relative_to(CORPUS)), p.read_text()) for p in files]

sys.path.insert(0, str(Path(__file__).parent))  # verify_cases, shared by two test modules
