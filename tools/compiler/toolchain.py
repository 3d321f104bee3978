"""Find the compilers: nvcc (toolkit or pip wheels) and NVRTC (cuda-bindings + wheel).

Both are optional. Callers ask :func:`find_nvcc` / :func:`nvrtc_available` and fall back or
report a clear reason; nothing here raises when a compiler is missing.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path


def _site_dirs() -> list[Path]:
    """site-packages folders of this interpreter (the wheels' home)."""
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    dirs.update(p for p in sys.path if p.endswith("site-packages"))
    return [Path(d) for d in sorted(dirs) if Path(d).is_dir()]


def _wheel_nvcc_candidates() -> list[Path]:
    # The nvidia-cuda-nvcc wheels put the binary under nvidia/cu<N>/bin (CUDA 13) or
    # nvidia/cuda_nvcc/bin (CUDA 12); accept both layouts.
    found: list[Path] = []
    for site in _site_dirs():
        nvidia = site / "nvidia"
        if nvidia.is_dir():
            found.extend(sorted(nvidia.glob("*/bin/nvcc")))
    return found


@functools.lru_cache(maxsize=1)
def find_nvcc() -> Path | None:
    """Locate nvcc: ``PATH``, then ``$CUDA_HOME``/``$CUDA_PATH``, then the pip wheels.

    Returns:
        The nvcc executable, or None when none is installed.
    """
    on_path = shutil.which("nvcc")
    if on_path:
        return Path(on_path)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return Path(home) / "bin" / "nvcc"
    for cand in _wheel_nvcc_candidates():
        if os.access(cand, os.X_OK):
            return cand
    return None


@functools.lru_cache(maxsize=1)
def nvcc_version() -> str | None:
    """nvcc's release string (``"13.0.88"``), or None without nvcc."""
    nvcc = find_nvcc()
    if nvcc is None:
        return None
    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"V(\d+\.\d+\.\d+)", out)
    return match.group(1) if match else out.strip().splitlines()[-1] if out.strip() else None


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> str | None:
    """NVRTC's version (``"13.5"``), or None when cuda-bindings or the library is missing."""
    try:
        from cuda.bindings import nvrtc
        res, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # noqa: BLE001 - any import/loader failure means "no NVRTC"
        return None
    if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None
    return f"{major}.{minor}"


def nvrtc_available() -> bool:
    """True when NVRTC can be loaded in this interpreter."""
    return nvrtc_version() is not None


@functools.lru_cache(maxsize=1)
def cuda_include_dirs() -> list[Path]:
    """Folders with CUDA headers NVRTC may need (cooperative_groups.h, cuda_fp16.h...).

    NVRTC ships its own builtin copies of the fp16/bf16 headers; cooperative groups and the
    rest come from a toolkit or the wheels' include folders.
    """
    roots: list[Path] = []
    nvcc = find_nvcc()
    if nvcc is not None:
        roots.append(nvcc.resolve().parent.parent)
    roots.extend(Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v))
    roots.append(Path("/usr/local/cuda"))
    candidates: list[Path] = []
    for root in roots:
        candidates.append(root / "include")
        candidates.extend(sorted(root.glob("targets/*/include")))
    for site in _site_dirs():
        candidates.extend(sorted((site / "nvidia").glob("*/include")))
    found: list[Path] = []
    for cand in candidates:
        if (cand / "cooperative_groups.h").is_file() and cand.resolve() not in found:
            found.append(cand.resolve())
            # CUDA 13 moved libcu++ (cuda/std/..., used by cooperative groups) under cccl/.
            if (cand / "cccl" / "cuda").is_dir():
                found.append((cand / "cccl").resolve())
    return found
