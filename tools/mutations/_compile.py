"""Compile check for mutation candidates: the device code, as the compile service compiles it.

Operators edit kernels; what must compile is the device code. The check therefore goes
through the compile service (``tools/compiler/service.py``) on its default path: the program's
device code is sliced out (``tools/compiler/slicing.py``: kernels, ``__device__`` functions,
types, constants and device headers kept; host functions, host headers and framework headers
such as ``torch/extension.h`` dropped) and compiled with NVRTC, falling back to nvcc on the
slice and then to nvcc on the whole program. That is what lets candidates from LLM-written
KernelBench kernels through: their host wrapper needs torch's headers, which a bare toolkit
does not have, while their kernels do not (checking the whole program with nvcc dropped every
candidate of such a source).

What this check does not see: the host code. An operator that edits a launch site in a torch
wrapper is checked by the verification that follows (the KernelBench CPU build, or the
sandboxed launch of a ``launch``-contract program), never accepted on this check alone.

A device slice that compiles but emits no kernel (a template kernel nobody instantiates) is a
pass with a note in the log: the operators' own template sites stay checkable that way.
Kernels whose *device* code uses torch types (``torch::PackedTensorAccessor32`` parameters)
cannot be compiled without torch's headers; they are rejected with that reason.

Results are cached by content hash in memory (operators re-check the same candidate often,
e.g. in chains and statistics runs) and on disk by the service.
"""

from __future__ import annotations

import re

from structcover.schema import content_hash

_CACHE: dict[str, tuple[bool, str]] = {}
#: Names only torch's headers define, seen in device code that the slice left without them.
_TORCH_NAMES = re.compile(r"\b(?:torch|at|c10)::\w+")


def _torch_in_device_code(source: str, log: str) -> str | None:
    """The torch name the device code needs, when that is why the slice did not compile."""
    if "::" not in log:
        return None
    from structcover.tools.compiler.slicing import slice_device_code

    sliced = slice_device_code(source, target="nvrtc").source
    found = _TORCH_NAMES.search(sliced)
    return found.group(0) if found else None


def _check(source: str) -> tuple[bool, str]:
    from structcover.tools.compiler.service import compile_program

    result = compile_program(source, arch="sm_90", via="auto")
    log = result.log or ""
    if result.ok:
        return True, "\n".join([*result.notes, log]).strip()
    lines = [f"{e.message} (line {e.line})" if e.line else e.message for e in result.errors]
    torch_name = _torch_in_device_code(source, "\n".join(lines) + log)
    if torch_name:
        lines.insert(0, f"error: the device code uses {torch_name}, which needs torch's headers "
                        "(the device-only compile check cannot build it)")
    return False, "\n".join([*("error: " + ln if "error" not in ln else ln for ln in lines),
                             log]).strip()


def check_compiles(source: str) -> tuple[bool, str]:
    """Whether the device code of ``source`` compiles for sm_90, with the log.

    Args:
        source: A CUDA program: a ``launch``-contract ``.cu`` file or the text of a
            ``load_inline`` ``cuda_sources`` item (host code and ``torch/extension.h``
            included; they are sliced away).

    Returns:
        ``(ok, log)``; on failure the log's first ``error`` line says why.
    """
    key = content_hash(source)
    if key not in _CACHE:
        _CACHE[key] = _check(source)
    return _CACHE[key]
