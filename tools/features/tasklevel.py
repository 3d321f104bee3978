"""Task-level and anti-hacking signals: language, custom kernels, library calls, streams,
graphs. Most released RL "CUDA" solutions define no kernel and call the framework instead
(they rewrite at the framework level): these features say so."""

from __future__ import annotations

import re

from structcover.tools.features.model import Facts

_TRITON = re.compile(r"@triton\.(?:jit|autotune)|^\s*import\s+triton|^\s*from\s+triton\b", re.M)
_CUTE = re.compile(r"@cute\.(?:kernel|jit)|cutlass\.cute|^\s*import\s+cutlass", re.M)
_TORCH = re.compile(r"^\s*import\s+torch|^\s*from\s+torch\b", re.M)
_CUDA = re.compile(r"__global__|<<<|__device__|#\s*include\s*<cuda|threadIdx|cudaMalloc")
_PY_KERNELS = re.compile(r"@(?:triton\.jit|cute\.kernel)")
_LIB_PREFIX = (b"cublas", b"cudnn", b"cufft", b"curand", b"cusparse", b"cusolver", b"cutlass",
               b"thrust::", b"cub::", b"at::", b"torch::", b"cutensor", b"nvte")
_REFERENCE_LIBS = (b"cublas", b"cudnn", b"at::", b"torch::", b"cutlass")


def detect_language(text: str) -> str:
    """``triton``, ``cute``, ``torch``, ``cuda`` or ``unknown`` from the text alone."""
    # Substring checks first: the regexes only run when their keyword is present at all.
    if "triton" in text and _TRITON.search(text):
        return "triton"
    if ("cute" in text or "cutlass" in text) and _CUTE.search(text):
        return "cute"
    if "torch" in text and _TORCH.search(text):
        return "torch"
    if _CUDA.search(text):
        return "cuda"
    return "unknown"


def python_features(text: str) -> dict[str, int]:
    """Library calls and kernels of a Python program (Triton, CuTe DSL or plain PyTorch)."""
    calls = sum(1 for m in re.finditer(r"\b(?:torch|F|at)\.(?:\w+\.)*\w+\s*\(", text))
    matmul_ops = len(re.findall(r"(?<![\w@])@(?![\w.])", text))  # the a @ b operator
    return {"kernel.count": len(_PY_KERNELS.findall(text)), "lib.calls": calls + matmul_ops}


def task_features(facts: Facts | None, language: str, text: str) -> dict[str, int | bool | str]:
    """``kernel.has_custom_kernel``, ``lib.*`` and ``host.*`` values."""
    out: dict[str, int | bool | str] = {"program.language": language}
    lib = graphs = streams = syncs = memcpy = events = 0
    reference = False
    if facts is not None:
        for name, n in facts.all_calls.items():
            if name.startswith(_LIB_PREFIX):
                lib += n
                reference = reference or name.startswith(_REFERENCE_LIBS)
            elif name.startswith(b"cudaGraph") or name.startswith(b"cudaStreamBeginCapture"):
                graphs += n
            elif name.startswith(b"cudaStreamCreate") or name == b"cudaStreamWaitEvent":
                streams += n
            elif name in (b"cudaDeviceSynchronize", b"cudaStreamSynchronize"):
                syncs += n
            elif name.startswith(b"cudaMemcpy"):
                memcpy += n
            elif name.startswith(b"cudaEvent"):
                events += n
        for scope in facts.qualified:
            if scope in (b"at", b"torch", b"thrust", b"cub", b"cutlass"):
                reference = reference or scope in (b"at", b"torch", b"cutlass")
    if language in ("torch", "triton", "cute"):
        py = python_features(text)
        lib += py["lib.calls"]
        reference = reference or py["lib.calls"] > 0
    kernels = len(facts.kernels) if facts is not None else 0
    if language in ("triton", "cute"):
        kernels += python_features(text)["kernel.count"]
    out.update({
        "kernel.has_custom_kernel": kernels > 0,
        "lib.calls": lib,
        "lib.reference_library": reference,
        "host.graphs": graphs,
        "host.streams": streams,
        "host.device_syncs": syncs,
        "host.memcpy": memcpy,
        "host.events": events,
    })
    return out
