"""fp32 accumulation for a Triton kernel's ``tl.dot`` loop that accumulates in fp16/bf16."""

from __future__ import annotations

import ast

from structcover.tools.mutations._triton import TritonSource, builder, dotted, is_call, parse_triton
from structcover.tools.mutations.base import MutationResult, operator

_HALF = {"tl.float16", "tl.bfloat16", "triton.language.float16", "triton.language.bfloat16"}


def _half_init(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(name, dtype node) for ``name = tl.zeros(shape, dtype=<half>)`` (or ``tl.full``)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name) and is_call(stmt.value, "zeros", "full")):
        return None
    call = stmt.value
    assert isinstance(call, ast.Call)
    index = 1 if is_call(call, "zeros") else 2
    dtype = next((kw.value for kw in call.keywords if kw.arg == "dtype"),
                 call.args[index] if len(call.args) > index else None)
    if dtype is None or dotted(dtype) not in _HALF:
        return None
    return stmt.targets[0].id, dtype


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _writes(loop: ast.stmt, name: str) -> list[ast.stmt]:
    return [n for n in ast.walk(loop)
            if (isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
                and n.target.id == name)
            or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                  for t in n.targets))]


def _update_edits(src: TritonSource, stmt: ast.stmt, name: str, half: str
                  ) -> list[tuple[int, int, str]] | None:
    """Edits that keep an update of ``name`` in fp32, or None when it is not an update."""
    value = stmt.value  # type: ignore[attr-defined]
    if isinstance(stmt, ast.AugAssign):
        if not isinstance(stmt.op, (ast.Add, ast.Sub)):
            return None
    elif not _mentions(value, name):
        return None  # a reassignment that drops the running sum
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(value):
        # x.to(<half>) of a dot or of the running sum: the downcast the accumulator no
        # longer needs (the sum stays fp32 until after the loop).
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "to" and node.args and dotted(node.args[0]) in _HALF \
                and (is_call(node.func.value, "dot") or _mentions(node.func.value, name)):
            # Delete ".to(<half>)" only (parentheses around the receiver stay).
            dot_at = src.data.rfind(b".", src.end(node.func.value), src.end(node.func))
            edits.append((dot_at, src.end(node), ""))
        if is_call(node, "dot"):
            assert isinstance(node, ast.Call)
            out = next((kw for kw in node.keywords if kw.arg == "out_dtype"), None)
            if out is not None and dotted(out.value) in _HALF:
                edits.append((src.start(out.value), src.end(out.value), "tl.float32"))
            elif out is None and (len(node.args) > 2 or any(kw.arg == "acc"
                                                             for kw in node.keywords)):
                at = src.end(node) - 1
                edits.append((at, at, ", out_dtype=tl.float32"))
    return edits


def _bodies(func: ast.FunctionDef) -> list[list[ast.stmt]]:
    out: list[list[ast.stmt]] = []
    for node in ast.walk(func):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                out.append(stmts)
    return out


def _kernel_edits(src: TritonSource, func: ast.FunctionDef
                  ) -> tuple[list[tuple[int, int, str]], list[str]] | str:
    edits: list[tuple[int, int, str]] = []
    names: list[str] = []
    for body in _bodies(func):
        for i, stmt in enumerate(body):
            init = _half_init(stmt)
            if init is None:
                continue
            name, dtype = init
            half = dotted(dtype)
            loops = [s for s in body[i + 1:] if isinstance(s, (ast.For, ast.While))
                     and _writes(s, name)]
            if not loops:
                continue
            updates = [w for loop in loops for w in _writes(loop, name)]
            if not any(is_call(n, "dot") for w in updates for n in ast.walk(w)):
                continue
            mine: list[tuple[int, int, str]] = [(src.start(dtype), src.end(dtype), "tl.float32")]
            for w in updates:
                found = _update_edits(src, w, name, half)
                if found is None:
                    return (f"{name} (line {w.lineno}) is reassigned inside the loop, not "
                            "accumulated")
                mine += found
            last = loops[-1]
            at = src.line_end(last)
            mine.append((at, at, f"{src.indent(last)}{name} = {name}.to({half})  "
                                 "# accumulated in fp32; the same dtype after the loop\n"))
            edits += mine
            names.append(name)
    return edits, names


@operator("triton_fp32_accumulate", family="triton_fp32_accumulate", language="triton")
def triton_fp32_accumulate(program: str) -> MutationResult:
    """Accumulate a ``tl.dot`` loop in fp32 where the kernel accumulates in fp16/bf16.

    Moves:
        triton.dot_acc_fp32: set

    Applies to an accumulator made by ``tl.zeros(..., dtype=tl.float16|tl.bfloat16)`` (or
    ``tl.full``) and summed in a later loop of the same block by ``acc += ...``,
    ``acc = acc + ...`` or ``acc = tl.dot(a, b, acc)``, with a ``tl.dot`` among the updates.
    The accumulator becomes fp32, the dots' ``out_dtype`` fp32 (``.to(half)`` casts of the
    dot or running sum inside the updates are dropped), and after the loop it is cast back
    (``acc = acc.to(tl.float16)``): everything downstream, the store included, sees the
    dtype it saw before, rounded once instead of at every step. Does not apply to kernels
    without such an accumulator (already fp32, or reductions without ``tl.dot``: the feature
    this promises is the dot's accumulator) or when the loop overwrites it.
    """
    parsed = parse_triton(program)
    if isinstance(parsed, str):
        return MutationResult(operator="triton_fp32_accumulate", not_applicable=parsed)
    src = parsed
    b = builder("triton_fp32_accumulate", program)
    reasons: list[str] = []
    for kname, func in src.kernels.items():
        found = _kernel_edits(src, func)
        if isinstance(found, str):
            reasons.append(f"{kname}: {found}")
            continue
        edits, names = found
        if not edits:
            reasons.append(f"{kname}: no fp16/bf16 accumulator updated by tl.dot in a loop")
            continue
        try:
            text = src.apply(edits)
        except ValueError:
            reasons.append(f"{kname}: overlapping edits")
            continue
        b.add(text, kernel=kname, accumulators=",".join(names))
    return b.done("; ".join(reasons))
