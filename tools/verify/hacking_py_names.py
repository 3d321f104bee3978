"""Python spellings that reach a stopped name without calling it by its dotted name.

``hacking_py`` resolves imports and simple assignments, then judges *calls* by their dotted
target. A policy trained for reward finds the other ways to reach the same function, each
closed here by what it does rather than by another spelling:

* **a stopped function held as a value** (``self.f = torch.matmul`` in ``__init__``, a default
  argument, ``functools.partial(torch.matmul)``, ``(torch.matmul,)[0]``, ``staticmethod(...)``
  in a class body, a walrus): any reference to it outside the input makers is refused, called
  or not (:func:`first_reference`);
* **a name computed at run time** (``getattr(A, "mat" + "mul")``, ``g = getattr``, ``vars(torch)``,
  ``torch.__dict__``, ``__builtins__``, ``operator.attrgetter``/``methodcaller``,
  ``sys.modules``, a star import, ``ctypes``/CUDA bindings, ``pickle``):
  what it reaches cannot be read, so the lookup itself is refused (:func:`dynamic_lookup`).
  ``getattr(self, "bias", None)`` -- a constant, non-compute name on a local object -- is not;
* **operators spelled as functions**: ``A.__matmul__(B)`` and ``operator.matmul`` are ``A @ B``
  (:func:`matmul_spelled`).

Torch compute still reached some other way is seen at run time by the dispatch watch
(``tools/kernelbench/dispatch_watch.py``) on the KernelBench path; the RL reward
(``structcover.reward``) gates on these text checks alone, so they must not be the weak side.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

__all__ = ["INPUT_MAKERS", "dynamic_lookup", "first_reference", "matmul_spelled", "outside_inputs"]

#: Functions that only build the harness's inputs (torch.randn there is not the candidate's).
INPUT_MAKERS = frozenset({"get_inputs", "get_init_inputs"})
_LOOKUPS = frozenset({"getattr", "builtins.getattr", "vars", "builtins.vars", "globals", "locals",
                      "operator.attrgetter", "operator.methodcaller", "inspect.getmembers",
                      "inspect.getattr_static", "object.__getattribute__"})
_DYNAMIC_ATTRS = frozenset({"__dict__", "__getattribute__", "__getattr__", "modules"})
_MATMUL_DUNDERS = frozenset({"__matmul__", "__rmatmul__", "__imatmul__"})
#: Modules that reach any function by a name in a string or a byte stream: foreign-function
#: interfaces and CUDA bindings (``ctypes.CDLL("libcudart.so").cudaEventRecord``) and
#: deserializers that rebuild a global from its name (``pickle.loads(b"ctorch\nmatmul\n.")``).
_BY_NAME_MODULES = re.compile(r"^(?:ctypes|_ctypes|cffi|pycuda|cuda|cupy|cupyx|numba|pickle|"
                              r"_pickle|cPickle|marshal|dill|cloudpickle|shelve|copyreg)(?:\.|$)")
#: Modules whose names a star import would hide (everything they hold is stopped or compute).
_STAR_REFUSED = re.compile(r"^(?:torch(?!\.utils\.cpp_extension$)|time|threading|"
                           r"multiprocessing|concurrent|subprocess|os|operator|builtins|"
                           r"_thread|asyncio|timeit|numpy)(?:\.|$)")

Resolver = Callable[[ast.AST], "str | None"]


def _where(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def outside_inputs(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node of the module except those inside the input makers."""
    skip = {id(n) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
            and fn.name in INPUT_MAKERS for n in ast.walk(fn)}
    return (n for n in ast.walk(tree) if id(n) not in skip)


def _called(tree: ast.Module) -> set[int]:
    """ids of the expressions that are the function of a call (``f`` in ``f(x)``)."""
    return {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}


def _inner(tree: ast.Module) -> set[int]:
    """ids of the ``value`` of attribute chains (only the outermost of ``a.b.c`` is judged)."""
    return {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}


def first_reference(tree: ast.Module, dotted: Resolver, stopped: Callable[[str], bool],
                    *, values_only: bool = True) -> str | None:
    """The first reference outside the input makers whose dotted target is ``stopped``.

    Args:
        tree: The module.
        dotted: Resolves a ``Name``/``Attribute`` to its dotted target (``hacking_py._Names``).
        stopped: Whether a dotted target is a stopped name.
        values_only: Skip references that are called (another rule judges calls).

    Returns:
        ``"`target` (line N)"``, or None.
    """
    called, inner = _called(tree), _inner(tree)
    for node in outside_inputs(tree):
        if not isinstance(node, ast.Name | ast.Attribute) or id(node) in inner or \
                (values_only and id(node) in called) or isinstance(node.ctx, ast.Store):
            continue
        target = dotted(node)
        if target and stopped(target):
            return f"`{target}` ({_where(node)})"
    return None


def dynamic_lookup(tree: ast.Module, dotted: Resolver, imported: set[str],
                   compute: frozenset[str]) -> str | None:
    """A name looked up at run time (see the module doc), described; None if none.

    Args:
        tree: The module.
        dotted: Resolves an expression to its dotted target.
        imported: Names bound by imports (modules and their members).
        compute: Op and tensor-method names (a constant ``getattr`` of one is a call by name).
    """
    called = _called(tree)
    for node in outside_inputs(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) and \
                _STAR_REFUSED.match(node.module or ""):
            return f"star import from `{node.module}` hides what its names are ({_where(node)})"
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if found := next((m for m in modules if _BY_NAME_MODULES.match(m)), None):
            return f"imports `{found}`, which reaches any function by name ({_where(node)})"
        if isinstance(node, ast.Name) and node.id == "__builtins__":
            return f"looks names up at run time through `__builtins__` ({_where(node)})"
        if isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_ATTRS and \
                (node.attr != "modules" or dotted(node) == "sys.modules"):
            return f"looks names up at run time through `.{node.attr}` ({_where(node)})"
        if isinstance(node, ast.Name | ast.Attribute) and id(node) not in called and \
                dotted(node) in _LOOKUPS:
            return f"holds `{dotted(node)}` as a value ({_where(node)})"
        if not isinstance(node, ast.Call) or dotted(node.func) not in _LOOKUPS:
            continue
        target = dotted(node.func)
        if target not in ("getattr", "builtins.getattr") or len(node.args) < 2:
            return f"looks names up at run time with `{target}` ({_where(node)})"
        name, owner = node.args[1], node.args[0]
        root = owner
        while isinstance(root, ast.Attribute | ast.Call | ast.Subscript):
            root = root.func if isinstance(root, ast.Call) else root.value
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)) or \
                name.value.startswith("__") or name.value in compute or \
                (isinstance(root, ast.Name) and root.id in imported):
            return f"looks an attribute up by a computed or stopped name ({_where(node)})"
    return None


def matmul_spelled(tree: ast.Module, dotted: Resolver) -> str | None:
    """``A.__matmul__(B)``, ``operator.matmul`` (called or held) outside the input makers."""
    for node in outside_inputs(tree):
        if isinstance(node, ast.Attribute) and node.attr in _MATMUL_DUNDERS:
            return f"`.{node.attr}` is a matrix product ({_where(node)})"
        if isinstance(node, ast.Name | ast.Attribute) and \
                dotted(node) in ("operator.matmul", "operator.imatmul"):
            return f"`{dotted(node)}` is a matrix product ({_where(node)})"
    return None
