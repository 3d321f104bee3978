"""Rewrites that make the CPU emulator strict (used by ``rewriter.rewrite``).

* **Plain read-modify-writes** on shared or global memory (``a[i] += v``, ``s[j]++``,
  ``*p -= 1``, ``q->n |= m``) inside device functions go through ``::sc::rmw``, which records
  (block, thread, barrier epoch) per address and reports a ``race`` when two threads between the
  same barriers, or two blocks of one launch, do one on the same address. On the emulator a
  block's threads never interleave between barriers, so such a ``+=`` would otherwise behave
  like an atomic. Locals (scalars, local arrays, by-value structs) are left alone.
* **Counter atomics whose old value is compared** (``if (atomicInc(&done, n) == n - 1)``, or
  through the variable that holds it: a last-block reduction's ticket) go through
  ``::sc::signal_result``: the emulator cannot show a missing
  ``__threadfence()`` (x86 orders stores), so a thread that acts on such an atomic in a
  multi-block launch without having executed ``__threadfence()`` earlier in that launch gets an
  ``unsupported`` verdict that says so.
* **Preprocessor tests cannot see the emulator**: in ``#if``/``#ifdef`` lines (and in every
  ``defined X``), names only the emulator defines as macros (``threadIdx``, ``__syncthreads``,
  anything ``sc_``/``__sc``) become an undefined name, and ``__has_include`` of a runtime header
  becomes 0, as with nvcc.

A read-modify-write on memory spelled inside a macro body cannot be rewritten (macro bodies are
text to the parser), so the program is ``unsupported`` (``macro_rmw``). Known gaps: an RMW split
into a separate load and store, or done through a reference parameter, is not tracked;
stringizing ``threadIdx`` shows its expansion.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from structcover.tools.verify.declarators import declarator_chain, declared_name

COMPOUND_OPS = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})

#: Counter atomics whose old value can be a ticket between blocks ("am I the last block?").
#: CAS loops (atomicCAS/atomicExch) compare their result only with their own expected value.
SIGNAL_ATOMICS = frozenset({
    f"{base}{scope}" for base in ("atomicAdd", "atomicSub", "atomicInc", "atomicDec")
    for scope in ("", "_system")})
_COMPARISONS = frozenset({"==", "!=", "<", ">", "<=", ">="})

#: Names the emulator defines as macros but nvcc does not (nvcc has them as builtins/functions).
EMULATOR_MACROS = frozenset({
    "threadIdx", "blockIdx", "blockDim", "gridDim", "__syncthreads", "__syncthreads_count",
    "__syncthreads_and", "__syncthreads_or", "__syncwarp", "__activemask", "__shfl_sync",
    "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
    "__all_sync", "__uni_sync", "__match_any_sync", "__match_all_sync", "__threadfence",
    "__threadfence_block", "__threadfence_system", "__trap", "__brkpt", "__nanosleep",
    "atomicAdd_block", "atomicAdd_system", "atomicMax_block", "atomicMin_block", "atomicCAS_block",
    "atomicExch_block"})

_HIDDEN = "__sc_undefined_name__"
_COND = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b[^\n]*", re.MULTILINE)
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*\w+")
_DEFINED = re.compile(r"\bdefined(\s*\(\s*|\s+)([A-Za-z_]\w*)")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_HAS_INCLUDE = re.compile(r"__has_include(?:_next)?\s*\(\s*[<\"]\s*(?:sc_|sc/)[^>\"]*[>\"]\s*\)")
_PROF_ATOM = re.compile(r"::sc::prof_atom\((.*), \d+\)", re.DOTALL)
_SIDE_EFFECT = re.compile(r"\+\+|--|(?<![=!<>])=(?!=)|\(")


#: A read-modify-write on an element or through a pointer, as macro text (which the parser
#: does not see as code): `a[i] += v`, `p->n++`, `(*p) -= 1`, `++s[j]`.
_MACRO_RMW = re.compile(r"(?:\]|\)|->\s*\w+)\s*(?:<<=|>>=|[-+*/%&|^]=|\+\+|--)"
                        r"|(?:\+\+|--)\s*(?:\*|\(\s*\*|\w+\s*\[)")


def macro_rmw(define_text: str) -> bool:
    """Whether a ``#define`` body does a read-modify-write on memory, or on one of its own
    parameters (``ADD(acc[0], v)``): it cannot be race-checked, since the rewriter sees macro
    bodies as text."""
    m = re.match(r"\s*#\s*define\s+\w+(\(([^)]*)\))?(.*)", define_text, re.DOTALL)
    if m is None:
        return False
    body = m.group(3)
    if _MACRO_RMW.search(body):
        return True
    params = [p.strip() for p in (m.group(2) or "").split(",") if p.strip() and p.strip() != "..."]
    return any(re.search(rf"(?:\b{re.escape(p)}\s*(?:<<=|>>=|[-+*/%&|^]=|\+\+|--))|"
                         rf"(?:(?:\+\+|--)\s*{re.escape(p)}\b)", body) for p in params)


def _emulator_name(name: str) -> bool:
    low = name.lower()
    return name in EMULATOR_MACROS or low.startswith(("sc_", "__sc"))


def hide_emulator_macros(source: str) -> str:
    """Make preprocessor tests see what nvcc would (no newline is added or removed)."""

    def hide(m: re.Match) -> str:
        return _HIDDEN if _emulator_name(m.group(0)) else m.group(0)

    def cond(m: re.Match) -> str:
        line = _HAS_INCLUDE.sub("0", m.group(0))
        d = _DIRECTIVE.match(line)
        assert d is not None
        return line[:d.end()] + _IDENT.sub(hide, line[d.end():])

    # Each physical line on its own: a name on a continuation line is caught by the `defined`
    # pass below (a bare name there is 0 on both sides unless it is a macro with a value).
    out = _COND.sub(cond, source)
    return _DEFINED.sub(lambda m: "defined" + m.group(1) + (
        _HIDDEN if _emulator_name(m.group(2)) else m.group(2)), out)


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _declarator_names(decl: Node, src: bytes, pointer: list[bool]) -> str | None:
    """Innermost identifier of a declarator; ``pointer[0]`` set when it declares a pointer/ref."""
    chain = declarator_chain(decl)
    if any(n.type in ("pointer_declarator", "reference_declarator",
                      "abstract_pointer_declarator") for n in chain):
        pointer[0] = True
    return declared_name(chain, src)


def local_names(fn: Node, src: bytes) -> set[str]:
    """Names in ``fn`` that are thread-private storage: non-pointer locals and by-value params."""
    names: set[str] = set()
    stack = [fn]
    while stack:
        node = stack.pop()
        if node.type in ("declaration", "parameter_declaration"):
            if any(c.type == "type_qualifier" and _text(c, src) == "__shared__"
                   for c in node.children):
                continue
            for decl in node.children_by_field_name("declarator"):
                pointer = [False]
                name = _declarator_names(decl, src, pointer)
                if name and not pointer[0]:
                    names.add(name)
        stack.extend(node.named_children)
    return names


def _is_memory_lvalue(node: Node, src: bytes, local: set[str]) -> bool:
    """Whether an assignment target can be shared or global memory."""
    cur = node
    while True:
        kind = cur.type
        if kind == "parenthesized_expression" and cur.named_children:
            cur = cur.named_children[0]
        elif kind == "subscript_expression":
            cur = cur.child_by_field_name("argument") or cur.named_children[0]
        elif kind == "field_expression":
            op = cur.child_by_field_name("operator")
            if op is not None and _text(op, src) == "->":
                return True
            cur = cur.child_by_field_name("argument") or cur.named_children[0]
        elif kind == "pointer_expression":
            op = cur.child_by_field_name("operator")
            return op is not None and _text(op, src) == "*"
        elif kind == "identifier":
            return _text(cur, src) not in local
        else:
            return True  # a call's result, a cast...: assume memory


def rmw_edit(node: Node, src: bytes, local: set[str]) -> str | None:
    """The ``::sc::rmw`` form of an assignment/update on memory, or None to leave it."""
    if node.type == "assignment_expression":
        op = node.child_by_field_name("operator")
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op is None or left is None or right is None or _text(op, src) not in COMPOUND_OPS:
            return None
        if not _is_memory_lvalue(left, src, local):
            return None
        body = f"return __sc_r {_text(op, src)} ({_text(right, src)});"
        target = left
    elif node.type == "update_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        if op is None or arg is None or not _is_memory_lvalue(arg, src, local):
            return None
        prefix = op.start_byte < arg.start_byte
        body = f"return {_text(op, src)}__sc_r;" if prefix else f"return __sc_r{_text(op, src)};"
        target = arg
    else:
        return None
    return (f"::sc::rmw({_text(target, src)}, __LINE__, [&](auto& __sc_r) -> decltype(auto) "
            f"{{ {body} }})")


def _is_comparison(node: Node | None, src: bytes) -> bool:
    if node is None or node.type != "binary_expression":
        return False
    op = node.child_by_field_name("operator")
    return op is not None and _text(op, src) in _COMPARISONS


def _compared(call: Node, src: bytes) -> bool:
    """Whether the atomic's old value is compared: directly, or through the variable it is
    stored in (``t = atomicInc(...); last = t == n - 1;``). An index use (compaction) is not."""
    parent = call.parent
    while parent is not None and parent.type in ("parenthesized_expression", "cast_expression"):
        parent = parent.parent
    if _is_comparison(parent, src):
        return True
    target = None
    if parent is not None and parent.type == "init_declarator":
        target = parent.child_by_field_name("declarator")
    elif parent is not None and parent.type == "assignment_expression":
        target = parent.child_by_field_name("left")
    if target is None or target.type != "identifier":
        return False
    name = _text(target, src)
    fn = parent
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    stack = [fn] if fn is not None else []
    while stack:
        node = stack.pop()
        if _is_comparison(node, src) and any(
                c.type == "identifier" and _text(c, src) == name for c in node.named_children):
            return True
        stack.extend(node.named_children)
    return False


def signal_edit(node: Node, src: bytes) -> str | None:
    """``::sc::signal_result`` around a global atomic whose old value the code acts on."""
    fn = node.child_by_field_name("function")
    if fn is None or fn.type != "identifier" or _text(fn, src) not in SIGNAL_ATOMICS:
        return None
    if not _compared(node, src):
        return None
    args = node.child_by_field_name("arguments")
    first = args.named_children[0] if args is not None and args.named_children else None
    addr = _text(first, src) if first is not None else ""
    wrapped = _PROF_ATOM.fullmatch(addr)  # the profile variant's wrapper (profile_rewrite)
    if wrapped:
        addr = wrapped.group(1)
    pure = addr and not _SIDE_EFFECT.search(addr)
    addr_expr = f"(const volatile void*)({addr})" if pure else "nullptr"
    return f"::sc::signal_result({_text(node, src)}, __LINE__, {addr_expr})"
