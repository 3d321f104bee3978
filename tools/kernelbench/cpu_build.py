"""Build a KernelBench ``load_inline`` extension for the CPU, on the project's CUDA emulator.

:func:`build_cpu_extension` returns an importable Python extension (``<name>.so``) exposing the
extension's ``functions`` as torch's ``load_inline`` would, built from:

* the CUDA sources, with load_inline's implicit headers, rewritten by the emulator's rewriter
  exactly as for corpus programs (kernels and ``<<<>>>`` launches, shared memory, race-checked
  read-modify-writes; ``tools/verify/rewriter.py``), then compiled as C++20 with g++ against
  torch's headers (``-D_GLIBCXX_USE_CXX11_ABI`` as torch was built);
* the C++ sources, with ``#include <torch/extension.h>`` first, and the module: in a *light*
  build (:func:`light_possible`: the text names its ``functions`` and needs nothing past
  ``torch/types.h``) boxed entries (``shims/sc_kb_boxed.hpp``) for the trusted module library
  (``shims/sc_kb_pymodule.cpp``), with ``torch/extension.h`` meaning ``torch/types.h``; in a
  *full* build a ``PYBIND11_MODULE`` generated from ``functions`` (each wrapped so an emulator
  fault raises, ``shims/sc_kb_module.hpp``). A light build costs about a quarter of a full one
  (pybind11's and ``torch/all.h``'s inline code is most of a full build); text that does not
  build light is built full;
* shims for torch's CUDA-specific API (``shims/``: stream look-ups, device guards, error checks,
  ``is_cuda()`` / ``kCUDA`` meaning the CPU), found first on the include path or force-included,
  never by editing the user's text (docs/KERNELBENCH.md, "The CPU build").

Both parts form one translation unit (torch's headers are then instantiated once, which halves
the build); a name defined ``static`` in both the C++ and the CUDA sources, legal for torch's two
units, is a redefinition here. The translation unit is compiled and linked by g++ in the jail
(``jail.run_compiler``). What stays outside the jail is trusted and built once
(``cpu_toolchain.py``): the precompiled headers, the shared emulator runtime
(``libsc_kbrt-<key>.so``) and the light builds' module library (``libsc_kbpy-<key>.so``). They,
and every built extension, are content-addressed and sealed in the emulator's build cache
(``tools/verify/buildcache.py``). The libraries are copied beside the extension, which finds
them through ``$ORIGIN``, so ``work_dir`` is all a sandboxed child needs to read.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from structcover.tools.kernelbench.cpu_pch_code import pch_library
from structcover.tools.kernelbench.cpu_scan import (
    UnsupportedConstruct,
    defined_macros,
    drop_unused_library_headers,
    scan_ldflags,
    scan_sources,
)
from structcover.tools.kernelbench.cpu_toolchain import (
    LIGHT_DIR,
    SHIMS_DIR,
    TORCH_LIBS,
    ExtensionBuildError,
    build_compiler,
    cache_key,
    flags,
    light_pch,
    link_flags,
    pch_folder,
    pymodule_library,
    runtime_library,
    shims_hash,
    system_includes,
    torch_paths,
    torch_pch,
)
from structcover.tools.verify import buildcache
from structcover.tools.verify.emulator import RUNTIME_DIR, _atomic_build
from structcover.tools.verify.host_builtins import rename_host_builtins
from structcover.tools.verify.rewriter import rewrite

__all__ = ["ExtensionBuildError", "UnsupportedConstruct", "build_cpu_extension", "SHIMS_DIR"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFINE = re.compile(r"^-D\s*([A-Za-z_]\w*)(?:=(.*))?$", re.DOTALL)
_UNDEF = re.compile(r"^-U\s*([A-Za-z_]\w*)$")
#: g++ gets at most this much address space per process in the jail (the torch PCH is ~0.8 GB).
COMPILE_MEMORY_MB = 8192
#: Text that needs more than a light build's ``torch/types.h`` (pybind11, torch's Python
#: bindings, modules, autograd, TorchScript): such an extension is built in full at once.
_NEEDS_FULL = re.compile(r"\bPYBIND11_|\bpybind11\b|\bpy::|torch/python\.h|\btorch::(?:nn|autograd|jit|optim|data)\b")


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


def _user_defines(ext: Any) -> tuple[list[str], list[str]]:
    """:func:`_defines` of ``ext``'s compiler flags (host and CUDA): the ``#define``/``#undef``
    lines (none for most texts) and the flags ignored."""
    return _defines(_as_list(getattr(ext, "extra_cflags", None))
                    + _as_list(getattr(ext, "extra_cuda_cflags", None)))


def _c_string(text: str) -> str:
    safe = "".join(ch if 32 <= ord(ch) < 127 else " " for ch in text)
    return '"' + safe.replace("\\", "\\\\").replace('"', '\\"') + '"'


def light_possible(ext: Any) -> bool:
    """Whether ``ext`` may be built light (``shims/sc_kb_boxed.hpp``): it names its
    ``functions`` (no module of its own) and its text needs nothing past ``torch/types.h`` that
    a token shows. A text that still needs more fails to build light and is built in full."""
    texts = _as_list(getattr(ext, "cpp_sources", None)) + _as_list(getattr(ext, "cuda_sources", None))
    return bool(_as_list(getattr(ext, "functions", None))) and not any(
        _NEEDS_FULL.search(text) for text in texts)


def _module_lines(name: str, functions: dict[str, str], light: bool, own_module: bool
                  ) -> list[str]:
    """The extension's Python module: pybind11's (full; none where the user wrote one) or
    boxed entries for the trusted module library (light), each function reached through the
    emulator's fault check."""
    if light:
        lines = ['#include "sc_kb_boxed.hpp"', *(f"SC_KB_ENTRY({fn})" for fn in functions)]
        table = ", ".join(f"{{{_c_string(fn)}, {_c_string(doc)}, &sc_kb_entry_{fn}}}"
                          for fn, doc in functions.items())
        return [*lines, f"static const ::sc_kb::Function sc_kb_functions[] = {{{table}}};",
                "struct _object;",
                'extern "C" _object* sc_kbpy_module(const char*, const ::sc_kb::Function*, int);',
                f'extern "C" __attribute__((visibility("default"))) _object* PyInit_{name}() {{',
                f"  return sc_kbpy_module({_c_string(name)}, sc_kb_functions, {len(functions)});",
                "}"]
    lines = ['#include "sc_kb_module.hpp"']
    if not own_module:
        lines.append(f"PYBIND11_MODULE({name}, m) {{ ::sc_kb::define_controls(m);")
        for fn, doc in functions.items():
            lines.append(f"  m.def({_c_string(fn)}, ::sc_kb::guard(torch::wrap_pybind_function({fn})), "
                         f"{_c_string(doc)});")
        lines.append("}")
    return lines


def translation_unit(ext: Any, *, profile: bool = False, light: bool = False) -> tuple[str, list[str]]:
    """The C++ text g++ compiles for ``ext``, and the flags it ignored.

    ``profile``: the CUDA sources as the rewriter's profile variant (counters per access,
    branch and operation, docs/EMULATOR.md "Profiles"); the plain text is unchanged otherwise.
    ``light``: the module as boxed entries (:func:`light_possible`), not pybind11's.

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
    defines, ignored = _user_defines(ext)
    ignored += [f for f in ldflags if f.strip()]
    if _as_list(getattr(ext, "extra_include_paths", None)):
        ignored.append("extra_include_paths (the jail shows the compiler no other folder)")
    head = [f"#define TORCH_EXTENSION_NAME {name}", *defines, '#include "sc_kb_device.hpp"']
    # The user's macros end with the user's text: none may rewrite the module code below (a
    # `#define check()` would silently drop the fault check).
    undefs = [f"#undef {n}" for n in defined_macros(cpp + cuda) + [d.split()[1] for d in defines]
              if n != "TORCH_EXTENSION_NAME"]
    own_module = "PYBIND11_MODULE" in cpp_text and not functions
    module = [*dict.fromkeys(undefs), '#line 1 "module.cpp"',
              *_module_lines(name, functions, light, own_module)]
    text = "\n".join([*head, *parts, '#line 1 "main.cpp"', cpp_text, *module]) + "\n"
    return text, ignored


def _libraries(light: bool, device: bool, cache_dir: Path, rt: Path, timeout_s: float) -> list[Path]:
    """The trusted libraries an extension links besides ``rt``: a light build's module
    library, and a device-PCH build's generated PCH code (clang).

    On a cold cache the two are built side by side, the precompiled header (and its code)
    in a thread while this one builds the module library: they share nothing, each is one
    compiler process, and a machine's first light build waits ~45 s instead of ~70 s (2
    cores). Once they were found in this process, both are cache look-ups in this thread
    (a thread per candidate would cost a millisecond).
    """
    if not light:
        return []

    def precompiled() -> Path | None:
        code = pch_library(cache_dir, rt, timeout_s) if device else None
        if code is None:  # g++ (or no objcopy): the header alone, which the build reads next
            light_pch(cache_dir, timeout_s, device=device)
        return code

    seen = (str(cache_dir), rt.name, device)
    if seen in _TRUSTED_SEEN:
        module, code = pymodule_library(cache_dir, rt, timeout_s), precompiled()
    else:
        with ThreadPoolExecutor(max_workers=1) as pool:
            pch_code = pool.submit(precompiled)
            module = pymodule_library(cache_dir, rt, timeout_s)
            code = pch_code.result()
        _TRUSTED_SEEN.add(seen)
    return [module, *([code] if code else [])]


#: (cache folder, runtime, device) whose trusted libraries this process has built or found.
_TRUSTED_SEEN: set[tuple[str, str, bool]] = set()


def _torch_link(light: bool) -> list[str]:
    """torch's libraries on an extension's link line: none for a light build.

    A light build links the trusted module library (:func:`pymodule_library`), which needs
    c10, torch_cpu and torch_python; the loader resolves the extension's torch symbols in
    that dependency tree (a ``dlopen``'s own scope holds every library it pulls in, and
    Python imports extensions ``RTLD_NOW``, so a missing symbol still fails the import, as
    it did before). Naming the libraries again made the linker read libtorch_cpu's symbol
    table for every candidate: 0.26 -> 0.09 s of a 1.2 s build (clang 14, gold, torch 2.14).
    """
    return [] if light else list(TORCH_LIBS)


def _compile_extension(text: str, light: bool, cache_dir: Path, rt: Path, timeout_s: float,
                       device: bool = False) -> tuple[Path, bool, list[Path]]:
    """``text`` built (or found in the cache) as a sealed library: (library, cached, the
    trusted libraries it links besides ``rt``).

    ``device`` (light builds): the precompiled header holds the emulator's device headers and
    the boxed calling convention too; only for a text whose user passed no ``-D``/``-U``
    (their macros come before those headers in the unit, as nvcc applies them to every header).

    Raises:
        ExtensionBuildError: g++ failed; its messages about the user's text.
    """
    from structcover.tools.verify.jail import own_lines, run_compiler

    cxx = build_compiler(light)
    tp = torch_paths()
    device = device and light
    extra = _libraries(light, device, cache_dir, rt, timeout_s)
    torch_libs = _torch_link(light)
    key = cache_key(pch_folder(cache_dir, light=light, device=device).name, rt.name,
                    *(p.name for p in extra),
                    shims_hash(), flags(), torch_libs, text)
    final = cache_dir / f"kbext-{key}.so"
    if buildcache.verified(final):
        return final, True, extra
    # Only a build reads the PCH (hashing 0.8 GB costs ~1 s).
    pch = light_pch(cache_dir, timeout_s, device=device) if light else torch_pch(cache_dir, timeout_s)
    includes = ["-I", str(LIGHT_DIR)] if light else []

    def build(out: Path) -> None:
        with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
            src = Path(tmp) / "extension.cpp"
            src.write_text(text, encoding="utf-8", errors="surrogatepass")
            lib = Path(tmp) / "extension.so"
            argv = [cxx, *flags(), *includes, "-I", str(SHIMS_DIR), "-I", str(RUNTIME_DIR),
                    *system_includes(), "-include", str(pch), "-shared", "-o", str(lib), str(src),
                    str(rt), *map(str, extra), *link_flags(), "-Wl,-rpath,$ORIGIN", "-Wl,--as-needed",
                    *(["-L", str(tp["lib"]), *torch_libs] if torch_libs else [])]
            result = run_compiler(argv, readable=[SHIMS_DIR, RUNTIME_DIR, *tp["include"], tp["lib"],
                                                  tp["python_include"], pch.parent, rt, *extra],
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

    _atomic_build(final, build)
    return final, False, extra


def build_cpu_extension(ext: Any, work_dir: Path, *, cache_dir: Path | None = None,
                        timeout_s: float = 900.0, profile: bool = False) -> Path:
    """Build ``ext`` (an ``InlineExtension``) into ``work_dir/<name>.so`` for the CPU emulator.

    A light build (:func:`light_possible`) is tried first; where it does not compile, the full
    one decides (a text that fails there is the user's error). Both give the same module.

    Args:
        ext: The load_inline call: ``name``, ``cpp_sources``, ``cuda_sources``, ``functions``,
            ``extra_cflags``/``extra_cuda_cflags`` (only ``-D``/``-U`` are used),
            ``extra_ldflags`` (GPU libraries are unsupported; the rest is ignored).
        work_dir: Where the module and the libraries it loads are put.
        cache_dir: The build cache (default: ``verify.cache_dir`` from the settings).
        timeout_s: Limit of each compiler run.
        profile: Build the profile variant (:func:`translation_unit`); its own cache entry.

    Returns:
        The importable module file; ``work_dir/build.json`` says whether it came from the
        cache, how long it took, whether it was built light and which flags were ignored.

    Raises:
        UnsupportedConstruct: The sources use something the emulator cannot run.
        ExtensionBuildError: g++ failed; ``log`` holds its messages about the user's text.
        SandboxUnavailable: No jail here and the user did not opt in to running without one.
    """
    start = time.monotonic()
    if cache_dir is None:
        from structcover.config import load_settings

        cache_dir = Path(load_settings().verify.cache_dir)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    rt = runtime_library(cache_dir, timeout_s)
    light = light_possible(ext)
    light_error = ""
    device = not _user_defines(ext)[0]
    if light:
        text, ignored = translation_unit(ext, profile=profile, light=True)
        # A text known not to build light goes straight to the full build.
        marker = cache_dir / f"kbfull-{cache_key(text)}"
        light = not marker.exists()
    if light:
        try:
            final, cached, libraries = _compile_extension(text, True, cache_dir, rt, timeout_s,
                                                          device=device)
        except ExtensionBuildError as exc:
            if "timed out" in str(exc):
                raise
            light, light_error = False, str(exc.log)[:2000]
            marker.write_text(light_error)
    if not light:
        text, ignored = translation_unit(ext, profile=profile)
        final, cached, libraries = _compile_extension(text, False, cache_dir, rt, timeout_s)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    target = work_dir / f"{ext.name}.so"
    shutil.copyfile(final, target)
    for lib in [rt, *libraries]:
        shutil.copyfile(lib, work_dir / lib.name)
    (work_dir / "build.json").write_text(json.dumps({
        "cached": cached, "seconds": round(time.monotonic() - start, 2), "light": light,
        "light_error": light_error, "ignored_flags": ignored, "library": final.name,
        # The precompiled header the unit was built on: "device" (torch/types.h and the
        # emulator's headers), "light" (torch/types.h) or "full" (torch/extension.h).
        "precompiled": ("device" if device else "light") if light else "full",
        "compiler": build_compiler(light),
        "runtime": rt.name, "torch": torch_paths()["version"]}, indent=1))
    return target
