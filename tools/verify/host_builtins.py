"""Host code's own ``blockDim``/``gridDim``/``threadIdx``/``blockIdx`` (used by ``rewriter``).

In CUDA these built-ins exist only in device code, so a launcher may declare
``dim3 blockDim(16, 16); kernel<<<gridDim, blockDim>>>(...)``. The emulator defines them as
macros over the current fiber (``sc_emu.hpp``), which would expand there too. So before the
rewrite, every spelling of those names in a *host* function (one not marked ``__global__`` or
``__device__``; ``__host__ __device__`` counts as device) or among a prototype's parameters
becomes ``__sc_h_<name>``, and so does every member of that name anywhere (``cfg.blockDim``,
``struct { dim3 gridDim; }``: a member is never the built-in). Device functions, and
``__device__`` lambdas inside host functions, keep the built-ins, so a host variable cannot
change what a kernel sees. Candidates cannot spell
``__sc_`` names (``kernelbench.cpu_scan``), so the new names collide with nothing of theirs.

Not handled (the build then fails, a rejection, never a wrong pass): a device-scope declaration
of those names (legal CUDA, it shadows the built-in), and namespace-scope or macro-body uses.
"""

from __future__ import annotations

from tree_sitter import Node

from structcover.tools.cuda_ast import parser, walk

#: The built-ins the runtime defines as macros (``warpSize`` is a constant: a host local of that
#: name already shadows it in C++).
BUILTIN_MACROS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
HOST_PREFIX = "__sc_h_"


def device_marked(node: Node, src: bytes) -> bool:
    """Whether a function definition or lambda is device code (``__global__``/``__device__``
    before its body; a lambda's marker may parse as an ERROR node, so its header text is read)."""
    body = node.child_by_field_name("body")
    head = src[node.start_byte:body.start_byte if body is not None else node.end_byte]
    if node.type == "function_definition":
        return any(c.type in ("__global__", "__device__") for c in node.children) or \
            b"__global__" in head or b"__device__" in head
    return b"__device__" in head or b"__global__" in head


def _host_scoped(node: Node, src: bytes) -> bool:
    """Whether ``node`` lies in a host function (body or parameters) with no device lambda or
    function around it, or names a parameter of a prototype (``void launch(dim3 blockDim);``:
    a prototype's parameter names mean nothing, so renaming them is always safe)."""
    cur = node.parent
    host = in_param = False
    while cur is not None:
        if cur.type == "lambda_expression" and device_marked(cur, src):
            return False
        if cur.type == "function_definition":
            if device_marked(cur, src):
                return False
            host = True
        elif cur.type == "parameter_declaration":
            in_param = True
        elif cur.type in ("declaration", "field_declaration") and in_param and not host:
            return True
        cur = cur.parent
    return host


def rename_host_builtins(source: str) -> str:
    """``source`` with host-scope uses of the built-in names renamed (newlines kept)."""
    if not any(name in source for name in BUILTIN_MACROS):
        return source
    src = source.encode("utf-8", "surrogatepass")
    tree = parser().parse(src)
    spans: list[tuple[int, int]] = []
    for node in walk(tree.root_node):
        if node.type not in ("identifier", "field_identifier"):
            continue
        name = src[node.start_byte:node.end_byte].decode("utf-8", "replace")
        if name in BUILTIN_MACROS and (node.type == "field_identifier" or _host_scoped(node, src)):
            spans.append((node.start_byte, node.end_byte))
    out = src
    for start, end in sorted(spans, reverse=True):
        out = out[:start] + HOST_PREFIX.encode() + out[start:end] + out[end:]
    return out.decode("utf-8", "surrogatepass")
