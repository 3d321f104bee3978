"""What the CPU build of a ``load_inline`` extension refuses before compiling anything.

The CPU path runs the extension's kernels on the project's emulator (docs/EMULATOR.md) and its
host code against torch's CPU build. Library code that needs a real GPU (cuBLAS/cuDNN handles,
CUTLASS/CuTe, CUB/Thrust, cuRAND...), inline PTX, textures and surfaces, and torch's own CUDA
headers other than the shimmed ones (``cpu_build.SHIMMED_HEADERS``) cannot run there, so they
are reported as ``unsupported: <construct>``, never compiled into a wrong verdict. The scan reads
the text with comments and string literals blanked, so a construct named only in a comment or a
docstring is not refused.
"""

from __future__ import annotations

import re

from structcover.tools.verify.rewriter import UNSUPPORTED_NAMES

__all__ = ["UnsupportedConstruct", "SHIMMED_HEADERS", "defined_macros", "drop_unused_library_headers",
           "scan_sources", "scan_ldflags", "unused_library_header"]


class UnsupportedConstruct(Exception):
    """The extension uses something the CPU emulator cannot run.

    Attributes:
        construct: What it is, for the verdict's ``unsupported: <construct>``.
    """

    def __init__(self, construct: str):
        super().__init__(construct)
        self.construct = construct


#: torch CUDA headers with a CPU shim in ``shims/`` (each documented there).
SHIMMED_HEADERS = frozenset({
    "ATen/cuda/CUDAContext.h", "ATen/cuda/CUDAContextLight.h", "ATen/cuda/Exceptions.h",
    "c10/cuda/CUDAStream.h", "c10/cuda/CUDAGuard.h", "c10/cuda/CUDAException.h",
    "c10/cuda/CUDAFunctions.h", "cuda.h"})

#: Library and language constructs, found in code (comments and strings blanked).
_CONSTRUCTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bcublas\w*|\bCUBLAS_\w+|\bgetCurrentCUDABlas(?:Lt)?Handle\b|\bat::cuda::blas\b"),
     "cuBLAS (handle or call)"),
    (re.compile(r"\bcudnn\w*|\bCUDNN_\w+"), "cuDNN (handle or call)"),
    (re.compile(r"\bcutlass\b"), "CUTLASS"),
    (re.compile(r"\bcute\s*::"), "CuTe"),
    (re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile|__volatile__)?\s*(?:goto\s*)?\("),
     "inline PTX / assembly (asm)"),
    (re.compile(r"\bcurand\w*"), "cuRAND"),
    (re.compile(r"\bcufft\w*"), "cuFFT"),
    (re.compile(r"\bcusparse\w*"), "cuSPARSE"),
    (re.compile(r"\bcusolver\w*"), "cuSOLVER"),
    (re.compile(r"\bthrust\s*::"), "Thrust"),
    (re.compile(r"\bcub\s*::"), "CUB"),
    (re.compile(r"\bgetCurrentCUDASparseHandle\b"), "cuSPARSE (handle or call)"),
    (re.compile(r"\bat::cuda::CUDAEvent\b"), "torch CUDA events (at::cuda::CUDAEvent)"),
    (re.compile(r"\bc10::cuda::CUDACachingAllocator\b"), "torch's CUDA caching allocator"),
    # The emulator's own controls and what its checks rest on: host code that clears the run's
    # status, swaps torch's allocator (guard pages, poison) or the fault handler, or changes page
    # protections could hide a race or an out-of-bounds access from the verdict.
    (re.compile(r"\b(?:__sc_\w*|sc_kb\w*|sc_(?:configure|reset|status|detail|kernel_seconds|"
                r"kernel_cpu_seconds|launch_count|device_alloc|device_copy|device_free|switch_ctx))\b"
                r"|\bsc(?:_kb)?\s*::"), "the emulator's internal API (reserved names)"),
    (re.compile(r"\bSet(?:CPU)?Allocator\b|\bSetCPUCachingAllocator\b"), "replacing torch's allocator"),
    (re.compile(r"\b(?:sigaction|sigaltstack|signal|mprotect|mmap|munmap|dlopen|dlsym|dlmopen)\s*\("),
     "signal handlers, page protections or dynamic symbol look-ups in host code"),
]

#: Headers of libraries the emulator lacks (the rewriter's list, plus torch's CUDA internals).
_LIBRARY_HEADER = re.compile(
    r"^(cub/|thrust/|cuda/|mma\.h|cuda_pipeline|cuda_awbarrier|cublas|cudnn|curand|cufft|"
    r"cusparse|cusolver|cutlass/|cute/|cooperative_groups/(?!reduce\.h)|sm_\d+_intrinsics|nvrtc|"
    r"cuda_fp8|cuda_fp6|cuda_fp4|nvshmem)")
_TORCH_CUDA_HEADER = re.compile(r"^(ATen/cuda/|c10/cuda/|ATen/native/cuda/|ATen/cudnn/|THC/|"
                                r"ATen/native/cudnn/|c10/hip/|ATen/hip/|torch/csrc/cuda/)")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.DOTALL)
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
#: Link flags naming GPU libraries the emulator cannot stand in for.
_GPU_LIBS = re.compile(r"^-l(cublas\w*|cudnn\w*|curand\w*|cufft\w*|cusparse\w*|cusolver\w*|nvshmem\w*"
                       r"|cutlass\w*|nccl\w*)$")


def code_only(text: str) -> str:
    """``text`` with comments and string/char literals blanked (newlines kept)."""

    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith(("//", "/*")):
            return re.sub(r"[^\n]", " ", s)
        return s[0] + re.sub(r"[^\n]", " ", s[1:-1]) + s[-1]

    return _LEXEME.sub(blank, text)


#: C-API libraries every name of which starts with a fixed prefix, by the header stems that declare
#: them. A header of one that the code never names is unused -- boilerplate such as
#: ``#include <cublas_v2.h>`` above a hand-written kernel, legal CUDA that nvcc builds -- so its
#: include is dropped rather than refused. Any use (a call, a handle type, a constant, a macro
#: that spells the name) names the prefix and is still refused; a name pasted together from
#: pieces is undeclared without the header, so it fails to compile instead of running.
_PREFIX_LIBRARIES: dict[str, re.Pattern[str]] = {
    stem: re.compile(rf"\b(?:{names})")
    for stems, names in (
        (("cublas_v2", "cublas", "cublas_api", "cublasLt"), r"cublas\w*|CUBLAS_\w+"),
        (("cudnn",), r"cudnn\w*|CUDNN_\w+"),
        (("cufft",), r"cufft\w*|CUFFT_\w+"),
        (("cusparse",), r"cusparse\w*|CUSPARSE_\w+"),
        (("cusolverDn", "cusolverSp", "cusolver_common"), r"cusolver\w*|CUSOLVER_\w+"),
        (("curand", "curand_kernel"), r"curand\w*|CURAND_\w+"))
    for stem in stems}


def unused_library_header(header: str, code: str) -> bool:
    """``header`` declares a prefix-named C library (:data:`_PREFIX_LIBRARIES`) that ``code``
    (comments and strings blanked, or preprocessed) never names."""
    stem = header.strip()
    pattern = _PREFIX_LIBRARIES.get(stem[:-2] if stem.endswith(".h") else "")
    return pattern is not None and not pattern.search(code)


def drop_unused_library_headers(*groups: list[str]) -> list[list[str]]:
    """Each group of sources with the includes of unused library headers removed; "unused" is
    judged over all groups together (a ``cpp_sources`` call needs the ``cuda_sources`` header)."""
    code = "\n".join(_INCLUDE.sub("", code_only(t)) for g in groups for t in g)  # not the includes

    def drop(m: re.Match[str]) -> str:
        return "" if unused_library_header(m.group(1), code) else m.group(0)

    return [[_INCLUDE.sub(drop, t) for t in g] for g in groups]


def _header_reason(header: str) -> str | None:
    header = header.strip()
    if header in SHIMMED_HEADERS:
        return None
    if re.match(r"(?:.*/)?sc[_/]", header):
        return f"the emulator's internal header <{header}>"
    if _LIBRARY_HEADER.match(header):
        return f"header <{header}>"
    if _TORCH_CUDA_HEADER.match(header):
        return f"torch CUDA header <{header}> (no CPU shim)"
    return None


def scan_sources(texts: list[str]) -> list[str]:
    """The unsupported constructs in these sources (C++ or CUDA), in order found, no repeats."""
    found: list[str] = []
    for text in texts:
        for header in _INCLUDE.findall(text):
            reason = _header_reason(header)
            if reason:
                found.append(reason)
        code = code_only(text)
        for pattern, name in _CONSTRUCTS:
            if pattern.search(code):
                found.append(name)
        for ident in set(_IDENT.findall(code)):
            if ident in UNSUPPORTED_NAMES:
                found.append(UNSUPPORTED_NAMES[ident])
    return list(dict.fromkeys(found))


_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def defined_macros(texts: list[str]) -> list[str]:
    """Names the user's text ``#define``s (a directive cannot come out of a macro expansion, so
    this finds every one), for the build to ``#undef`` before its own module code."""
    return list(dict.fromkeys(n for text in texts for n in _MACRO.findall(code_only(text))))


def scan_ldflags(flags: list[str]) -> list[str]:
    """GPU libraries named by ``-l`` link flags (``-lcublas`` -> ``library cublas``)."""
    found = []
    for flag in flags:
        m = _GPU_LIBS.match(flag.strip())
        if m:
            found.append(f"library {m.group(1)} (-l{m.group(1)})")
    return found
