"""Vectorized access: scalar element-wise loads/stores -> ``float4``/``float2`` with an
alignment and bounds guard and a scalar tail."""

from __future__ import annotations

import re

from structcover.tools.mutations._patterns import kernel_launches
from structcover.tools.mutations._tree import (
    block_dims,
    eval_int,
    find,
    indent_block,
    indent_of,
    int_constants,
    is_device_code,
    kernels,
    parse,
    pointer_params,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator
from structcover.tools.mutations.parallel_strategy import _wrap_grid, per_element

LANES = "xyzw"


def _vectorized(pe, body_src, arrays: dict[str, bool], width: int) -> str:
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
    r"(?P<s>\w+)(?P<row>\[threadIdx\.y\])?\[threadIdx\.x\]\s*=\s*\((?P<c>[^?]+)\)\s*\?\s*"
    r"(?P<g>\w+)\[(?P<e>[^\]]*threadIdx\.x[^\]]*)\]\s*:\s*(?P<z>\(float\)\s*0|0\.0f|0\.f|0)\s*;")


def _tx_dependent(src, fn) -> set[str]:
    """Names whose value depends on ``threadIdx.x`` (fixpoint over declarations/assignments)."""
    texts = [src.of(d) for d in find(fn, "declaration", "assignment_expression")]
    names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for text in texts:
            m = re.match(r"(?:[\w:<>]+\s+)*?(\w+)\s*(?:\[[^\]]*\])?\s*[+\-*/]?=\s*(.*)", text, re.S)
            if m and m.group(1) not in names and ("threadIdx.x" in m.group(2) or any(
                    re.search(r"\b" + re.escape(n) + r"\b", m.group(2)) for n in names)):
                names.add(m.group(1))
                changed = True
    return names


def _unit_in_tx(expr: str, tx_names: set[str]) -> bool:
    """True when ``expr`` is ``<terms free of threadIdx.x> + threadIdx.x`` up to parentheses,
    casts and operand order: it grows by exactly one per thread along x."""
    if expr.count("threadIdx.x") != 1 or any(
            re.search(r"\b" + re.escape(n) + r"\b", expr) for n in tx_names):
        return False
    tree = parse(f"int f_() {{ return {expr}; }}")
    ret = find(tree.root, "return_statement")
    if not ret or tree.root.has_error:
        return False
    top = ret[0].named_children[0]
    hit = next(n for n in find(top, "field_expression") if tree.of(n) == "threadIdx.x")
    cur = hit
    while cur != top:
        cur = cur.parent
        if cur.type == "binary_expression" and tree.of(cur.child_by_field_name("operator")) != "+":
            return False
        if cur.type not in ("binary_expression", "parenthesized_expression", "cast_expression"):
            return False
    return True


def _monotone_in_tx(cond: str, tx_names: set[str]) -> bool:
    """Every ``&&`` part is free of threadIdx.x (and of names derived from it), or is
    ``<sum with threadIdx.x> < bound``."""
    for part in cond.split("&&"):
        part = part.strip().strip("()").strip()
        if "threadIdx.x" in part:
            m = re.fullmatch(r"(.+?)<\s*\w+", part, re.S)
            if not m or "<" in m.group(1) or not _unit_in_tx(m.group(1).strip(), tx_names):
                return False
        elif any(re.search(r"\b" + re.escape(n) + r"\b", part) for n in tx_names):
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
    ``tile_smem`` writes them) where ``S`` is a ``float`` tile ``[R][T]``, and to 1-D tile
    loads ``S[threadIdx.x] = (cond) ? g[e] : 0;`` into a ``float`` tile ``[T]``, with
    ``T % 4 == 0``, every launch of the kernel using a constant block whose x size is ``T``,
    ``g`` a ``float`` pointer parameter, ``e`` growing by one per ``threadIdx.x`` (a sum with
    one ``threadIdx.x`` term and no names derived from it) and ``cond`` monotone in
    ``threadIdx.x`` (``... + threadIdx.x < bound``; its other parts free of names derived from
    ``threadIdx.x``), so checking the last of the four checks all.
    """
    src = parse(program)
    b = Builder("vectorize_tile_loads", program)
    edits = []
    for kernel in kernels(src):
        params = pointer_params(src, kernel)
        ktext = src.of(kernel)
        consts = int_constants(src)
        tx_names = _tx_dependent(src, kernel)
        dims = {block_dims(src, c) for c in kernel_launches(src, kernel)}
        if len(dims) != 1 or None in dims:
            continue
        block_x = next(iter(dims))[0]
        for stmt in find(kernel, "expression_statement"):
            m = _TILE_LOAD.fullmatch(src.of(stmt).strip())
            if not m or params.get(m["g"], "") != "float" or not _monotone_in_tx(m["c"], tx_names) \
                    or not _unit_in_tx(m["e"], tx_names):
                continue
            shape = r"\s*\[([^\]]+)\]\s*\[([^\]]+)\]" if m["row"] else r"\s*\[([^\]]+)\]"
            dm = re.search(r"__shared__\s+float\s+" + m["s"] + shape + r"\s*;", ktext)
            tile = eval_int(dm.groups()[-1], consts) if dm else None
            if tile is None or tile % 4 or tile != block_x:
                continue
            row = m["row"] or ""
            def at(text: str, rep: str) -> str:
                return text.replace("threadIdx.x", rep)
            base = f"&{m['g']}[{at(m['e'], '0')}]"
            # one decision per tile row (it depends on threadIdx.y only), so a row is either
            # all vector or all scalar; the vector index is threadIdx.x in float4 units
            lines = [f"if (({at(m['c'], str(tile - 1))}) && (reinterpret_cast<size_t>({base}) & 15) == 0) {{",
                     f"    if (threadIdx.x < {tile // 4}) {{  // {tile // 4} threads per tile row, one float4 each",
                     f"        const float4 v4_ = reinterpret_cast<const float4*>({base})[threadIdx.x];"]
            lines += [f"        {m['s']}{row}[threadIdx.x * 4 + {j}] = v4_.{LANES[j]};"
                      for j in range(4)]
            lines += ["    }", "} else {  // row tail or unaligned row: scalar loads",
                      f"    {src.of(stmt).strip()}", "}"]
            edits.append((stmt.start_byte, stmt.end_byte,
                          indent_block("\n".join(lines), indent_of(src, stmt)).lstrip()))
    if not edits:
        return b.done("no guarded float tile load S[threadIdx.y][threadIdx.x] = (c) ? g[e] : 0 "
                      "(or S[threadIdx.x] = ...) in a kernel launched with block.x = T")
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
    ``float`` pointer parameter; and to vector pointers ``const float4* q =
    reinterpret_cast<const float4*>(p [+ off]);`` that are never reassigned and only used as
    ``q[e]`` reads (or ``q[e] = v;`` stores) with a side-effect-free ``e``: each read becomes
    ``make_float4(p[off + 4 * (e) + 0], ...)`` and the pointer declaration goes. Scalar accesses
    need no alignment, so this is always semantics-preserving. Not applicable when there is no such access.
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
        edits += _vector_pointer_edits(src, kernel, params)
    if not edits:
        return b.done("no reinterpret_cast<float4*>(p)[e] load or store on a float parameter")
    b.add(splice(src.text, edits))
    return b.done()


_VEC_PTR = re.compile(r"(?:const\s+)?(?P<vt>float[24])\s*\*\s*(?:const\s+)?(?:__restrict__\s+)?(?P<q>\w+)"
                      r"\s*=\s*reinterpret_cast\s*<\s*(?:const\s+)?float[24]\s*\*\s*>\s*"
                      r"\(\s*(?P<p>\w+)\s*(?:\+\s*(?P<off>.+?))?\s*\)\s*;", re.S)


def _whole_line(text: bytes, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to its whole line(s) when nothing else shares them."""
    lo = text.rfind(b"\n", 0, start) + 1
    hi = text.find(b"\n", end)
    hi = len(text) if hi < 0 else hi + 1
    if text[lo:start].strip() or text[end:hi].strip():
        return start, end
    return lo, hi


def _vector_pointer_edits(src, fn, params: dict[str, str]) -> list[tuple[int, int, str]]:
    """Edits that replace every use of a ``float4*``/``float2*`` view of a float parameter by
    scalar accesses and drop the view's declaration; none when any use is not plain."""
    edits: list[tuple[int, int, str]] = []
    # names reassigned as a whole (``q = ...``, ``q++``); ``q[e] = v`` stores are handled below
    written = {src.of(n.child_by_field_name("left") or n.child_by_field_name("argument"))
               for n in find(fn, "assignment_expression", "update_expression")}
    for decl in find(fn, "declaration"):
        m = _VEC_PTR.fullmatch(src.of(decl).strip())
        if not m or params.get(m["p"], "") != "float" or m["q"] in written:
            continue
        width, q, p = int(m["vt"][-1]), m["q"], m["p"]
        off = f"({m['off'].strip()}) + " if m["off"] else ""
        uses = [n for n in find(fn, "identifier") if src.of(n) == q and n.start_byte > decl.end_byte]
        mine: list[tuple[int, int, str]] = []
        for use in uses:
            sub = use.parent
            if sub.type != "subscript_expression" or sub.child_by_field_name("argument") != use:
                break
            idx = src.of(sub.child_by_field_name("indices")).strip()[1:-1].strip()
            if re.search(r"\+\+|--|[^=!<>]=[^=]|\(", idx):  # evaluated once per lane below
                break
            lanes = [f"{p}[{off}{width} * ({idx}) + {j}]" for j in range(width)]
            parent = sub.parent
            if parent.type == "assignment_expression" and parent.child_by_field_name("left") == sub:
                stmt = parent.parent
                if src.of(parent.child_by_field_name("operator")) != "=" or \
                        stmt.type != "expression_statement":
                    break
                ind = indent_of(src, stmt)
                value = src.of(parent.child_by_field_name("right")).strip()
                mine.append((stmt.start_byte, stmt.end_byte, "\n".join(
                    [f"{{  // scalar stores of one {m['vt']}", f"{ind}    const {m['vt']} sv_ = {value};"]
                    + [f"{ind}    {lanes[j]} = sv_.{LANES[j]};" for j in range(width)] + [f"{ind}}}"])))
            elif parent.type in ("pointer_expression", "update_expression"):
                break
            else:
                mine.append((sub.start_byte, sub.end_byte, f"make_{m['vt']}({', '.join(lanes)})"))
        else:
            if mine:
                lo, hi = _whole_line(src.text, decl.start_byte, decl.end_byte)
                edits += [(lo, hi, ""), *mine]
    return edits
