"""Parse ptxas' ``-v`` report (nvcc's stderr or NVRTC's program log) per kernel."""

from __future__ import annotations

import re
import shutil
import subprocess

from structcover.schema import CompileStats

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def _split_top_level(name: str) -> str:
    """``void scale<4>(float*)`` -> ``scale<4>``: drop parameters and return type."""
    depth = 0
    cut = len(name)
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    head = name[:cut].strip()
    depth = 0
    last_space = -1
    for i, ch in enumerate(head):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0:
            last_space = i
    return head[last_space + 1:] if last_space >= 0 else head


def _fallback_demangle(symbol: str) -> str:
    """Base name of an Itanium-mangled symbol without a demangler (``_Z3addPKfPfi`` -> add)."""
    match = re.match(r"_Z(?:N)?(\d+)(\w+)", symbol)
    if not match:
        return symbol
    length = int(match.group(1))
    return match.group(2)[:length]


def demangle(symbols: list[str]) -> dict[str, str]:
    """Demangled full names (``scale<4>(float*)``) for ``symbols``, using c++filt when present.

    Symbols that are not mangled (``extern "C"`` kernels) map to themselves.
    """
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    names = {s: s for s in symbols}
    mangled = [s for s in symbols if s.startswith("_Z")]
    if not mangled:
        return names
    if tool is not None:
        try:
            out = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                                 text=True, timeout=10, check=False).stdout.splitlines()
            if len(out) == len(mangled):
                names.update(zip(mangled, (o.strip() for o in out), strict=True))
                return names
        except (OSError, subprocess.TimeoutExpired):
            pass
    names.update({s: _fallback_demangle(s) for s in mangled})
    return names


def short_name(demangled: str) -> str:
    """The kernel's name as written in a launch, template arguments kept: ``scale<4>``."""
    return _split_top_level(demangled)


def parse_ptxas(log: str) -> list[tuple[str, CompileStats]]:
    """Per-kernel ptxas statistics from a ``-v`` log.

    Args:
        log: nvcc's stderr or NVRTC's program log, compiled with ``-Xptxas -v``.

    Returns:
        ``(mangled symbol, stats)`` per entry function (kernel), in log order. The stats'
        ``kernel`` is the raw symbol; :func:`name_stats` gives readable names.
    """
    stats: dict[str, CompileStats] = {}
    current_entry: str | None = None
    current_props: str | None = None
    frames: dict[str, tuple[int, int, int]] = {}
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current_entry = m.group(1)
            stats.setdefault(current_entry, CompileStats(kernel=current_entry))
            continue
        if m := _PROPS.search(line):
            current_props = m.group(1)
            continue
        if (m := _FRAME.search(line)) and current_props is not None:
            frames[current_props] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        if (m := _USED.search(line)) and current_entry is not None:
            entry = stats[current_entry]
            entry.registers = int(m.group(1))
            if b := _BARRIERS.search(line):
                entry.barriers = int(b.group(1))
            if s := _SMEM.search(line):
                entry.smem_bytes = int(s.group(1))
    for symbol, entry in stats.items():
        if symbol in frames:
            entry.stack_bytes, entry.spill_store_bytes, entry.spill_load_bytes = frames[symbol]
    return list(stats.items())


def name_stats(parsed: list[tuple[str, CompileStats]]) -> tuple[list[CompileStats],
                                                                   dict[str, str]]:
    """Give each kernel its readable name.

    Returns:
        The stats with ``kernel`` set to the short demangled name (``scale<4>``), and a map
        from that name to the mangled symbol.
    """
    names = demangle([symbol for symbol, _ in parsed])
    out: list[CompileStats] = []
    symbols: dict[str, str] = {}
    for symbol, stat in parsed:
        name = short_name(names[symbol])
        out.append(stat.model_copy(update={"kernel": name}))
        symbols[name] = symbol
    return out, symbols
