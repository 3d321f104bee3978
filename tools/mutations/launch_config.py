"""Launch configuration: change the block size, keeping launcher and kernel consistent."""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._tree import (
    Src,
    block_dims,
    enclosing,
    find,
    is_device_code,
    launch_config,
    launches,
    parse,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator


def _definition(src: Src, name: str, scope: ts.Node) -> ts.Node | None:
    """The literal node that defines integer constant/variable ``name`` (local first)."""
    for decl in find(scope, "declaration") + find(src.root, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator" and src.of(d.child_by_field_name("declarator")) == name:
                value = d.child_by_field_name("value")
                if value is not None and value.type == "number_literal":
                    return value
    for pdef in find(src.root, "preproc_def"):
        if src.of(pdef.child_by_field_name("name")) == name:
            value = pdef.child_by_field_name("value")
            if value is not None and re.fullmatch(r"\s*\d+\s*", src.of(value)):
                return value
    return None


def _atoms(src: Src, call: ts.Node) -> list[ts.Node]:
    """The nodes that fix the block size of a launch: literals or named constants, following
    a ``dim3 b(...)`` or ``int threads = ...`` declaration in the launcher."""
    block = launch_config(call)[1]
    fn = enclosing(call, "function_definition")
    resolved = False
    if block.type == "identifier":
        for decl in find(fn, "declaration"):
            for d in decl.children_by_field_name("declarator"):
                name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                if src.of(name) == src.of(block) and not resolved:
                    block, resolved = d, True
    skip = src.of(launch_config(call)[1]) if resolved else None
    return [n for n in find(block, "number_literal", "identifier")
            if n.type == "number_literal" or (src.of(n) != skip
                                               and n.parent.type != "call_expression")]


def _device_literals(src: Src) -> set[str]:
    out: set[str] = set()
    for fn in find(src.root, "function_definition"):
        if is_device_code(fn):
            body = fn.child_by_field_name("body")
            out |= {src.of(n) for n in find(body, "number_literal")}
    return out


def _edits_for(src: Src, call: ts.Node, scale: float) -> list[tuple[int, int, str]] | None:
    fn = enclosing(call, "function_definition")
    atoms = [a for a in _atoms(src, call) if src.of(a) not in ("dim3", "block")]
    edits: dict[int, tuple[int, int, str]] = {}
    for atom in atoms:
        if atom.type == "identifier":
            lit = _definition(src, src.of(atom), fn)
            if lit is None:
                return None
        else:
            lit = atom
        old = int(src.of(lit))
        new = int(old * scale)
        if old == 1:
            continue  # a unit dimension (dim3(256, 1)) stays unit
        if new < 1:
            return None
        edits[lit.start_byte] = (lit.start_byte, lit.end_byte, str(new))
        if atom.type == "number_literal":
            # a literal block size is usually repeated in the grid math: (n + 255) / 256
            if str(old) in _device_literals(src):
                return None
            for n in find(fn.child_by_field_name("body"), "number_literal"):
                if src.of(n) in (str(old), str(old - 1)) and n.start_byte not in edits:
                    value = new if src.of(n) == str(old) else new - 1
                    edits[n.start_byte] = (n.start_byte, n.end_byte, str(value))
    # __launch_bounds__(old) would forbid the larger block: keep it in step
    for lb in find(src.root, "launch_bounds"):
        for n in find(lb, "number_literal"):
            edits.setdefault(n.start_byte, (n.start_byte, n.end_byte, str(int(int(src.of(n)) * scale))))
    return list(edits.values()) or None


@operator("block_size", family="launch_config")
def block_size(program: str) -> MutationResult:
    """Halve and double the block size of the first launch with a constant block.

    Moves:
        launch.block_size: set

    The block size must be a literal or a named integer constant (``#define``, ``const int``,
    a launcher variable, or the arguments of ``dim3 block(...)``). Editing the named constant
    keeps everything sized by it (shared arrays, grid math) consistent; a literal is replaced
    in the launcher (with its ``- 1`` companion in ``(n + 255) / 256``) only when device code
    does not hard-code it. New sizes keep 32 <= threads <= 1024. Does not apply otherwise.
    """
    src = parse(program)
    b = Builder("block_size", program)
    calls = [c for c in launches(src) if len(launch_config(c)) >= 2]
    if not calls:
        return b.done("no kernel launch with a block argument")
    for call in calls:
        dims = block_dims(src, call)
        if dims is None:
            continue
        threads = 1
        for d in dims:
            threads *= d
        for scale in (0.5, 2.0):
            active = [d for d in dims if d != 1]
            new_threads = threads * scale ** len(active)
            if not 32 <= new_threads <= 1024:
                continue
            edits = _edits_for(src, call, scale)
            if edits:
                b.add(splice(src.text, edits), threads=int(new_threads))
        if b.result.variants or b.result.rejected:
            break
    return b.done("block size is not a constant this operator can edit consistently")
