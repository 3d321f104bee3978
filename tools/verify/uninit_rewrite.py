"""Poison for uninitialised locals of device code (used by ``rewriter.rewrite``).

On a GPU an automatic variable without an initializer holds whatever its register or local
memory held; on the CPU it often reads as zero (a register the compiler cleared), so a kernel
whose accumulator ``float acc;`` is never set passes. The rewriter therefore follows every
declaration in a ``__global__`` / ``__device__`` function that leaves a variable uninitialised
(``float acc;``, ``float part[4];``, ``int i, j = 0;`` for ``i``) with
``::sc::poison_local(NAME);``: the variable's bytes get the run's poison word, the same one fresh
shared and device memory get (large positive, large negative or NaN by schedule). A read before
the first write therefore changes the output between schedules (a ``race`` naming a read of
memory no thread wrote) or makes it wrong; an honest program writes first and the poison store
is dead code the compiler drops (``sc::poison_word`` is ``pure``).

Only types whose default initialisation does nothing are poisoned (trivially default-
constructible and trivially copyable: scalars, pointers, vector types, plain structs and arrays
of them); a struct with default member initialisers or a constructor keeps its own.

Not poisoned: ``static``/``extern``/``__shared__``/``__constant__`` declarations (not automatic;
shared memory has its own poison), declarations that are not a statement of a block (a ``for``
initialiser, the body of an unbraced ``if``), and a declaration whose initialisers hold a call,
assignment or increment (another edit may rewrite them; ``int a = f(), b;`` leaves ``b``).
"""

from __future__ import annotations

from tree_sitter import Node

from structcover.tools.verify.declarators import declarator_chain, declared_name

_NOT_AUTOMATIC = frozenset({"static", "extern", "thread_local", "register_static"})
_QUALIFIERS_SKIPPED = frozenset({"__shared__", "__constant__", "__managed__", "constexpr"})
_EDITED_INSIDE = frozenset({"assignment_expression", "update_expression", "call_expression",
                            "lambda_expression"})


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _name_of(decl: Node, src: bytes) -> str | None:
    """The identifier a bare declarator declares; None for references and functions."""
    chain = declarator_chain(decl)
    if any(n.type in ("reference_declarator", "function_declarator") for n in chain):
        return None
    return declared_name(chain, src)


def _has_edit_inside(node: Node) -> bool:
    stack = list(node.named_children)
    while stack:
        cur = stack.pop()
        if cur.type in _EDITED_INSIDE:
            return True
        stack.extend(cur.named_children)
    return False


def poison_suffix(node: Node, src: bytes) -> str | None:
    """What to append to a ``declaration`` node of a device function, or None.

    One ``::sc::poison_local(name);`` per declarator without an initializer (no newline).
    """
    if node.type != "declaration" or node.parent is None or node.parent.type != "compound_statement":
        return None
    for child in node.children:
        word = _text(child, src)
        if child.type == "storage_class_specifier" and word in _NOT_AUTOMATIC:
            return None
        if child.type == "type_qualifier" and word in _QUALIFIERS_SKIPPED:
            return None
    if _has_edit_inside(node):
        return None
    names = []
    for decl in node.children_by_field_name("declarator"):
        if decl.type == "init_declarator":
            continue
        name = _name_of(decl, src)
        if name:
            names.append(name)
    if not names:
        return None
    return "".join(f" ::sc::poison_local({n});" for n in names)
