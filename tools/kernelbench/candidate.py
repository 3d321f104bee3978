"""The CUDA a KernelBench candidate compiles, found statically (no candidate code runs here).

A KernelBench candidate is a Python file defining ``ModelNew``; its kernels are C++/CUDA text in
strings handed to ``torch.utils.cpp_extension.load_inline``. :func:`find_inline_extensions`
reads every such call from the syntax tree and resolves its arguments to text:

* string constants (implicitly concatenated literals are one constant), ``a + b`` of
  resolvable strings, f-strings without placeholders, lists and tuples of those;
* names bound once at module level to such a value (``cuda_src = \"\"\"...\"\"\"``), also through
  other such names; ``functions`` may also be a dict (its keys are the names).

Anything else (a string built at run time, read from a file, a name assigned twice or inside a
function) raises :class:`UnresolvedInline` naming the line and the argument: the CPU path builds
the extension before the candidate runs, so it must know the exact text, and a candidate whose
kernel text is not in the file cannot be mutated or re-embedded either.

Contract for the callers (the CPU builder, the sandboxed child, the mutation re-embedding):
``InlineExtension`` carries the call's arguments as given (torch's own prefix headers and the
pybind11 module are *not* added here; the builder adds them as ``load_inline`` would), and
:meth:`InlineExtension.key` identifies the call by its content, so the child's ``load_inline``
hook finds the prebuilt library whatever the candidate named its variables.
"""

from __future__ import annotations

import ast
import hashlib
import json

from pydantic import BaseModel, Field

__all__ = ["InlineExtension", "UnresolvedInline", "find_inline_extensions"]

#: ``load_inline``'s positional parameters, in order (torch 2.4 to 2.14; ``sycl_sources`` since
#: 2.7 — a candidate passing more than two positionals is rare and errs on older torch anyway).
_POSITIONAL = ("name", "cpp_sources", "cuda_sources", "sycl_sources", "functions",
               "extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags",
               "extra_include_paths")
_LIST_ARGS = ("cpp_sources", "cuda_sources", "extra_cflags", "extra_cuda_cflags",
              "extra_ldflags", "extra_include_paths")
#: Arguments that only steer torch's build (paths, logging); the CPU path ignores them.
_IGNORED = {"build_directory", "verbose", "with_cuda", "with_sycl", "is_python_module",
            "with_pytorch_error_handling", "keep_intermediates", "use_pch",
            "no_implicit_headers", "extra_sycl_cflags", "sycl_sources"}


class UnresolvedInline(ValueError):
    """A ``load_inline`` call whose arguments are not static text (the message names the line)."""


class InlineExtension(BaseModel):
    """One ``load_inline`` call of a candidate, its arguments resolved to text.

    Attributes:
        name: The extension's module name (``name=``).
        cpp_sources: C++ translation-unit texts (torch prepends ``#include <torch/extension.h>``).
        cuda_sources: CUDA texts (torch prepends ``torch/types.h``, ``cuda.h``,
            ``cuda_runtime.h``).
        functions: Names bound into the Python module (pybind11), in the given order.
        extra_cflags: Host compiler flags.
        extra_cuda_cflags: nvcc flags.
        extra_ldflags: Linker flags (``-lcublas`` marks a library the CPU path cannot run).
        extra_include_paths: Include folders.
        line: The call's line in the candidate (1-based).
    """

    name: str
    cpp_sources: list[str] = Field(default_factory=list)
    cuda_sources: list[str] = Field(default_factory=list)
    functions: list[str] = Field(default_factory=list)
    extra_cflags: list[str] = Field(default_factory=list)
    extra_cuda_cflags: list[str] = Field(default_factory=list)
    extra_ldflags: list[str] = Field(default_factory=list)
    extra_include_paths: list[str] = Field(default_factory=list)
    line: int = 0

    def key(self) -> str:
        """Content hash of what the build depends on (not the line): 16 hex digits."""
        data = self.model_dump(exclude={"line"})
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8", "surrogatepass")
                              ).hexdigest()[:16]

    @classmethod
    def from_call(cls, name: str, cpp_sources: object, cuda_sources: object = None,
                  functions: object = None, **kw: object) -> InlineExtension:
        """The extension of a *run-time* ``load_inline`` call (the child's hook uses it).

        Normalises the argument forms ``load_inline`` accepts (a string or a list; functions as
        a string, list or dict) the same way :func:`find_inline_extensions` does, so the two
        give equal :meth:`key` for the same call.
        """
        fields: dict[str, object] = {"name": str(name), "cpp_sources": _as_list(cpp_sources),
                                     "cuda_sources": _as_list(cuda_sources),
                                     "functions": _as_list(functions)}
        for arg in _LIST_ARGS:
            if arg in kw and arg not in fields:
                fields[arg] = _as_list(kw[arg])
        return cls.model_validate(fields)


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [str(k) for k in value]
    return [str(v) for v in value]  # type: ignore[attr-defined]


def _load_inline_names(tree: ast.Module, nodes: list[ast.AST] | None = None,
                       ) -> tuple[set[str], set[str]]:
    """Names that denote ``load_inline`` itself, and names that denote its module.
    ``nodes``: every node of ``tree`` (``list(ast.walk(tree))``), when the caller has it."""
    funcs: set[str] = set()
    modules: set[str] = set()
    for node in nodes if nodes is not None else ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "torch.utils.cpp_extension":
            funcs |= {a.asname or a.name for a in node.names if a.name == "load_inline"}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch.utils":
            modules |= {a.asname or a.name for a in node.names if a.name == "cpp_extension"}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names
                        if a.name == "torch.utils.cpp_extension" and a.asname}
    return funcs, modules


def _is_load_inline(func: ast.AST, funcs: set[str], modules: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in funcs
    if isinstance(func, ast.Attribute) and func.attr == "load_inline":
        parts: list[str] = []
        node: ast.AST = func.value
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            dotted = ".".join([node.id, *reversed(parts)])
            return dotted == "torch.utils.cpp_extension" or dotted in modules
    return False


#: Node types that bind names (:func:`_targets`).
_BINDERS: frozenset[type] = frozenset({
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension,
    ast.NamedExpr, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global})


class _Resolver:
    """Static values of expressions over module-level names bound exactly once."""

    def __init__(self, tree: ast.Module, nodes: list[ast.AST] | None = None) -> None:
        """``nodes``: every node of ``tree`` (``list(ast.walk(tree))``), when the caller has
        it (a walk is most of the cost on a large file)."""
        counts: dict[str, int] = {}
        self.bound: dict[str, ast.expr] = {}
        for node in nodes if nodes is not None else ast.walk(tree):
            if type(node) not in _BINDERS:  # most nodes bind nothing: skip the dispatch
                continue
            for target in _targets(node):
                counts[target] = counts.get(target, 0) + 1
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                self.bound[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                    stmt.value is not None:
                self.bound[stmt.target.id] = stmt.value
        # A name rebound anywhere (a loop, a function, an augmented assignment) has no one
        # static value.
        self.bound = {k: v for k, v in self.bound.items() if counts.get(k) == 1}

    def value(self, node: ast.expr, depth: int = 0) -> object:
        """A str, a list of str or a dict with str keys; raises ValueError when not static."""
        if depth > 20:
            raise ValueError("names refer to each other too deeply")
        if isinstance(node, ast.Constant) and isinstance(node.value, str | type(None) | bool):
            return node.value
        if isinstance(node, ast.JoinedStr):
            if all(isinstance(v, ast.Constant) for v in node.values):
                return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
            raise ValueError("an f-string with placeholders")
        if isinstance(node, ast.List | ast.Tuple):
            items = [self.value(e, depth + 1) for e in node.elts]
            if not all(isinstance(i, str) for i in items):
                raise ValueError("a list whose items are not strings")
            return items
        if isinstance(node, ast.Dict):
            keys = [self.value(k, depth + 1) if k is not None else None for k in node.keys]
            if not all(isinstance(k, str) for k in keys):
                raise ValueError("a dict whose keys are not strings")
            return {k: "" for k in keys}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            raise ValueError("`+` of values that are not both strings or both lists")
        if isinstance(node, ast.Name):
            if node.id not in self.bound:
                raise ValueError(f"name `{node.id}` is not bound once at module level")
            return self.value(self.bound[node.id], depth + 1)
        raise ValueError(f"a {type(node).__name__} expression (built at run time)")


def _targets(node: ast.AST) -> list[str]:
    """Names ``node`` binds (a node type in :data:`_BINDERS`; others bind none)."""
    out: list[str] = []
    if isinstance(node, ast.Assign):
        for t in node.targets:
            out += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
        out.append(node.target.id)
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        out += [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
    elif isinstance(node, ast.NamedExpr):
        out.append(node.target.id)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        out.append(node.name)
    elif isinstance(node, ast.Global):
        out += list(node.names)
    return out


def find_inline_extensions(python_text: str) -> list[InlineExtension]:
    """Every ``load_inline`` call of a candidate, in file order, with its text resolved.

    Args:
        python_text: The candidate's Python source.

    Returns:
        One :class:`InlineExtension` per call (empty for a pure-torch candidate).

    Raises:
        UnresolvedInline: The file is not Python, or a call's argument is not static text (the
            message names the line and the argument).
    """
    try:
        tree = ast.parse(python_text)
    except (SyntaxError, ValueError) as exc:
        raise UnresolvedInline(f"candidate is not valid Python: {exc}") from exc
    # One walk for the three passes: the re-embedding check runs this on every spliced
    # variant of every dry run, and the walks were half of a campaign planner's time.
    nodes = list(ast.walk(tree))
    funcs, modules = _load_inline_names(tree, nodes)
    resolver = _Resolver(tree, nodes)
    found: list[InlineExtension] = []
    for node in nodes:
        if not (isinstance(node, ast.Call) and _is_load_inline(node.func, funcs, modules)):
            continue
        where = f"line {node.lineno}"
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise UnresolvedInline(f"{where}: load_inline called with *args/**kwargs; "
                                   "pass its arguments by name")
        given: dict[str, ast.expr] = {}
        for pos, positional in enumerate(node.args):
            if pos >= len(_POSITIONAL):
                raise UnresolvedInline(f"{where}: load_inline has too many positional arguments")
            given[_POSITIONAL[pos]] = positional
        given.update({k.arg: k.value for k in node.keywords if k.arg is not None})
        fields: dict[str, object] = {"line": node.lineno}
        for arg, expr in given.items():
            if arg in _IGNORED:
                continue
            try:
                value = resolver.value(expr)
            except ValueError as exc:
                raise UnresolvedInline(f"{where}: load_inline argument `{arg}` is not static "
                                       f"text: {exc}") from exc
            if arg == "name":
                if not isinstance(value, str):
                    raise UnresolvedInline(f"{where}: load_inline `name` must be a string")
                fields["name"] = value
            elif arg == "functions" or arg in _LIST_ARGS:
                fields[arg] = _as_list(value)
            else:
                raise UnresolvedInline(f"{where}: load_inline has no argument `{arg}`")
        if "name" not in fields:
            raise UnresolvedInline(f"{where}: load_inline without a `name`")
        if "cpp_sources" not in given:
            raise UnresolvedInline(f"{where}: load_inline without `cpp_sources`")
        found.append(InlineExtension.model_validate(fields))
    return sorted(found, key=lambda e: e.line)
