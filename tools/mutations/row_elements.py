"""Row to elements: a kernel with one thread per row, whose last loop writes the row's columns,
rewritten with one thread per (row, column) that recomputes the row's statistics itself.

The row-per-thread shape (the softmax and layernorm references)::

    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    ... statistics of row r (loops over its columns, no global writes) ...
    for (int c = 0; c < cols; ++c) y[r * cols + c] = f(x[r * cols + c], statistics);

becomes a thread per element: ``r = e / cols``, ``c = e % cols`` for the thread's global index
``e``; the statistics are computed as before (every thread of a row reads the same addresses:
broadcast), and the thread runs the last loop's iteration ``c`` alone (neighbouring threads,
neighbouring columns: coalesced). The launch grid grows by ``cols``. Two operators, one per
access level, so the campaign's dry run of each says where it lands:

* ``row_elements``: every row this way (coalesced access, no synchronization);
* ``row_elements_mixed``: rows ``[0, rows/2)`` a thread per element, the rest a thread per
  row as before (coalesced and strided access in one kernel: mixed).

Each element is computed from the same statistics by the same expression, so the outputs are
the same; the statistics are recomputed ``cols`` times per row: correct and slow. The variants
exist so the campaign can put verified programs of a row-wise task (softmax, layernorm) in the
access bins without synchronization, which fast row-wise kernels (cooperative rows with
barriers or shuffles) do not occupy.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._atomic_store import pure_index
from structcover.tools.mutations._patterns import grid_is_1d, is_global_index, kernel_launches
from structcover.tools.mutations._tree import (
    Src,
    find,
    indent_block,
    kernels,
    launch_config,
    param_names,
    parse,
    pointer_params,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator

#: Names the generated code declares.
_OWN_NAMES = re.compile(r"\bre_\w*\b|\brh_\b|\brc_\b")
#: What a row-per-thread kernel must not use: elements of one row would race or diverge.
_COOPERATIVE = re.compile(r"__syncthreads|__syncwarp|__shfl|__ballot|__any_sync|__all_sync|"
                          r"\batomic\w*\s*\(|__shared__|\bcooperative_groups\b|\bgrid\.sync")
_JUMP = re.compile(r"\b(?:return|break|continue|goto)\b")


def _statements(body: ts.Node) -> list[ts.Node]:
    return [c for c in body.named_children if c.type != "comment"]


def _row_decl(src: Src, stmt: ts.Node) -> tuple[str, str] | None:
    """(type, name) of ``T r = blockIdx.x * blockDim.x + threadIdx.x;``."""
    if stmt.type != "declaration":
        return None
    inits = [c for c in stmt.named_children if c.type == "init_declarator"]
    if len(inits) != 1:
        return None
    name, value = inits[0].child_by_field_name("declarator"), inits[0].child_by_field_name("value")
    if name is None or value is None or name.type != "identifier" or \
            not is_global_index(src.of(value)):
        return None
    head = src.text[stmt.start_byte:inits[0].start_byte].decode().strip()
    return head, src.of(name)


def _row_bound(src: Src, stmt: ts.Node, row: str) -> str | None:
    """``R`` of ``if (row >= R) return;``."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    cond = src.of(stmt.child_by_field_name("condition")).strip()[1:-1].strip()
    m = re.fullmatch(rf"{re.escape(row)}\s*>=\s*(\w+)", cond)
    then = src.of(stmt.child_by_field_name("consequence")).strip().strip("{}").strip()
    return m.group(1) if m and then == "return;" else None


def _column_loop(src: Src, loop: ts.Node) -> tuple[str, str, str, ts.Node] | None:
    """(type, name, bound, body) of ``for (T c = 0; c < C; ++c) body``."""
    if loop.type != "for_statement":
        return None
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    upd = loop.child_by_field_name("update")
    body = loop.child_by_field_name("body")
    if init is None or cond is None or upd is None or body is None:
        return None
    m = re.fullmatch(r"((?:const\s+)?(?:unsigned\s+)?(?:int|long long|long|size_t))\s+(\w+)\s*=\s*0\s*;?",
                     src.of(init).strip())
    if m is None:
        return None
    ctype, var = m.group(1), m.group(2)
    bound = re.fullmatch(rf"{var}\s*<\s*(\w+)", src.of(cond).strip())
    if bound is None or re.sub(r"\s", "", src.of(upd)) not in (f"++{var}", f"{var}++",
                                                                f"{var}+=1"):
        return None
    return ctype, var, bound.group(1), body


def _launch_args(src: Src, kernel: ts.Node, param: str) -> list[tuple[ts.Node, str]] | None:
    """Each launch's grid node and its argument for ``param`` (None when a launch is not a
    plain 1-D ``<<<grid, block ...>>>`` with a side-effect-free argument there)."""
    index = param_names(src, kernel).index(param)
    out = []
    for call in kernel_launches(src, kernel):
        args = call.child_by_field_name("arguments")
        if args is None or index >= len(args.named_children) or not grid_is_1d(src, call):
            return None
        arg = src.of(args.named_children[index]).strip()
        if not pure_index(arg):  # evaluated once more per launch: no call, store or load
            return None
        out.append((launch_config(call)[0], arg))
    return out or None


def _variants(src: Src, kernel: ts.Node) -> tuple[list[tuple[str, list]] | None, str]:
    """``[(name, edits)]`` for the two variants of ``kernel``, or ``(None, why not)``."""
    body = kernel.child_by_field_name("body")
    stmts = _statements(body) if body is not None else []
    if len(stmts) < 3:
        return None, "no row-per-thread shape (index, guard, ..., column loop)"
    decl = _row_decl(src, stmts[0])
    if decl is None:
        return None, "the kernel does not start with T r = blockIdx.x * blockDim.x + threadIdx.x;"
    rtype, row = decl
    bound = _row_bound(src, stmts[1], row)
    if bound is None:
        return None, f"no `if ({row} >= rows) return;` after the row index"
    loop = _column_loop(src, stmts[-1])
    if loop is None:
        return None, "the kernel does not end with a column loop for (int c = 0; c < cols; ++c)"
    ctype, var, cols, loop_body = loop
    values = [n for n in param_names(src, kernel) if n not in pointer_params(src, kernel)]
    if cols not in values or bound not in values:
        return None, f"{bound} and {cols} must be value parameters of the kernel"
    text = src.of(kernel)
    if _OWN_NAMES.search(text):
        return None, "the kernel already uses a name this operator declares (re_*, rh_, rc_)"
    if _COOPERATIVE.search(text):
        return None, "the kernel cooperates (barriers, warp collectives, atomics or shared " \
                     "memory): its rows are not one thread's work"
    between = src.text[stmts[1].end_byte:stmts[-1].start_byte].decode()
    if _stores(src, kernel, stmts[1].end_byte, stmts[-1].start_byte) or _JUMP.search(between):
        return None, "the statistics part writes memory or jumps (only the column loop may store)"
    lbody = src.of(loop_body)
    if _JUMP.search(lbody) or not _stores(src, kernel, loop_body.start_byte, loop_body.end_byte):
        return None, "the column loop must store and may not jump"
    if re.search(rf"\b{var}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{var}\b|\b{var}\s*(?:\+\+|--)",
                 lbody):
        return None, f"the column loop changes {var}"
    if _carried(lbody):
        return None, "the column loop carries a value from one column to the next"
    launches = _launch_args(src, kernel, cols)
    if launches is None:
        return None, "a launch of the kernel is not 1-D or passes no plain column count"
    ind = re.match(r"[ \t]*", src.text[src.text.rfind(b"\n", 0, stmts[0].start_byte) + 1:]
                   .decode()).group(0)
    guard, whole = src.of(stmts[1]), src.of(stmts[-1])
    # The statements between the guard and the loop, re-indented from the kernel body's level.
    middle = "\n".join(ln[len(ind):] if ln.startswith(ind) else ln
                       for ln in between.split("\n")).rstrip() + "\n"
    gid = "(long long)blockIdx.x * blockDim.x + threadIdx.x"
    element = (f"{rtype} {row} = ({_bare(rtype)})(re_ / ({cols}));\n"
               f"const {ctype.replace('const ', '')} rc_ = ({ctype.replace('const ', '')})"
               f"(re_ % ({cols}));\n{guard}{middle}"
               f"{{  // the column loop's iteration {var} = rc_ of this thread\n"
               f"    const {ctype.replace('const ', '')} {var} = rc_;\n"
               f"{indent_block(_unbraced(lbody), '    ')}\n}}")
    head = (f"if (({cols}) <= 0) return;  // row_elements: no column, no element to write\n"
            f"const long long re_ = {gid};  // one thread per (row, column)\n")
    row_wise = (f"{rtype} {row} = ({_bare(rtype)})(({bound}) / 2 + (re_ - rh_));\n"
                f"{guard}{middle}{whole}")
    mixed = (head + f"const long long rh_ = (long long)(({bound}) / 2) * ({cols});  // rows "
             f"[0, {bound}/2): a thread per element; the rest: a thread per row\n"
             f"if (re_ < rh_) {{\n{indent_block(element, '    ')}\n}} else {{\n"
             f"{indent_block(row_wise, '    ')}\n}}")
    region = (stmts[0].start_byte, stmts[-1].end_byte)
    grid = [(g.start_byte, g.end_byte, f"({src.of(g)}) * ({arg})") for g, arg in launches]
    out = []
    for name, new in (("elements", head + element), ("mixed", mixed)):
        out.append((name, [(*region, indent_block(new, ind)[len(ind):]), *grid]))
    return out, ""


def _stores(src: Src, kernel: ts.Node, start: int, end: int) -> bool:
    """Whether the kernel stores through a subscript or a dereference in ``[start, end)``."""
    for a in find(kernel, "assignment_expression", "update_expression"):
        if not start <= a.start_byte < end:
            continue
        target = a.child_by_field_name("left") or a.child_by_field_name("argument")
        while target is not None and target.type == "parenthesized_expression":
            target = target.named_children[0] if target.named_children else None
        if target is not None and (target.type == "subscript_expression" or (
                target.type == "pointer_expression" and src.of(target).startswith("*"))):
            return True
    return False


def _bare(ctype: str) -> str:
    return ctype.replace("const", "").strip()


def _unbraced(body: str) -> str:
    body = body.strip()
    if body.startswith("{") and body.endswith("}"):
        lines = body[1:-1].strip("\n").split("\n")
        common = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
        return "\n".join(ln[common:] for ln in lines)
    return body


def _carried(body: str) -> bool:
    """Whether the loop body updates a local it did not declare (``acc += ...``): a value that
    flows from one column to the next, which a thread per column would lose."""
    declared = set(re.findall(r"\b(?:float|double|int|unsigned|long|auto|bool|size_t|__half)\s+"
                              r"(\w+)\s*=", body))
    for m in re.finditer(r"(?<![\w.\]])([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", body):
        if m.group(1) not in declared:
            return True
    return bool(re.search(r"(?:\+\+|--)\s*[A-Za-z_]\w*|[A-Za-z_]\w*\s*(?:\+\+|--)", body))


def _apply(name: str, which: str, program: str) -> MutationResult:
    src = parse(program)
    b = Builder(name, program)
    why = "no kernel"
    for kernel in kernels(src):
        variants, why = _variants(src, kernel)
        if variants is None:
            continue
        b.add(splice(src.text, dict(variants)[which]))
        return b.done()
    return b.done(why)


@operator("row_elements", family="row_elements")
def row_elements(program: str) -> MutationResult:
    """A thread per (row, column) instead of a thread per row, for every row; each thread
    recomputes its row's statistics (module docstring): coalesced access, no
    synchronization.

    Moves:
        mem.global_coalesced: up
        mem.global_strided: down

    Applies to barrier-free kernels that start ``T r = blockIdx.x * blockDim.x +
    threadIdx.x; if (r >= R) return;``, compute without storing to memory, and end with a
    column loop ``for (int c = 0; c < C; ++c)`` that stores, does not change ``c``, carries
    no local from one column to the next and does not jump; ``R`` and ``C`` are value
    parameters and every launch is 1-D with a plain argument for ``C``.
    """
    return _apply("row_elements", "elements", program)


@operator("row_elements_mixed", family="row_elements")
def row_elements_mixed(program: str) -> MutationResult:
    """:func:`row_elements` for the first half of the rows; the rest keep a thread per row
    (coalesced and strided access in one kernel: mixed).

    Moves:
        mem.global_coalesced: up

    Applies where :func:`row_elements` does.
    """
    return _apply("row_elements_mixed", "mixed", program)
