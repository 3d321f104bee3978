"""The trusted parts of a KernelBench CPU build: torch's facts, flags and the libraries built once.

Everything here is built outside the jail from the project's own files and torch's headers,
content-addressed and sealed in the emulator's build cache (``tools/verify/buildcache.py``),
once per torch version, compiler and flags:

* ``torch_pch``: ``torch/extension.h`` precompiled, for a *full* build (the user's text may use
  pybind11, ``torch::nn``, anything torch's extension header offers);
* ``light_pch``: ``torch/types.h`` precompiled, for a *light* build (``shims/sc_kb_boxed.hpp``):
  no pybind11 and no ``torch/all.h`` in the translation unit, whose inline code alone costs a
  full build about 9 s of g++ time (bench/RESULTS.md, "KernelBench build"); with
  ``device=True`` it holds the emulator's device headers and the boxed calling convention too
  (used when the user passes no ``-D``/``-U``: those must reach the headers, as with nvcc);
* ``runtime_library``: the emulator runtime every extension links (``libsc_kbrt-<key>.so``);
* ``pymodule_library``: the Python module of every light build (``shims/sc_kb_pymodule.cpp``,
  ``libsc_kbpy-<key>.so``): argument conversion, torch's error translation, the fault check;
* ``cpu_pch_code.pch_library`` (clang): the code of the device PCH's inline functions
  (``-fpch-codegen``, ``libsc_kbpch-<key>.so``), which the units built on it then do not
  generate again.

The libraries are copied beside each extension, which finds them through ``$ORIGIN``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import sysconfig
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from structcover.tools.verify import buildcache
from structcover.tools.verify.emulator import (
    RUNTIME_DIR,
    BuildError,
    _atomic_build,
    _compile,
    _compiler_id,
    compiler,
    runtime_hash,
    runtime_objects,
)

__all__ = ["CXXFLAGS", "ExtensionBuildError", "LIGHT_DIR", "SHIMS_DIR", "TORCH_LIBS",
           "build_compiler", "light_compiler", "light_pch", "link_flags",
           "pymodule_library",
           "runtime_library", "shims_hash", "torch_paths", "torch_pch"]

SHIMS_DIR = Path(__file__).parent / "shims"
#: First on a light build's include path: its ``torch/extension.h`` is ``torch/types.h``.
LIGHT_DIR = SHIMS_DIR / "light"
#: The flags of every translation unit and of the precompiled headers (they must match for g++
#: to use one). As the emulator's (emulator.CXXFLAGS), but C++20: torch 2.x headers need it with
#: g++ 12. User ``-O`` levels are ignored for the same reason.
CXXFLAGS = ["-std=c++20", "-O2", "-fPIC", "-ffp-contract=off", "-fno-strict-aliasing",
            "-fno-math-errno", "-fno-finite-loops", "-fstack-clash-protection", "-pthread",
            "-DTORCH_API_INCLUDE_EXTENSION_H"]
#: torch libraries an extension links, as torch's cpp_extension does for a CPU build.
TORCH_LIBS = ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
_PRELUDE = "#include <torch/extension.h>\n"
_LIGHT_PRELUDE = "#include <torch/types.h>\n"
#: A light build's trusted headers, in the order its translation unit includes them. Parsing
#: them, and instantiating what does not depend on the user's text, was ~0.1 s of every
#: ~0.95 s build (clang -ftime-trace); precompiled, it is done once.
_DEVICE_PRELUDE = '#include <torch/types.h>\n#include "sc_kb_device.hpp"\n#include "sc_kb_boxed.hpp"\n'
#: ``struct ListType : SingleElementType<TypeKind::ListType, ListType>`` in torch's jit_type.h.
_SINGLE_ELEMENT = re.compile(r"SingleElementType<\s*TypeKind::(\w+)\s*,\s*(\w+)\s*>")
#: A linker's report of a symbol no library defines (GNU ld quotes it `so', gold 'so').
#: The virtual members of ``c10::SingleElementType`` and their explicit instantiation's form.
_SINGLE_ELEMENT_MEMBERS = {
    "equals": "template bool {t}::equals(const c10::Type&) const;",
    "hasFreeVariables": "template bool {t}::hasFreeVariables() const;",
    "containedTypes": "template c10::ArrayRef<c10::TypePtr> {t}::containedTypes() const;",
}


class ExtensionBuildError(BuildError):
    """The extension did not compile or link; ``log`` holds the compiler's messages about the
    user's text (``cuda.cu``, ``main.cpp``, ``module.cpp`` lines as load_inline numbers them)."""


@lru_cache(maxsize=1)
def torch_paths() -> dict[str, Any]:
    """torch's folders, version and C++ ABI, found without importing torch.

    Raises:
        ExtensionBuildError: torch is not installed (the ``kernelbench`` extra).
    """
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise ExtensionBuildError("torch is not installed: pip install 'structcover[kernelbench]'")
    root = Path(list(spec.submodule_search_locations)[0])
    include = root / "include"
    lib = root / "lib"
    # The dual-ABI tag appears in the mangled names of a library built with the new ABI.
    c10 = (lib / "libc10.so").read_bytes()
    abi = 1 if b"St7__cxx11" in c10 or b"__cxx1112basic_string" in c10 else 0
    return {"root": root, "include": [include, include / "torch" / "csrc" / "api" / "include"],
            "lib": lib, "version": importlib.metadata.version("torch"), "abi": abi,
            "python_include": Path(sysconfig.get_paths()["include"])}


def light_compiler() -> str:
    """The compiler of light builds: clang++ when it is on the PATH, else :func:`compiler`.

    Why clang: most of a light build's time is torch's header templates instantiated again in
    every unit (g++: 1.4 s of an empty unit's 1.44 s, precompiled header or not). clang's
    ``-fpch-instantiate-templates`` does that once, in the precompiled header: an empty unit
    then takes 0.2 s, a typical extension 0.8 s instead of 2 s (bench/RESULTS.md). The two
    compilers share the C++ ABI and libstdc++, so a clang-built extension links the g++-built
    emulator runtime and Python module. ``STRUCTCOVER_KB_LIGHT_CXX`` names another compiler.
    """
    chosen = os.environ.get("STRUCTCOVER_KB_LIGHT_CXX")
    if chosen:
        return chosen
    return "clang++" if shutil.which("clang++") else compiler()


def build_compiler(light: bool) -> str:
    """The compiler of a light (:func:`light_compiler`) or full (:func:`compiler`) build."""
    return light_compiler() if light else compiler()


def _is_clang(cxx: str) -> bool:
    return "clang" in _compiler_id(cxx).lower()


def _pch_codegen(cxx: str) -> bool:
    """Whether the device PCH's inline functions are generated once (:func:`pch_library`):
    clang's ``-fpch-codegen``, and binutils' objcopy to build the library."""
    return _is_clang(cxx) and shutil.which("objcopy") is not None


def flags() -> list[str]:
    return [*CXXFLAGS, f"-D_GLIBCXX_USE_CXX11_ABI={torch_paths()['abi']}"]


@functools.lru_cache(maxsize=1)
def link_flags() -> list[str]:
    """The linker of extension builds: gold where binutils has it, else the compiler's default.

    Why: an extension links torch's libraries (libtorch_cpu alone is hundreds of MB of symbols);
    GNU ld takes 0.4-0.5 s of a 1.4 s light build to resolve them, gold 0.17 s (clang 14, torch
    2.14, 2-core AMD EPYC). The libraries behave the same, so the choice is not in the cache key.
    """
    return ["-fuse-ld=gold"] if shutil.which("ld.gold") else []


def system_includes() -> list[str]:
    tp = torch_paths()
    out: list[str] = []
    for folder in [*tp["include"], tp["python_include"]]:
        out += ["-isystem", str(folder)]
    return out


def cache_key(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(str(part).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:20]


def tree_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------------- trusted parts

def pch_folder(cache_dir: Path, *, light: bool = False, device: bool = False) -> Path:
    """The cache folder of the full (``torch/extension.h``) or light (``torch/types.h``) PCH;
    ``device``: the light one with the emulator's headers (keyed by their text as well)."""
    tp = torch_paths()
    trusted = (shims_hash(), runtime_hash()) if device else ()
    cxx = build_compiler(light or device)
    key = cache_key(tp["version"], tp["root"], _compiler_id(cxx), flags(), _pch_flags(cxx, device),
                    tp["python_include"], _prelude(light, device), *trusted)
    kind = "dev" if device else "light" if light else ""
    return Path(cache_dir) / f"kb{kind}pch-{key}"


def _pch_flags(cxx: str, device: bool = False) -> list[str]:
    """The flags only a precompiled header is built with.

    clang instantiates the header's pending templates once, there, not in every unit. And it
    records no timestamps: by default a unit refuses a PCH whose headers' mtimes changed, and a
    reinstall rewrites the same headers with new mtimes, which made every light build fail
    and fall back to a full one (the cache key already holds the headers' content). The device
    PCH's inline functions are generated once (``-fpch-codegen``, :func:`pch_library`): a unit
    then only optimizes the copies it inlines.
    """
    if not _is_clang(cxx):
        return []
    return ["-fpch-instantiate-templates", "-Xclang", "-fno-pch-timestamp",
            *(["-fpch-codegen"] if device and _pch_codegen(cxx) else [])]


def _prelude(light: bool, device: bool) -> str:
    """The text a PCH precompiles: the device, light or full prelude."""
    if device:
        return _DEVICE_PRELUDE + (_vtable_members() if _is_clang(build_compiler(True)) else "")
    return _LIGHT_PRELUDE if light else _PRELUDE


@lru_cache(maxsize=1)
def _vtable_members() -> str:
    """Explicit instantiations of the virtual members of torch's ``SingleElementType``\\ s.

    Why: a PCH defers the vtables its headers use to each unit built on it (clang defines used
    vtables at the end of a translation unit, and a PCH is not one), so every light build
    instantiated ``SingleElementType<ListType>::equals`` and ``std::shared_ptr<const ListType>``
    again: ~0.08 s of an empty unit's 0.35 s (clang 14, torch 2.14). Instantiated here, in the
    device PCH, they are done once (and, with ``-fpch-codegen``, generated once). Read from the
    installed torch's header, so a torch with other element types or members still builds.
    """
    header = torch_paths()["include"][0] / "ATen" / "core" / "jit_type.h"
    try:
        text = header.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    start = text.find("struct SingleElementType")
    body = text[start:text.find("\n};", start)] if start >= 0 else ""
    members = [form for name, form in _SINGLE_ELEMENT_MEMBERS.items() if f" {name}(" in body]
    kinds = dict.fromkeys(m.groups() for m in _SINGLE_ELEMENT.finditer(text) if m[1] == m[2])
    return "".join(form.format(t=f"c10::SingleElementType<c10::TypeKind::{kind}, c10::{cls}>") + "\n"
                   for kind, cls in kinds for form in members)


@lru_cache(maxsize=1)
def shims_hash() -> str:
    """The shims' text, once per process (packaged files: they do not change under it)."""
    return tree_hash(SHIMS_DIR)


def _precompiled(cache_dir: Path, light: bool, timeout_s: float, device: bool = False) -> Path:
    cxx = build_compiler(light or device)
    once = _pch_flags(cxx, device)
    folder = pch_folder(cache_dir, light=light, device=device)
    # The include path of a light build's unit, so the headers resolve to the same files.
    includes = ["-I", str(LIGHT_DIR), "-I", str(SHIMS_DIR), "-I", str(RUNTIME_DIR)] if device else []
    prelude = _prelude(light, device)
    stub = folder / "kb_torch.hpp"
    with buildcache.locked(folder.with_suffix(".lock")):
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_build(stub, lambda out: out.write_text(prelude))
        # Both compilers take `-include stub` and find `stub.gch` beside it.
        _atomic_build(folder / "kb_torch.hpp.gch", lambda out: _compile(
            [cxx, *flags(), *once, *includes, *system_includes(), "-x", "c++-header", str(stub),
             "-o", str(out)], timeout_s))
    return stub


def torch_pch(cache_dir: Path, timeout_s: float = 900.0) -> Path:
    """``torch/extension.h`` precompiled once per torch version, compiler and flags.

    Returns:
        The stub header to force-include (``-include``); its ``.gch`` lies beside it.

    Raises:
        BuildError: torch's headers do not compile with these flags.
    """
    return _precompiled(cache_dir, False, timeout_s)


def light_pch(cache_dir: Path, timeout_s: float = 900.0, *, device: bool = False) -> Path:
    """``torch/types.h`` precompiled (a light build's first header), as :func:`torch_pch`;
    ``device``: followed by the emulator's device headers and ``sc_kb_boxed.hpp``."""
    return _precompiled(cache_dir, True, timeout_s, device)


def runtime_library(cache_dir: Path, timeout_s: float = 600.0) -> Path:
    """The shared emulator runtime every CPU-built extension links (built once per key).

    Every symbol carries the version ``SC_KB_<key>``: the extension's references to
    ``cudaMalloc`` and friends then bind only to the emulator, never to the real CUDA runtime
    that ``import torch`` loads into the process's global scope.
    """
    cxx = compiler()
    tp = torch_paths()
    cache_dir = Path(cache_dir)
    bridge = SHIMS_DIR / "sc_kb_bridge.cpp"
    key = cache_key(runtime_hash(cxx), bridge.read_bytes(), tp["version"], tp["root"], flags())
    final = cache_dir / f"libsc_kbrt-{key}.so"
    if buildcache.verified(final):
        return final
    objects = runtime_objects(cache_dir, timeout_s)

    def build(out: Path) -> None:
        with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
            script = Path(tmp) / "version.map"
            script.write_text(f"SC_KB_{key} {{ global: *; }};\n")
            obj = Path(tmp) / "bridge.o"
            _compile([cxx, *flags(), "-I", str(RUNTIME_DIR), *system_includes(), "-c", str(bridge),
                      "-o", str(obj)], timeout_s)
            _compile([cxx, "-shared", "-pthread", "-o", str(out), *map(str, objects), str(obj),
                      f"-Wl,-soname,{final.name}", f"-Wl,--version-script={script}", "-Wl,-Bsymbolic",
                      "-L", str(tp["lib"]), "-lc10"], timeout_s)

    return _atomic_build(final, build)




def pymodule_library(cache_dir: Path, runtime: Path, timeout_s: float = 600.0) -> Path:
    """The Python module of every light build (``libsc_kbpy-<key>.so``, built once per key).

    It links ``runtime`` (the emulator's fault status and schedule controls) and torch's
    Python bindings; an extension built light calls its ``sc_kbpy_module`` from ``PyInit``.

    It is compiled from ``torch/extension.h`` itself, not from the full precompiled header
    (:func:`torch_pch`): building that header for this one file cost 40 s of a core and 0.76 GB
    of cache more than parsing the headers once (26 s, g++ 12, torch 2.14), and a user whose
    candidates all build light never needs it.
    """
    cxx = compiler()
    tp = torch_paths()
    cache_dir = Path(cache_dir)
    sources = [SHIMS_DIR / n for n in ("sc_kb_pymodule.cpp", "sc_kb_boxed.hpp", "sc_kb_module.hpp")]
    key = cache_key(runtime.name, *(s.read_bytes() for s in sources), tp["version"], tp["root"],
                    flags(), TORCH_LIBS)
    final = cache_dir / f"libsc_kbpy-{key}.so"
    if buildcache.verified(final):
        return final

    def build(out: Path) -> None:
        _compile([cxx, *flags(), "-I", str(SHIMS_DIR), *system_includes(), "-shared", "-o", str(out),
                  str(sources[0]), str(runtime), f"-Wl,-soname,{final.name}", "-Wl,-rpath,$ORIGIN",
                  "-L", str(tp["lib"]), *TORCH_LIBS], timeout_s)

    return _atomic_build(final, build)
