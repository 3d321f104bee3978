"""The preprocessed token stream the anti-hacking checks read (CUDA/C++ programs).

A check that reads raw text is evaded by a macro (``#define SYNC cudaEventRecord``), fooled by
``#if 0`` blocks and by comments or strings that name a forbidden call. So the checks read the
program as the compiler would: the system C preprocessor (GNU ``cpp``, present wherever the CPU
emulator's g++ is) expands macros and drops inactive branches and comments. Twice, as nvcc
does: once for the host (no ``__CUDA_ARCH__``) and once for the device (``__CUDA_ARCH__``
defined), so code hidden in either branch is seen.

Untrusted text never makes the preprocessor read a file: every ``#include``-like directive
(``include``, ``include_next``, ``import``, ``embed``, digraph ``%:`` spellings too) is removed
first and only its target name is recorded (the library check reads them); ``#line`` and GNU
line markers are removed so every line of the output maps to a line of the program;
``__has_include`` is answered "no". The preprocessor runs with a time, memory and output limit,
so a macro bomb fails the ``preprocesses`` check instead of exhausting the verifier.

The result is *aligned*: line ``i`` of ``host``/``device`` holds what the preprocessor made of
line ``i`` of the program, so checks report the program's own line numbers.
"""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from structcover.tools.verify.rlimits import limited

#: Limits for one preprocessor run.
TIMEOUT_S = 5.0
MEMORY_BYTES = 512 << 20
OUTPUT_BYTES = 16 << 20

_SPLICE = re.compile(r"\\\r?\n")
_COMMENT_OR_STRING = re.compile(
    r'R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)"'   # raw string
    r'|"(?:\\.|[^"\\\n])*"'                              # string
    r"|'(?:\\.|[^'\\\n])*'"                              # char
    r"|//[^\n]*|/\*.*?\*/", re.DOTALL)
_DIRECTIVE = re.compile(r"^\s*(?:#|%:)\s*(?P<name>include_next|include|import|embed|line|\d+)\b"
                        r"(?P<rest>.*)$")
_TARGET = re.compile(r'[<"]([^>"]*)[>"]')
_HAS_INCLUDE = re.compile(r"\b__has_include(?:_next)?\b")
_MARKER = re.compile(r'^#\s+(\d+)\s+"([^"]*)"')
#: What nvcc predefines (the emulator must not be told apart, so the checks see the same).
_DEFINES = ["-D__CUDACC__", "-D__NVCC__", "-D__CUDACC_VER_MAJOR__=12",
            "-D__CUDACC_VER_MINOR__=4", "-D__CUDACC_VER_BUILD__=0",
            "-D__sc_no_include(x)=0"]


@dataclass
class Preprocessed:
    """A program as the checks see it.

    Attributes:
        host: Aligned host-pass text (comments gone, macros expanded, inactive code dropped).
        device: Aligned device-pass text (``__CUDA_ARCH__`` defined).
        includes: Targets of the removed include-like directives, in order.
        strings: Contents of the string literals of both passes (asm labels, alias names).
        error: Why preprocessing failed (time, memory or output limit, no ``cpp``); the
            texts then fall back to the program with comments removed.
    """

    host: str
    device: str
    includes: list[str] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def passes(self) -> list[str]:
        """Both passes, device first (kernels live there)."""
        return [self.device, self.host]


def strip_comments(source: str) -> str:
    """Remove ``//`` and ``/* */`` comments, keeping line breaks and string literals."""
    def repl(match: re.Match[str]) -> str:
        text = match.group(0)
        return "\n" * text.count("\n") if text.startswith("/") else text

    return _COMMENT_OR_STRING.sub(repl, source)


def blank_strings(text: str) -> tuple[str, list[str]]:
    """``text`` with string and char literal contents blanked, and the string contents.

    Identifier checks then never match words inside strings; line breaks are kept.
    """
    found: list[str] = []

    def repl(match: re.Match[str]) -> str:
        lit = match.group(0)
        if lit.startswith("/"):
            return "\n" * lit.count("\n")
        if lit in ('"C"', '"C++"'):
            return lit  # linkage names: `extern "C"` must stay readable
        if lit.startswith(("\"", "R\"")):
            found.append(lit)
        quote = "'" if lit.startswith("'") else '"'
        return quote + "\n" * lit.count("\n") + quote

    return _COMMENT_OR_STRING.sub(repl, text), found


def _neutralize(source: str) -> tuple[str, list[str]]:
    """Splice continued lines (keeping the line count), drop include-like and line directives."""
    # A directive continued with backslash-newline must be seen whole; padding keeps lines.
    lines: list[str] = []
    pending = ""
    pad = 0
    for raw in source.replace("\r\n", "\n").split("\n"):
        if raw.endswith("\\"):
            pending += raw[:-1]
            pad += 1
            continue
        lines.append(pending + raw)
        lines.extend([""] * pad)
        pending, pad = "", 0
    if pending:
        lines.append(pending)
        lines.extend([""] * (pad - 1))
    includes: list[str] = []
    # Comments may sit between `#` and the directive name: judge each line without them.
    plain = strip_comments("\n".join(lines)).split("\n")
    out = []
    for line, bare in zip(lines, plain, strict=True):
        m = _DIRECTIVE.match(bare)
        if m:
            if m.group("name") not in ("line",) and not m.group("name").isdigit():
                target = _TARGET.search(m.group("rest"))
                includes.append(target.group(1) if target else m.group("rest").strip()[:80])
            out.append("")
            continue
        out.append(_HAS_INCLUDE.sub("__sc_no_include", line))
    return "\n".join(out), includes


#: The preprocessor's limits, the address space last (see ``rlimits.limited``).
_LIMITS = ((resource.RLIMIT_FSIZE, OUTPUT_BYTES), (resource.RLIMIT_CORE, 0),
           (resource.RLIMIT_AS, MEMORY_BYTES))


def _align(output: str, n_lines: int) -> str:
    """Put every output line at the program line its marker says; join lines that share one."""
    rows: list[list[str]] = [[] for _ in range(n_lines + 1)]
    line, ours = 1, True
    for text in output.split("\n"):
        m = _MARKER.match(text)
        if m:
            line, ours = int(m.group(1)), m.group(2) == "<stdin>"
            continue
        if ours and text.strip():
            rows[min(max(line, 1), n_lines) - 1].append(text.strip())
        line += 1
    return "\n".join(" ".join(r) for r in rows[:n_lines])


def _run_cpp(text: str, defines: list[str], workdir: Path) -> tuple[str | None, str | None]:
    cpp = shutil.which("cpp")
    if cpp is None:
        return None, "no C preprocessor (cpp) on PATH"
    out_path, err_path = workdir / "out.i", workdir / "err.txt"
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            argv, preexec = limited(
                [cpp, "-x", "c++", "-std=gnu++17", "-nostdinc", "-w", *_DEFINES, *defines, "-"],
                _LIMITS)
            proc = subprocess.run(
                argv, input=text.encode("utf-8", "surrogatepass"), stdout=out,
                stderr=err, cwd=workdir, timeout=TIMEOUT_S, preexec_fn=preexec,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}, check=False)
    except subprocess.TimeoutExpired:
        return None, f"the preprocessor ran past {TIMEOUT_S:g} s (macro bomb?)"
    size = out_path.stat().st_size
    if size >= OUTPUT_BYTES - 1:
        return None, f"preprocessed output reached {OUTPUT_BYTES >> 20} MiB (macro bomb?)"
    if proc.returncode < 0:
        return None, f"the preprocessor was killed by signal {-proc.returncode} (memory limit?)"
    # cpp that runs out of memory under the limit exits 1 after a partial output: the checks
    # would read a program cut short, so it is a failure, not an ordinary #error.
    with open(err_path, "rb") as err:
        diagnostics = err.read(1 << 16)
    if b"memory exhausted" in diagnostics or b"out of memory" in diagnostics:
        return None, "the preprocessor ran out of memory (macro bomb?)"
    # A non-zero exit (an `#error`, a bad directive) still leaves usable output.
    return out_path.read_text(encoding="utf-8", errors="replace"), None


def preprocess(source: str) -> Preprocessed:
    """Preprocess a CUDA/C++ program for the checks (see the module doc); the result of one
    text is kept for the next ask (:func:`_preprocess` is pure: the campaign's pipeline asks
    for one candidate twice, in its anti-hacking stage and in the equivalence check's, and
    each ask is two sandboxed ``cpp`` runs).

    Args:
        source: The untrusted program.

    Returns:
        The aligned host and device passes, the include targets, the string contents and, when
        the preprocessor failed, why (the passes then hold the comment-stripped program).
    """
    return _preprocess(source)


@lru_cache(maxsize=256)
def _preprocess(source: str) -> Preprocessed:
    text, includes = _neutralize(source)
    n_lines = text.count("\n") + 1
    passes: list[str] = []
    error = None
    with tempfile.TemporaryDirectory(prefix="sc-pp-") as tmp:
        for defines in (["-D__CUDA_ARCH__=800"], []):
            out, error = _run_cpp(text, defines, Path(tmp))
            if out is None:
                break
            passes.append(_align(out, n_lines))
    if error is not None:
        fallback = strip_comments(text)
        passes = [fallback, fallback]
    strings: list[str] = []
    blanked = []
    for p in passes:
        b, s = blank_strings(p)
        blanked.append(b)
        strings += s
    return Preprocessed(host=blanked[1], device=blanked[0], includes=includes,
                        strings=strings, error=error)
