"""Compilers on untrusted text, in the jail (``tools/verify/jail.py``): nvcc and NVRTC.

Both see only the toolchain (read-only), the program's folder and the user's include folders;
``#include "/etc/passwd"`` or ``/proc/self/environ`` finds nothing, a macro bomb ends at the
memory limit (RLIMIT_AS per process) or the time limit, and messages about any file but the
program's own are dropped (``jail.own_lines``). NVRTC runs in a jailed Python child
(``_nvrtc_jail.py``), never in the caller's process: a warm worker of ``nvrtc_pool.py`` that
serves many compiles, or a one-shot child per compile (the fallback, and the debugging switch
``STRUCTCOVER_NVRTC_WORKER=0``).
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

from structcover.tools.compiler.nvrtc_pool import (
    SCRIPT,
    WorkerUnavailable,
    nvrtc_pool,
    worker_enabled,
)
from structcover.tools.compiler.raw import RawCompile
from structcover.tools.verify.jail import SandboxUnavailable, own_lines, run_compiler

#: Address-space limit per compiler process (cicc and NVRTC reserve a few GiB of virtual memory).
COMPILER_MEMORY_MB = 8192
_log = logging.getLogger(__name__)


def _toolkit_dirs(nvcc: Path) -> list[Path]:
    """What nvcc needs besides /usr: its own tree (and, for the wheels, the nvidia/ folder)."""
    root = Path(nvcc).resolve().parent.parent
    return [root.parent if root.parent.name == "nvidia" else root]


def clean_log(log: str, name: str) -> str:
    """ptxas resource lines plus diagnostics about the program's own file ``name``."""
    # ptxas reports (and their indented continuation lines: stack frame, spills) stay in
    # order; everything else goes through own_lines.
    ptxas: list[str] = []
    rest: list[str] = []
    in_ptxas = False
    for line in log.splitlines():
        if line.startswith("ptxas") or (in_ptxas and line.startswith((" ", "\t"))):
            in_ptxas = True
            ptxas.append(line)
        else:
            in_ptxas = False
            rest.append(line)
    keep = own_lines("\n".join(rest), (name,))
    return "\n".join([*ptxas, keep] if keep else ptxas)


def nvcc_in_jail(nvcc: Path, cmd_tail: list[str], work: Path, timeout_s: float,
                 include_dirs: Sequence[Path] = ()) -> tuple[int | None, str, bool]:
    """Run ``nvcc *cmd_tail`` in the jail with ``work`` writable.

    Returns:
        (exit code or None when killed, cleaned log, timed out).
    """
    try:
        result = run_compiler([str(nvcc), *cmd_tail], readable=[*_toolkit_dirs(nvcc),
                                                               *map(Path, include_dirs)],
                              folder=work, timeout_s=timeout_s, memory_mb=COMPILER_MEMORY_MB)
    except SandboxUnavailable as exc:
        return 1, str(exc), False
    log = (result.stdout + result.stderr).decode("utf-8", "replace")
    log = log.replace(str(work / "program.cu"), "program.cu")
    return result.returncode, clean_log(log, "program.cu"), result.timed_out


def _python_dirs() -> list[Path]:
    dirs = {Path(sys.base_prefix), Path(sys.prefix), Path(sysconfig.get_paths()["purelib"]),
            Path(sysconfig.get_paths()["platlib"])}
    return sorted(d.resolve() for d in dirs if d.is_dir())


def _nvrtc_binds(include_dirs: Sequence[Path]) -> list[Path]:
    """What the jailed NVRTC child reads: Python, the venv, the script, the include folders
    (and, as ``run_compiler`` adds, the interpreter's own tree where it is not in /usr)."""
    exe = str(Path(sys.executable))
    extra = [] if exe.startswith("/usr/") else [Path(exe).resolve().parent.parent]
    return [*_python_dirs(), SCRIPT, *map(Path, include_dirs), *extra]


def compile_nvrtc_jailed(source: str, name: str, options: list[str],
                         include_dirs: Sequence[Path], name_expressions: list[str],
                         timeout_s: float) -> RawCompile:
    """NVRTC on ``source`` in the jail; same result as ``nvrtc.compile_nvrtc``.

    A warm jailed worker does the compile (``nvrtc_pool.py``); where none can start, or with
    ``STRUCTCOVER_NVRTC_WORKER=0``, a one-shot jailed child does. Both give the same result.
    """
    if worker_enabled():
        job = {"name": name, "options": options, "name_expressions": name_expressions,
               "source": base64.b64encode(source.encode("utf-8", "surrogatepass")).decode()}
        try:
            reply = nvrtc_pool(COMPILER_MEMORY_MB).compile(_nvrtc_binds(include_dirs), job,
                                                           timeout_s)
        except SandboxUnavailable as exc:
            return RawCompile(ok=False, log=str(exc))
        except WorkerUnavailable as exc:
            _log.warning("NVRTC worker unavailable, compiling in a one-shot child: %s", exc)
        else:
            if reply.timed_out:
                return RawCompile(ok=False, log=reply.log, timed_out=True)
            if reply.died:
                return RawCompile(ok=False, log=f"NVRTC process died ({reply.died})")
            log = clean_log(reply.log, name)
            if not reply.ok:
                return RawCompile(ok=False, log=log)
            return RawCompile(ok=True, log=log, ptx=reply.ptx, cubin=reply.cubin)
    return compile_nvrtc_one_shot(source, name, options, include_dirs, name_expressions,
                                  timeout_s)


def compile_nvrtc_one_shot(source: str, name: str, options: list[str],
                           include_dirs: Sequence[Path], name_expressions: list[str],
                           timeout_s: float) -> RawCompile:
    """NVRTC on ``source`` in a fresh jailed Python child (one process per compile)."""
    with tempfile.TemporaryDirectory(prefix="structcover-nvrtc-") as tmp:
        work = Path(tmp)
        (work / name).write_text(source, encoding="utf-8", errors="surrogatepass")
        (work / "job.json").write_text(json.dumps({"name": name, "options": options,
                                                   "name_expressions": name_expressions}))
        try:
            result = run_compiler([str(Path(sys.executable)), "-I", str(SCRIPT), str(work)],
                                  readable=[*_python_dirs(), SCRIPT, *map(Path, include_dirs)],
                                  folder=work, timeout_s=timeout_s,
                                  memory_mb=COMPILER_MEMORY_MB)
        except SandboxUnavailable as exc:
            return RawCompile(ok=False, log=str(exc))
        if result.timed_out:
            return RawCompile(ok=False, log=f"compile timed out after {timeout_s:g} s",
                              timed_out=True)
        try:
            out = json.loads((work / "result.json").read_text())
        except (OSError, ValueError):
            sig = result.signal
            why = f"killed by signal {sig} (memory limit?)" if sig else f"exit {result.returncode}"
            return RawCompile(ok=False, log=f"NVRTC process died ({why})")
        log = clean_log(out["log"], name)
        if not out["ok"]:
            return RawCompile(ok=False, log=log)
        return RawCompile(ok=True, log=log, ptx=(work / "program.ptx").read_text(),
                          cubin=(work / "program.cubin").read_bytes())
