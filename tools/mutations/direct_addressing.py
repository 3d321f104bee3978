"""Direct addressing: a kernel whose addresses come from loaded values (CSR SpMV's
``row_ptr[row]`` loop start, its ``x[col_idx[k]]`` gather) rewritten so that no address reads
memory, while the loaded values still decide *which* elements count.

* A loop that starts at a loaded offset, ``for (k = begin + L; k < end; k += S)`` (``begin``
  read from memory, ``L`` a lane part or nothing), starts at the lane instead and skips the
  iterations below the offset: ``for (k = L; k < end; k += S) if (k >= begin) ...``. Over
  the lanes ``0 .. S-1`` that visits ``[begin, end)`` once, as before (each ``k`` by lane
  ``k mod S`` now), for any ``begin >= 0``.
* A gather ``A[key]`` whose key reads memory is replaced by a search: count ``c`` from 0 to
  ``key`` and read ``A[c]`` where ``c == key``. The same element is read; its address is a
  loop counter.

The results are correct and slow (a row's loop runs from 0, a gather costs ``key`` steps). They
exist so the campaign can put verified programs of a gather-bound task (SpMV) in the
access-pattern bins whose definition excludes loaded addresses (``pattern.global_access`` other
than indirect: ``mem.global_indirect`` counts any address that reads memory), which no
efficient SpMV occupies; they say nothing about how a fast one is written.
"""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._lanes import COLLECTIVE, Names, terms
from structcover.tools.mutations._loops import canonical
from structcover.tools.mutations._tree import (
    Src,
    find,
    indent_of,
    is_read,
    kernels,
    parse,
    pointer_params,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator

#: Names the generated code declares.
_OWN_NAMES = re.compile(r"\bda_\w+_\b")
#: A subscript (a memory read) in an expression.
_LOAD = re.compile(r"[\w\])]\s*\[")


#: A searched element: its value came from memory, though its declaration does not say so.
_SEARCHED = re.compile(r"\bda_val\d+_\b")
#: Gather passes: a gather whose key is itself a gather (``x[col_idx[k]]`` with a loaded
#: ``k``) is searched for after its key is.
_PASSES = 3


def _reads_memory(names: Names, expr: str) -> bool:
    """Whether ``expr`` reads memory: through its locals' declarations, or through a value
    assigned to one of them later (``da_valN_ = A[c]`` after ``T da_valN_ = T();``)."""
    text = names.expand(expr)
    if _LOAD.search(text) or _SEARCHED.search(expr) or _SEARCHED.search(text):
        return True
    return any(_LOAD.search(names.expand(value)) for name in re.findall(r"\b[A-Za-z_]\w*\b", text)
               for value in names.assigned.get(name, ()))


def _side_effect_free(expr: str) -> bool:
    """No call, assignment or increment: the expression may be evaluated again, earlier."""
    return bool(expr.strip()) and not re.search(
        r"\w\s*\(|\+\+|--|<<=|>>=|(?<![=!<>])=(?!=)", expr)


def _loop_edits(src: Src, kernel: ts.Node, names: Names, k: list[int]) -> list[tuple[int, int,
                                                                                     str]]:
    """Loops starting at a loaded offset: start at the lane part, skip below the offset."""
    edits = []
    done: list[ts.Node] = []
    for node in find(kernel, "for_statement"):
        loop = canonical(src, node)
        if loop is None or loop.op != "<" or node.parent is None or \
                node.parent.type != "compound_statement" or COLLECTIVE.search(src.of(loop.body)) \
                or any(d.start_byte <= node.start_byte < d.end_byte for d in done):
            continue  # a barrier in the body would see another trip count per lane
        parts = terms(loop.start)
        offset = [t for t in parts if _reads_memory(names, t)]
        if not offset or not all(_side_effect_free(t) for t in offset):
            continue
        lane = " + ".join(t for t in parts if t not in offset) or "0"
        done.append(node)
        n = k[0]
        k[0] += 1
        ind = indent_of(src, node)
        init = node.child_by_field_name("initializer")
        body = loop.body
        body_text = src.of(body)
        edits += [
            (node.start_byte, node.start_byte,
             f"const {loop.ctype} da_lo{n}_ = {' + '.join(offset)};  // direct_addressing: "
             "the loaded offset decides which iterations count, not where they read\n" + ind),
            (init.start_byte, init.end_byte, f"{loop.ctype} {loop.var} = {lane};"),
            # A guard, not a ``continue``: the body stays free of jumps, which the
            # one-thread-per-element operators require of what they re-map afterwards.
            (body.start_byte, body.end_byte,
             f"if ({loop.var} >= da_lo{n}_) {body_text}"),
        ]
    return edits


def _has_gather(src: Src, node: ts.Node, params: dict[str, str], names: Names) -> bool:
    """True when a gather of a pointer parameter through a loaded key sits under ``node``."""
    for sub in find(node, "subscript_expression"):
        arg, idx = sub.child_by_field_name("argument"), sub.child_by_field_name("indices")
        if arg is not None and idx is not None and src.of(arg) in params and \
                _reads_memory(names, src.of(idx)[1:-1]):
            return True
    return False


def _statement_of(node: ts.Node) -> ts.Node | None:
    """The statement holding ``node`` that code can be put before: one directly in a block,
    or a loop's or branch's single unbraced body statement."""
    cur = node
    while cur.parent is not None:
        parent = cur.parent
        if parent.type == "compound_statement":
            return cur if cur.type in ("expression_statement", "declaration",
                                       "return_statement") else None
        if parent.type in ("for_statement", "while_statement", "if_statement") and \
                cur == (parent.child_by_field_name("body") or
                        parent.child_by_field_name("consequence")):
            return cur if cur.type == "expression_statement" else None
        cur = parent
    return None


def _gather_edits(src: Src, kernel: ts.Node, names: Names,
                  k: list[int]) -> list[tuple[int, int, str]]:
    """Gathers ``A[key]`` with a loaded key: search ``c = 0 .. key`` for the element."""
    params = {n: " ".join(t.replace("const", " ").split())
              for n, t in pointer_params(src, kernel).items()}
    edits: list[tuple[int, int, str]] = []
    wrapped: dict[int, tuple[ts.Node, list[str], list[tuple[int, int, str]]]] = {}
    chosen: list[ts.Node] = []
    for sub in find(kernel, "subscript_expression"):
        arg, idx = sub.child_by_field_name("argument"), sub.child_by_field_name("indices")
        if arg is None or idx is None or src.of(arg) not in params:
            continue
        key = src.of(idx)[1:-1].strip()
        if not _reads_memory(names, key) or not _side_effect_free(key) or \
                _has_gather(src, idx, params, names):
            continue  # innermost first: a gather in the key is searched for in this pass
        if not is_read(sub):
            continue
        stmt = _statement_of(sub)
        if stmt is None or any(o.start_byte <= sub.start_byte < o.end_byte for o in chosen):
            continue  # inside a gather already searched for (its key is computed whole)
        chosen.append(sub)
        n = k[0]
        k[0] += 1
        ctype = params[src.of(arg)]
        search = (f"const long long da_key{n}_ = ({key});  // direct_addressing: search for "
                  "the gathered element\n"
                  f"{ctype} da_val{n}_ = {ctype}();\n"
                  f"for (long long da_c{n}_ = 0; da_c{n}_ <= da_key{n}_; ++da_c{n}_)\n"
                  f"    if (da_c{n}_ == da_key{n}_) da_val{n}_ = {src.of(arg)}[da_c{n}_];")
        entry = wrapped.setdefault(stmt.start_byte, (stmt, [], []))
        entry[1].append(search)
        entry[2].append((sub.start_byte - stmt.start_byte, sub.end_byte - stmt.start_byte,
                         f"da_val{n}_"))
    for stmt, searches, subs in wrapped.values():
        ind = indent_of(src, stmt)
        text = splice(src.text[stmt.start_byte:stmt.end_byte], subs)
        pre = "\n".join(searches).replace("\n", "\n" + ind + ("    " if _braced(stmt) else ""))
        if _braced(stmt):
            edits.append((stmt.start_byte, stmt.end_byte,
                          f"{{\n{ind}    {pre}\n{ind}    {text}\n{ind}}}"))
        else:
            edits.append((stmt.start_byte, stmt.end_byte, f"{pre}\n{ind}{text}"))
    return edits


def _braced(stmt: ts.Node) -> bool:
    """True when ``stmt`` is a loop's or branch's body and needs braces around new code."""
    return stmt.parent is not None and stmt.parent.type != "compound_statement"


@operator("direct_addressing", family="direct_addressing")
def direct_addressing(program: str) -> MutationResult:
    """Make every loaded address of a kernel direct: loops that start at a loaded offset start
    at their lane and skip below it, gathers through a loaded key search for the element (the
    module docstring). The same elements are read and combined; no address reads memory.

    Moves:
        mem.global_indirect: down

    Applies to kernels with a canonical loop whose start reads memory, or a gather
    ``A[key]`` of a pointer parameter whose key reads memory, in a statement of a block or
    the unbraced body of a loop or branch; keys and offsets must be free of calls and
    assignments.
    """
    src = parse(program)
    b = Builder("direct_addressing", program)
    if _OWN_NAMES.search(program):
        return b.done("the program already uses da_*_ names this operator declares")
    loop_edits: list[tuple[int, int, str]] = []
    for kernel in kernels(src):
        loop_edits += _loop_edits(src, kernel, Names(src, kernel), [0])
    # Gathers are found on the program with its loops rewritten, so the two edits never
    # overlap (a gather sits inside a rewritten loop's body).
    gather_src = splice(src.text, loop_edits) if loop_edits else program
    text, counter, searched = gather_src, [0], False
    for _ in range(_PASSES):
        cur = parse(text)
        gather_edits: list[tuple[int, int, str]] = []
        for kernel in kernels(cur):
            gather_edits += _gather_edits(cur, kernel, Names(cur, kernel), counter)
        if not gather_edits:
            break
        text, searched = splice(cur.text, gather_edits), True
    if not loop_edits and not searched:
        return b.done("no loop starting at a loaded offset and no gather through a loaded key")
    b.add(text)
    return b.done()
