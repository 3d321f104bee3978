"""Slice the device code out of a full program so a compiler sees device code only.

Kept: kernels, ``__device__`` functions, types, constants, templates, macros, pragmas and
includes of device headers. Dropped: host functions (the ``extern "C"`` launcher included),
host-only globals and host headers. Dropped text is blanked character by character, so every
kept line stays on its original line number; a short prelude (typedefs that host headers
would have given) goes on top and the :class:`LineMap` maps the compiler's lines back.

Both compilers get a slice. NVRTC (``target="nvrtc"``) cannot compile host code at all. nvcc
(``target="nvcc"``) could, but a KernelBench-style source includes ``<torch/extension.h>``,
which a bare toolkit does not have; its slice keeps the C/C++ and CUDA headers and drops the
framework ones (torch, ATen, c10, pybind11, Python).

Template kernels are only emitted when instantiated. The launches in the dropped host code
did that, so the slice names them again: :attr:`SlicedSource.name_expressions` for NVRTC's
``nvrtcAddNameExpression``, and for nvcc one line per instantiation appended after the last
original line (taking the kernel's address instantiates it). Template arguments are resolved
to constants where the source fixes them (``#define``, ``const``/``constexpr``); a launch
whose arguments depend on an enclosing template (``k<T><<<...>>>``) cannot be instantiated
and is listed in :attr:`SlicedSource.uninstantiated`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tree_sitter import Node

from structcover.tools.compiler.launches import (
    _constants,
    _safe_eval,
    find_launches,
    node_text,
    parse,
)

#: Headers NVRTC can compile (builtin or from a toolkit/wheel include folder).
DEVICE_HEADERS = re.compile(
    r"^(cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|cooperative_groups\.h|cooperative_groups/.*|"
    r"mma\.h|cuda_pipeline.*\.h|cuda_awbarrier.*\.h|cuda/.*|crt/.*|sm_\d+_.*\.h)$")
#: Framework headers that only a Python/PyTorch build environment has (dropped for nvcc too).
FRAMEWORK_HEADERS = re.compile(r"^(torch/.*|ATen/.*|c10/.*|caffe2/.*|pybind11/.*|Python\.h|"
                               r"torch_.*\.h)$")
#: Template arguments that need no resolution: builtin and CUDA scalar types, literals.
_TYPE_ARG = re.compile(r"^(?:(?:unsigned|signed|const|long|short)\s+)*(?:float|double|int|char|"
                       r"long|short|bool|unsigned|size_t|u?int(?:8|16|32|64)_t|half|__half|"
                       r"__nv_bfloat16|half2|__half2|float[1-4]|int[1-4]|double[1-4]|"
                       r"true|false)\s*\*?$")
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

#: torch's type-dispatch macros and the type alias they bind.
_DISPATCH = re.compile(r"\bAT_DISPATCH_\w+\s*\(")
_SCALAR_T = re.compile(r"\bscalar_t\b")
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
    #: Template launches whose arguments the source does not fix (``k<T>``), with why.
    uninstantiated: list[str] = field(default_factory=list)


def _has_device_qualifier(func: Node) -> bool:
    return any(c.type in _DEVICE_QUALIFIERS for c in func.children)


def _function_name(func: Node) -> str:
    decl = func.child_by_field_name("declarator")
    while decl is not None and decl.type not in ("function_declarator",):
        decl = decl.child_by_field_name("declarator")
    inner = decl.child_by_field_name("declarator") if decl is not None else None
    return node_text(inner) if inner is not None else "?"


@dataclass(frozen=True)
class _Policy:
    """Which includes a slice keeps."""

    target: Literal["nvrtc", "nvcc"]
    include_dirs: tuple[Path, ...] = ()

    def keep_include(self, path: Node | None) -> bool:
        raw = node_text(path) if path is not None else ""
        header = raw.strip('<>"')
        if DEVICE_HEADERS.match(header):
            return True
        # The user's own headers (--include DIR) are kept for both compilers.
        if any((d / header).is_file() for d in self.include_dirs):
            return True
        if self.target == "nvcc":
            # nvcc brings the C/C++ library and the toolkit; a quoted header that is not in an
            # include folder would only fail the compile.
            return raw.startswith("<") and not FRAMEWORK_HEADERS.match(header)
        return False


def _decide(node: Node, policy: _Policy) -> str:
    """``"keep"``, ``"drop"`` or ``"recurse"`` for one top-level item."""
    kind = node.type
    if kind in ("preproc_include",):
        return "keep" if policy.keep_include(node.child_by_field_name("path")) else "drop"
    if kind == "function_definition":
        return "keep" if _has_device_qualifier(node) else "drop"
    if kind == "template_declaration":
        inner = next((c for c in node.named_children if c.type in (
            "function_definition", "declaration", "template_declaration")), None)
        if inner is None:
            return "keep"
        return _decide(inner, policy)
    if kind == "linkage_specification":
        body = node.child_by_field_name("body")
        if body is not None and body.type == "function_definition":
            return _decide(body, policy)
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


def _visit(node: Node, buf: bytearray, dropped: list[str], includes: list[str],
           policy: _Policy) -> None:
    for child in node.children:
        decision = _decide(child, policy) if child.is_named else "keep"
        if decision == "recurse":
            _visit(child, buf, dropped, includes, policy)
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


def _split_args(args: str) -> list[str]:
    """Top-level comma split of a template argument list (``a, b<c, d>`` -> 2 parts)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(args):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    parts.append(args[start:].strip())
    return parts


def resolve_instantiation(expression: str, table: dict[str, str]) -> str | None:
    """``sgemm<BM, 8>`` with ``BM`` fixed to 64 -> ``sgemm<64, 8>``; None when dependent.

    Args:
        expression: A launched template kernel as written.
        table: Constants of the program (``launches._constants``).

    Returns:
        The expression with every argument a literal or a builtin type, or None when an
        argument depends on something the source does not fix (an enclosing template's ``T``).
    """
    open_at = expression.find("<")
    if open_at < 0 or not expression.rstrip().endswith(">"):
        return None
    head, body = expression[:open_at].strip(), expression.rstrip()[open_at + 1:-1]
    resolved = []
    for arg in _split_args(body):
        if _TYPE_ARG.match(arg):
            resolved.append(arg)
            continue
        value = _safe_eval(arg, table)
        if value is None:
            return None
        resolved.append(str(value))
    return f"{head}<{', '.join(resolved)}>"


def slice_device_code(source: str, *, target: Literal["nvrtc", "nvcc"] = "nvrtc",
                      include_dirs: Sequence[Path] = ()) -> SlicedSource:
    """Cut the host code out of ``source``, keeping line numbers.

    Args:
        source: A full CUDA program (kernels plus host launcher).
        target: The compiler the slice is for (see the module docstring).
        include_dirs: The user's header folders; includes found there are kept.

    Returns:
        The device-only source, its line map, the template instantiations to request, the
        template launches that cannot be instantiated and a list of what was dropped.
    """
    policy = _Policy(target=target, include_dirs=tuple(Path(d) for d in include_dirs))
    root = parse(source)
    buf = bytearray(source.encode("utf-8", "surrogatepass"))
    dropped: list[str] = []
    includes: list[str] = []
    _visit(root, buf, dropped, includes, policy)
    body = buf.decode("utf-8", "surrogatepass")
    # nvcc keeps <stdint.h> itself; the typedefs would clash with glibc's. A dropped framework
    # header (torch/extension.h) brought <cstdint> too: KernelBench kernels use int64_t.
    prelude = [_PRELUDE_STDINT] if target == "nvrtc" and any(
        _STDINT.match(h.strip('<>"')) or FRAMEWORK_HEADERS.match(h.strip('<>"'))
        for h in includes) else []
    prelude.append(_PRELUDE_MATH)
    prelude_text = "\n".join(prelude) + "\n"
    table = _constants(root)
    names: set[str] = set()
    unresolved: list[str] = []
    for site in find_launches(source):
        if "<" not in site.expression:
            continue
        resolved = resolve_instantiation(site.expression, table)
        if resolved is None and _DISPATCH.search(source):
            # Inside torch's AT_DISPATCH_* macros ``scalar_t`` is the dispatched type; float is
            # in every floating dispatch list, so the kernel body gets compiled once.
            resolved = resolve_instantiation(_SCALAR_T.sub("float", site.expression), table)
        if resolved is None:
            unresolved.append(f"{site.expression} (line {site.line}): template arguments "
                              "not fixed by the source")
        else:
            names.add(resolved)
    ordered = sorted(names)
    if target == "nvcc" and ordered:
        # Taking a template kernel's address in a (host) initializer instantiates it; the
        # lines go after the program so every original line keeps its number.
        body += "\n" + "\n".join(
            f"static void* const __structcover_instantiate_{i} = (void*)&{expr};"
            for i, expr in enumerate(ordered)) + "\n"
    return SlicedSource(
        source=prelude_text + body,
        line_map=LineMap(prelude_lines=prelude_text.count("\n"),
                         original_lines=source.count("\n") + 1),
        name_expressions=ordered,
        dropped=dropped,
        uninstantiated=unresolved,
    )
