"""Anti-hacking checks on state a program keeps between calls: cached outputs, literal tables.

A launcher is called many times (correctness trials, warm-up, timing); whatever it keeps between
calls -- mutable host globals, static locals, big literal tables, mutable device globals -- is a
place to replay a result instead of computing it. Part of the flat list in ``hacking.CHECKS``.
"""

from __future__ import annotations

import re

from structcover.tools.compiler.launches import node_text, parse
from structcover.tools.verify.hacking_subject import Subject, as_subject, line_of

__all__ = ["check_device_globals", "check_no_cached_outputs", "check_no_hardcoded_tables"]


def _immutable(decl: str) -> bool:
    """Whether a declaration's object itself is const (``const float* p`` is not: ``p`` can be
    reassigned to a cached buffer; ``float* const p`` and ``const int n`` are)."""
    head = decl.split("=", 1)[0]
    if re.search(r"\bconstexpr\b", head):
        return True
    if "*" in head or "&" in head:
        return bool(re.search(r"[*&]\s*const\b[^*&]*$", head))
    return bool(re.search(r"\bconst\b", head))


def _host_state(text: str) -> str | None:
    """Mutable host state that survives between launcher calls, described; None if none."""
    root = parse(text)
    for node in root.named_children:
        target = node
        if node.type == "linkage_specification":
            target = node.child_by_field_name("body") or node
        candidates = target.named_children if target.type == "declaration_list" else [target]
        for decl in candidates:
            if decl.type != "declaration":
                continue
            decl_text = node_text(decl)
            if (re.search(r"__(?:device|constant|shared|managed)__", decl_text)
                    or _immutable(decl_text)
                    or any(c.type == "function_declarator" for c in decl.named_children)
                    or re.match(r"\s*(?:extern\s+)?(?:typedef|using|namespace)\b", decl_text)):
                continue
            return (f"mutable host global `{decl_text.strip()[:80]}` "
                    f"(line {decl.start_point[0] + 1})")
    for node in _descendants(root, "function_definition"):
        if any(c.type in ("__global__", "__device__") for c in node.children):
            continue
        body = node.child_by_field_name("body")
        for decl in _descendants(body, "declaration"):
            decl_text = node_text(decl)
            if re.match(r"\s*(?:static|thread_local)\b", decl_text) and \
                    not _immutable(decl_text):
                return (f"static local in host function `{decl_text.strip()[:80]}` "
                        f"(line {decl.start_point[0] + 1})")
    return None


def _descendants(node, kind: str):
    if node is None:
        return []
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            found.append(current)
        stack.extend(current.children)
    return sorted(found, key=lambda n: n.start_byte)  # report the first in the file


# Rationale: a launcher that keeps static or global host state can compute once and replay a
# cached result (or skip work) on the timed calls; programs must be stateless between calls
# (scratch buffers are allocated per call). Hard.
def check_no_cached_outputs(program: str | Subject) -> tuple[bool, str]:
    """No static locals in host functions and no mutable host globals (host pass)."""
    found = _host_state(as_subject(program).pp.host)
    return (False, f"state kept across calls: {found}") if found else (True, "no host state")


# Rationale: a big literal table can hold precomputed outputs for the test sizes. Honest
# programs have small constant tables (coefficients, twiddles), so this only warns.
def check_no_hardcoded_tables(program: str | Subject) -> tuple[bool, str]:
    """No initializer with 64 or more numeric literals."""
    for text in as_subject(program).passes:
        for m in re.finditer(r"=\s*\{([^{}]*)\}", text):
            numbers = re.findall(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?[fF]?", m.group(1))
            if len(numbers) >= 64:
                return False, (f"literal table of {len(numbers)} numbers (line "
                               f"{line_of(text, m.start())}): possible hard-coded output")
    return True, "no large literal tables"


# Rationale: mutable __device__ globals persist across launches (legitimate for retirement
# counters, but also a place to cache results between calls). Warning.
def check_device_globals(program: str | Subject) -> tuple[bool, str]:
    """Report non-const ``__device__``/``__managed__`` globals."""
    for text in as_subject(program).passes:
        m = re.search(r"^\s*(?:static\s+)?__(?:device|managed)__\s+(?!.*\()(?!const\b)[^;]*;",
                      text, re.M)
        if m:
            return False, (f"mutable device global persists across calls: "
                           f"`{m.group(0).strip()[:80]}` (line {line_of(text, m.start())})")
    return True, "no mutable device globals"
