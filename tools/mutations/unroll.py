"""Loop unrolling: ``#pragma unroll`` hints and manual unrolling by a factor."""

from __future__ import annotations

from structcover.tools.mutations._loops import breaks_out, canonical, device_loops, pragma_before
from structcover.tools.mutations._tree import (
    indent_block,
    indent_of,
    inner_statements,
    parse,
    reindent,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator

FACTOR = 4
MAX_LOOPS = 2  # one variant per loop; each costs a compile


@operator("unroll_pragma", family="unroll")
def unroll_pragma(program: str) -> MutationResult:
    """Add ``#pragma unroll 4`` before every device loop that has no unroll pragma.

    Moves:
        loop.unroll_pragmas: up

    Does not apply when device code has no ``for`` loop or every loop already has a pragma.
    Semantics are unchanged (a pragma is a hint).
    """
    src = parse(program)
    b = Builder("unroll_pragma", program)
    edits = []
    for loop in device_loops(src):
        if pragma_before(src, loop) is None and loop.parent.type == "compound_statement":
            edits.append((loop.start_byte, loop.start_byte,
                          f"#pragma unroll {FACTOR}\n{indent_of(src, loop)}"))
    if not edits:
        return b.done("no device for-loop without an unroll pragma")
    b.add(splice(src.text, edits), factor=FACTOR)
    return b.done()


@operator("unroll_pragma_remove", family="unroll")
def unroll_pragma_remove(program: str) -> MutationResult:
    """Remove every ``#pragma unroll`` from device code (the inverse of ``unroll_pragma``).

    Moves:
        loop.unroll_pragmas: down

    Does not apply when there is no unroll pragma before a device loop.
    """
    src = parse(program)
    b = Builder("unroll_pragma_remove", program)
    edits = []
    for loop in device_loops(src):
        prag = pragma_before(src, loop)
        if prag is not None:
            line_start = src.text.rfind(b"\n", 0, prag.start_byte) + 1
            edits.append((line_start, loop.start_byte, indent_of(src, loop)))
    if not edits:
        return b.done("no unroll pragma before a device loop")
    b.add(splice(src.text, edits))
    return b.done()


def _manual(src_text: str, loop, factor: int, indent: str) -> str:
    base = f"{loop.var}_u"
    step = loop.step.strip()
    scaled = (lambda k: str(k)) if step == "1" else (lambda k: f"{k} * ({step})")
    body = src_text
    lines = [f"{{  // {loop.var}: unrolled by {factor}",
             f"  {loop.ctype.replace('const ', '')} {base} = {loop.start};",
             f"  for (; {base} + {scaled(factor - 1)} {loop.op} {loop.bound}; "
             f"{base} += {scaled(factor)}) {{"]
    for k in range(factor):
        offset = "" if k == 0 else f" + {scaled(k)}"
        lines += ["    {", f"      const {loop.ctype.replace('const ', '')} {loop.var} = {base}{offset};",
                  indent_block(body, "      "), "    }"]
    lines += ["  }",
              f"  for (; {base} {loop.op} {loop.bound}; {base} += {step}) {{",
              f"    const {loop.ctype.replace('const ', '')} {loop.var} = {base};",
              indent_block(body, "    "), "  }", "}"]
    return reindent("\n".join(lines), indent)


@operator("unroll_manual", family="unroll")
def unroll_manual(program: str) -> MutationResult:
    """Unroll a counted device loop by 4 by hand, with a remainder loop for the tail.

    Moves:
        loop.count: up

    Applies to ``for (T i = a; i < b; i += c)`` loops (``<=`` too) whose body has no
    ``break``/``continue`` for this loop and does not assign ``i`` (each copy sees a
    ``const`` copy of ``i``, so such a body fails to compile and is rejected). One variant per
    loop, for the first two eligible loops.
    """
    src = parse(program)
    b = Builder("unroll_manual", program)
    eligible = 0
    for node in device_loops(src):
        loop = canonical(src, node)
        if loop is None or breaks_out(node) or node.parent.type != "compound_statement":
            continue
        eligible += 1
        if eligible > MAX_LOOPS:
            break
        text = _manual(inner_statements(src, loop.body), loop, FACTOR, indent_of(src, node))
        prag = pragma_before(src, node)
        # a pragma before a block (no longer a loop) is an error: drop it with the loop
        start = node.start_byte if prag is None else prag.start_byte
        b.add(splice(src.text, [(start, node.end_byte, text)]),
              factor=FACTOR, loop=f"{loop.var}@{node.start_point[0] + 1}")
    return b.done("no counted device loop (for (T i = a; i < b; i += c) without break/continue)")
