"""The chain of nested declarators from a declaration's declarator down to its name.

``float *const p[4]`` parses as array -> pointer -> identifier; the rewrites that poison locals
and hide shared memory both need the name and what wraps it (pointer, reference, function).
"""

from __future__ import annotations

from tree_sitter import Node


def declarator_chain(decl: Node) -> list[Node]:
    """``decl`` and each declarator nested in it, ending at the identifier when there is one."""
    chain: list[Node] = []
    cur: Node | None = decl
    while cur is not None:
        chain.append(cur)
        if cur.type == "identifier":
            break
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children if c.type.endswith("declarator")
                        or c.type == "identifier"), None)
        cur = nxt
    return chain


def declared_name(chain: list[Node], src: bytes) -> str | None:
    """The identifier that ends ``chain`` (its text), or None when it ends without one."""
    last = chain[-1] if chain else None
    if last is None or last.type != "identifier":
        return None
    return src[last.start_byte:last.end_byte].decode("utf-8", "replace")
