"""Compile a whole program with nvcc (toolkit or wheels) to cubin + PTX with ptxas -v."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

# RawCompile lives in raw.py, which jailed.py (imported here lazily) also needs: no cycle.
from structcover.tools.compiler.raw import RawCompile

__all__ = ["RawCompile", "compile_nvcc", "nvcc_flags"]


def nvcc_flags(arch: str, include_dirs: Sequence[Path] = ()) -> list[str]:
    """The nvcc flags the service uses (part of the cache key); ``-I`` per include folder."""
    return [f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-std=c++17",
            *(f"-I{d}" for d in include_dirs)]


def compile_nvcc(nvcc: Path, source: str, arch: str, timeout_s: float,
                 include_dirs: Sequence[Path] = ()) -> RawCompile:
    """Run nvcc on ``source`` in a private temp folder, killing it after ``timeout_s``.

    The whole process group is killed on timeout, since nvcc runs cicc/ptxas as children.
    ``include_dirs`` are the user's header folders (``-I``).
    """
    with tempfile.TemporaryDirectory(prefix="structcover-nvcc-") as tmp:
        work = Path(tmp)
        src = work / "program.cu"
        src.write_text(source)
        cmd = [str(nvcc), *nvcc_flags(arch, include_dirs), "-keep", "-keep-dir", str(work),
               "-o", str(work / "program.cubin"), str(src)]
        # Untrusted text: nvcc runs in the jail (read-only toolkit, this folder writable,
        # memory and time limits); only diagnostics about program.cu come back.
        from structcover.tools.compiler.jailed import nvcc_in_jail

        rc, log, timed_out = nvcc_in_jail(nvcc, cmd[1:], work, timeout_s, include_dirs)
        if timed_out:
            return RawCompile(ok=False, timed_out=True,
                              log=f"compile timed out after {timeout_s:g} s\n{log}")
        if rc != 0:
            return RawCompile(ok=False, log=log)
        ptx_path = work / "program.ptx"
        return RawCompile(ok=True, log=log,
                          ptx=ptx_path.read_text() if ptx_path.exists() else "",
                          cubin=(work / "program.cubin").read_bytes())
