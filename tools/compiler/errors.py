"""Parse compiler diagnostics (NVRTC, nvcc front end, ptxas, host g++) into located errors."""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel

# `file.cu(12): error: identifier "x" is undefined` (cudafe/NVRTC), optionally with a column.
_EDG = re.compile(r"^(?P<file>[^\s()][^()]*?)\((?P<line>\d+)\)(?::\s*|\s+)"
                  r"(?P<sev>error|warning|catastrophic error|remark)(?:\s*#\S+)?"
                  r"\s*:?\s*(?P<msg>.*)$")
# `file.cu:12:5: error: ...` (g++ on host code).
_GCC = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s*"
                  r"(?P<sev>error|fatal error|warning):\s*(?P<msg>.*)$")
# `ptxas error   : Entry function '...' uses too much shared data (...)`
_PTXAS = re.compile(r"^ptxas\s+(?:fatal\s+)?(?P<sev>error|fatal)\s*:\s*(?P<msg>.*)$")


class CompileError(BaseModel):
    """One compiler diagnostic, located in the original program when possible."""

    file: str | None = None
    #: 1-based line in the *original* source (None when the diagnostic has no location or
    #: points into code the compile service added).
    line: int | None = None
    column: int | None = None
    severity: str = "error"
    message: str
    #: The original source line the error points at, for showing to a user or a model.
    source_line: str | None = None
    #: Which tool produced it: nvrtc, nvcc, ptxas, host, timeout, internal.
    origin: str = "nvcc"


def parse_errors(log: str, source: str, origin: str,
                 to_original: Callable[[int], int | None] | None = None,
                 include_warnings: bool = False) -> list[CompileError]:
    """Errors (and optionally warnings) from a compiler log.

    Args:
        log: The compiler's output.
        source: The original program, to attach the offending line.
        origin: ``nvrtc`` or ``nvcc``.
        to_original: Maps a line of the compiled text to the original program (NVRTC sees a
            sliced source); identity when None.
        include_warnings: Keep warnings too.

    Returns:
        The diagnostics in log order; a failed compile with no parsable line gets one error
        carrying the log's last lines, so a failure never comes back without a message.
    """
    lines = source.splitlines()
    found: list[CompileError] = []
    for raw in log.splitlines():
        text = raw.strip()
        match = _EDG.match(text) or _GCC.match(text)
        if match:
            sev = "error" if "error" in match.group("sev") else match.group("sev")
            if sev != "error" and not include_warnings:
                continue
            raw_line = int(match.group("line"))
            line: int | None = to_original(raw_line) if to_original else raw_line
            col = match.groupdict().get("col")
            found.append(CompileError(
                file=match.group("file"), line=line, column=int(col) if col else None,
                severity=sev, message=match.group("msg").strip(),
                source_line=lines[line - 1] if line and 0 < line <= len(lines) else None,
                origin="host" if match.re is _GCC else origin))
        elif m := _PTXAS.match(text):
            found.append(CompileError(message=m.group("msg").strip(), origin="ptxas"))
    return found


def fallback_error(log: str, origin: str) -> CompileError:
    """A catch-all error when a compile failed and no line of the log could be parsed."""
    tail = "\n".join(log.strip().splitlines()[-5:]) or "compiler failed without a message"
    return CompileError(message=tail, origin=origin)
