"""Padding of 2-D shared arrays against bank conflicts (``[T][T]`` -> ``[T][T + 1]``)."""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._tree import Src, find, parse, splice
from structcover.tools.mutations.base import Builder, MutationResult, operator


def _shared_2d(src: Src) -> list[ts.Node]:
    """The outer array declarators of static ``__shared__`` arrays with two or more dims."""
    out = []
    for decl in find(src.root, "declaration"):
        if not any(c.type == "type_qualifier" and src.of(c) == "__shared__" for c in decl.children):
            continue
        if any(src.of(c) == "extern" for c in decl.children):
            continue  # a dynamic array has no static shape to pad
        for d in decl.children_by_field_name("declarator"):
            if d.type == "array_declarator" and d.child_by_field_name("declarator").type == \
                    "array_declarator":
                out.append(d)
    return out


@operator("pad_shared", family="padding")
def pad_shared(program: str) -> MutationResult:
    """Pad the last dimension of every unpadded 2-D ``__shared__`` array by one element.

    Moves:
        smem.padded: up

    Indexing is unchanged (``a[r][c]`` keeps its meaning), so results are identical; the
    extra column shifts each row by one bank, which removes column-access conflicts. Does not
    apply when there is no static 2-D shared array or one is already padded (``+ 1``).
    """
    src = parse(program)
    b = Builder("pad_shared", program)
    edits = []
    arrays = _shared_2d(src)
    if any(re.search(r"\+\s*1\s*$", src.of(a.child_by_field_name("size"))) for a in arrays):
        return b.done("a 2-D __shared__ array is already padded")
    for arr in arrays:
        size = arr.child_by_field_name("size")
        if not re.search(r"\+\s*1\s*$", src.of(size)):
            edits.append((size.start_byte, size.end_byte, f"{src.of(size)} + 1"))
    if not edits:
        return b.done("no unpadded static 2-D __shared__ array")
    b.add(splice(src.text, edits), pad=1)
    return b.done()


@operator("unpad_shared", family="padding")
def unpad_shared(program: str) -> MutationResult:
    """Remove a ``+ 1`` padding from the last dimension of 2-D ``__shared__`` arrays.

    Moves:
        smem.padded: down

    Does not apply when no 2-D shared array has a last dimension written ``X + 1``.
    """
    src = parse(program)
    b = Builder("unpad_shared", program)
    edits = []
    for arr in _shared_2d(src):
        size = arr.child_by_field_name("size")
        m = re.fullmatch(r"(.+?)\s*\+\s*1\s*", src.of(size), re.S)
        if m:
            edits.append((size.start_byte, size.end_byte, m.group(1)))
    if not edits:
        return b.done("no 2-D __shared__ array padded with '+ 1'")
    b.add(splice(src.text, edits))
    return b.done()
