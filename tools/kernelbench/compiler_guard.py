"""torch's own compiler reached from the candidate: ``torch.compile``, dynamo, inductor, export.

A ``forward`` that launches a token kernel and hands the real work to ``torch.compile`` gets
kernels *torch* generated (inductor's C++ on the CPU, Triton on a GPU). Those kernels run outside
the dispatcher, so the dispatch watch does not see their compute, and on a GPU they are Triton
launches like the candidate's own. The text check names ``torch.compile``; a policy trained
for reward reaches the compiler by other spellings (``getattr(torch, "com" + "pile")``,
``torch._dynamo.optimize``, ``importlib.import_module("torch._inductor")``, ``torch.export``),
but every one of them imports dynamo or inductor, which torch does not import by itself. This
module puts a finder in front of the import system, before the candidate is imported, that
refuses those packages while the candidate's code is on the stack, and remembers that it did:
the child turns that into a ``hacking`` verdict even if the candidate catches the
``ImportError``.

The child itself never imports them (``dispatch_watch`` keeps torch from importing dynamo to
wrap its mode). torch code that imports them on its own behalf with no candidate frame on the
stack (none does while a KernelBench ``forward`` runs) is let through.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import FrameType, ModuleType

from structcover.tools.kernelbench.candidate_frames import is_candidate_file

__all__ = ["COMPILER_PACKAGES", "finding", "install_compiler_guard"]

#: torch's compiler stack: tracing (dynamo), code generation (inductor) and AOT autograd.
#: (``torch.export`` is imported with torch itself; it traces through dynamo, refused here.)
COMPILER_PACKAGES = ("torch._dynamo", "torch._inductor", "torch._functorch.aot_autograd")

_refused: list[str] = []


def _compiler_package(fullname: str) -> str | None:
    for package in COMPILER_PACKAGES:
        if fullname == package or fullname.startswith(package + "."):
            return package
    return None


def _candidate_on_stack() -> bool:
    frame: FrameType | None = sys._getframe(2)  # noqa: SLF001 - who asked for the import
    while frame is not None:
        if is_candidate_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


class _CompilerGuard(MetaPathFinder):
    """Refuses torch's compiler packages to imports made with the candidate on the stack."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        package = _compiler_package(fullname)
        if package is None or not _candidate_on_stack():
            return None  # the other finders decide
        if package not in _refused:
            _refused.append(package)
        raise ImportError(f"{package} is torch's compiler: a candidate's kernels are its own "
                          "(refused by the KernelBench child)", name=fullname)


def install_compiler_guard() -> None:
    """Put the guard first on ``sys.meta_path`` (once; before the candidate is imported).

    A package already in ``sys.modules`` is answered before any finder, so the guard works only
    if the child has not imported the compiler itself (``test_compiler_guard.py`` checks that a
    prepared child has not).
    """
    if not any(isinstance(f, _CompilerGuard) for f in sys.meta_path):
        sys.meta_path.insert(0, _CompilerGuard())


def finding(trial: int | None = None) -> str:
    """The hacking detail when the candidate reached the compiler ('' when it did not),
    prefixed with the trial when one is given."""
    if not _refused:
        return ""
    return (("" if trial is None else f"trial {trial}: ") +
            f"no_library_delegation: the candidate imported torch's compiler ({', '.join(_refused)}) "
            "at run time: torch.compile, dynamo or inductor generate kernels that are torch's, "
            "not the candidate's, however the call was spelled")
