"""Size constants of a KernelBench problem, including the elements of integer tuples and lists.

KernelBench problems name their sizes as module-level integers (``N = 4096``) and, for the
scan and loss families, as tuples (``input_shape = (32768,)``, used as
``torch.rand(batch_size, *input_shape)``). A tuple's elements scale like any size, so each gets
a name of its own, ``input_shape__0``, ``input_shape__1``: an identifier, so size expressions
(``batch_size*input_shape__0``) evaluate over it. Left whole, a (32768,) tuple kept a shrunk
problem at 32768 x 32768 floats and the reference ran out of memory. The MLP problems pass
their hidden widths as a list (``layer_sizes = [16384, 16384]``, constructor arguments): its
elements scale the same way and are written back as a list, else the shrunk problem kept
16384 x 16384 weights (1 GiB a layer) and its reference was killed for memory.

Dependency-free on purpose: the jailed torch child imports it.
"""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["ELEMENT_SEP", "apply_sizes", "element_name", "recompute_derived", "tuple_elements"]

#: Between a tuple constant's name and an element's index in the element's size name.
ELEMENT_SEP = "__"


def element_name(name: str, index: int) -> str:
    """The size name of element ``index`` of the tuple constant ``name``."""
    return f"{name}{ELEMENT_SEP}{index}"


def tuple_elements(name: str, sizes: dict[str, int]) -> list[str]:
    """The element size names of tuple constant ``name`` in order; empty when it is none."""
    out: list[str] = []
    while element_name(name, len(out)) in sizes:
        out.append(element_name(name, len(out)))
    return out


def apply_sizes(namespace: dict[str, Any], sizes: dict[str, int],
                only_existing: bool = False) -> None:
    """Set ``sizes`` in a module's namespace, rebuilding tuple and list constants from their
    elements (each keeps its kind).

    Args:
        namespace: The module's ``__dict__``.
        sizes: Size name -> value, element names included.
        only_existing: Set only names the module already binds to an int (or, for elements, a
            tuple or list long enough): a candidate's own copies of the problem's sizes, nothing
            else.
    """
    for name, value in sizes.items():
        base, sep, index = name.rpartition(ELEMENT_SEP)
        current = namespace.get(base) if sep else None
        if sep and index.isdigit() and isinstance(current, tuple | list) and \
                int(index) < len(current):
            # A new object of the same kind: a list the module shares stays as it was.
            items = [*current[:int(index)], value, *current[int(index) + 1:]]
            namespace[base] = tuple(items) if isinstance(current, tuple) else items
        elif not only_existing or isinstance(namespace.get(name), int):
            namespace[name] = value


def _size_base(name: str) -> str:
    """The module-level name a size sets: the tuple constant for an element size."""
    base, sep, index = name.rpartition(ELEMENT_SEP)
    return base if sep and index.isdigit() else name


def _bound(stmt: ast.stmt) -> set[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def recompute_derived(namespace: dict[str, Any], source: str, sizes: dict[str, int],
                      filename: str = "<problem>") -> list[str]:
    """Run again the module-level assignments computed from the sizes, after :func:`apply_sizes`.

    Level-2 problems derive shapes from their sizes at import (``bias_shape = (out_channels,
    1, 1)``): set only ``out_channels`` to its shrunk value and the model's bias keeps the full
    channel count, so the reference fails on a shape mismatch. Each top-level assignment that
    reads a changed name (and sets no size itself) is executed again in file order, so that
    what it sets counts as changed for the statements after it.

    Returns:
        The names set again.
    """
    changed = {_size_base(n) for n in sizes}
    redone: list[str] = []
    for stmt in ast.parse(source, filename=filename).body:
        if not isinstance(stmt, ast.Assign | ast.AnnAssign) or stmt.value is None:
            continue
        bound = _bound(stmt)
        if bound & {_size_base(n) for n in sizes}:
            continue  # a size: apply_sizes set it
        reads = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        if reads & changed:
            exec(compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec"), namespace)
            changed |= bound
            redone += sorted(bound)
    return redone
