"""Epilogue fusion: an elementwise torch op applied to a Triton kernel's output moves into the
kernel's store."""

from __future__ import annotations

import ast

from structcover.tools.mutations._triton import (
    Launch,
    TritonSource,
    builder,
    dotted,
    fresh,
    is_call,
    parse_triton,
)
from structcover.tools.mutations.base import MutationResult, operator

_TORCH = ("torch.nn.functional.", "nn.functional.", "torch.", "F.")  # longest first
_ALLOC = ("empty", "empty_like", "zeros", "zeros_like", "empty_strided", "new_empty",
          "new_zeros")
#: tanh through the sigmoid (tanh x = 2 sigmoid(2x) - 1): plain tl ops, no libdevice.
_TANH = "(2.0 * tl.sigmoid(2.0 * ({x})) - 1.0)"


def _epilogue(call: ast.Call, out: str) -> tuple[str, str] | None:
    """(kind, template over ``{v}``) for a torch elementwise call on ``out`` alone."""
    name = dotted(call.func)
    short = next((name[len(p):] for p in _TORCH if name.startswith(p)), None)
    if short is None or not call.args or not (isinstance(call.args[0], ast.Name)
                                              and call.args[0].id == out):
        return None
    rest, kws = call.args[1:], {kw.arg: kw.value for kw in call.keywords}
    if short in ("relu",) and not rest and not kws:
        return "relu", "tl.where({v} > 0, {v}, 0.0)"
    if short == "sigmoid" and not rest and not kws:
        return "sigmoid", "tl.sigmoid({v}.to(tl.float32))"
    if short == "tanh" and not rest and not kws:
        return "tanh", _TANH.format(x="{v}.to(tl.float32)")
    if short == "gelu" and not rest and set(kws) <= {"approximate"}:
        approx = kws.get("approximate")
        mode = approx.value if isinstance(approx, ast.Constant) else "none" if approx is None \
            else None
        if mode == "none":
            return "gelu", "0.5 * {v}.to(tl.float32) * (1.0 + tl.erf({v}.to(tl.float32) * " \
                           "0.7071067811865476))"
        if mode == "tanh":
            inner = "0.7978845608028654 * ({v}.to(tl.float32) + 0.044715 * " \
                    "{v}.to(tl.float32) * {v}.to(tl.float32) * {v}.to(tl.float32))"
            return "gelu_tanh", "0.5 * {v}.to(tl.float32) * (1.0 + " + \
                _TANH.format(x=inner) + ")"
        return None
    ops = {"mul": "*", "add": "+", "sub": "-", "div": "/"}
    if short in ops and len(rest) == 1 and not kws:
        c = rest[0]
        if isinstance(c, ast.UnaryOp) and isinstance(c.op, ast.USub):
            c = c.operand
            sign = "-"
        else:
            sign = ""
        if isinstance(c, ast.Constant) and isinstance(c.value, (int, float)) \
                and not isinstance(c.value, bool):
            return short, f"{{v}} {ops[short]} ({sign}{c.value!r})"
    return None


def _tainted(func: ast.FunctionDef, param: str) -> set[str]:
    """``param`` and every name assigned from an expression that mentions a tainted name."""
    names = {param}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value:
                if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name) and n.id not in names:
                                names.add(n.id)
                                changed = True
    return names


def _pointer(call: ast.Call) -> ast.AST | None:
    return call.args[0] if call.args else next(
        (kw.value for kw in call.keywords if kw.arg == "pointer"), None)


def _mentions(node: ast.AST | None, names: set[str]) -> bool:
    return node is not None and any(isinstance(n, ast.Name) and n.id in names
                                    for n in ast.walk(node))


def _output_stores(func: ast.FunctionDef, param: str) -> list[ast.Call] | str:
    """The stores through ``param`` when the kernel only writes it, else why not."""
    taint = _tainted(func, param)
    stores: list[ast.Call] = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        if is_call(node, "store") and _mentions(_pointer(node), taint):
            stores.append(node)
        elif (is_call(node, "load") or name.startswith(("tl.atomic_", "tl.make_block_ptr",
                                                         "tl.make_tensor_descriptor"))) \
                and _mentions(_pointer(node) if is_call(node, "load") else node, taint):
            return f"the kernel also reads or updates {param} (line {node.lineno})"
    return stores or f"no tl.store through {param}"


def _site(src: TritonSource, launch: Launch) -> list[tuple[str, str, ast.Call, tuple[str, str]]]:
    """(argument, kernel parameter, epilogue call, (kind, template)) candidates of a launch."""
    func = src.kernels[launch.kernel]
    params = [a.arg for a in func.args.args]
    bound = [(a, params[i]) for i, a in enumerate(launch.call.args) if i < len(params)]
    bound += [(kw.value, kw.arg) for kw in launch.call.keywords if kw.arg]
    out = []
    after = src.end(launch.call)
    for arg, param in bound:
        if not isinstance(arg, ast.Name):
            continue
        assigns = src.assignments(launch.scope, arg.id)
        if len(assigns) != 1 or src.binds(launch.scope, arg.id) != 1 or not (
                isinstance(assigns[0].value, ast.Call)
                and dotted(assigns[0].value.func).rsplit(".", 1)[-1] in _ALLOC):
            continue
        uses = [n for n in ast.walk(launch.scope) if isinstance(n, ast.Name)
                and n.id == arg.id and isinstance(n.ctx, ast.Load) and src.start(n) >= after]
        if len(uses) != 1:
            continue
        parent = src.parent(uses[0])
        if isinstance(parent, ast.Call):
            found = _epilogue(parent, arg.id)
            if found is not None:
                out.append((arg.id, param, parent, found))
    return out


@operator("triton_fuse_epilogue", family="triton_fuse_epilogue", language="triton")
def triton_fuse_epilogue(program: str) -> MutationResult:
    """Fuse the torch elementwise op applied to a Triton kernel's output into its store.

    Moves:
        lib.calls: down

    Applies when the function that launches a kernel allocates the output (``torch.empty``,
    ``empty_like``, ``zeros``...), passes it to the kernel's only launch site, and uses it
    once afterwards, as the sole tensor argument of ``torch.relu``/``F.relu``,
    ``torch.sigmoid``, ``torch.tanh``, ``F.gelu`` (exact, via ``tl.erf``, or
    ``approximate="tanh"``) or ``torch.mul/add/sub/div`` by a number. The kernel must only
    store through that parameter (no loads or atomics on it); each such store's value ``v``
    becomes ``f(v)`` (``tl.where(v > 0, v, 0.0)`` for relu; the transcendental ones in fp32,
    cast by the store), and the torch call is replaced by the tensor. Does not apply to
    kernels launched from several sites (the other launches would change too), to outputs
    read again after the epilogue, or to other epilogues (``y * s`` as an operator moves no
    recorded feature; a tensor operand would need a new kernel argument).
    """
    parsed = parse_triton(program)
    if isinstance(parsed, str):
        return MutationResult(operator="triton_fuse_epilogue", not_applicable=parsed)
    src = parsed
    b = builder("triton_fuse_epilogue", program)
    reasons: list[str] = []
    for launch in src.launches():
        sites = _site(src, launch)
        if not sites:
            continue
        if len(src.launches(launch.kernel)) != 1:
            reasons.append(f"{launch.kernel} is launched from several sites")
            continue
        func = src.kernels[launch.kernel]
        for out, param, epi, (kind, template) in sites:
            stores = _output_stores(func, param)
            if isinstance(stores, str):
                reasons.append(f"{launch.kernel}: {stores}")
                continue
            edits = [(src.start(epi), src.end(epi), out)]
            used = src.names_used(func)
            ok = True
            for store in stores:
                stmt = src.parent(store)
                value = store.args[1] if len(store.args) > 1 else next(
                    (kw.value for kw in store.keywords if kw.arg == "value"), None)
                if not isinstance(stmt, ast.Expr) or value is None:
                    ok = False
                    break
                v = fresh(used, "epilogue")
                ind = src.indent(stmt)
                edits.append((src.start(stmt), src.start(stmt), f"{v} = {src.of(value)}\n{ind}"))
                edits.append((src.start(value), src.end(value), template.format(v=v)))
            if not ok:
                reasons.append(f"{launch.kernel}: a store through {param} is not a statement")
                continue
            b.add(src.apply(edits), kernel=launch.kernel, output=out, epilogue=kind)
    return b.done("; ".join(reasons) or "no kernel output is passed to a torch elementwise "
                  "op (relu, sigmoid, tanh, gelu, mul/add/sub/div by a number) afterwards")
