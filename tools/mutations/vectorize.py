"""Vectorized access: scalar element-wise loads/stores -> ``float4``/``float2`` with an
alignment and bounds guard and a scalar tail."""

from __future__ import annotations

import re

from structcover.tools.mutations._tree import (find, indent_block, indent_of, is_device_code,
                                               kernels, parse,
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


_TILE_LOAD = re.compile(
    r"(?P<s>\w+)\[threadIdx\.y\]\[threadIdx\.x\]\s*=\s*\((?P<c>[^?]+)\)\s*\?\s*"
    r"(?P<g>\w+)\[(?P<e>[^\]]*threadIdx\.x[^\]]*)\]\s*:\s*(?P<z>\(float\)\s*0|0\.0f|0\.f|0)\s*;")


def _monotone_in_tx(cond: str) -> bool:
    """Every ``&&`` part without threadIdx.x, or ``<sum with threadIdx.x> < bound``."""
    for part in cond.split("&&"):
        part = part.strip().strip("()").strip()
        if "threadIdx.x" in part and not re.fullmatch(r"[\w\s.+]*threadIdx\.x[\w\s.+]*<\s*\w+", part):
            return False
    return True


@operator("vectorize_tile_loads", family="vectorize")
def vectorize_tile_loads(program: str) -> MutationResult:
    """Load rows of a shared-memory tile with ``float4``: a quarter of the threads along x
    each copy four consecutive floats, guarded by bounds and 16-byte alignment, with a scalar
    fallback.

    Moves:
        mem.vector_loads: up

    The whole tile row takes the vector path when its last element is in bounds and its
    start is 16-byte aligned; otherwise every thread does its original scalar load.

    Applies to guarded tile loads ``S[threadIdx.y][threadIdx.x] = (cond) ? g[e] : 0;`` (as
    ``tile_smem`` writes them) where ``S`` is a ``float`` tile ``[T][T]`` with ``T % 4 == 0``,
    ``g`` a ``float`` pointer parameter, ``e`` uses ``threadIdx.x`` and ``cond`` is monotone in
    ``threadIdx.x`` (``... + threadIdx.x < bound``), so checking the last of the four checks all.
    """
    src = parse(program)
    b = Builder("vectorize_tile_loads", program)
    edits = []
    for kernel in kernels(src):
        params = pointer_params(src, kernel)
        ktext = src.of(kernel)
        for stmt in find(kernel, "expression_statement"):
            m = _TILE_LOAD.fullmatch(src.of(stmt).strip())
            if not m or params.get(m["g"], "") != "float" or not _monotone_in_tx(m["c"]):
                continue
            dm = re.search(r"__shared__\s+float\s+" + m["s"] + r"\s*\[(\d+)\]\s*\[(\d+)\]", ktext)
            if not dm or int(dm.group(2)) % 4 or int(dm.group(1)) != int(dm.group(2)):
                continue
            tile = int(dm.group(2))
            at = lambda text, rep: text.replace("threadIdx.x", rep)  # noqa: E731
            base = f"&{m['g']}[{at(m['e'], '0')}]"
            # one decision per tile row (it depends on threadIdx.y only), so a row is either
            # all vector or all scalar; the vector index is threadIdx.x in float4 units
            lines = [f"if (({at(m['c'], str(tile - 1))}) && (reinterpret_cast<size_t>({base}) & 15) == 0) {{",
                     f"    if (threadIdx.x < {tile // 4}) {{  // {tile // 4} threads per tile row, one float4 each",
                     f"        const float4 v4_ = reinterpret_cast<const float4*>({base})[threadIdx.x];"]
            lines += [f"        {m['s']}[threadIdx.y][threadIdx.x * 4 + {j}] = v4_.{LANES[j]};"
                      for j in range(4)]
            lines += ["    }", "} else {  // row tail or unaligned row: scalar loads",
                      f"    {src.of(stmt).strip()}", "}"]
            edits.append((stmt.start_byte, stmt.end_byte,
                          indent_block("\n".join(lines), indent_of(src, stmt)).lstrip()))
    if not edits:
        return b.done("no guarded float tile load S[threadIdx.y][threadIdx.x] = (c) ? g[e] : 0")
    b.add(splice(src.text, edits))
    return b.done()


_VEC_LOAD = re.compile(r"(?P<pre>(?:const\s+)?(?P<vt>float[24])\s+(?P<name>\w+)\s*=\s*)"
                       r"reinterpret_cast\s*<\s*(?:const\s+)?float[24]\s*\*\s*>\s*\(\s*(?P<p>\w+)\s*\)"
                       r"\s*\[(?P<e>[^\]]+)\]\s*;")
_VEC_STORE = re.compile(r"reinterpret_cast\s*<\s*(?P<vt>float[24])\s*\*\s*>\s*\(\s*(?P<p>\w+)\s*\)"
                        r"\s*\[(?P<e>[^\]]+)\]\s*=\s*(?P<v>[^;]+);")


@operator("devectorize", family="vectorize")
def devectorize(program: str) -> MutationResult:
    """Replace ``float4``/``float2`` accesses through ``reinterpret_cast<float4*>(p)[e]`` by
    scalar accesses of the same elements (``p[4 * (e) + 0..3]``), keeping the vector variable.

    Moves:
        mem.vector_loads: down

    Applies to declarations ``[const] float4 v = reinterpret_cast<const float4*>(p)[e];`` and
    stores ``reinterpret_cast<float4*>(p)[e] = value;`` in device code, where ``p`` is a
    ``float`` pointer parameter. Scalar accesses need no alignment, so this is always
    semantics-preserving. Not applicable when there is no such access.
    """
    src = parse(program)
    b = Builder("devectorize", program)
    edits = []
    for kernel in [f for f in find(src.root, "function_definition") if is_device_code(f)]:
        params = pointer_params(src, kernel)
        for stmt in find(kernel, "declaration", "expression_statement"):
            text = src.of(stmt).strip()
            m = _VEC_LOAD.fullmatch(text) if stmt.type == "declaration" else _VEC_STORE.fullmatch(text)
            if not m or params.get(m["p"], "") != "float":
                continue
            width = int(m["vt"][-1])
            idx = [f"{m['p']}[{width} * ({m['e'].strip()}) + {j}]" for j in range(width)]
            if stmt.type == "declaration":
                rep = f"{m['pre']}make_{m['vt']}({', '.join(idx)});"
            else:
                ind = indent_of(src, stmt)
                rep = "\n".join([f"{{  // scalar stores of one {m['vt']}",
                                 f"{ind}    const {m['vt']} sv_ = {m['v'].strip()};"]
                                + [f"{ind}    {idx[j]} = sv_.{LANES[j]};" for j in range(width)]
                                + [f"{ind}}}"])
            edits.append((stmt.start_byte, stmt.end_byte, rep))
    if not edits:
        return b.done("no reinterpret_cast<float4*>(p)[e] load or store on a float parameter")
    b.add(splice(src.text, edits))
    return b.done()
