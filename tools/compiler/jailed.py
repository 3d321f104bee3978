"""Compilers on untrusted text, in the jail (``tools/verify/jail.py``): nvcc and NVRTC.

Both see only the toolchain (read-only), the program's folder and the user's include folders;
``#include "/etc/passwd"`` or ``/proc/self/environ`` finds nothing, a macro bomb ends at the
memory limit (RLIMIT_AS per process) or the time limit, and messages about any file but the
program's own are dropped (``jail.own_lines``). NVRTC runs in a jailed Python child
(``_nvrtc_jail.py``), never in the caller's process.
"""

from __future__ import annotations

import json
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

from structcover.tools.compiler.raw import RawCompile
from structcover.tools.verify.jail import SandboxUnavailable, own_lines, run_compiler

#: Address-space limit per compiler process (cicc and NVRTC reserve a few GiB of virtual memory).
COMPILER_MEMORY_MB = 8192
_SCRIPT = Path(__file__).with_name("_nvrtc_jail.py")


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


def compile_nvrtc_jailed(source: str, name: str, options: list[str],
                         include_dirs: Sequence[Path], name_expressions: list[str],
                         timeout_s: float) -> RawCompile:
    """NVRTC on ``source`` in a jailed Python child; same result as ``nvrtc.compile_nvrtc``."""
    with tempfile.TemporaryDirectory(prefix="structcover-nvrtc-") as tmp:
        work = Path(tmp)
        (work / name).write_text(source, encoding="utf-8", errors="surrogatepass")
        (work / "job.json").write_text(json.dumps({"name": name, "options": options,
                                                   "name_expressions": name_expressions}))
        try:
            result = run_compiler([str(Path(sys.executable)), "-I", str(_SCRIPT), str(work)],
                                  readable=[*_python_dirs(), _SCRIPT, *map(Path, include_dirs)],
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
