"""Build a KernelBench ``load_inline`` extension for the CPU, on the project's CUDA emulator.

:func:`build_cpu_extension` returns an importable Python extension (``<name>.so``) exposing the
extension's ``functions`` as torch's ``load_inline`` would, built from:

* the CUDA sources, with load_inline's implicit headers, rewritten by the emulator's rewriter
  exactly as for corpus programs (kernels and ``<<<>>>`` launches, shared memory, race-checked
  read-modify-writes; ``tools/verify/rewriter.py``), then compiled as C++20 with g++ against
  torch's headers (``-D_GLIBCXX_USE_CXX11_ABI`` as torch was built);
* the C++ sources, with ``#include <torch/extension.h>`` first, and a ``PYBIND11_MODULE``
  generated from ``functions`` (each wrapped so an emulator fault raises, ``shims/sc_kb_module.hpp``);
* shims for torch's CUDA-specific API (``shims/``: stream look-ups, device guards, error checks,
  ``is_cuda()`` / ``kCUDA`` meaning the CPU), found first on the include path or force-included,
  never by editing the user's text (docs/KERNELBENCH.md, "The CPU build").

Both parts form one translation unit (torch's headers are then instantiated once, which halves
the build); a name defined ``static`` in both the C++ and the CUDA sources, legal for torch's two
units, is a redefinition here. The translation unit is compiled and linked by g++ in the jail
(``jail.run_compiler``). What stays outside the jail is trusted: the precompiled
``torch/extension.h`` (once per torch version, compiler and flags) and the shared emulator
runtime (``libsc_kbrt-<key>.so``: the emulator's runtime objects plus ``shims/sc_kb_bridge.cpp``,
which routes torch's CPU allocator through the emulator's guarded device allocator). Both, and
every built extension, are content-addressed and sealed in the emulator's build cache
(``tools/verify/buildcache.py``). The runtime library is copied beside the extension, which finds
it through ``$ORIGIN``, so ``work_dir`` is all a sandboxed child needs to read.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import shutil
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from structcover.tools.kernelbench.cpu_scan import (
    UnsupportedConstruct,
    defined_macros,
    drop_unused_library_headers,
    scan_ldflags,
    scan_sources,
)
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
from structcover.tools.verify.host_builtins import rename_host_builtins
from structcover.tools.verify.rewriter import rewrite

__all__ = ["ExtensionBuildError", "UnsupportedConstruct", "build_cpu_extension", "SHIMS_DIR"]

SHIMS_DIR = Path(__file__).parent / "shims"
#: The flags of every translation unit and of the precompiled header (they must match for g++
#: to use it). As the emulator's (emulator.CXXFLAGS), but C++20: torch 2.x headers need it with
#: g++ 12. User ``-O`` levels are ignored for the same reason.
CXXFLAGS = ["-std=c++20", "-O2", "-fPIC", "-ffp-contract=off", "-fno-strict-aliasing",
            "-fno-math-errno", "-fno-finite-loops", "-fstack-clash-protection", "-pthread",
            "-DTORCH_API_INCLUDE_EXTENSION_H"]
#: torch libraries an extension links, as torch's cpp_extension does for a CPU build.
TORCH_LIBS = ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
_PRELUDE = "#include <torch/extension.h>\n"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFINE = re.compile(r"^-D\s*([A-Za-z_]\w*)(?:=(.*))?$", re.DOTALL)
_UNDEF = re.compile(r"^-U\s*([A-Za-z_]\w*)$")
#: g++ gets at most this much address space per process in the jail (the torch PCH is ~0.8 GB).
COMPILE_MEMORY_MB = 8192


class ExtensionBuildError(BuildError):
    """The extension did not compile or link; ``log`` holds the compiler's messages about the
    user's text (``cuda.cu``, ``main.cpp``, ``module.cpp`` lines as load_inline numbers them)."""


# ----------------------------------------------------------------------------- torch facts

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


def _flags() -> list[str]:
    return [*CXXFLAGS, f"-D_GLIBCXX_USE_CXX11_ABI={torch_paths()['abi']}"]


def _system_includes() -> list[str]:
    tp = torch_paths()
    out: list[str] = []
    for folder in [*tp["include"], tp["python_include"]]:
        out += ["-isystem", str(folder)]
    return out


def _key(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(str(part).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:20]


def _tree_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder per cache entry across processes (the others wait, then find it built)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ----------------------------------------------------------------------------- trusted parts

def _pch_folder(cache_dir: Path) -> Path:
    tp = torch_paths()
    key = _key(tp["version"], tp["root"], _compiler_id(compiler()), _flags(), tp["python_include"],
               _PRELUDE)
    return Path(cache_dir) / f"kbpch-{key}"


def torch_pch(cache_dir: Path, timeout_s: float = 900.0) -> Path:
    """``torch/extension.h`` precompiled once per torch version, compiler and flags.

    Returns:
        The stub header to force-include (``-include``); its ``.gch`` lies beside it.

    Raises:
        BuildError: torch's headers do not compile with these flags.
    """
    cxx = compiler()
    folder = _pch_folder(cache_dir)
    stub = folder / "kb_torch.hpp"
    with _locked(folder.with_suffix(".lock")):
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_build(stub, lambda out: out.write_text(_PRELUDE))
        _atomic_build(folder / "kb_torch.hpp.gch", lambda out: _compile(
            [cxx, *_flags(), *_system_includes(), "-x", "c++-header", str(stub), "-o", str(out)],
            timeout_s))
    return stub


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
    key = _key(runtime_hash(cxx), bridge.read_bytes(), tp["version"], tp["root"], _flags())
    final = cache_dir / f"libsc_kbrt-{key}.so"
    if buildcache.verified(final):
        return final
    objects = runtime_objects(cache_dir, timeout_s)

    def build(out: Path) -> None:
        with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
            script = Path(tmp) / "version.map"
            script.write_text(f"SC_KB_{key} {{ global: *; }};\n")
            obj = Path(tmp) / "bridge.o"
            _compile([cxx, *_flags(), "-I", str(RUNTIME_DIR), *_system_includes(), "-c", str(bridge),
                      "-o", str(obj)], timeout_s)
            _compile([cxx, "-shared", "-pthread", "-o", str(out), *map(str, objects), str(obj),
                      f"-Wl,-soname,{final.name}", f"-Wl,--version-script={script}", "-Wl,-Bsymbolic",
                      "-L", str(tp["lib"]), "-lc10"], timeout_s)

    with _locked(final.with_suffix(".lock")):
        return _atomic_build(final, build)


# ----------------------------------------------------------------------------- the user's part

def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _functions(ext: Any) -> dict[str, str]:
    funcs = getattr(ext, "functions", None)
    if isinstance(funcs, dict):
        items = {str(k): str(v) for k, v in funcs.items()}
    else:
        items = {f: f for f in _as_list(funcs)}
    for name in items:
        if not _IDENT.match(name) or name.startswith("_sc_"):
            raise ValueError(f"extension function {name!r}: not a C++ identifier (or reserved _sc_ name)")
    return items


def _defines(flags: list[str]) -> tuple[list[str], list[str]]:
    """``-D``/``-U`` flags as preprocessor lines (after the precompiled header, so it stays
    valid), and the flags ignored (optimisation levels, nvcc options, anything else)."""
    lines, ignored = [], []
    i = 0
    while i < len(flags):
        flag = flags[i].strip()
        if flag in ("-D", "-U") and i + 1 < len(flags):
            flag, i = flag + flags[i + 1].strip(), i + 1
        i += 1
        m, u = _DEFINE.match(flag), _UNDEF.match(flag)
        if m and "\n" not in (m.group(2) or "") and "\\" not in (m.group(2) or ""):
            lines.append(f"#define {m.group(1)} {m.group(2) if m.group(2) is not None else 1}")
        elif u:
            lines.append(f"#undef {u.group(1)}")
        elif flag:
            ignored.append(flag)
    return lines, ignored


def _c_string(text: str) -> str:
    safe = "".join(ch if 32 <= ord(ch) < 127 else " " for ch in text)
    return '"' + safe.replace("\\", "\\\\").replace('"', '\\"') + '"'


def translation_unit(ext: Any, *, profile: bool = False) -> tuple[str, list[str]]:
    """The C++ text g++ compiles for ``ext``, and the flags it ignored.

    ``profile``: the CUDA sources as the rewriter's profile variant (counters per access,
    branch and operation, docs/EMULATOR.md "Profiles"); the plain text is unchanged otherwise.

    Raises:
        UnsupportedConstruct: Something the emulator cannot run (named).
        ValueError: The extension's name or a function name is not an identifier.
    """
    name = str(getattr(ext, "name", ""))
    if not _IDENT.match(name):
        raise ValueError(f"extension name {name!r}: not a Python/C++ identifier")
    functions = _functions(ext)
    cpp, cuda = drop_unused_library_headers(_as_list(getattr(ext, "cpp_sources", None)),
                                            _as_list(getattr(ext, "cuda_sources", None)))
    ldflags = _as_list(getattr(ext, "extra_ldflags", None))
    found = scan_sources(cpp + cuda) + scan_ldflags(ldflags)
    # The C++ sources are host code compiled after the emulator's built-in macros: their own
    # `blockDim`s are renamed as the CUDA sources' host code is (``host_builtins``).
    cpp_text = "\n".join(["#include <torch/extension.h>", *map(rename_host_builtins, cpp)])
    parts: list[str] = []
    if cuda:
        rewritten = rewrite("\n".join(["#include <torch/types.h>", "#include <cuda.h>",
                                       "#include <cuda_runtime.h>", *cuda]), filename="cuda.cu",
                            profile=profile)
        found += rewritten.unsupported
        parts.append(rewritten.source)
    found = list(dict.fromkeys(found))
    if found:
        raise UnsupportedConstruct("; ".join(found))
    defines, ignored = _defines(_as_list(getattr(ext, "extra_cflags", None))
                                + _as_list(getattr(ext, "extra_cuda_cflags", None)))
    ignored += [f for f in ldflags if f.strip()]
    if _as_list(getattr(ext, "extra_include_paths", None)):
        ignored.append("extra_include_paths (the jail shows the compiler no other folder)")
    head = [f"#define TORCH_EXTENSION_NAME {name}", *defines, '#include "sc_kb_device.hpp"']
    # The user's macros end with the user's text: none may rewrite the module code below (a
    # `#define check()` would silently drop the fault check).
    undefs = [f"#undef {n}" for n in defined_macros(cpp + cuda) + [d.split()[1] for d in defines]
              if n != "TORCH_EXTENSION_NAME"]
    module = [*dict.fromkeys(undefs), '#line 1 "module.cpp"', '#include "sc_kb_module.hpp"']
    if functions or "PYBIND11_MODULE" not in cpp_text:
        module.append(f"PYBIND11_MODULE({name}, m) {{ ::sc_kb::define_controls(m);")
        for fn, doc in functions.items():
            module.append(f"  m.def({_c_string(fn)}, ::sc_kb::guard(torch::wrap_pybind_function({fn})), "
                          f"{_c_string(doc)});")
        module.append("}")
    text = "\n".join([*head, *parts, '#line 1 "main.cpp"', cpp_text, *module]) + "\n"
    return text, ignored


def build_cpu_extension(ext: Any, work_dir: Path, *, cache_dir: Path | None = None,
                        timeout_s: float = 900.0, profile: bool = False) -> Path:
    """Build ``ext`` (an ``InlineExtension``) into ``work_dir/<name>.so`` for the CPU emulator.

    Args:
        ext: The load_inline call: ``name``, ``cpp_sources``, ``cuda_sources``, ``functions``,
            ``extra_cflags``/``extra_cuda_cflags`` (only ``-D``/``-U`` are used),
            ``extra_ldflags`` (GPU libraries are unsupported; the rest is ignored).
        work_dir: Where the module and the emulator runtime library it loads are put.
        cache_dir: The build cache (default: ``verify.cache_dir`` from the settings).
        timeout_s: Limit of each compiler run.
        profile: Build the profile variant (:func:`translation_unit`); its own cache entry.

    Returns:
        The importable module file; ``work_dir/build.json`` says whether it came from the
        cache, how long it took and which flags were ignored.

    Raises:
        UnsupportedConstruct: The sources use something the emulator cannot run.
        ExtensionBuildError: g++ failed; ``log`` holds its messages about the user's text.
        SandboxUnavailable: No jail here and the user did not opt in to running without one.
    """
    from structcover.tools.verify.jail import own_lines, run_compiler

    start = time.monotonic()
    if cache_dir is None:
        from structcover.config import load_settings

        cache_dir = Path(load_settings().verify.cache_dir)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    text, ignored = translation_unit(ext, profile=profile)
    cxx = compiler()
    rt = runtime_library(cache_dir, timeout_s)
    tp = torch_paths()
    key = _key(_pch_folder(cache_dir).name, rt.name, _tree_hash(SHIMS_DIR), _flags(), TORCH_LIBS, text)
    final = cache_dir / f"kbext-{key}.so"
    cached = buildcache.verified(final)
    if not cached:
        pch = torch_pch(cache_dir, timeout_s)  # only a build reads it (hashing 0.8 GB costs ~1 s)

        def build(out: Path) -> None:
            with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
                src = Path(tmp) / "extension.cpp"
                src.write_text(text, encoding="utf-8", errors="surrogatepass")
                lib = Path(tmp) / "extension.so"
                argv = [cxx, *_flags(), "-I", str(SHIMS_DIR), "-I", str(RUNTIME_DIR), *_system_includes(),
                        "-include", str(pch), "-shared", "-o", str(lib), str(src), str(rt),
                        "-Wl,-rpath,$ORIGIN", "-Wl,--as-needed", "-L", str(tp["lib"]), *TORCH_LIBS]
                result = run_compiler(argv, readable=[SHIMS_DIR, RUNTIME_DIR, *tp["include"], tp["lib"],
                                                      tp["python_include"], pch.parent, rt],
                                      folder=Path(tmp), timeout_s=timeout_s, memory_mb=COMPILE_MEMORY_MB)
                if result.timed_out:
                    raise ExtensionBuildError(f"compiler timed out after {timeout_s:.0f} s")
                if result.returncode != 0:
                    log = (result.stderr or result.stdout).decode("utf-8", "replace")
                    kept = own_lines(log, (str(src), str(SHIMS_DIR)))
                    kept = kept.replace(str(src), "extension.cpp").replace(str(SHIMS_DIR) + "/", "shims/")
                    sig = result.signal
                    raise ExtensionBuildError(kept or (f"compiler killed by signal {sig} (memory limit?)"
                                                       if sig else f"compiler exited with {result.returncode}"))
                shutil.move(str(lib), out)

        with _locked(final.with_suffix(".lock")):
            _atomic_build(final, build)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    name = str(ext.name)
    target = work_dir / f"{name}.so"
    shutil.copyfile(final, target)
    shutil.copyfile(rt, work_dir / rt.name)
    (work_dir / "build.json").write_text(json.dumps({
        "cached": cached, "seconds": round(time.monotonic() - start, 2), "ignored_flags": ignored,
        "library": final.name, "runtime": rt.name, "torch": tp["version"]}, indent=1))
    return target
