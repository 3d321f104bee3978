"""Vectorized access: scalar element-wise loads/stores -> ``float4``/``float2`` with an
alignment and bounds guard and a scalar tail."""

from __future__ import annotations

import re

from structcover.tools.mutations._tree import (find, indent_block, kernels, parse,
                                               pointer_params, splice)
from structcover.tools.mutations.base import Builder, MutationResult, operator
from structcover.tools.mutations.parallel_strategy import _wrap_grid, per_element

LANES = "xyzw"


def _vectorized(pe, body_src, arrays: dict[str, bool], width: int) -> str:  # noqa: ANN001
    """The guarded vector path plus the scalar tail for one per-element kernel body."""
    vt = f"float{width}"
    body = parse(pe.body)
    subs = [s for s in find(body.root, "subscript_expression")]
    ind = pe.indent
    lines = [f"const {pe.ctype} v_ = blockIdx.x * blockDim.x + threadIdx.x;  // one {vt} per thread",
             f"const {pe.ctype} i0_ = v_ * {width};"]
    aligned = " | ".join(f"reinterpret_cast<size_t>({a})" for a in arrays)
    lines.append(f"if (i0_ + {width - 1} < {pe.bound} && (({aligned}) & {4 * width - 1}) == 0) {{")
    for name, written in arrays.items():
        reads = any(body.of(s.child_by_field_name("argument")) == name and not (
            s.parent.type == "assignment_expression" and s.parent.child_by_field_name("left") == s
            and body.of(s.parent.child_by_field_name("operator")) == "=") for s in subs)
        if reads:
            const = "" if written else "const "
            lines.append(f"    {const}{vt} {name}{width}_ = reinterpret_cast<{const}{vt}*>({name})[v_];")
        else:
            lines.append(f"    {vt} {name}{width}_;")
    for lane in range(width):
        edits = [(s.start_byte, s.end_byte,
                  f"{body.of(s.child_by_field_name('argument'))}{width}_.{LANES[lane]}")
                 for s in subs]
        lines += ["    {", f"        const {pe.ctype} {pe.var} = i0_ + {lane};",
                  indent_block(splice(body.text, edits), "        "), "    }"]
    for name, written in arrays.items():
        if written:
            lines.append(f"    reinterpret_cast<{vt}*>({name})[v_] = {name}{width}_;")
    lines += ["} else {  // scalar tail (and unaligned pointers)",
              f"    for ({pe.ctype} {pe.var} = i0_; {pe.var} < {pe.bound} && {pe.var} < i0_ + {width};"
              f" ++{pe.var}) {{", indent_block(pe.body, "        "), "    }", "}"]
    return "\n".join(lines[:1] + [indent_block(ln, ind) for ln in lines[1:]])


@operator("vectorize_elementwise", family="vectorize")
def vectorize_elementwise(program: str) -> MutationResult:
    """Load and store ``float`` arrays of an element-wise kernel as ``float4`` (and, as a
    second variant, ``float2``): each thread handles 4 (2) consecutive elements through one
    vector access per array, guarded by bounds and 16-byte (8-byte) alignment, with a scalar
    tail loop; the launcher's grid shrinks accordingly.

    Moves:
        mem.vector_loads: up

    Applies to one-thread-per-element kernels (``i = gid; if (i < N) {...}``) whose body
    indexes every array with exactly ``i``, where those arrays are ``float`` pointer
    parameters and at least one is read. Not applicable otherwise.
    """
    src = parse(program)
    b = Builder("vectorize_elementwise", program)
    for width in (4, 2):
        edits = []
        for kernel in kernels(src):
            pe = per_element(src, kernel)
            if pe is None:
                continue
            params = pointer_params(src, kernel)
            body = parse(pe.body)
            subs = find(body.root, "subscript_expression")
            names = [body.of(s.child_by_field_name("argument")) for s in subs]
            if not subs or any(re.sub(r"[\s\[\]]", "", body.of(s.child_by_field_name("indices")))
                               != pe.var for s in subs):
                continue
            if any(params.get(n, "") != "float" for n in names):
                continue
            written = {body.of(s.child_by_field_name("argument")) for s in subs
                       if s.parent.type == "assignment_expression"
                       and s.parent.child_by_field_name("left") == s}
            arrays = {n: n in written for n in dict.fromkeys(names)}
            if all(arrays.values()):
                continue
            grid = _wrap_grid(src, kernel, f"(({{}}) + {width - 1}) / {width}") or []
            edits += [(pe.start, pe.end, _vectorized(pe, body, arrays, width)), *grid]
        if edits:
            b.add(splice(src.text, edits), width=width)
    return b.done("no element-wise kernel over float arrays indexed by the thread's element")
