"""NVRTC compile of untrusted text, run as a script inside the jail (``jailed.py``).

Standalone on purpose: it imports only the standard library and ``cuda.bindings.nvrtc`` (no
code of this package). The jail gives it the Python installation, the virtual environment
(read-only), this file and (one-shot mode) its folder; nothing else.

Two modes:

* ``_nvrtc_jail.py FOLDER`` (one-shot): reads ``job.json`` and the source from ``FOLDER``,
  writes ``result.json`` plus ``program.ptx``/``program.cubin`` there, exits.
* ``_nvrtc_jail.py --serve`` (the warm worker of ``nvrtc_pool.py``): frames on stdin/stdout,
  each a 4-byte big-endian length then that many bytes of JSON. It first sends
  ``{"ready": true}``; then per job ``{"name", "options", "name_expressions", "source"}``
  (source base64) it replies ``{"ok", "log", "ptx", "cubin", "code", "cpu_s"}`` (ptx and
  cubin base64, ``code`` the compile's nvrtcResult, ``cpu_s`` this process's CPU seconds so
  far). A zero length or end of input ends it. Any error ends the process (the parent reports
  it as a dead NVRTC process, as in one-shot mode, and starts a fresh worker).
"""

import base64
import json
import os
import resource
import struct
import sys
from pathlib import Path


def _check(result: object, what: str) -> None:
    from cuda.bindings import nvrtc

    code = result[0] if isinstance(result, tuple) else result
    if code != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {code}")


def compile_job(job: dict, source: bytes) -> dict:
    """Compile ``source``; ``{"ok", "log", "ptx": bytes, "cubin": bytes, "code": int}``."""
    from cuda.bindings import nvrtc

    res, prog = nvrtc.nvrtcCreateProgram(source, job["name"].encode(), 0, [], [])
    _check(res, "nvrtcCreateProgram")
    out = {"ok": False, "log": "", "ptx": b"", "cubin": b"", "code": -1}
    try:
        for expr in job["name_expressions"]:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in job["options"]]
        (compiled,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        out["code"] = int(compiled)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        out["log"] = log.rstrip(b"\x00").decode("utf-8", "replace")
        if compiled == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            ptx = b" " * size
            _check(nvrtc.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
            out["ptx"] = ptx.rstrip(b"\x00")
            _, size = nvrtc.nvrtcGetCUBINSize(prog)
            cubin = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            out["cubin"] = cubin
            out["ok"] = True
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return out


def main(folder: Path) -> None:
    """One-shot mode: one job from ``folder``, results into ``folder``."""
    job = json.loads((folder / "job.json").read_text())
    out = compile_job(job, (folder / job["name"]).read_bytes())
    if out["ok"]:
        (folder / "program.ptx").write_bytes(out["ptx"])
        (folder / "program.cubin").write_bytes(out["cubin"])
    (folder / "result.json").write_text(json.dumps({"ok": out["ok"], "log": out["log"]}))


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _send(fd: int, message: dict) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    data = json.dumps({**message, "cpu_s": usage.ru_utime + usage.ru_stime}).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def serve() -> None:
    """Warm-worker mode: compile jobs from stdin until it closes."""
    from cuda.bindings import nvrtc  # noqa: F401 - imported once, before "ready"

    # The frames get private descriptors; fd 0 and 1 become /dev/null and stderr, so nothing
    # that prints (a library, a warning) can corrupt the protocol.
    inp, out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    _send(out, {"ready": True})
    while True:
        try:
            (size,) = struct.unpack(">I", _read_exact(inp, 4))
        except EOFError:
            return
        if size == 0:
            return
        job = json.loads(_read_exact(inp, size))
        res = compile_job(job, base64.b64decode(job["source"]))
        _send(out, {**res, "ptx": base64.b64encode(res["ptx"]).decode(),
                    "cubin": base64.b64encode(res["cubin"]).decode()})


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        main(Path(sys.argv[1]))
