"""The device PCH's generated code as a library (``libsc_kbpch-<key>.so``, clang only).

A light build's device PCH is built ``-fpch-codegen`` (:mod:`cpu_toolchain`): a unit built on it
refers to the PCH's inline functions instead of generating its own copies, so their bodies are
compiled once, from the PCH itself, into this library, which every such extension links.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from structcover.tools.kernelbench.cpu_toolchain import (
    TORCH_LIBS,
    _pch_codegen,
    build_compiler,
    cache_key,
    flags,
    light_pch,
    link_flags,
    pch_folder,
    torch_paths,
)
from structcover.tools.verify import buildcache
from structcover.tools.verify.emulator import BuildError, _atomic_build, _compile

__all__ = ["pch_library"]

#: A linker's message for a symbol no library exports.
_UNDEFINED = re.compile(r"undefined reference to [`']([^'`]+)'")

#: The optimization level of the device PCH's generated code. The units built on it inline
#: their own (optimized) copies of what is small; the library holds the out-of-line bodies.
_PCH_CODE_FLAGS = ["-O2"]


def pch_library(cache_dir: Path, runtime: Path, timeout_s: float = 900.0) -> Path | None:
    """The device PCH's inline functions compiled once (``libsc_kbpch-<key>.so``), or None
    where light builds are not built by clang (g++ has no ``-fpch-codegen``) or binutils'
    objcopy is missing (the PCH is then built without it).

    A unit built on a ``-fpch-codegen`` PCH refers to the PCH's inline functions instead of
    generating them: its link needs this library (the emulator's device code in it links
    ``runtime``). Built once per key, from the PCH itself, so both hold the same code.
    """
    cxx = build_compiler(True)
    if not _pch_codegen(cxx):
        return None
    tp = torch_paths()
    cache_dir = Path(cache_dir)
    folder = pch_folder(cache_dir, light=True, device=True)
    key = cache_key(folder.name, runtime.name, _PCH_CODE_FLAGS, TORCH_LIBS)
    final = cache_dir / f"libsc_kbpch-{key}.so"
    if buildcache.verified(final):
        return final
    stub = light_pch(cache_dir, timeout_s, device=True)
    code = [*(f for f in flags() if not f.startswith("-O")), *_PCH_CODE_FLAGS]

    def build(out: Path) -> None:
        with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
            obj = Path(tmp) / "pch.o"
            _compile([cxx, *code, "-c", f"{stub}.gch", "-o", str(obj)], timeout_s)
            link = [cxx, "-shared", "-pthread", "-o", str(out), str(obj), str(runtime), *link_flags(),
                    f"-Wl,-soname,{final.name}", "-Wl,-rpath,$ORIGIN", "-Wl,--as-needed",
                    "-L", str(tp["lib"]), *TORCH_LIBS]
            _weaken_unresolved(obj, link, timeout_s)
            _compile(link, timeout_s)

    return _atomic_build(final, build)


def _weaken_unresolved(obj: Path, link: list[str], timeout_s: float) -> None:
    """Make weak the symbols ``obj`` refers to that no library of ``link`` exports.

    ``-fpch-codegen`` generates every inline function of the PCH, also those no unit uses,
    and a few of them refer to symbols torch keeps hidden (with torch 2.14: the vtable of
    ``torch::autograd::ChainedViewFunc``, three ``c10::DynamicType`` functions). Strong, they
    would stop the library from loading; weak, they bind to nothing. A unit that does use such
    a function still fails to load as without the library: it refers to the hidden symbol
    itself (its own references stay strong).
    """
    proc = subprocess.run([*link, "-Wl,--no-undefined", "-Wl,--no-demangle"], capture_output=True,
                          text=True, timeout=timeout_s, check=False)
    if proc.returncode == 0:
        return
    missing = sorted(set(_UNDEFINED.findall(proc.stderr)))
    if not missing:
        raise BuildError(proc.stderr or f"linker exited with {proc.returncode}")
    _compile(["objcopy", *(f"--weaken-symbol={name}" for name in missing), str(obj)], timeout_s)
