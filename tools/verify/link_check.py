"""The link check of emulator builds: what the program's object may reference, by symbol.

A program is compiled to an object of its own before it is linked with the emulator runtime
(``emulator.build_library``); the object's undefined symbols (``nm -u``) are what the program
*links*, however its source spells, aliases or re-declares them. Two kinds are refused:

* **the runtime's private symbols**: every global the runtime's objects define that the public
  header (``sc_emu.hpp`` and what it includes) does not declare -- the driver's control and
  status API (``sc_configure``, ``sc_reset``, ``sc_status``, ``sc_device_alloc`` ...) and the
  internals (``sc::G()``, ``sc::record`` ...). A program that calls them can choose its own
  schedule or poison, clear a verdict, or write the runtime's state. Computed from the runtime
  objects themselves (``nm --defined-only``), so a new entry point is private by default;
* **entry points no launcher needs that would defeat a runtime check**: thread creation (host
  code on another thread touches device buffers unseen while a launch has them mapped), raw
  ``syscall``, signal handlers (the runtime's fault handler *is* the bounds and host-access
  check), ``mprotect``/``pkey_mprotect`` (reopen device memory), and the dynamic loader
  (``dlsym`` finds any private entry by name at run time); and timing tampering: a stream of
  its own, CUDA events, a host clock (docs/SANDBOX.md "Timing tampering").

Names inside the program that it defines itself are not undefined, so a program may still name
its own function ``record``; only references that the linker would bind elsewhere count.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

#: Version of the rules below (part of every program library's cache key).
POLICY = "link-2"
_enabled = True


def policy() -> str:
    """The cache-key part of the link check in force (a library built unchecked differs)."""
    return POLICY if _enabled else POLICY + "-unchecked"


def enabled() -> bool:
    """Whether builds apply the link check (always, outside ``unchecked``)."""
    return _enabled


@contextmanager
def unchecked() -> Iterator[None]:
    """Builds inside skip the link check: for tests of the layers behind it alone (the
    sandbox's escape suite), never for verdicts. Their libraries are cached under other keys."""
    global _enabled
    before, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = before
#: Header files a program sees: what they declare in namespace ``sc`` is public.
PUBLIC_HEADERS = ("sc_emu.hpp", "sc_math.hpp", "sc_atomic.hpp", "sc_fp16.hpp", "sc_cg.hpp",
                  "sc_poison.hpp")

#: Undefined symbols (exact C names, or mangled C++ prefixes) refused whatever the runtime.
DENIED: dict[str, str] = {
    **{n: "starts a thread" for n in (
        "pthread_create", "thrd_create", "clone", "clone3", "__clone", "__clone2",
        "_ZNSt6thread15_M_start_thread")},
    **{n: "starts a process" for n in ("fork", "vfork", "_Fork", "posix_spawn", "posix_spawnp")},
    **{n: "makes raw system calls" for n in ("syscall",)},
    **{n: "installs a signal handler (the runtime's fault handler is its bounds check)" for n in (
        "sigaction", "signal", "sigset", "bsd_signal", "sysv_signal", "__sysv_signal")},
    **{n: "changes memory protection (device memory is closed to host code)" for n in (
        "mprotect", "pkey_mprotect", "pkey_set")},
    **{n: "looks symbols up at run time" for n in (
        "dlsym", "dlvsym", "dlopen", "dlmopen", "dladdr", "dladdr1", "dlinfo",
        "dl_iterate_phdr")},
    # Timing tampering (the text check ``no_timing_tampering``, here by what is linked): a
    # launcher gets its stream from the caller and has no use for a clock or an event, except to
    # change what the caller's timer measures; work on its own stream escapes that timer.
    **{n: "creates its own stream (work off the given stream escapes the caller's timer)"
       for n in ("cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
                 "cuStreamCreate", "cuStreamCreateWithPriority")},
    **{n: "uses CUDA events (a launcher's events only serve a timer)" for n in (
        "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventRecord",
        "cudaEventRecordWithFlags", "cudaEventElapsedTime", "cuEventCreate", "cuEventRecord",
        "cuEventElapsedTime")},
    **{n: "reads a host clock (timing tampering)" for n in (
        "clock_gettime", "__clock_gettime", "__clock_gettime64", "gettimeofday", "clock",
        "time", "timespec_get", "ftime", "times", "getrusage",
        "_ZNSt6chrono3_V212system_clock3now", "_ZNSt6chrono3_V212steady_clock3now",
        "_ZNSt6chrono12system_clock3now", "_ZNSt6chrono12steady_clock3now")},
}
_PREFIXES = tuple(n for n in DENIED if n.startswith("_Z"))


def _nm(args: list[str], path: Path) -> list[tuple[str, str]]:
    out = subprocess.run(["nm", "-P", *args, str(path)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            rows.append((parts[0], parts[1]))
    return rows


def _demangle(names: list[str]) -> list[str]:
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return out.splitlines()


def _public_names(runtime_dir: Path) -> set[str]:
    text = "\n".join((runtime_dir / h).read_text() for h in PUBLIC_HEADERS
                     if (runtime_dir / h).is_file())
    text = re.sub(r"//[^\n]*", "", text)  # a name in a comment declares nothing
    return set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text)) | set(
        re.findall(r"\b(?:extern|static|thread_local)\s+[\w:<> ,*&]+?\b([A-Za-z_]\w*)\s*[;=\[]",
                   text))


@lru_cache(maxsize=8)
def private_symbols(objects: tuple[Path, ...], runtime_dir: Path) -> frozenset[str]:
    """Mangled names the runtime ``objects`` define that no public header declares.

    Strong global definitions only (``T``/``D``/``B``/``R``): weak ones are inline functions and
    templates of the headers, which every program may instantiate too.
    """
    public = _public_names(runtime_dir)
    defined = sorted({name for obj in objects
                      for name, kind in _nm(["-g", "--defined-only"], obj) if kind in "TDBR"})
    private = set()
    for mangled, plain in zip(defined, _demangle(defined), strict=True):
        if mangled.startswith("sc_") and mangled not in public:
            private.add(mangled)
        elif plain.startswith("sc::"):
            base = re.split(r"[(<\s]", plain[4:], maxsplit=1)[0].split("::")[-1]
            if base not in public:
                private.add(mangled)
    return frozenset(private)


def undefined_in(listing: str) -> list[str]:
    """The undefined symbols in ``nm -P -u`` output (name, then kind ``U`` or ``w``)."""
    return [parts[0] for parts in map(str.split, listing.splitlines())
            if len(parts) >= 2 and parts[1] in ("U", "w")]


def refused(undefined: Iterable[str], private: frozenset[str]) -> list[str]:
    """Why each refused reference in ``undefined`` is refused (empty: the object may link)."""
    reasons = []
    for name in undefined:
        base = name.split("@", 1)[0]
        if base in private:
            plain = _demangle([base])[0]
            reasons.append(f"references the emulator runtime's private symbol `{plain}` (the "
                           "driver's control/status API and the runtime's internals are not "
                           "for programs)")
        elif base in DENIED or base.startswith(_PREFIXES):
            key = base if base in DENIED else next(p for p in _PREFIXES if base.startswith(p))
            plain = _demangle([base])[0]
            reasons.append(f"links `{plain}`: {DENIED[key]}")
    return list(dict.fromkeys(reasons))
