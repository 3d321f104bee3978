"""KernelBench problem files: the reference ``Model``, its inputs and its module-level sizes.

A problem is a Python file defining ``class Model(nn.Module)``, ``get_inputs()`` (the forward
arguments) and optionally ``get_init_inputs()`` (the constructor arguments, default none), with
its sizes as module-level integer constants (``batch_size = 16``, ``dim = 16384``) that those
functions read when called. Nothing here runs the file: it is parsed, so a problem can be
listed, resolved and shrunk without importing torch; it runs only in the sandboxed child.

Optional module-level ``ATOL``/``RTOL`` floats override the tolerance (KernelBench's default,
``1e-2`` each, otherwise). An optional ``MIN_PRECISION`` string names the lowest precision a
candidate may compute in (``"float16"``, ``"bfloat16"``, ..., or ``"any"``: no precision check;
``tools/kernelbench/precision.py``); by default it is each output's own dtype.

Contract: :func:`resolve_problem` turns what a rollout names (a path, or an id within the
folder the user passes as ``--problems``: ``19``, ``19_ReLU``, ``level1/19_ReLU``) into a
:class:`Problem`; :meth:`Problem.task_spec` is how the campaign and the ledger carry the task
(``TaskSpec.kind == "kernelbench"``, ``TaskSpec.problem`` its path); :meth:`Problem.shrunk`
scales the sizes to a work budget.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

from pydantic import BaseModel, Field

from structcover.schema import TaskSpec, eval_size_expr
from structcover.tools.data.text import read_source
from structcover.tools.kernelbench.precision import PRECISIONS
from structcover.tools.kernelbench.sizes import element_name, tuple_elements

__all__ = ["DEFAULT_TOLERANCE", "Problem", "load_problem", "resolve_problem"]

#: KernelBench's correctness tolerance, (atol, rtol).
DEFAULT_TOLERANCE = (1e-2, 1e-2)
#: Sizes below this are shapes of the computation (kernel sizes, channel counts of 3), not
#: problem scale: shrinking leaves them alone.
_MIN_SCALED = 16
#: A shrunk size stays a multiple of gcd(original, this): what a vector load, a warp or a tile
#: of up to 32 may assume at the problem's own sizes still holds (:meth:`Problem.shrunk`).
_KEPT_ALIGNMENT = 32


class Problem(BaseModel):
    """One KernelBench reference problem.

    Attributes:
        path: The problem file.
        id: Its id: the path relative to the problems folder without ``.py``, else the stem.
        text: The file's text.
        sizes: Module-level integer constants, in file order (the sizes the inputs read), and
            the elements of integer tuples and lists (``name__0``...).
        atol: Absolute tolerance.
        rtol: Relative tolerance.
        has_init_inputs: Whether the file defines ``get_init_inputs``.
        min_precision: The file's ``MIN_PRECISION`` (None: the outputs' own dtypes).
    """

    path: Path
    id: str
    text: str
    sizes: dict[str, int] = Field(default_factory=dict)
    atol: float = DEFAULT_TOLERANCE[0]
    rtol: float = DEFAULT_TOLERANCE[1]
    has_init_inputs: bool = True
    min_precision: str | None = None
    #: Shapes of the tensors ``get_inputs`` creates, as expressions over the sizes (``["N",
    #: "N"]``); empty when they could not be read statically.
    input_shapes: list[list[str]] = Field(default_factory=list)

    def work(self, sizes: dict[str, int] | None = None) -> float:
        """The elements of all inputs at ``sizes`` (the problem's own by default).

        Read from ``get_inputs``'s tensor shapes; where those are not static, the product of
        the sizes that scale stands in.
        """
        sizes = sizes or self.sizes
        if self.input_shapes:
            try:
                return float(sum(math.prod(eval_size_expr(d, sizes) for d in shape)
                                 for shape in self.input_shapes))
            except ValueError:
                pass
        return float(math.prod(v for v in sizes.values() if v >= _MIN_SCALED) or 1)

    def shrunk(self, budget: float) -> dict[str, int]:
        """Sizes scaled by one common factor so that :meth:`work` fits ``budget`` elements.

        Only sizes of at least 16 scale (kernel sizes and small channel counts keep their
        value), each by the same factor (the largest that fits, found by bisection), rounded
        and never below 16 or above the original. Each keeps the original's divisibility by
        powers of two up to 32 (:data:`_KEPT_ALIGNMENT`; less where the smallest sizes at 32
        would not fit the budget): a candidate may rely on what the
        problem's sizes guarantee (``float4`` loads along a row of 4096, warps or 32-wide tiles
        without a tail), and a shrunk size must not break a program that is right at every
        size the problem uses. The original sizes when they already fit.
        """
        if budget <= 0:
            raise ValueError(f"work budget must be > 0, got {budget}")
        if not any(v >= _MIN_SCALED for v in self.sizes.values()) or self.work() <= budget:
            return dict(self.sizes)

        def at(factor: float, alignment: int) -> dict[str, int]:
            out = {}
            for k, v in self.sizes.items():
                step = math.gcd(v, alignment)
                out[k] = max(_MIN_SCALED, step, min(v, step * round(v * factor / step))) \
                    if v >= _MIN_SCALED else v
            return out

        # The largest alignment whose smallest sizes still fit (four dimensions at 32 each are
        # 16 times a 2^16 budget; at 16, as before).
        alignment = _KEPT_ALIGNMENT
        while alignment > 1 and self.work(at(0.0, alignment)) > budget:
            alignment //= 2
        low, high = 0.0, 1.0
        for _ in range(40):
            mid = (low + high) / 2
            low, high = (mid, high) if self.work(at(mid, alignment)) <= budget else (low, mid)
        return at(low, alignment)

    def task_spec(self) -> TaskSpec:
        """The problem as a task of kind ``kernelbench`` (no launcher arguments)."""
        return TaskSpec(task_id=self.id, kind="kernelbench", problem=str(self.path), args=[],
                        sizes=dict(self.sizes), atol=self.atol, rtol=self.rtol,
                        family="kernelbench", description=f"KernelBench problem {self.id}")


def _bindings(stmt: ast.stmt) -> list[tuple[str, ast.expr]]:
    """(name, value) pairs a module-level assignment binds: ``n = 4096``, ``n: int = 4096``,
    chained ``height = width = 256`` and unpacked ``height, width = 128, 256`` (level-2
    problems spell their sizes all these ways; read as one name only, the others kept their
    full sizes when the problem was shrunk)."""
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
            stmt.value is not None:
        return [(stmt.target.id, stmt.value)]
    if not isinstance(stmt, ast.Assign):
        return []
    out: list[tuple[str, ast.expr]] = []
    for target in stmt.targets:
        if isinstance(target, ast.Name):
            out.append((target.id, stmt.value))
        elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) and \
                len(target.elts) == len(stmt.value.elts) and \
                all(isinstance(t, ast.Name) for t in target.elts):
            out.extend((t.id, v) for t, v in zip(target.elts, stmt.value.elts, strict=True))  # type: ignore[attr-defined]
    return out


def _int_constants(tree: ast.Module) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for name, value in (b for stmt in tree.body for b in _bindings(stmt)):
        if _positive_int(value):
            sizes[name] = _int_literal(value)  # type: ignore[assignment]
        elif isinstance(value, ast.Tuple | ast.List) and value.elts and \
                all(map(_positive_int, value.elts)):
            # Each element scales on its own (tools/kernelbench/sizes.py), a list's too.
            sizes.update({element_name(name, i): _int_literal(e)  # type: ignore[misc]
                          for i, e in enumerate(value.elts)})
    return sizes


#: Operators of a constant size expression: KernelBench's newer problems spell their sizes as
#: products of literals (``N = 2048 * 2``, ``K = 131072 * 4``); read as no size at all, such a
#: problem was never shrunk and its reference ran at full size on the CPU path.
_CONSTANT_OPS = {ast.Mult: lambda a, b: a * b, ast.Add: lambda a, b: a + b,
                 ast.Sub: lambda a, b: a - b, ast.FloorDiv: lambda a, b: a // b if b else None,
                 ast.Pow: lambda a, b: a ** b if 0 <= b <= 64 else None,
                 ast.LShift: lambda a, b: a << b if 0 <= b <= 64 else None}


def _int_literal(node: ast.expr) -> int | None:
    """The value of an integer literal or of an expression of integer literals, else None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.BinOp) and type(node.op) in _CONSTANT_OPS:
        left, right = _int_literal(node.left), _int_literal(node.right)
        if left is None or right is None:
            return None
        return _CONSTANT_OPS[type(node.op)](left, right)
    return None


def _positive_int(node: ast.expr) -> bool:
    value = _int_literal(node)
    return value is not None and value > 0


def _expand_tuples(args: list[ast.expr], sizes: dict[str, int]) -> list[str]:
    """Shape arguments as size expressions, a tuple constant (``*input_shape``, or the
    whole shape ``input_shape``) spelled as its element names."""
    if len(args) == 1 and isinstance(args[0], ast.Name) and tuple_elements(args[0].id, sizes):
        return tuple_elements(args[0].id, sizes)
    dims: list[str] = []
    for arg in args:
        star = arg.value if isinstance(arg, ast.Starred) else None
        elements = tuple_elements(star.id, sizes) if isinstance(star, ast.Name) else []
        dims.extend(elements or [ast.unparse(arg)])
    return dims


#: Tensor factories whose positional arguments (or one tuple argument) are the shape.
_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "full", "randint", "normal"}


def _input_shapes(tree: ast.Module, sizes: dict[str, int]) -> list[list[str]]:
    """Shapes of the tensors ``get_inputs`` builds with torch factories, as size expressions."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef)
               and n.name == "get_inputs"), None)
    shapes: list[list[str]] = []
    if fn is None:
        return shapes
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _FACTORIES):
            continue
        args: list[ast.expr] = list(node.args)
        size_kw = next((k.value for k in node.keywords if k.arg == "size"), None)
        if size_kw is not None:
            args = [size_kw]
        elif node.func.attr == "randint":
            args = [a for a in args if isinstance(a, ast.Tuple | ast.List)]
        elif node.func.attr == "full":
            args = args[:1]
        if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
            args = list(args[0].elts)
        dims = _expand_tuples(args, sizes)
        try:
            for d in dims:
                eval_size_expr(d, sizes)
        except ValueError:
            continue  # not integer arithmetic over the sizes: not a shape we can scale
        if dims:
            shapes.append(dims)
    return shapes


def _float_constant(tree: ast.Module, names: tuple[str, ...]) -> float | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in names and \
                isinstance(stmt.value, ast.Constant) and \
                isinstance(stmt.value.value, int | float) and stmt.value.value >= 0:
            return float(stmt.value.value)
    return None


def _min_precision(tree: ast.Module, path: Path) -> str | None:
    """The module-level ``MIN_PRECISION`` string, checked (None when absent).

    Raises:
        ValueError: It is not a string constant, or names no known precision.
    """
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id ==
                                                "MIN_PRECISION" for t in stmt.targets):
            value = stmt.value.value if isinstance(stmt.value, ast.Constant) else None
            if value not in PRECISIONS:
                raise ValueError(f"problem {path}: MIN_PRECISION must be one of "
                                 f"{', '.join(map(repr, PRECISIONS))}, got "
                                 f"{ast.unparse(stmt.value)}")
            return str(value)
    return None


def load_problem(path: Path | str, problems_dir: Path | None = None) -> Problem:
    """Parse a problem file.

    Args:
        path: The problem file.
        problems_dir: The folder ids are relative to (the id is the stem otherwise).

    Raises:
        ValueError: The file is missing, is not Python, lacks ``Model`` or ``get_inputs``
            (the message names the file and what is missing), or has a bad ``MIN_PRECISION``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"problem {path}: no such file")
    text = read_source(path)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"problem {path}: not valid Python ({exc})") from exc
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    missing = [n for n in ("Model", "get_inputs") if n not in defined]
    if missing:
        raise ValueError(f"problem {path}: not a KernelBench problem (defines no "
                         f"{' and no '.join(missing)} at module level)")
    sizes = {k: v for k, v in _int_constants(tree).items() if k not in ("ATOL", "RTOL")}
    atol = _float_constant(tree, ("ATOL", "atol"))
    rtol = _float_constant(tree, ("RTOL", "rtol"))
    pid = path.stem
    if problems_dir is not None:
        try:
            pid = path.resolve().relative_to(Path(problems_dir).resolve()).with_suffix("").as_posix()
        except ValueError:
            pass
    return Problem(path=path.resolve(), id=pid, text=text, sizes=sizes,
                   atol=DEFAULT_TOLERANCE[0] if atol is None else atol,
                   rtol=DEFAULT_TOLERANCE[1] if rtol is None else rtol,
                   has_init_inputs="get_init_inputs" in defined,
                   min_precision=_min_precision(tree, path),
                   input_shapes=_input_shapes(tree, sizes))


def _matches(rel: Path, name: str) -> bool:
    """Whether ``rel`` (a path under the problems folder) is what ``name`` names."""
    want = Path(name)
    stem_ok = rel.stem == want.stem.removesuffix(".py") or rel.stem.startswith(f"{want.name}_")
    if not stem_ok:
        return False
    parent = want.parent
    return parent == Path(".") or rel.parent.as_posix().endswith(parent.as_posix())


def resolve_problem(name_or_path: str | Path, problems_dir: Path | str | None = None) -> Problem:
    """The problem a rollout names: a file path, or an id within ``problems_dir``.

    Ids match a file's path relative to the folder without ``.py`` (``level1/19_ReLU``), its
    stem (``19_ReLU``), or its leading number (``19``, ``level1/19``: KernelBench numbers its
    files ``N_Name.py``).

    Raises:
        ValueError: Nothing matches, or several files do (the message lists them).
    """
    path = Path(name_or_path)
    if path.is_file():
        return load_problem(path, Path(problems_dir) if problems_dir else None)
    if problems_dir is None:
        raise ValueError(f"problem {name_or_path}: no such file (pass --problems DIR to name "
                         "problems by id)")
    root = Path(problems_dir)
    if not root.is_dir():
        raise ValueError(f"--problems {root}: no such directory")
    for direct in (root / str(name_or_path), root / f"{name_or_path}.py"):
        if direct.is_file():
            return load_problem(direct, root)
    found = sorted(p for p in root.rglob("*.py")
                   if _matches(p.relative_to(root), str(name_or_path)))
    if not found:
        raise ValueError(f"problem {name_or_path}: no file in {root} matches (by path, stem or "
                         "leading number)")
    if len(found) > 1:
        listed = ", ".join(p.relative_to(root).as_posix() for p in found[:5])
        raise ValueError(f"problem {name_or_path}: ambiguous in {root} ({len(found)} files: "
                         f"{listed}{', ...' if len(found) > 5 else ''}); name it by path")
    return load_problem(found[0], root)
