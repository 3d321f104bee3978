"""Compile check for mutation candidates: the compile service when present, else nvcc.

Results are cached by content hash in memory (operators re-check the same candidate often,
e.g. in chains and statistics runs).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from structcover.schema import content_hash
from structcover.tools.compiler.toolchain import find_nvcc

_CACHE: dict[str, tuple[bool, str]] = {}


def _via_service(source: str) -> tuple[bool, str] | None:
    try:
        from structcover.tools.compiler.service import compile_program
    except ImportError:
        return None
    result = compile_program(source, arch="sm_90", via="nvcc")
    ok = bool(getattr(result, "ok", False))
    log = str(getattr(result, "log", "") or "")
    if not ok:
        errors = getattr(result, "errors", None)
        if errors:
            log = "\n".join(str(e) for e in errors) + "\n" + log
    return ok, log


def _via_nvcc(source: str) -> tuple[bool, str]:
    nvcc = find_nvcc()  # PATH, CUDA_HOME or the nvidia-cuda-nvcc wheel, like the service
    if nvcc is None:
        return False, "no compiler: nvcc not found and the compile service is missing"
    with tempfile.TemporaryDirectory(prefix="sc-mut-") as tmp:
        path = Path(tmp) / "prog.cu"
        path.write_text(source)
        cmd = [str(nvcc), "-arch=sm_90", "-c", str(path), "-o", str(Path(tmp) / "p.o")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return proc.returncode == 0, proc.stderr


def check_compiles(source: str) -> tuple[bool, str]:
    """Whether ``source`` (host launcher included) compiles for sm_90, with the log."""
    key = content_hash(source)
    if key not in _CACHE:
        service = _via_service(source)
        _CACHE[key] = service if service is not None else _via_nvcc(source)
    return _CACHE[key]
