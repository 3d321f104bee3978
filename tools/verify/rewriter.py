"""Rewrite a CUDA program into C++ that compiles against the CPU emulator (docs/EMULATOR.md).

The structural edits use the tree-sitter CUDA grammar, not regexes:

* ``kernel<<<grid, block, smem, stream>>>(args)`` becomes a call to ``sc::launch`` with a
  lambda that evaluates the arguments once and runs the kernel body for each emulated thread,
  and a last argument ``true`` when the program has no barrier or warp collective anywhere
  (each block's threads may then run one after another on one fiber);
* every ``__shared__`` declaration inside a function becomes a reference to a per-block arena
  slot keyed by its declaration site (``extern __shared__`` arrays point at the dynamic part);
* constructs the emulator cannot run faithfully (grid sync, dynamic parallelism, textures and
  surfaces, inline PTX, tensor-core intrinsics, legacy non-``_sync`` warp intrinsics, library
  headers) are reported as ``unsupported`` before anything is compiled.

``#line`` directives keep compiler messages on the original line numbers: every edit keeps the
number of newlines of the text it replaces. The strictness edits (race-checked read-modify-writes,
inter-block signals, launch arguments checked for host pointers, preprocessor tests that cannot
see the emulator) are described in ``strict_rewrite``; uninitialised locals of device code get
the run's poison (``uninit_rewrite``). Host code's own variables named like the
built-ins (``dim3 blockDim(16, 16)`` in a launcher) are renamed first (``host_builtins``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from structcover.tools.cuda_ast import parser, walk
from structcover.tools.verify.host_builtins import rename_host_builtins
from structcover.tools.verify.profile_rewrite import Site, instrument
from structcover.tools.verify.strict_rewrite import (
    hide_emulator_macros,
    local_names,
    macro_rmw,
    rmw_edit,
    signal_edit,
)
from structcover.tools.verify.uninit_rewrite import poison_suffix

#: Identifiers whose presence means the program needs a construct the emulator cannot run.
UNSUPPORTED_NAMES: dict[str, str] = {
    **{n: "grid-wide synchronization (cooperative_groups::this_grid / grid_group)"
       for n in ("this_grid", "grid_group", "this_multi_grid", "cudaLaunchCooperativeKernel")},
    **{n: f"textures and surfaces ({n})" for n in (
        "tex1D", "tex1Dfetch", "tex2D", "tex3D", "tex1DLayered", "tex2DLayered", "texCubemap",
        "tex2Dgather", "cudaTextureObject_t", "cudaSurfaceObject_t", "surf1Dread", "surf1Dwrite",
        "surf2Dread", "surf2Dwrite", "surf3Dread", "surf3Dwrite", "cudaCreateTextureObject",
        "cudaCreateSurfaceObject", "cudaBindTexture", "cudaBindTexture2D")},
    **{n: f"legacy warp intrinsic {n} without _sync (removed in CUDA 9)" for n in (
        "__shfl", "__shfl_up", "__shfl_down", "__shfl_xor", "__ballot", "__any", "__all")},
    "wmma": "tensor-core WMMA (nvcuda::wmma)",
    "nvcuda": "tensor-core WMMA (nvcuda::wmma)",
    "cudaLaunchKernel": "host launch through cudaLaunchKernel",
    "memcpy_async": "asynchronous copies (cuda::memcpy_async)",
}

#: Headers the emulator provides; other CUDA library headers are unsupported.
_UNSUPPORTED_HEADER = re.compile(
    r"^(cub/|thrust/|cuda/|mma\.h|cuda_pipeline|cuda_awbarrier|cublas|cudnn|curand|cufft|"
    r"cusparse|cusolver|cutlass/|cute/|cooperative_groups/(?!reduce\.h)|sm_\d+_intrinsics|nvrtc)")

#: Names that mean a program synchronizes threads (barrier or warp collective). Checked on the
#: raw text, macros included: a wrong "no" would run the program on the serial fast path.
_SYNC_WORDS = re.compile(
    r"\b(__syncthreads\w*|__syncwarp|__shfl\w*|__ballot_sync|__any_sync|__all_sync|__uni_sync|"
    r"__match_\w+|cooperative_groups|tiled_partition|this_thread_block|thread_block)\b")

_ALIGN = re.compile(r"__align__\s*\(\s*\d+\s*\)")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


@dataclass
class RewriteResult:
    """The emulator's C++ for one program, or why it cannot be emulated."""

    source: str
    unsupported: list[str] = field(default_factory=list)
    #: The program uses a barrier or warp collective (so threads run as fibers).
    has_sync: bool = True
    kernels: list[str] = field(default_factory=list)
    launches: int = 0
    #: Parse problems near constructs the rewriter edits (the compile will then fail loudly).
    warnings: list[str] = field(default_factory=list)
    #: The profile variant's instrumented sites (``profile_rewrite``); empty otherwise.
    sites: list[Site] = field(default_factory=list)


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _enclosing_function(node: Node) -> Node | None:
    cur = node.parent
    while cur is not None:
        if cur.type == "function_definition":
            return cur
        cur = cur.parent
    return None


def _is_device_function(fn: Node) -> bool:
    return any(c.type in ("__global__", "__device__") for c in fn.children)


def _declared_name(decl: Node) -> Node | None:
    """The identifier a declarator declares (through arrays, pointers, initializers)."""
    cur: Node | None = decl
    while cur is not None and cur.type != "identifier":
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children if c.type.endswith("declarator")
                        or c.type == "identifier"), None)
        cur = nxt
    return cur


class _Edits:
    """Non-overlapping replacements that keep each replaced span's newline count."""

    def __init__(self, src: bytes):
        self.src = src
        self.items: list[tuple[int, int, str]] = []

    def add(self, start: int, end: int, text: str) -> None:
        old_lines = self.src[start:end].count(b"\n")
        new_lines = text.count("\n")
        if new_lines > old_lines:
            text = text.replace("\n", " ")
            new_lines = 0
        self.items.append((start, end, text + "\n" * (old_lines - new_lines)))

    def apply(self) -> bytes:
        out = self.src
        for start, end, text in sorted(self.items, key=lambda e: e[0], reverse=True):
            out = out[:start] + text.encode() + out[end:]
        return out


def _rewrite_shared(node: Node, src: bytes, site: int) -> str:
    """Turn one `__shared__` declaration into arena-slot references, one per declarator."""
    declarators = node.children_by_field_name("declarator")
    first = declarators[0].start_byte if declarators else node.end_byte
    is_extern = False
    type_parts = []
    for child in node.children:
        if child.start_byte >= first:
            break
        text = _text(child, src)
        if child.type == "storage_class_specifier":
            is_extern = is_extern or text == "extern"
            continue
        if child.type == "type_qualifier" and text == "__shared__":
            continue
        type_parts.append(text)
    base_type = " ".join(p for p in type_parts if p.strip())
    out = []
    for k, decl in enumerate(declarators):
        if decl.type == "init_declarator":
            decl = decl.child_by_field_name("declarator") or decl
        name_node = _declared_name(decl)
        if name_node is None:
            continue
        name = _text(name_node, src)
        alias = f"__sc_t{site}_{k}"
        dtext = _text(decl, src)
        rel = name_node.start_byte - decl.start_byte
        if is_extern:
            # `T name[]...` -> pointer to the element type at the dynamic arena.
            inner = name_node.parent
            if inner is not None and inner.type == "array_declarator":
                a, b = inner.start_byte - decl.start_byte, inner.end_byte - decl.start_byte
                typedef = dtext[:a] + f"(*{alias})" + dtext[b:]
            else:
                typedef = f"*{alias}"
            out.append(f"typedef {base_type} {typedef}; {alias} {name} = "
                       f"reinterpret_cast<{alias}>(::sc::dynamic_shared());")
        else:
            typedef = dtext[:rel] + alias + dtext[rel + len(name.encode()):]
            out.append(f"typedef {base_type} {typedef}; {alias}& {name} = "
                       f"*reinterpret_cast<{alias}*>(::sc::shared_slot([] {{ static const int "
                       f"__sc_s = ::sc::new_site(); return __sc_s; }}(), sizeof({alias}), "
                       f"alignof({alias})));")
    return " ".join(out)


def _rewrite_launch(node: Node, src: bytes, serial: bool, profile: bool = False) -> str:
    fn = node.child_by_field_name("function") or node.children[0]
    cfg = next(c for c in node.children if c.type == "kernel_call_syntax")
    args = node.child_by_field_name("arguments")
    config = [_text(c, src) for c in cfg.named_children if c.type != "comment"]
    config += ["0"] * (4 - len(config))
    arg_texts = [_text(c, src) for c in args.named_children if c.type != "comment"] if args else []
    call = (f"::sc::launch(({config[0]}), ({config[1]}), ({config[2]}), ({config[3]}), "
            f"[&](auto... __sc_a) {{ ::sc::check_kernel_args(__sc_a...); "
            f"return [=]() {{ {_text(fn, src)}(__sc_a...); }}; }}"
            f"({', '.join(arg_texts)}), {'true' if serial else 'false'})")
    if not profile:
        return call
    # The profile variant names the kernel of each launch for its counters.
    name = " ".join(_text(fn, src).split()).replace("\\", "").replace('"', "")
    return f'(::sc::prof_kernel("{name}"), {call})'


def rewrite(source: str, filename: str = "program.cu", *, profile: bool = False) -> RewriteResult:
    """Rewrite ``source`` for the CPU emulator.

    Args:
        source: A CUDA program (device code and host launcher).
        filename: Name used in ``#line`` so compiler messages point at the original file.
        profile: Build the profile variant: device memory accesses, atomics and branch
            conditions also go through the runtime's counters (``profile_rewrite``; a different
            text, so a different build-cache entry). Results are the same.

    Returns:
        The C++ text and what was found; ``unsupported`` lists reasons not to run it.
    """
    unsupported: list[str] = []
    sites: list[Site] = []
    source = rename_host_builtins(source)
    if profile:
        source, sites = instrument(source)
    source = hide_emulator_macros(source)
    for header in _INCLUDE.findall(source):
        if _UNSUPPORTED_HEADER.match(header.strip()):
            unsupported.append(f"header <{header.strip()}>")
    # `__align__(n)` makes the grammar emit ERROR nodes; blank it (same length) for parsing.
    raw = source.encode("utf-8", "surrogatepass")
    parsed = _ALIGN.sub(lambda m: " " * len(m.group(0).encode()), source).encode("utf-8", "surrogatepass")
    tree = parser().parse(parsed)
    edits = _Edits(raw)
    result = RewriteResult(source="", has_sync=bool(_SYNC_WORDS.search(source)), sites=sites)
    site = 0
    locals_of: dict[int, set[str]] = {}
    edited_until = -1  # end of the last RMW/signal edit: nested ones stay inside its text
    for node in walk(tree.root_node):
        kind = node.type
        if kind in ("assignment_expression", "update_expression", "call_expression") \
                and node.start_byte >= edited_until:
            fn = _enclosing_function(node)
            if fn is not None and _is_device_function(fn):
                if fn.id not in locals_of:
                    locals_of[fn.id] = local_names(fn, parsed)
                text = rmw_edit(node, parsed, locals_of[fn.id]) if kind != "call_expression" \
                    else signal_edit(node, parsed)
                if text is not None:
                    edits.add(node.start_byte, node.end_byte, text)
                    edited_until = node.end_byte
                    continue
        if kind in ("identifier", "type_identifier", "namespace_identifier", "field_identifier"):
            name = _text(node, parsed)
            if name in UNSUPPORTED_NAMES and not (kind == "field_identifier" and name.startswith("__")):
                unsupported.append(UNSUPPORTED_NAMES[name])
        elif kind in ("gnu_asm_expression", "asm_statement"):
            unsupported.append(f"inline assembly (asm) at line {node.start_point[0] + 1}")
        elif kind in ("preproc_def", "preproc_function_def") and "<<<" in _text(node, parsed):
            unsupported.append(f"kernel launch inside a macro at line {node.start_point[0] + 1}")
        elif kind in ("preproc_def", "preproc_function_def") and macro_rmw(_text(node, parsed)):
            unsupported.append(f"read-modify-write on memory inside a macro at line "
                               f"{node.start_point[0] + 1} (it cannot be race-checked; write it "
                               "out or use an atomic)")
        elif kind == "ERROR":
            snippet = _text(node, parsed)
            if "__shared__" in snippet or "<<<" in snippet:
                result.warnings.append(f"unparsed code at line {node.start_point[0] + 1}")
        elif kind == "function_definition" and any(c.type == "__global__" for c in node.children):
            declarator = node.child_by_field_name("declarator")
            kernel = _declared_name(declarator) if declarator is not None else None
            if kernel is not None:
                result.kernels.append(_text(kernel, parsed))
        elif kind == "call_expression" and any(c.type == "kernel_call_syntax" for c in node.children):
            fn = _enclosing_function(node)
            if fn is not None and _is_device_function(fn):
                unsupported.append("dynamic parallelism (kernel launch inside device code) at line "
                                   f"{node.start_point[0] + 1}")
                continue
            edits.add(node.start_byte, node.end_byte,
                      _rewrite_launch(node, parsed, not result.has_sync, profile))
            result.launches += 1
        elif kind == "declaration" and any(c.type == "type_qualifier" and _text(c, parsed) == "__shared__"
                                           for c in node.children):
            if _enclosing_function(node) is None:
                unsupported.append("namespace-scope __shared__ variable at line "
                                   f"{node.start_point[0] + 1}")
                continue
            edits.add(node.start_byte, node.end_byte, _rewrite_shared(node, parsed, site))
            site += 1
        elif kind == "declaration" and not profile and node.start_byte >= edited_until:
            fn = _enclosing_function(node)
            suffix = poison_suffix(node, parsed) if fn is not None and _is_device_function(fn) \
                else None
            if suffix is not None:  # uninitialised locals get the run's poison (uninit_rewrite)
                own = raw[node.start_byte:node.end_byte].decode("utf-8", "surrogatepass")
                edits.add(node.start_byte, node.end_byte, own + suffix)
    result.unsupported = list(dict.fromkeys(unsupported))
    body = edits.apply().decode("utf-8", "surrogatepass")
    safe_name = filename.replace("\\", "/").replace('"', "")
    result.source = f'#include "sc_emu.hpp"\n#line 1 "{safe_name}"\n{body}'
    if profile:
        result.source += "\nstatic const int __sc_profile_on = ::sc::prof_enable();\n"
    return result
