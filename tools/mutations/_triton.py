"""Shared pieces of the Triton operators: parsing, kernels, launch sites and text splicing.

A Triton program is Python: ``@triton.jit`` kernels launched as ``kernel[grid](...)``, usually
from a KernelBench ``ModelNew``. The operators find what to change with Python's ``ast`` and
edit the *text* at the nodes' positions (``lineno``/``col_offset`` are UTF-8 byte offsets)
instead of printing the tree with ``ast.unparse``: comments, docstrings, quoting and layout
outside the edited nodes stay byte for byte, so a variant's diff is the mutation alone and the
text-based feature extraction sees nothing else change.

The compile check for Python is ``ast.parse`` plus ``compile()`` of the text to bytecode: it
never executes the candidate (untrusted code runs only in the sandboxed verifier, where
Triton's interpreter or a GPU runs the kernels).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from structcover.tools.features.triton_ast import dotted as dotted_name
from structcover.tools.mutations._tree import splice
from structcover.tools.mutations.base import Builder

__all__ = ["Launch", "TritonSource", "builder", "check_python", "is_triton_program", "parse_triton"]


def check_python(source: str) -> tuple[bool, str]:
    """Whether ``source`` parses and compiles to bytecode (never run), with the error."""
    try:
        compile(ast.parse(source), "<candidate>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return False, f"error: not valid Python: {exc}"
    return True, ""


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain (a call's function for decorators), else ''."""
    if isinstance(node, ast.Call):
        node = node.func
    return dotted_name(node) or ""


def _triton_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to the ``triton`` module and to ``triton.jit`` itself."""
    modules, jits = {"triton"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "triton"}
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            jits |= {a.asname or a.name for a in node.names if a.name == "jit"}
    return modules, jits


def jit_kernels(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Module-level functions decorated with ``triton.jit`` (possibly under autotune), by name."""
    modules, jits = _triton_aliases(tree)
    out: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            name = _dotted(dec)
            head, _, tail = name.rpartition(".")
            if (head in modules and tail == "jit") or name in jits:
                out[node.name] = node
    return out


def is_triton_program(source: str) -> bool:
    """Whether ``source`` is Python that defines at least one ``@triton.jit`` kernel."""
    if "triton" not in source:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return bool(jit_kernels(tree))


@dataclass
class Launch:
    """One ``kernel[grid](...)`` call."""

    call: ast.Call
    kernel: str
    grid: ast.expr
    #: The function (or module) whose body holds the call: where its names are assigned.
    scope: ast.AST


def is_constexpr(arg: ast.arg) -> bool:
    """Whether a kernel parameter is annotated ``tl.constexpr`` (any spelling)."""
    return arg.annotation is not None and _dotted(arg.annotation).endswith("constexpr")


class TritonSource:
    """A parsed Triton program with byte positions for splicing."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.data = text.encode()
        self.tree = tree
        self._lines = [0]
        for i, byte in enumerate(self.data):
            if byte == 0x0A:
                self._lines.append(i + 1)
        self.kernels = jit_kernels(tree)
        self._parents: dict[int, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self._parents[id(child)] = parent

    # -- positions -------------------------------------------------------------------------
    def start(self, node: ast.AST) -> int:
        """Byte offset where ``node`` starts."""
        return self._lines[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        """Byte offset just past ``node``."""
        return self._lines[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]

    def of(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        return self.data[self.start(node):self.end(node)].decode()

    def line_start(self, node: ast.AST) -> int:
        """Byte offset of the start of ``node``'s first line."""
        return self._lines[node.lineno - 1]  # type: ignore[attr-defined]

    def indent(self, stmt: ast.stmt) -> str:
        """The indentation of the line ``stmt`` starts on."""
        line = self.data[self.line_start(stmt):self.start(stmt)].decode()
        return line if not line.strip() else " " * stmt.col_offset

    def line_end(self, node: ast.AST) -> int:
        """Byte offset just past the newline that ends ``node``'s last line."""
        nxt = self.data.find(b"\n", self.end(node))
        return len(self.data) if nxt < 0 else nxt + 1

    def apply(self, edits: list[tuple[int, int, str]]) -> str:
        """The text with non-overlapping byte edits applied."""
        return splice(self.data, edits)

    # -- structure -------------------------------------------------------------------------
    def parent(self, node: ast.AST) -> ast.AST | None:
        """The syntax-tree parent of ``node``."""
        return self._parents.get(id(node))

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The innermost function enclosing ``node``, else the module."""
        cur = self.parent(node)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            cur = self.parent(cur)
        return cur if cur is not None else self.tree

    def launches(self, kernel: str | None = None) -> list[Launch]:
        """Every ``kernel[grid](...)`` call of a jit kernel of this file, in text order."""
        out: list[Launch] = []
        for node in ast.walk(self.tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in self.kernels
                    and (kernel is None or node.func.value.id == kernel)):
                out.append(Launch(node, node.func.value.id, node.func.slice,
                                  self.scope_of(node)))
        return sorted(out, key=lambda launch: self.start(launch.call))

    def argument(self, launch: Launch, param: str) -> ast.expr | None:
        """The expression a launch binds to kernel parameter ``param`` (None: not passed)."""
        func = self.kernels[launch.kernel]
        names = [a.arg for a in func.args.args]
        for kw in launch.call.keywords:
            if kw.arg == param:
                return kw.value
        if param in names and names.index(param) < len(launch.call.args):
            arg = launch.call.args[names.index(param)]
            return None if isinstance(arg, ast.Starred) else arg
        return None

    def assignments(self, scope: ast.AST, name: str) -> list[ast.Assign]:
        """Plain ``name = ...`` statements in ``scope`` (not in nested functions)."""
        out: list[ast.Assign] = []
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
                continue
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in node.targets):
                out.append(node)
            stack.extend(ast.iter_child_nodes(node))
        return out

    def binds(self, scope: ast.AST, name: str) -> int:
        """How many statements of ``scope`` bind ``name`` (assignments, loops, augmented)."""
        count = 0
        for node in ast.walk(scope):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = [node.target]
            elif isinstance(node, ast.NamedExpr):
                targets = [node.target]
            for t in targets:
                count += sum(1 for n in ast.walk(t) if isinstance(n, ast.Name) and n.id == name)
        return count

    def names_used(self, node: ast.AST) -> set[str]:
        """Every identifier mentioned under ``node``."""
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
            a.arg for n in ast.walk(node) if isinstance(n, ast.FunctionDef) for a in n.args.args}


def parse_triton(program: str) -> TritonSource | str:
    """The parsed program, or why the Triton operators do not apply to it."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError) as exc:
        return f"not a Triton program: the text is not Python ({exc.__class__.__name__})"
    src = TritonSource(program, tree)
    if not src.kernels:
        return "not a Triton program: no @triton.jit kernel is defined"
    return src


def fresh(used: set[str], base: str) -> str:
    """``base``, or ``base_2``, ``base_3``... : the first not in ``used`` (then reserved)."""
    name, i = base, 1
    while name in used:
        i += 1
        name = f"{base}_{i}"
    used.add(name)
    return name


def int_value(node: ast.AST | None) -> int | None:
    """The value of an integer literal node (not bool), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return node.value
    return None


def is_call(node: ast.AST, *names: str) -> bool:
    """Whether ``node`` is a call of ``tl.<name>`` / ``triton.language.<name>`` for a name."""
    if not isinstance(node, ast.Call):
        return False
    dotted = _dotted(node.func)
    return any(dotted in (f"tl.{n}", f"triton.language.{n}") for n in names)


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain (a call: its function), else ''."""
    return _dotted(node)


def builder(name: str, program: str) -> Builder:
    """A :class:`Builder` whose compile check is :func:`check_python` (no CUDA compile)."""
    return Builder(name, program, check=check_python)


def has_mask(call: ast.Call, store: bool) -> bool:
    """Whether a ``tl.load``/``tl.store`` call passes a mask (or a block pointer's checks)."""
    names = {kw.arg for kw in call.keywords}
    return bool(names & {"mask", "boundary_check"}) or len(call.args) >= (3 if store else 2)


def loads_stores(func: ast.FunctionDef) -> list[tuple[ast.Call, bool]]:
    """Every ``tl.load`` (False) and ``tl.store`` (True) call in a kernel, in text order."""
    out = [(n, is_call(n, "store")) for n in ast.walk(func) if is_call(n, "load", "store")]
    return sorted(out, key=lambda item: (item[0].lineno, item[0].col_offset))
