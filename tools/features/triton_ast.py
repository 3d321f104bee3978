"""Triton programs read with Python's ``ast``: kernels, helpers, launch sites, constexpr values.

The public entry points are :func:`find_triton_kernels` (what the file defines and launches)
and :func:`triton_features` (the feature dict, re-exported from
:mod:`structcover.tools.features.triton_features`). Nothing here runs the program: the text
is parsed, never imported or executed.

Rules (docs/FEATURES.md, "Triton"):

* a *jitted function* is one decorated with ``triton.jit`` / ``jit`` (any extra decorators:
  ``triton.autotune``, ``triton.heuristics``, ``libentry()``);
* a jitted function that returns a value, or that another jitted function calls and the
  file never launches, is a *helper* (inlined into its callers; Triton kernels cannot
  return values), every other one is a *kernel*;
* a *launch site* is ``k[grid](...)`` with ``k`` a kernel of the file;
* constexpr parameters (annotated ``tl.constexpr`` or ``"tl.constexpr"``) take their values
  from autotune configs, launch keywords / positions and signature defaults; the largest
  integer value is the one block sizes are measured with.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

#: Names of ``triton.language`` members seen as kernel-side calls (after alias resolution).
TL = "tl"


@dataclass
class Launch:
    """One ``kernel[grid](...)`` site."""

    kernel: str
    node: ast.Call
    #: parameter name -> argument expression (positional args mapped through the signature)
    args: dict[str, ast.expr]
    num_warps: int | None = None
    num_stages: int | None = None
    #: the function the launch is written in (None: module level)
    host: str | None = None


@dataclass
class TritonKernel:
    """One jitted function and what the file says about it."""

    name: str
    node: ast.FunctionDef
    params: list[str]
    constexprs: set[str]
    is_helper: bool
    autotune_configs: list[dict[str, Any]] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    #: constexpr name -> candidate integer values (configs, launches, defaults)
    values: dict[str, list[int]] = field(default_factory=dict)

    def value(self, name: str) -> int | None:
        """Largest known integer value of constexpr ``name`` (None when unknown)."""
        vals = self.values.get(name)
        return max(vals) if vals else None

    @property
    def num_warps(self) -> list[int]:
        """num_warps from launches and autotune configs."""
        out = [w for w in (lc.num_warps for lc in self.launches) if w]
        out += [c["num_warps"] for c in self.autotune_configs
                if isinstance(c.get("num_warps"), int)]
        return out

    @property
    def num_stages(self) -> list[int]:
        """num_stages from launches and autotune configs."""
        out = [s for s in (lc.num_stages for lc in self.launches) if s]
        out += [c["num_stages"] for c in self.autotune_configs
                if isinstance(c.get("num_stages"), int)]
        return out


@dataclass
class TritonModule:
    """A parsed Triton file."""

    tree: ast.Module
    kernels: dict[str, TritonKernel]
    aliases: dict[str, str]
    #: module-level integer constants
    constants: dict[str, int]
    functions: dict[str, ast.FunctionDef]


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (None otherwise)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> canonical prefix: ``tl`` for triton.language, ``libdevice`` ..."""
    aliases = {"tl": TL, "triton": "triton"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton.language" and a.asname:
                    aliases[a.asname] = TL
                elif a.name.startswith("triton") and a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module
            for a in node.names:
                local = a.asname or a.name
                if mod == "triton" and a.name == "language":
                    aliases[local] = TL
                elif mod == "triton.language":
                    aliases[local] = f"{TL}.{a.name}"
                elif mod.startswith("triton.language.") and "libdevice" in mod:
                    aliases[local] = f"libdevice.{a.name}"
                elif mod.startswith("triton.language.extra") and a.name == "libdevice":
                    aliases[local] = "libdevice"
                elif mod.startswith("triton.language.math"):
                    aliases[local] = f"{TL}.math.{a.name}"
                elif mod == "triton" and a.name in ("jit", "autotune", "heuristics", "Config"):
                    aliases[local] = f"triton.{a.name}"
                elif "tensor_descriptor" in mod and a.name == "TensorDescriptor":
                    aliases[local] = "TensorDescriptor"
    return aliases


def canonical(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """Dotted name of ``node`` with its first part replaced through ``aliases``."""
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head in aliases:
        head = aliases[head]
    full = f"{head}.{rest}" if rest else head
    if full.startswith("triton.language."):
        full = TL + full[len("triton.language"):]
    if full.startswith(f"{TL}.extra.") and ".libdevice." in full:
        full = "libdevice." + full.rsplit(".", 1)[1]
    return full


def _is_jit(dec: ast.expr, aliases: dict[str, str]) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    return canonical(target, aliases) in ("triton.jit", "jit", "triton.runtime.jit.jit")


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _configs(dec: ast.expr, aliases: dict[str, str]) -> list[dict[str, Any]] | None:
    """Autotune configs of ``@triton.autotune(configs=[triton.Config({...}, ...)])``."""
    if not isinstance(dec, ast.Call) or canonical(dec.func, aliases) != "triton.autotune":
        return None
    found: list[dict[str, Any]] = []
    for node in ast.walk(dec):
        if isinstance(node, ast.Call) and canonical(node.func, aliases) in (
                "triton.Config", "Config"):
            conf: dict[str, Any] = {}
            kw_node = node.args[0] if node.args else None
            for kw in node.keywords:
                if kw.arg == "kwargs":
                    kw_node = kw.value
                elif kw.arg in ("num_warps", "num_stages"):
                    conf[kw.arg] = _literal(kw.value)
            meta = _literal(kw_node)
            if isinstance(meta, dict):
                conf["kwargs"] = meta
            found.append(conf)
    return found


def _is_constexpr(ann: ast.expr | None, aliases: dict[str, str]) -> bool:
    if ann is None:
        return False
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.endswith("constexpr")
    name = canonical(ann, aliases)
    return bool(name) and name.endswith("constexpr")


def _returns_value(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn)
               if not isinstance(n, ast.Lambda))


def _host_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    out: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.setdefault(node.name, node)
    return out


def int_constants(body: list[ast.stmt]) -> dict[str, int]:
    """``NAME = <int literal>`` assignments of a statement list (last one wins)."""
    out: dict[str, int] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            v = _literal(stmt.value)
            if isinstance(v, int) and not isinstance(v, bool):
                out[stmt.targets[0].id] = v
    return out


def _int_of(node: ast.expr, scope: dict[str, int]) -> int | None:
    v = _literal(node)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    return None


def parse_module(text: str) -> TritonModule:
    """Parse ``text`` (raises SyntaxError / ValueError on malformed Python)."""
    tree = ast.parse(text)
    aliases = import_aliases(tree)
    functions = _host_functions(tree)
    constants = int_constants(tree.body)
    kernels: dict[str, TritonKernel] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        if not any(_is_jit(d, aliases) for d in node.decorator_list):
            continue
        args = node.args
        params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        constexprs = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                      if _is_constexpr(a.annotation, aliases)}
        k = TritonKernel(node.name, node, params, constexprs, _returns_value(node))
        for dec in node.decorator_list:
            confs = _configs(dec, aliases)
            if confs is not None:
                k.autotune_configs.extend(confs)
        # Signature defaults of constexprs.
        pos = [*args.posonlyargs, *args.args]
        for a, d in zip(pos[len(pos) - len(args.defaults):], args.defaults, strict=False):
            v = _literal(d)
            if a.arg in constexprs and isinstance(v, int) and not isinstance(v, bool):
                k.values.setdefault(a.arg, []).append(v)
        for conf in k.autotune_configs:
            for name, v in (conf.get("kwargs") or {}).items():
                if isinstance(v, int) and not isinstance(v, bool):
                    k.values.setdefault(name, []).append(v)
        kernels.setdefault(node.name, k)
    module = TritonModule(tree, kernels, aliases, constants, functions)
    _collect_launches(module)
    # A jitted function called from another one and never launched here is inlined device
    # code (a helper), like one that returns a value.
    called = {n.func.id for k in kernels.values() for n in ast.walk(k.node)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
              and n.func.id in kernels and n.func.id != k.name}
    for k in kernels.values():
        k.is_helper = k.is_helper or (k.name in called and not k.launches)
    return module


def _collect_launches(module: TritonModule) -> None:
    """Attach every ``kernel[grid](...)`` site to its kernel, with constexpr values."""
    parents: dict[int, ast.FunctionDef | None] = {}
    for fn in ast.walk(module.tree):
        if isinstance(fn, ast.FunctionDef):
            for sub in ast.walk(fn):
                parents.setdefault(id(sub), fn)
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        name = dotted(node.func.value)
        if name is None:
            continue
        k = module.kernels.get(name.rsplit(".", 1)[-1])
        if k is None:
            continue
        host = parents.get(id(node))
        scope = dict(module.constants)
        if host is not None:
            # Branch alternatives (``num_warps = 4`` then ``if ...: num_warps = 8``) keep
            # the largest value: block sizes are measured at their largest.
            for n, v in _max_constants(host).items():
                scope[n] = v
        bound: dict[str, ast.expr] = {}
        for p, a in zip(k.params, node.args, strict=False):
            if not isinstance(a, ast.Starred):
                bound[p] = a
        lc = Launch(k.name, node, bound, host=host.name if host is not None else None)
        for kw in node.keywords:
            if kw.arg is None:
                continue
            if kw.arg in ("num_warps", "num_stages"):
                setattr(lc, kw.arg, _int_of(kw.value, scope))
                continue
            bound[kw.arg] = kw.value
        for p, expr in bound.items():
            v = _int_of(expr, scope)
            if p in k.constexprs and v is not None:
                k.values.setdefault(p, []).append(v)
        k.launches.append(lc)


def _max_constants(fn: ast.FunctionDef) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for name, v in int_constants([n]).items():
                out[name] = max(v, out.get(name, v))
    return out


def find_triton_kernels(text: str) -> list[TritonKernel]:
    """Jitted functions of a Triton program (kernels and helpers), in source order.

    Args:
        text: Python source.

    Returns:
        One :class:`TritonKernel` per jitted function (``is_helper`` tells helpers apart);
        an empty list when the text is not valid Python.
    """
    try:
        module = parse_module(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return sorted(module.kernels.values(), key=lambda k: k.node.lineno)
