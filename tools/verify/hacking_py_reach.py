"""Which code of a KernelBench (Python) program counts as its ``forward``'s.

The delegation check judges torch calls in ``forward`` and in what ``forward`` reaches: helper
functions and methods (named, called or held: ``self.op = helper``), lambdas; not Triton
kernels (their ``x.sum()`` is Triton's) nor the input makers. Methods of a compiled extension
(``ext.matmul``, ``self.ext.matmul``) are the candidate's own kernels whatever they are called,
and a Triton kernel counts only when it is launched (one never launched is a decoy).
"""

from __future__ import annotations

import ast

from structcover.tools.verify.hacking_py_names import INPUT_MAKERS, Resolver, outside_inputs

__all__ = ["extension_modules", "forward_functions", "helpers", "own_method", "ref_name",
           "self_extensions", "triton_decoy", "triton_jit_functions", "triton_kernels",
           "triton_launched"]


def forward_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every ``forward`` and ``__call__`` of the module."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name in ("forward", "__call__")]


def triton_jit_functions(tree: ast.Module, dotted: Resolver) -> list[ast.FunctionDef]:
    """Functions decorated ``@triton.jit`` (or ``@triton.autotune``/``heuristics`` over one)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dotted(dec.func if isinstance(dec, ast.Call) else dec) or ""
                if target.startswith("triton.") and target.endswith(("jit", "autotune",
                                                                     "heuristics")):
                    found.append(node)
                    break
    return found


def triton_launched(tree: ast.Module, kernels: list[ast.FunctionDef]) -> set[str]:
    """Names of the Triton kernels launched somewhere as ``kernel[grid](...)`` (also through a
    plain alias ``k = kernel``, or as an attribute ``self.kernel[grid](...)``)."""
    names = {k.name for k in kernels}
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and \
                node.value.id in names:
            alias.update({t.id: node.value.id for t in node.targets if isinstance(t, ast.Name)})
    launched = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            base = node.func.value
            name = base.id if isinstance(base, ast.Name) else \
                base.attr if isinstance(base, ast.Attribute) else None
            if name in names or name in alias:
                launched.add(alias.get(name, name))
    return launched


def triton_kernels(tree: ast.Module, dotted: Resolver) -> bool:
    """Whether a Triton kernel is defined *and launched* (a kernel never launched is a decoy)."""
    kernels = triton_jit_functions(tree, dotted)
    return bool(kernels) and bool(triton_launched(tree, kernels))


def triton_decoy(tree: ast.Module, dotted: Resolver) -> str | None:
    """``@triton.jit`` functions defined but none launched: the output comes from elsewhere."""
    kernels = triton_jit_functions(tree, dotted)
    if kernels and not triton_launched(tree, kernels):
        listed = ", ".join(f"`{k.name}`" for k in kernels[:3])
        return (f"Triton kernel(s) {listed} defined but never launched (`kernel[grid](...)`): "
                f"a decoy, no Triton kernel is used (line {kernels[0].lineno})")
    return None


def helpers(tree: ast.Module, dotted: Resolver) -> list[ast.FunctionDef | ast.Lambda]:
    """Functions and methods ``forward`` reaches, transitively, and every lambda outside the
    input makers (not Triton kernels: their ``x.sum()`` is Triton's, not torch's). Reached is
    named, called or not: ``helper(x)``, ``self.helper(x)``, ``map(helper, xs)``, and
    ``self.op(x)`` after ``self.op = helper`` anywhere (``__init__``). A torch op in a host
    wrapper that ``forward`` reaches is the same delegation as one in ``forward``."""
    jit = {k.name for k in triton_jit_functions(tree, dotted)}
    defs: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name not in jit and \
                node.name not in ("forward", "__call__", "__init__", *INPUT_MAKERS):
            defs.setdefault(node.name, node)
    # `self.op = helper` (or `op = helper`): a use of `op` reaches `helper`.
    bound: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            held = {r for n in ast.walk(node.value) if (r := ref_name(n))} & defs.keys()
            for t in node.targets:
                if (name := ref_name(t)) and held:
                    bound.setdefault(name, set()).update(held)
    seen: dict[str, ast.FunctionDef] = {}
    todo: list[ast.AST] = list(forward_functions(tree))
    while todo:
        fn = todo.pop()
        for node in ast.walk(fn):
            ref = ref_name(node)
            for name in ({ref or ""} & defs.keys()) | bound.get(ref or "", set()):
                if name not in seen:
                    seen[name] = defs[name]
                    todo.append(defs[name])
    lambdas = [n for n in outside_inputs(tree) if isinstance(n, ast.Lambda)]
    return [*seen.values(), *lambdas]


def ref_name(node: ast.AST) -> str | None:
    """The name a ``Name`` or ``Attribute`` refers to by (``helper``, ``self.helper``)."""
    return node.id if isinstance(node, ast.Name) else \
        node.attr if isinstance(node, ast.Attribute) else None


def extension_modules(tree: ast.Module, dotted: Resolver) -> set[str]:
    """Names bound to a compiled extension (``ext = load_inline(...)``): their methods are the
    candidate's own kernels, whatever they are called (``ext.matmul``)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            target = dotted(node.value.func) or ""
            if target.endswith("load_inline") or target.endswith("cpp_extension.load"):
                bound |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return bound


def self_extensions(tree: ast.Module, dotted: Resolver, extensions: set[str]) -> set[str]:
    """Attributes ``self.X`` bound to a compiled extension (``self.ext = ext``/``load_inline``)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and (
                isinstance(node.value, ast.Name) and node.value.id in extensions or
                isinstance(node.value, ast.Call) and
                (dotted(node.value.func) or "").endswith(("load_inline", "extension.load"))):
            bound |= {f"self.{t.attr}" for t in node.targets if isinstance(t, ast.Attribute)
                      and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return bound


def own_method(target: str, extensions: set[str]) -> bool:
    """``self.op(x)`` (the module's own method or a held callable, judged where it is bound)
    or ``self.ext.matmul(x)`` on an extension; ``self.weight.matmul(x)`` is a tensor's."""
    parts = target.split(".")
    return parts[0] == "self" and (len(parts) == 2 or ".".join(parts[:2]) in extensions)
