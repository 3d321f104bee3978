"""Inline a program's own headers, so it compiles where its include folders are not visible.

``structcover verify`` runs candidates in a sandbox (GPU) or through the CPU emulator's
rewriter, neither of which sees the user's header folders. Quoted includes found in the
``--include`` folders are therefore pasted into the source, recursively and each header once
(as ``#pragma once`` / include guards would have it). Includes not found there are left as
written, for the compiler to resolve or reject.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(["<])([^">]+)[">][^\n]*$', re.MULTILINE)


def find_header(name: str, include_dirs: Sequence[Path], here: Path | None = None) -> Path | None:
    """The file ``name`` resolves to: next to the including header first, then each folder."""
    for folder in ([here] if here is not None else []) + [Path(d) for d in include_dirs]:
        candidate = folder / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def inline_includes(source: str, include_dirs: Sequence[Path], *, max_depth: int = 16) -> str:
    """``source`` with every include found in ``include_dirs`` replaced by the header's text.

    Args:
        source: The program.
        include_dirs: The user's header folders.
        max_depth: Nesting limit (a guard against include cycles without guards).

    Returns:
        The self-contained source; unchanged when no include resolves.

    Raises:
        ValueError: Headers nest deeper than ``max_depth``, or one is not readable text.
    """
    seen: set[Path] = set()

    def expand(text: str, here: Path | None, depth: int) -> str:
        if depth > max_depth:
            raise ValueError(f"headers nest deeper than {max_depth} levels (an include cycle?)")

        def replace(match: re.Match[str]) -> str:
            path = find_header(match.group(2), include_dirs, here)
            if path is None:
                return match.group(0)
            if path in seen:
                return f"// {match.group(0).strip()} (already inlined)"
            seen.add(path)
            try:
                body = path.read_text(encoding="utf-8", errors="surrogateescape")
            except OSError as exc:
                raise ValueError(f"header {path}: cannot read ({exc})") from exc
            return (f"// begin {path.name}\n{expand(body, path.parent, depth + 1)}\n"
                    f"// end {path.name}")

        return _INCLUDE.sub(replace, text)

    return expand(source, None, 0) if include_dirs else source
