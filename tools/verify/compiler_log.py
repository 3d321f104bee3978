"""Compiler messages of a jailed compile, filtered to the program's own files.

Kept apart from :mod:`jail` (which re-exports it) because it reads text and runs nothing.
"""

from __future__ import annotations

__all__ = ["own_lines"]


def own_lines(log: str, names: tuple[str, ...]) -> str:
    """Keep only the compiler messages about the program's own files (``names`` are prefixes).

    A diagnostic header (``file:line:col: error: ...``) about any other file is dropped with the
    source excerpt under it, so text of a header the program managed to include never comes
    back in a verdict; ``In file included from`` chains are dropped too.
    """
    kept: list[str] = []
    ours = False
    for line in log.splitlines():
        if line.startswith((" ", "\t")) or not line.strip():
            if ours:
                kept.append(line)  # a source excerpt or caret line under one of our headers
            continue
        file = line.split(":", 1)[0]
        # The program's own file is named by the rewriter's #line directives (no folder) or
        # by its path in the build folder; host headers always carry an absolute path.
        ours = (line.startswith(names) or (":" in line and "/" not in file and " " not in file)
                or line.startswith(("compilation terminated", "g++:", "cc1plus:", "nvcc ")))
        if ours:
            kept.append(line)
    return "\n".join(kept)
