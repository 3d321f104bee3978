"""Build rewritten programs into shared libraries with the emulator runtime and load them.

Every library is cached on disk under ``VerifySettings.cache_dir`` by the hash of (rewritten
source, runtime files, compiler, flags). The runtime itself is built once per runtime hash and
reused by every program: its sources as object files (``sc_*-<hash>.o``, about 5 CPU-seconds
cold) and its header as a precompiled header (``pch-<hash>/``), so a program build compiles
only the program's own code and links. Writes go to a temporary file in the cache folder and
are renamed into place, so concurrent builders of the same file never see a half-written one
(the loser's work is discarded).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from structcover.tools.data.atomic import atomic_write
from structcover.tools.verify import buildcache, link_check

RUNTIME_DIR = Path(__file__).parent / "runtime"
#: No FMA contraction (the GPU contracts; tolerances absorb the difference, but the emulator
#: should not add its own); no strict aliasing (CUDA code reinterpret_casts to float4); and no
#: "loops terminate" assumption, so a planted infinite loop runs (and times out) as written
#: instead of being deleted by the optimizer. Stack-clash protection probes every page of a
#: large frame, so a thread whose frame is bigger than the guard page below its fiber stack
#: faults on the guard instead of jumping over it into the next fiber's stack.
CXXFLAGS = ["-std=c++17", "-O2", "-fPIC", "-ffp-contract=off", "-fno-strict-aliasing",
            "-fno-math-errno", "-fno-finite-loops", "-fstack-clash-protection", "-pthread"]

#: Link flags for program libraries: a missing symbol is a build error, not a failed dlopen;
#: and the library binds its CUDA API calls to its own runtime (-Bsymbolic). Without that, a
#: process that has loaded the real libcudart (torch does) resolves the program's cudaMalloc or
#: cudaGetLastError to it, and every launch fails with cudaErrorInsufficientDriver (35).
LINK_FLAGS = ["-shared", "-Wl,--no-undefined", "-Wl,-Bsymbolic"]

#: Status codes of sc_status() in runtime/sc_emu.cpp.
STATUS_NAMES = {0: "ok", 1: "deadlock", 2: "crash", 3: "timeout", 4: "unsupported", 5: "race"}
#: Schedule kinds of sc_configure().
SCHEDULE_KINDS = {"forward": 0, "reverse": 1, "random": 2}

_build_lock = threading.Lock()


class BuildError(Exception):
    """The program did not compile; ``log`` holds the compiler's message."""

    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


class LinkRefused(BuildError):
    """The program compiled but references what no program may link (``link_check``)."""


def compiler() -> str:
    """The C++ compiler to use: ``$CXX``, else g++, else clang++.

    Raises:
        BuildError: No C++ compiler on the PATH.
    """
    for cand in (os.environ.get("CXX"), "g++", "clang++"):
        if cand and shutil.which(cand):
            return cand
    raise BuildError("no C++ compiler found (set CXX or install g++)")


@lru_cache(maxsize=4)
def _compiler_id(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else cxx


def runtime_hash(cxx: str | None = None) -> str:
    """Hash of the runtime sources, compiler and flags: part of every cache key."""
    cxx = cxx or compiler()
    h = hashlib.sha256()
    for path in sorted(RUNTIME_DIR.iterdir()):
        if path.is_file():
            h.update(path.name.encode())
            h.update(path.read_bytes())
    h.update(_compiler_id(cxx).encode())
    h.update(" ".join(CXXFLAGS + LINK_FLAGS).encode())
    return h.hexdigest()[:16]


def _compile(cmd: list[str], timeout_s: float) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise BuildError(f"compiler timed out after {timeout_s:.0f} s") from exc
    if proc.returncode != 0:
        raise BuildError(proc.stderr or proc.stdout or f"compiler exited with {proc.returncode}")


def _compile_untrusted(cmd: list[str], timeout_s: float, *, readable: list[Path],
                       folder: Path) -> None:
    """``_compile`` for program text: in the jail (``jail.run_compiler``), 4 GiB per process;
    only diagnostics about the program and the runtime come back."""
    from structcover.tools.verify.jail import own_lines, run_compiler

    result = run_compiler(cmd, readable=readable, folder=folder, timeout_s=timeout_s)
    if result.timed_out:
        raise BuildError(f"compiler timed out after {timeout_s:.0f} s")
    if result.returncode != 0:
        log = (result.stderr or result.stdout).decode("utf-8", "replace")
        kept = own_lines(log, (str(folder / "program.cpp"), str(RUNTIME_DIR)))
        sig = result.signal
        raise BuildError(kept or (f"compiler killed by signal {sig} (memory limit?)" if sig
                                  else f"compiler exited with {result.returncode}"))


def _atomic_build(final: Path, build) -> Path:
    """Run ``build(tmp_path)`` and rename its output to ``final``, one builder at a time.

    Entries are sealed with their hash (``buildcache``): one whose bytes changed since it was
    built is built again, never trusted by its name.
    """
    if buildcache.verified(final):
        return final
    # One builder per entry: without the lock, every worker sharing a cold cache compiled all
    # the runtime units and the precompiled header at once (the demo and the test workers did).
    # Callers must not hold this same lock (a second flock on it from one process waits forever).
    with buildcache.locked(final.with_suffix(".lock")):  # the name cache_prune removes
        if not buildcache.verified(final):  # built while this one waited
            atomic_write(final, build, executable=True)
            buildcache.seal(final)
    return final


def runtime_objects(cache_dir: Path, timeout_s: float = 300.0) -> list[Path]:
    """The compiled runtime sources (runtime/*.cpp), built once per runtime hash."""
    cxx = compiler()
    key = runtime_hash(cxx)

    def one(src: Path) -> Path:
        final = Path(cache_dir) / f"{src.stem}-{key}.o"
        return _atomic_build(final, lambda out: _compile(
            [cxx, *CXXFLAGS, "-I", str(RUNTIME_DIR), "-c", str(src), "-o", str(out)], timeout_s))

    # One g++ per core: a cold first run builds eight runtime units (about 15 s one at a time
    # on two cores, the first thing a new user waits for).
    sources = sorted(RUNTIME_DIR.glob("*.cpp"))
    with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
        return list(pool.map(one, sources))


#: The force-included stub that the precompiled header is built from (``-include`` finds the
#: ``.gch`` next to it; without a usable ``.gch`` the compiler reads the stub as a plain header).
_PRELUDE = '#include "sc_emu.hpp"\n'


def runtime_pch(cache_dir: Path, timeout_s: float = 300.0) -> Path | None:
    """The runtime header (sc_emu.hpp and all it includes) precompiled once per runtime hash.

    Returns:
        The stub header to pass as ``-include``, or None when this compiler cannot build the
        precompiled header (programs then parse the runtime header themselves; same result).
    """
    cxx = compiler()
    folder = Path(cache_dir) / f"pch-{runtime_hash(cxx)}"
    stub = folder / "sc_prelude.hpp"
    if not stub.exists():
        _atomic_build(stub, lambda out: out.write_text(_PRELUDE))
    try:
        _atomic_build(folder / "sc_prelude.hpp.gch", lambda out: _compile(
            [cxx, *CXXFLAGS, "-I", str(RUNTIME_DIR), "-x", "c++-header", str(stub), "-o", str(out)],
            timeout_s))
    except BuildError:
        return None
    return stub


def prepare_runtime(cache_dir: Path, timeout_s: float = 300.0) -> list[Path]:
    """Build (or find cached) everything a program build reuses: runtime objects and the PCH.

    Call it before a time-limited run so the first program's build pays only for itself.

    Returns:
        The runtime object files (the precompiled header is found by ``build_library``).
    """
    # The precompiled header builds beside the objects (each is one g++ on one core).
    with ThreadPoolExecutor(max_workers=1) as pool:
        pch = pool.submit(runtime_pch, cache_dir, timeout_s)
        objects = runtime_objects(cache_dir, timeout_s)
        pch.result()
    return objects


@dataclass(frozen=True)
class Build:
    """A built program library."""

    path: Path
    cached: bool


def _clean_log(log: str, src_path: str) -> str:
    log = log.replace(src_path, "program.cpp")
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return "\n".join(lines[:60])


def build_library(cpp_source: str, cache_dir: Path, timeout_s: float = 300.0) -> Build:
    """Compile rewritten C++ (from rewriter.rewrite) plus the runtime into a shared library.

    Args:
        cpp_source: The rewritten program text.
        cache_dir: Cache folder (VerifySettings.cache_dir).
        timeout_s: Compiler time limit.

    Returns:
        Where the library is, and whether it came from the cache.

    Raises:
        BuildError: The program does not compile; the log keeps the original line numbers.
    """
    cxx = compiler()
    cache_dir = Path(cache_dir)
    # The link policy is part of the key: a library built under an older one was never checked.
    key = hashlib.sha256((runtime_hash(cxx) + "\0" + link_check.policy() + "\0" + cpp_source)
                         .encode("utf-8", "surrogatepass")).hexdigest()[:24]
    final = cache_dir / f"prog-{key}.so"
    if buildcache.verified(final):
        return Build(final, True)
    rt = runtime_objects(cache_dir, timeout_s)
    pch = runtime_pch(cache_dir, timeout_s)
    include = ["-include", str(pch)] if pch else []

    def build(out: Path) -> None:
        with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
            folder = Path(tmp)
            src, obj, lib = folder / "program.cpp", folder / "program.o", folder / "program.so"
            undef = folder / "program.undef"
            src.write_text(cpp_source, encoding="utf-8", errors="surrogatepass")
            # Untrusted text: g++ runs in the jail, seeing only /usr, the runtime and this
            # folder. The program is an object of its own first, so the link check reads what
            # it references (nm -u) before anything is linked into a loadable library.
            exe = shutil.which(cxx) or cxx
            q = shlex.quote
            script = " && ".join([
                " ".join(map(q, [exe, *CXXFLAGS, "-I", str(RUNTIME_DIR), *include, "-c",
                                 str(src), "-o", str(obj)])),
                f"nm -P -u {q(str(obj))} > {q(str(undef))}",
                " ".join(map(q, [exe, *CXXFLAGS, *LINK_FLAGS, "-o", str(lib), str(obj),
                                 *map(str, rt)]))])
            extra = [] if exe.startswith("/usr/") else [Path(exe).resolve().parent.parent]
            try:
                _compile_untrusted(["sh", "-c", script], timeout_s,
                                   readable=[RUNTIME_DIR, *rt, *([pch.parent] if pch else []),
                                             *extra], folder=folder)
            except BuildError as exc:
                raise BuildError(_clean_log(exc.log, str(src))) from None
            reasons = link_check.refused(link_check.undefined_in(undef.read_text()),
                                         link_check.private_symbols(tuple(rt), RUNTIME_DIR))
            if reasons and link_check.enabled():
                raise LinkRefused("link check: the program " + "; ".join(reasons))
            os.replace(lib, out)

    return Build(_atomic_build(final, build), False)


_ERR_LINE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(?P<msg>.*)$", re.M)


def first_error(log: str) -> str:
    """The first ``file:line: error: ...`` line of a compiler log (or its first line)."""
    m = _ERR_LINE.search(log)
    if m:
        return f"{m.group('file')}:{m.group('line')}: {m.group('msg')}"
    return log.strip().splitlines()[0] if log.strip() else ""


class EmulatorLibrary:
    """A loaded program library: its launcher plus the runtime's control and status API."""

    _loaded: dict[Path, ctypes.CDLL] = {}

    def __init__(self, path: Path):
        path = Path(path)
        with _build_lock:
            lib = self._loaded.get(path)
            if lib is None:
                lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
                lib.sc_configure.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_double]
                lib.sc_configure.restype = None
                lib.sc_reset.restype = None
                lib.sc_status.restype = ctypes.c_int
                lib.sc_detail.restype = ctypes.c_char_p
                lib.sc_kernel_seconds.restype = ctypes.c_double
                lib.sc_kernel_cpu_seconds.restype = ctypes.c_double
                lib.sc_launch_count.restype = ctypes.c_long
                lib.sc_release_handlers.restype = None
                lib.sc_device_alloc.argtypes = [ctypes.c_size_t]
                lib.sc_device_alloc.restype = ctypes.c_void_p
                lib.sc_device_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                               ctypes.c_int]
                lib.sc_device_copy.restype = ctypes.c_int
                lib.sc_device_free.argtypes = [ctypes.c_void_p]
                lib.sc_device_free.restype = None
                self._loaded[path] = lib
        self.lib = lib
        self.path = path

    def configure(self, schedule: str, workers: int, timeout_s: float) -> None:
        """Set the fiber schedule (``forward``, ``reverse``, ``random:SEED``), workers, deadline.

        Raises:
            ValueError: Unknown schedule name.
        """
        kind, _, seed = schedule.partition(":")
        if kind not in SCHEDULE_KINDS:
            raise ValueError(f"schedule {schedule!r}: expected forward, reverse or random:SEED")
        self.lib.sc_reset()
        self.lib.sc_configure(workers, SCHEDULE_KINDS[kind], int(seed or 1), float(timeout_s))

    def release_handlers(self) -> None:
        """Put back the fault handlers this library installed (call after each run): two
        program libraries in one process must never chain their handlers to each other."""
        self.lib.sc_release_handlers()

    def status(self) -> tuple[str, str]:
        """(status name, detail) of the last run."""
        code = self.lib.sc_status()
        detail = (self.lib.sc_detail() or b"").decode("utf-8", "replace")
        return STATUS_NAMES.get(code, "crash"), detail

    def kernel_seconds(self) -> float:
        """Wall time spent inside kernel launches since the last configure()."""
        return float(self.lib.sc_kernel_seconds())

    def kernel_cpu_seconds(self) -> float:
        """CPU time of the worker threads inside kernel launches since the last configure()."""
        return float(self.lib.sc_kernel_cpu_seconds())

    def launches(self) -> int:
        """Kernel launches since the last configure()."""
        return int(self.lib.sc_launch_count())

    def device_buffer(self, array) -> int:
        """A device allocation holding a copy of ``array`` (a contiguous numpy array).

        Like ``cudaMalloc``: guard pages around it, closed to host code outside launches and
        copies; from the first one on, kernel pointer arguments into host memory are a crash.
        Freed by ``free_device`` or by the next ``configure``.

        Raises:
            MemoryError: The runtime could not map the buffer.
        """
        ptr = self.lib.sc_device_alloc(max(int(array.nbytes), 1))
        if not ptr:
            raise MemoryError(f"cannot map a device buffer of {array.nbytes} bytes")
        if array.nbytes:
            self.lib.sc_device_copy(ptr, array.ctypes.data, array.nbytes, 1)
        return int(ptr)

    def read_device(self, ptr: int, out) -> None:
        """Copy a device buffer's contents into the numpy array ``out`` (same byte size)."""
        if out.nbytes and self.lib.sc_device_copy(ptr, out.ctypes.data, out.nbytes, 0) != 0:
            raise ValueError(f"read_device: {out.nbytes} bytes do not fit the device buffer")

    def free_device(self, ptr: int) -> None:
        """Unmap a buffer from ``device_buffer``."""
        self.lib.sc_device_free(ptr)

    def launcher(self, name: str, argtypes: list) -> Any:
        """The program's ``extern "C"`` launcher with the given ctypes argument types.

        Raises:
            AttributeError: The library has no such symbol.
        """
        fn = getattr(self.lib, name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
        return fn
