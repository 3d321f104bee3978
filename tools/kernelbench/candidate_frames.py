"""Whose code made a call: the candidate's, or a library's (the run-time watches' filter).

The timing watch and the host-read watch wrap functions the candidate may call, but the same
functions are called by library code on its own behalf while ``forward`` runs: ``logging``
stamps each record with a clock, Triton's interpreter takes tensors' addresses and uses
``ctypes`` to launch. A call counts only when the frame that made it lies outside the standard
library, the installed packages and this package, i.e. in the candidate's file (or code it
compiled at run time).
"""

from __future__ import annotations

import functools
import sys
import sysconfig
from pathlib import Path

__all__ = ["called_from_candidate", "is_candidate_file"]


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    """Folders of code that is not the candidate's: the standard library, installed packages
    (torch, triton) and this package's two source folders."""
    import structcover
    import structcover.tools

    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"],
             *(str(Path(m.__file__ or ".").resolve().parent) for m in (structcover, structcover.tools))}
    return tuple(sorted(r.rstrip("/") + "/" for r in roots if r))


def is_candidate_file(filename: str) -> bool:
    """Whether code from ``filename`` (a frame's ``co_filename``) is the candidate's: not the
    standard library, an installed package, this package, or the import system's frozen code."""
    return not filename.startswith(_library_roots()) and not filename.startswith("<frozen ")


def called_from_candidate(depth: int) -> bool:
    """Whether the frame ``depth`` levels up from here is not library code (from a wrapper
    that calls this directly, 2 is the wrapper's caller)."""
    return is_candidate_file(sys._getframe(depth).f_code.co_filename)  # noqa: SLF001
