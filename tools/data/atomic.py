"""Atomic file writes: write beside the target, then rename over it (never a half file)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: Path | str, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temp file in the target's folder, then rename it to ``path``.

    A failing ``write`` leaves any previous file at ``path`` untouched and no temp file behind.

    Returns:
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def write_text(text: str, path: Path | str) -> Path:
    """Write a text file atomically."""
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))
