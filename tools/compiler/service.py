"""The compile service: one call compiles a program with NVRTC or nvcc, cached and sandboxed.

``compile_program`` never raises on a bad program: compile errors, a missing compiler and
timeouts all come back inside the :class:`CompileResult`.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from structcover.config import CompilerSettings
from structcover.schema import CompileStats
from structcover.tools.compiler import toolchain
from structcover.tools.compiler.cache import CompileCache, cache_key
from structcover.tools.compiler.errors import CompileError, fallback_error, parse_errors
from structcover.tools.compiler.jailed import compile_nvrtc_jailed
from structcover.tools.compiler.nvcc import RawCompile, compile_nvcc, nvcc_flags
from structcover.tools.compiler.nvrtc import nvrtc_options
from structcover.tools.compiler.ptxas import name_stats, parse_ptxas
from structcover.tools.compiler.slicing import slice_device_code

_ARCH = re.compile(r"^sm_\d{2,3}[af]?$")
_SOURCE_NAME = "program.cu"


class CompileResult(BaseModel):
    """Everything one compile produced."""

    ok: bool
    via: Literal["nvrtc", "nvcc", "none"]
    arch: str
    ptx: str = ""
    #: The cubin in the compile cache (read it with :meth:`cubin_bytes`).
    cubin_path: str | None = None
    stats: list[CompileStats] = Field(default_factory=list, description="per kernel, ptxas")
    #: Kernel name (``scale<4>``) -> mangled symbol in the cubin.
    kernel_symbols: dict[str, str] = Field(default_factory=dict)
    errors: list[CompileError] = Field(default_factory=list)
    log: str = ""
    cached: bool = False
    timed_out: bool = False
    seconds: float = 0.0
    compiler_version: str = ""
    #: Notes: what the slicer dropped, fallbacks taken, templates left uninstantiated.
    notes: list[str] = Field(default_factory=list)

    @property
    def kernels_emitted(self) -> int:
        """Kernels ptxas compiled (0 for a compile of templates nobody instantiates)."""
        return len(self.stats)

    def no_kernel_reason(self) -> str | None:
        """Why a successful compile emitted no kernel; None when it emitted one or failed."""
        if not self.ok or self.stats:
            return None
        why = [n for n in self.notes if "not instantiated" in n or "no launch" in n]
        return ("compiled, but ptxas emitted no kernel: "
                + ("; ".join(why) if why else "the program defines no __global__ kernel that "
                   "is instantiated (template kernels need a launch or an explicit "
                   "instantiation)"))

    def cubin_bytes(self) -> bytes | None:
        """The cubin, or None when the compile failed or the cache entry is gone."""
        if not self.cubin_path:
            return None
        try:
            return Path(self.cubin_path).read_bytes()
        except OSError:
            return None


def _child_main(send, func, args: tuple) -> None:  # noqa: ANN001
    """Child-process body: run the compile and send the raw result back."""
    try:
        send.send(func(*args))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as a failure
        send.send(RawCompile(ok=False, log=f"internal compiler error: {exc!r}"))


def _run_in_child(func, args: tuple, timeout_s: float) -> RawCompile:  # noqa: ANN001
    """Run ``func(*args)`` in a forked child; kill it after ``timeout_s``."""
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(send, func, args),  # type: ignore[attr-defined]
                       daemon=True)
    proc.start()
    send.close()
    try:
        if recv.poll(timeout_s):
            try:
                return recv.recv()
            except EOFError:
                pass
            proc.join(1)
            return RawCompile(ok=False, log=f"compiler process died (exit {proc.exitcode})")
        return RawCompile(ok=False, log=f"compile timed out after {timeout_s:g} s",
                          timed_out=True)
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        recv.close()


def _sandbox_refusal() -> str:
    """Why untrusted source may not be compiled here ("" when it may): no jail and no opt-in."""
    from structcover.tools.verify.jail import UNSANDBOXED_HINT, jail_status, unsandboxed_allowed

    usable, why = jail_status()
    if usable or unsandboxed_allowed():
        return ""
    return f"untrusted code refused: {why}; {UNSANDBOXED_HINT}"


def _resolve_via(via: str) -> str | None:
    nvcc_ok = toolchain.find_nvcc() is not None
    if via == "nvrtc":
        return "nvrtc" if toolchain.nvrtc_available() else None
    if via == "nvcc":
        return "nvcc" if nvcc_ok else None
    if toolchain.nvrtc_available():
        return "nvrtc"
    return "nvcc" if nvcc_ok else None


def _finish(raw: RawCompile, source: str, via: str, arch: str, version: str,
            to_original=None) -> CompileResult:  # noqa: ANN001
    parsed, symbols = name_stats(parse_ptxas(raw.log)) if raw.ok else ([], {})
    errors = [] if raw.ok else parse_errors(raw.log, source, via, to_original)
    if raw.timed_out:
        errors = [CompileError(message=raw.log.strip().splitlines()[0], origin="timeout")]
    elif not raw.ok and not errors:
        errors = [fallback_error(raw.log, via)]
    return CompileResult(ok=raw.ok, via=via, arch=arch, ptx=raw.ptx, stats=parsed,
                         kernel_symbols=symbols, errors=errors, log=raw.log,
                         timed_out=raw.timed_out, compiler_version=version)


_TEMPLATE_KERNEL = re.compile(r"template\s*<[^{;]*?>\s*(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                              r"__global__[^(]*?\b(\w+)\s*\(")


def _template_notes(source: str, names: list[str], unresolved: list[str]) -> list[str]:
    """Notes naming template kernels that no launch or explicit instantiation reaches."""
    notes = [f"template launch {u}: not instantiated" for u in unresolved]
    launched = {n.split("<", 1)[0].split("::")[-1] for n in names}
    for kernel in dict.fromkeys(_TEMPLATE_KERNEL.findall(source)):
        explicit = re.search(rf"\btemplate\s+(?:__global__\s+)?void\s+{kernel}\s*<", source)
        if kernel not in launched and not explicit:
            notes.append(f"template kernel {kernel}: no launch or explicit instantiation, "
                         "not instantiated")
    return notes


def _compile_once(source: str, arch: str, via: str, timeout_s: float,
                  include_dirs: Sequence[Path] = ()) -> tuple[CompileResult, bytes | None]:
    sliced = slice_device_code(source, target="nvcc" if via == "nvcc" else "nvrtc",
                               include_dirs=include_dirs)
    if via == "nvrtc":
        # NVRTC parses untrusted text: it runs in a jailed child (macro bombs, #include of host
        # files), never in this process (tools/compiler/jailed.py).
        dirs = [*include_dirs, *toolchain.cuda_include_dirs()]
        raw = compile_nvrtc_jailed(sliced.source, _SOURCE_NAME, nvrtc_options(arch, dirs), dirs,
                                   sliced.name_expressions, timeout_s)
        result = _finish(raw, source, "nvrtc", arch, f"nvrtc {toolchain.nvrtc_version()}",
                         sliced.line_map.to_original)
    else:
        nvcc = toolchain.find_nvcc()
        assert nvcc is not None
        version = f"nvcc {toolchain.nvcc_version()}"
        raw = compile_nvcc(nvcc, sliced.source, arch, timeout_s, include_dirs)
        result = _finish(raw, source, "nvcc", arch, version, sliced.line_map.to_original)
        if not raw.ok and not raw.timed_out:
            # The slice can miss something the whole program had (a host-side constant a
            # kernel uses); the whole program is the ground truth when it compiles.
            whole = compile_nvcc(nvcc, source, arch, timeout_s, include_dirs)
            if whole.ok:
                result = _finish(whole, source, "nvcc", arch, version)
                result.notes.append("the device-code slice did not compile; compiled the whole "
                                    f"program instead ({_first_error(raw.log)})")
                return result, whole.cubin
    result.notes.extend(f"sliced out {d}" for d in sliced.dropped)
    result.notes.extend(_template_notes(source, sliced.name_expressions,
                                        sliced.uninstantiated))
    return result, raw.cubin


def _first_error(log: str) -> str:
    """The first error line of a compile log, for a note."""
    lines = [ln for ln in log.splitlines() if "error" in ln] or log.strip().splitlines() or [""]
    return lines[0].strip()[:200]


def _header_digest(include_dirs: Sequence[Path]) -> list[str]:
    """A hash of the headers in the user's include folders, so editing one misses the cache."""
    out = []
    for d in include_dirs:
        h = hashlib.sha256(str(d).encode())
        for f in sorted(Path(d).rglob("*")) if Path(d).is_dir() else []:
            if f.is_file() and f.suffix in (".h", ".cuh", ".hpp", ".hh", ".inl", ".inc"):
                h.update(str(f.relative_to(d)).encode() + b"\0" + f.read_bytes())
        out.append(f"headers:{h.hexdigest()[:16]}")
    return out


def _flags(via: str, arch: str, include_dirs: Sequence[Path] = ()) -> list[str]:
    if via == "nvrtc":
        flags = nvrtc_options(arch, [*include_dirs, *toolchain.cuda_include_dirs()])
    else:
        flags = nvcc_flags(arch, include_dirs)
    return [*flags, "slice:3", *_header_digest(include_dirs)]


def compile_program(source: str, arch: str | None = None,
                    via: Literal["auto", "nvrtc", "nvcc"] | None = None,
                    timeout_s: float | None = None, cache_dir: Path | None = None,
                    use_cache: bool = True,
                    settings: CompilerSettings | None = None,
                    include_dirs: Sequence[Path] | None = None) -> CompileResult:
    """Compile a CUDA program and report PTX, cubin, per-kernel ptxas stats and errors.

    ``auto`` uses NVRTC (fast, on the sliced device code) and falls back to nvcc when NVRTC
    cannot compile the slice; the result says which compiler ran. nvcc compiles a slice too
    (so framework headers such as ``torch/extension.h`` are not needed) and the whole program
    when the slice fails. Template kernels are instantiated from their launches on both paths;
    :attr:`CompileResult.kernels_emitted` says how many kernels ptxas compiled. Results are
    cached on disk by hash of source, arch, flags (include folders and their headers' content
    among them) and compiler version.

    Args:
        source: The program text.
        arch: Target architecture (``sm_80``, ``sm_86``, ``sm_89``, ``sm_90``, ``sm_100``...);
            settings' value when None.
        via: ``auto``, ``nvrtc`` or ``nvcc``; settings' value when None.
        timeout_s: Kill the compile after this long (a clean timeout result).
        cache_dir: Cache folder; settings' value when None.
        use_cache: Read the cache (results are written either way).
        settings: The compiler settings section (defaults when None).
        include_dirs: Folders of the program's own headers, passed to both compilers;
            settings' ``include_dirs`` when None.

    Returns:
        The result; ``ok`` False with ``errors`` when it did not compile.

    Raises:
        ValueError: ``arch`` is not of the form ``sm_NN``, ``via`` is unknown, or an include
            folder does not exist.
    """
    settings = settings or CompilerSettings()
    dirs = [Path(d).expanduser().resolve() for d in (
        include_dirs if include_dirs is not None else getattr(settings, "include_dirs", []))]
    for d in dirs:
        if not d.is_dir():
            raise ValueError(f"include folder {d}: no such directory")
    arch = arch or settings.arch
    via = via or settings.via
    timeout_s = timeout_s if timeout_s is not None else settings.timeout_s
    if not _ARCH.match(arch):
        raise ValueError(f"arch {arch!r}: expected a real architecture such as sm_90")
    if via not in ("auto", "nvrtc", "nvcc"):
        raise ValueError(f"via {via!r}: expected auto, nvrtc or nvcc")
    start = time.perf_counter()
    chosen = _resolve_via(via)
    if chosen is None:
        return CompileResult(ok=False, via="none", arch=arch, seconds=time.perf_counter() - start,
                             errors=[CompileError(origin="internal", message=(
                                 f"no compiler for via={via}: nvcc not found (PATH, CUDA_HOME, "
                                 "nvidia-cuda-nvcc wheel) and/or NVRTC not importable "
                                 "(pip install structcover brings both)"))])
    refused = _sandbox_refusal()
    if refused:
        # An environment problem, not a property of the program: never cached, so the same
        # source compiles once the user installs bubblewrap (or opts in to no sandbox).
        return CompileResult(ok=False, via=chosen, arch=arch, seconds=time.perf_counter() - start,
                             errors=[CompileError(origin="internal", message=refused)])
    cache = CompileCache(cache_dir or settings.cache_dir)
    candidates = [chosen] + (["nvcc"] if via == "auto" and chosen == "nvrtc"
                             and toolchain.find_nvcc() is not None else [])
    notes: list[str] = []
    result: CompileResult | None = None
    for current in candidates:
        version = (f"nvrtc {toolchain.nvrtc_version()}" if current == "nvrtc"
                   else f"nvcc {toolchain.nvcc_version()}")
        key = cache_key(source, arch, current, _flags(current, arch, dirs), version)
        hit = cache.get(key) if use_cache else None
        if hit is not None:
            result = CompileResult.model_validate({**hit, "cached": True})
        else:
            result, cubin = _compile_once(source, arch, current, timeout_s, dirs)
            if not result.timed_out:  # a timeout depends on load; never cache it
                path = cache.put(key, result.model_dump(mode="json", exclude={"seconds"}), cubin)
                result.cubin_path = str(path) if path else None
        if result.ok or result.timed_out or current == candidates[-1]:
            break
        notes.append(f"nvrtc failed ({result.errors[0].message if result.errors else '?'}); "
                     "fell back to nvcc")
    assert result is not None
    result.notes = notes + result.notes
    result.seconds = time.perf_counter() - start
    return result
