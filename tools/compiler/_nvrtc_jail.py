"""NVRTC compile of untrusted text, run as a script inside the jail (``nvrtc_jailed.py``).

Standalone on purpose: it imports only the standard library and ``cuda.bindings.nvrtc`` (no
code of this package), reads ``job.json`` and the source from its folder, and writes
``result.json`` plus ``program.ptx``/``program.cubin`` there. The jail gives it the Python
installation, the virtual environment (read-only), this file and the folder; nothing else.
"""

import json
import sys
from pathlib import Path


def _check(result: object, what: str) -> None:
    from cuda.bindings import nvrtc

    code = result[0] if isinstance(result, tuple) else result
    if code != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {code}")


def main(folder: Path) -> None:
    from cuda.bindings import nvrtc

    job = json.loads((folder / "job.json").read_text())
    source = (folder / job["name"]).read_bytes()
    res, prog = nvrtc.nvrtcCreateProgram(source, job["name"].encode(), 0, [], [])
    _check(res, "nvrtcCreateProgram")
    out = {"ok": False, "log": ""}
    try:
        for expr in job["name_expressions"]:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in job["options"]]
        (compiled,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        out["log"] = log.rstrip(b"\x00").decode("utf-8", "replace")
        if compiled == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            ptx = b" " * size
            _check(nvrtc.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
            (folder / "program.ptx").write_bytes(ptx.rstrip(b"\x00"))
            _, size = nvrtc.nvrtcGetCUBINSize(prog)
            cubin = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            (folder / "program.cubin").write_bytes(cubin)
            out["ok"] = True
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    (folder / "result.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
