"""Slice the device code out of a full program so NVRTC (device-only) can compile it.

Kept: kernels, ``__device__`` functions, types, constants, templates, macros, pragmas and
includes of device headers. Dropped: host functions (the ``extern "C"`` launcher included),
host-only globals and host headers. Dropped text is blanked character by character, so every
kept line stays on its original line number; a short prelude (typedefs that host headers
would have given) goes on top and the :class:`LineMap` maps NVRTC's lines back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from structcover.tools.compiler.launches import find_launches, node_text, parse

#: Headers NVRTC can compile (builtin or from a toolkit/wheel include folder).
DEVICE_HEADERS = re.compile(
    r"^(cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|cooperative_groups\.h|cooperative_groups/.*|"
    r"mma\.h|cuda_pipeline.*\.h|cuda_awbarrier.*\.h|cuda/.*|crt/.*|sm_\d+_.*\.h)$")
#: Headers whose definitions the prelude supplies instead.
_STDINT = re.compile(r"^(stdint\.h|cstdint|inttypes\.h|cinttypes)$")

_PRELUDE_STDINT = """typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;"""
# math.h macros programs use in device code; NVRTC has the functions but not these macros.
_PRELUDE_MATH = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif"""

_DEVICE_QUALIFIERS = ("__global__", "__device__")
_DEVICE_VAR = re.compile(r"\b(__device__|__constant__|__shared__|__managed__|const|constexpr)\b")
_HOST_API = re.compile(r"<<<|\bcuda[A-Z]\w*|\bstd::|\bprintf\s*\(\s*stderr")
_CONTAINERS = {"namespace_definition", "declaration_list", "preproc_if", "preproc_ifdef",
               "preproc_else", "preproc_elif", "preproc_elifdef", "linkage_specification",
               "translation_unit"}


@dataclass(frozen=True)
class LineMap:
    """Maps line numbers of the sliced source back to the original program."""

    prelude_lines: int
    original_lines: int

    def to_original(self, sliced_line: int) -> int | None:
        """Original 1-based line of ``sliced_line``; None for prelude lines or out of range."""
        line = sliced_line - self.prelude_lines
        return line if 1 <= line <= self.original_lines else None


@dataclass(frozen=True)
class SlicedSource:
    """The device-only program handed to NVRTC."""

    source: str
    line_map: LineMap
    #: Template kernel instantiations found in launches (``scale<4>``): NVRTC only emits a
    #: template kernel that is named, through ``nvrtcAddNameExpression``.
    name_expressions: list[str] = field(default_factory=list)
    #: What was dropped, for the log: ``"host function launch (line 16)"``.
    dropped: list[str] = field(default_factory=list)


def _has_device_qualifier(func: Node) -> bool:
    return any(c.type in _DEVICE_QUALIFIERS for c in func.children)


def _function_name(func: Node) -> str:
    decl = func.child_by_field_name("declarator")
    while decl is not None and decl.type not in ("function_declarator",):
        decl = decl.child_by_field_name("declarator")
    inner = decl.child_by_field_name("declarator") if decl is not None else None
    return node_text(inner) if inner is not None else "?"


def _decide(node: Node) -> str:
    """``"keep"``, ``"drop"`` or ``"recurse"`` for one top-level item."""
    kind = node.type
    if kind in ("preproc_include",):
        path = node.child_by_field_name("path")
        header = node_text(path).strip('<>"') if path is not None else ""
        return "keep" if DEVICE_HEADERS.match(header) else "drop"
    if kind == "function_definition":
        return "keep" if _has_device_qualifier(node) else "drop"
    if kind == "template_declaration":
        inner = next((c for c in node.named_children if c.type in (
            "function_definition", "declaration", "template_declaration")), None)
        if inner is None:
            return "keep"
        return _decide(inner)
    if kind == "linkage_specification":
        body = node.child_by_field_name("body")
        if body is not None and body.type == "function_definition":
            return _decide(body)
        return "recurse"
    if kind == "declaration":
        text = node_text(node)
        if any(c.type in _DEVICE_QUALIFIERS for c in node.children):
            return "keep"  # a kernel or __device__ prototype/variable
        if _HOST_API.search(text):
            return "drop"
        if any(c.type == "function_declarator" for c in node.named_children):
            return "drop"  # a host function prototype
        # Host mutable globals are invisible to device code; constants stay.
        return "keep" if _DEVICE_VAR.search(text) else "drop"
    if kind == "ERROR":
        text = node_text(node)
        return "keep" if re.search(r"__(device|global|align)__", text) and "<<<" not in text \
            else "drop"
    if kind in _CONTAINERS:
        return "recurse"
    if kind in ("expression_statement",):
        return "drop"
    return "keep"


def _blank(buf: bytearray, start: int, end: int) -> None:
    for i in range(start, end):
        if buf[i] not in (0x0A, 0x0D):
            buf[i] = 0x20


def _visit(node: Node, buf: bytearray, dropped: list[str], includes: list[str]) -> None:
    for child in node.children:
        decision = _decide(child) if child.is_named else "keep"
        if decision == "recurse":
            _visit(child, buf, dropped, includes)
        elif decision == "drop":
            _blank(buf, child.start_byte, child.end_byte)
            line = child.start_point[0] + 1
            if child.type == "preproc_include":
                includes.append(node_text(child.child_by_field_name("path") or child))
                dropped.append(f"include {includes[-1]} (line {line})")
            elif child.type in ("function_definition", "linkage_specification",
                                "template_declaration"):
                func = child if child.type == "function_definition" else next(
                    (c for c in child.named_children if c.type == "function_definition"), child)
                dropped.append(f"host function {_function_name(func)} (line {line})")
            else:
                dropped.append(f"{child.type} (line {line})")


def slice_device_code(source: str) -> SlicedSource:
    """Cut the host code out of ``source``, keeping line numbers.

    Args:
        source: A full CUDA program (kernels plus host launcher).

    Returns:
        The device-only source, its line map, the template instantiations to request and a
        list of what was dropped.
    """
    root = parse(source)
    buf = bytearray(source.encode("utf-8", "surrogatepass"))
    dropped: list[str] = []
    includes: list[str] = []
    _visit(root, buf, dropped, includes)
    body = buf.decode("utf-8", "surrogatepass")
    prelude = [_PRELUDE_STDINT] if any(_STDINT.match(h.strip('<>"')) for h in includes) else []
    prelude.append(_PRELUDE_MATH)
    prelude_text = "\n".join(prelude) + "\n"
    names = sorted({s.expression for s in find_launches(source) if "<" in s.expression})
    return SlicedSource(
        source=prelude_text + body,
        line_map=LineMap(prelude_lines=prelude_text.count("\n"),
                         original_lines=source.count("\n") + 1),
        name_expressions=names,
        dropped=dropped,
    )
