"""Compile device code in-process with NVRTC (``cuda.bindings.nvrtc``); no GPU needed.

NVRTC rejects host code, so callers hand it a sliced program (see :mod:`slicing`). This
module is called inside the compile service's child process, never in the caller's process.
"""

from __future__ import annotations

from pathlib import Path

from structcover.tools.compiler.raw import RawCompile


def _check(result: object, what: str) -> None:
    from cuda.bindings import nvrtc

    code = result[0] if isinstance(result, tuple) else result
    if code != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {code}")


def nvrtc_options(arch: str, include_dirs: list[Path]) -> list[str]:
    """The NVRTC options the service uses (part of the cache key)."""
    opts = [f"--gpu-architecture={arch}", "--ptxas-options=-v", "--std=c++17"]
    opts.extend(f"--include-path={d}" for d in include_dirs)
    return opts


def compile_nvrtc(source: str, name: str, arch: str, include_dirs: list[Path],
                  name_expressions: list[str]) -> RawCompile:
    """Compile ``source`` (device code only) to PTX and cubin.

    Args:
        source: The sliced device program.
        name: The file name NVRTC uses in diagnostics.
        arch: A real architecture such as ``sm_90`` (so ptxas runs and reports).
        include_dirs: Folders for cooperative_groups.h and friends.
        name_expressions: Template kernel instantiations to emit (``scale<4>``).

    Returns:
        The raw outputs; ``ok`` is False with the log when the program does not compile.
    """
    from cuda.bindings import nvrtc

    res, prog = nvrtc.nvrtcCreateProgram(source.encode("utf-8", "surrogatepass"),
                                         name.encode(), 0, [], [])
    _check(res, "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in nvrtc_options(arch, include_dirs)]
        (compiled,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log_buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log_buf)
        log = log_buf.rstrip(b"\x00").decode("utf-8", "replace")
        if compiled != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return RawCompile(ok=False, log=log)
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx_buf = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx_buf), "nvrtcGetPTX")
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        return RawCompile(ok=True, log=log, ptx=ptx_buf.rstrip(b"\x00").decode(), cubin=cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
