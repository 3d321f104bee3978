"""Anti-hacking checks for Python (KernelBench-style) programs, on the syntax tree.

A KernelBench program is a Python module whose ``ModelNew.forward`` should call a custom kernel
(CUDA text in a string compiled by ``load_inline``, or a Triton ``@jit`` function). Regexes
over such a file are evaded by an import alias (``from torch import matmul as mm``) and, on the
other side, misfire on honest files (a module-level string holding the CUDA code is not state
kept between calls). So these checks read the ``ast``: imports and simple assignments give
every name its dotted target (``mm`` → ``torch.matmul``), and each check asks about resolved
calls, ``try`` statements, ``global`` state and in-place writes to ``forward``'s arguments; a stopped
name reached any other way (held as a value, looked up by a built string, an operator spelled
as a function) is refused by ``hacking_py_names.py``, and what counts as ``forward``'s code
(helpers it reaches, its extensions, launched Triton kernels) is ``hacking_py_reach.py``. The
CUDA text the file embeds is checked by the CUDA checks (``hacking.run_cuda_checks``) with
torch's extension headers allowed.

The results carry the same check names as the CUDA checks, so verdicts and reports read alike.
"""

from __future__ import annotations

import ast
import re

from structcover.tools.verify.hacking import CHECKS, CheckResult, run_cuda_checks
from structcover.tools.verify.hacking_py_names import (
    dynamic_lookup,
    first_reference,
    matmul_spelled,
)
from structcover.tools.verify.hacking_py_reach import (
    extension_modules,
    forward_functions,
    helpers,
    own_method,
    self_extensions,
    triton_decoy,
    triton_kernels,
)
from structcover.tools.verify.hacking_torch import COMPUTE_OPS, extension_sources

#: torch names that allocate or describe tensors (harness plumbing, not compute).
_TORCH_ALLOWED = re.compile(
    r"^torch\.(?:empty\w*|zeros\w*|ones\w*|full\w*|tensor|as_tensor|from_numpy|arange|"
    r"float\w*|half|int\w*|long|bool|device|dtype|Tensor|Size|cuda\.current_stream|"
    r"cuda\.is_available|cuda\.current_device|cuda\.get_device_properties|manual_seed|no_grad|"
    r"utils\.cpp_extension\.\w+|nn\.Module|nn\.Parameter|nn\.ParameterList|nn\.ModuleList|"
    r"nn\.init\.\w+|jit\.\w+|is_tensor|numel|get_default_dtype|set_default_dtype)$")
#: Tensor methods that compute (a call on any receiver counts: the receiver is data).
_TENSOR_COMPUTE = {
    "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "mv", "dot", "conv1d", "conv2d",
    "conv3d", "softmax", "log_softmax", "sum", "mean", "var", "std", "norm", "relu", "gelu",
    "sigmoid", "tanh", "exp", "log", "cumsum", "cumprod", "layer_norm", "linear", "prod",
    "amax", "amin", "argmax", "argmin", "sort", "topk", "max_pool2d", "avg_pool2d", "clamp",
    "add", "sub", "mul", "div", "pow", "sqrt", "rsqrt", "abs", "neg", "maximum", "minimum",
    "where", "masked_fill", "scatter", "gather", "index_select", "transpose_conv2d", "lerp",
}
_IN_PLACE_SAFE = {"requires_grad_", "share_memory_"}
_STATE_DECORATORS = re.compile(r"(?:functools\.)?(?:lru_cache|cache|cached_property)$")
_TIMING = re.compile(r"^(?:time\.\w+|torch\.cuda\.(?:Event|synchronize|Stream|stream|"
                     r"set_stream|graph\w*|CUDAGraph|_sleep)|torch\.cuda\.nvtx\.\w+|"
                     r"timeit\.\w+|triton\.testing\.\w+)$")
#: Calls that copy a tensor's data into Python or numpy, or read raw memory through ``ctypes``
#: (``from_address``/``from_buffer``): host computation no dispatcher op shows.
_HOST_READS = frozenset({"tolist", "numpy", "__array__", "from_address", "from_buffer"})
_THREADS = re.compile(r"^(?:threading|multiprocessing|concurrent|subprocess|_thread|asyncio|"
                      r"torch\.multiprocessing|os\.(?:fork|system|popen|spawn\w*|exec\w*))"
                      r"(?:\.|$)")
_HALF = re.compile(r"^(?:torch\.(?:cuda\.)?(?:float16|half|bfloat16|HalfTensor|BFloat16Tensor)|"
                   r"numpy\.(?:float16|half))$")
#: A dtype named by a string (`x.type("torch.cuda.HalfTensor")`, `x.to(dtype="float16")`).
_HALF_STRING = re.compile(r"^(?:torch\.)?(?:cuda\.)?(?:float16|half|bfloat16|HalfTensor|"
                          r"BFloat16Tensor)$")
#: Op and tensor-method names: a torch name ending in one is compute, whatever the namespace.
_COMPUTE_NAMES = frozenset(COMPUTE_OPS | _TENSOR_COMPUTE)
_PRINT = re.compile(r"^(?:print|sys\.stdout\.write|sys\.stderr\.write|os\.write|logging\.\w+|"
                    r"builtins\.print)$")


def is_python(source: str) -> bool:
    """Whether ``source`` is a Python module (it parses, and is not C with ``#`` lines)."""
    if re.search(r"__global__|^\s*#\s*include\b", source, re.MULTILINE) and "import " not in source:
        return False
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return bool(re.search(r"^\s*(?:import|from|def|class)\b", source, re.MULTILINE))


class _Names:
    """Dotted targets of the module's names, from imports and simple aliases."""

    def __init__(self, tree: ast.Module) -> None:
        self.alias: dict[str, str] = {}
        #: Names bound by imports (a module, or a member of one).
        self.imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.imported |= {a.asname or a.name.split(".")[0] for a in node.names}
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                        a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
        for _ in range(4):  # `mm = torch.matmul`, `F = torch.nn.functional`, chains of those
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                        isinstance(node.targets[0], ast.Name):
                    target = self.dotted(node.value)
                    if target and target.split(".")[0] in _ALIASED:
                        self.alias[node.targets[0].id] = target

    def dotted(self, node: ast.AST) -> str | None:
        """``torch.nn.functional.relu`` for an attribute chain over a resolved name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            base = self.alias.get(node.id, node.id)
            return ".".join([base, *reversed(parts)])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "getattr" and len(node.args) >= 2:
            inner = self.dotted(node.args[0])
            return f"{inner}.<getattr>" if inner else None
        return None


#: Roots whose plain aliases (`mm = torch.matmul`, `p = print`, `g = getattr`) are followed.
_ALIASED = frozenset({"torch", "time", "threading", "multiprocessing", "subprocess", "os",
                      "functools", "timeit", "operator", "importlib", "sys", "builtins",
                      "inspect", "numpy", "concurrent", "_thread", "asyncio", "print",
                      "getattr", "vars", "globals", "locals", "eval", "exec", "__import__"})


def _where(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def _embedded_cuda(tree: ast.Module) -> str:
    """The CUDA text of the module's string constants, and every source given to
    ``load_inline`` (C++ with no ``__global__`` or ``#include`` is checked too), joined."""
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and re.search(r"__global__|<<<|#\s*include", n.value)]
    return "\n".join(dict.fromkeys([*texts, *extension_sources(tree)]))


def _calls(tree: ast.AST, names: _Names):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node, names.dotted(node.func) or ""


def _torch_compute(target: str) -> bool:
    """Whether a dotted target is a torch op (or layer) rather than plumbing."""
    if not target.startswith("torch.") or _TORCH_ALLOWED.match(target):
        return False
    last = target.rsplit(".", 1)[-1].removesuffix("_")
    return last in _COMPUTE_NAMES or bool(re.match(
        r"^torch\.(?:ops|_C|_refs|_prims|_decomp|nn\.functional|linalg|special|fft)\.", target)) \
        or bool(re.match(r"^torch\.nn\.(?!Module$|Parameter$|ParameterList$|ModuleList$|init\.)"
                         r"[A-Z]\w*$", target))


#: torch's compiler: its generated kernels are torch's, and run outside the dispatcher.
_TORCH_COMPILER = re.compile(r"^torch\.(?:compile|_dynamo|_inductor|export|_export)(?:\.|$)")


def _compiler_reference(tree: ast.Module, names: _Names) -> str | None:
    """The first import of, or reference to, torch's compiler (a decorator counts)."""
    for node in ast.walk(tree):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [f"{node.module}.{a.name}" for a in node.names] \
            if isinstance(node, ast.ImportFrom) and node.module else []
        target = names.dotted(node) if isinstance(node, ast.Attribute | ast.Name) else None
        for name in [*modules, *([target] if target else [])]:
            if _TORCH_COMPILER.match(name):
                return (f"reaches torch's compiler `{name}` ({_where(node)}): its generated "
                        "kernels are torch's, not the candidate's")
    return None


def _delegation(tree: ast.Module, names: _Names) -> str | None:
    extensions = extension_modules(tree, names.dotted)
    if compiler := _compiler_reference(tree, names):
        return compiler
    decoy = triton_decoy(tree, names.dotted)
    if decoy:
        return decoy
    # Looked up at run time, spelled as an operator or held: the same op however reached.
    found = dynamic_lookup(tree, names.dotted, names.imported, _COMPUTE_NAMES) or \
        matmul_spelled(tree, names.dotted)
    if found:
        return found
    if held := first_reference(tree, names.dotted, _torch_compute):
        return f"holds torch op {held} as a value"
    self_ext = self_extensions(tree, names.dotted, extensions)
    for fn in [*forward_functions(tree), *helpers(tree, names.dotted)]:
        where = "forward" if getattr(fn, "name", "") in ("forward", "__call__") else \
            f"`{fn.name}` (called from forward)" if isinstance(fn, ast.FunctionDef) else "a lambda"
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                return f"`@` matrix product in {where} ({_where(node)})"
        for node, target in _calls(fn, names):
            if isinstance(node.func, ast.Attribute) and node.func.attr in _HOST_READS:
                return (f"reads tensor data into Python with `.{node.func.attr}()` in {where} "
                        f"({_where(node)}): host computation")
            if target.startswith("torch.") and not _TORCH_ALLOWED.match(target):
                return f"calls torch op `{target}` in {where} ({_where(node)})"
            if isinstance(node.func, ast.Attribute) and node.func.attr in _TENSOR_COMPUTE and \
                    not target.startswith(("math.", "triton.", "tl.")) and \
                    target.split(".")[0] not in extensions and \
                    not own_method(target, self_ext):
                return f"calls tensor method `.{node.func.attr}()` in {where} ({_where(node)})"
    for node, target in _calls(tree, names):
        if target in ("exec", "eval", "compile", "__import__", "importlib.import_module",
                      "builtins.exec", "builtins.eval"):
            return f"runs or imports code by name with `{target}` ({_where(node)})"
        if re.match(r"^torch\.nn\.(?!Module$|Parameter$|ParameterList$|ModuleList$|init\.)"
                    r"[A-Z]\w*$", target):
            return f"builds torch layer `{target}` ({_where(node)})"
        if target.endswith("<getattr>") and target.startswith("torch"):
            return f"looks up a torch function by name ({_where(node)})"
    return None


def _fallback(tree: ast.Module, names: _Names) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Try | getattr(ast, "TryStar", ast.Try)):
            return f"Python try block ({_where(node)})"
        if isinstance(node, ast.With):
            for item in node.items:
                target = names.dotted(item.context_expr.func if isinstance(
                    item.context_expr, ast.Call) else item.context_expr) or ""
                if target.endswith(("suppress", "catch_warnings")):
                    return f"suppresses errors with `{target}` ({_where(node)})"
    for node, target in _calls(tree, names):
        last = target.rsplit(".", 1)[-1]
        if re.search(r"[Rr]eference|[Ff]allback|^ref_|^Model$", last):
            return f"calls a reference/fallback `{last}` ({_where(node)})"
    return None


def _cached_state(tree: ast.Module, names: _Names) -> str | None:
    mutable_globals = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict | ast.List | ast.Set
                                                        | ast.DictComp | ast.ListComp):
            mutable_globals |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
                names.dotted(stmt.value.func) in ("dict", "list", "set",
                                                  "collections.OrderedDict",
                                                  "collections.defaultdict"):
            mutable_globals |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for dec in fn.decorator_list:
            target = names.dotted(dec.func if isinstance(dec, ast.Call) else dec) or ""
            if _STATE_DECORATORS.search(target):
                return f"memoizing decorator `{target}` on `{fn.name}` ({_where(fn)})"
        for node in ast.walk(fn):
            if isinstance(node, ast.Global | ast.Nonlocal):
                return f"`{type(node).__name__.lower()}` state in `{fn.name}` ({_where(node)})"
            if isinstance(node, ast.Name) and node.id in mutable_globals:
                return (f"function `{fn.name}` uses module-level container `{node.id}` "
                        f"({_where(node)})")
        if fn.name in ("forward", "__call__"):
            for node in ast.walk(fn):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
                for t in targets:
                    root: ast.AST = t
                    while isinstance(root, ast.Attribute | ast.Subscript):
                        root = root.value
                    if isinstance(root, ast.Name) and root.id == "self":
                        return f"forward stores state on self ({_where(node)})"
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id == "setattr":
                    return f"forward stores state with setattr ({_where(node)})"
    return None


def _inputs_modified(tree: ast.Module) -> str | None:
    for fn in forward_functions(tree):
        params = {a.arg for a in fn.args.args[1:]} | {a.arg for a in fn.args.kwonlyargs}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id in params and \
                    node.func.attr.endswith("_") and not node.func.attr.startswith("_") and \
                    node.func.attr not in _IN_PLACE_SAFE:
                return (f"in-place `{node.func.value.id}.{node.func.attr}()` on an input "
                        f"({_where(node)})")
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign) else []
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                        t.value.id in params:
                    return f"writes into input `{t.value.id}` ({_where(node)})"
                if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name) and t.id in params:
                    return f"updates input `{t.id}` in place ({_where(node)})"
    return None


def _first_call(tree: ast.Module, names: _Names, pattern: re.Pattern[str], what: str) -> str | None:
    for node, target in _calls(tree, names):
        if pattern.search(target):
            return f"{what}: `{target}` ({_where(node)})"
    return None


def _first_use(tree: ast.Module, names: _Names, pattern: re.Pattern[str], what: str
               ) -> str | None:
    """A call of, or any other reference to, a stopped name (``E = torch.cuda.Event``,
    ``self.t = time.perf_counter``, ``map(print, xs)``) outside the input makers."""
    found = _first_call(tree, names, pattern, what)
    if found is None and (ref := first_reference(tree, names.dotted,
                                                 lambda t: bool(pattern.search(t)))):
        found = f"{what} (held as a value): {ref}"
    return found


def _imports(tree: ast.Module, pattern: re.Pattern[str], what: str) -> str | None:
    for node in ast.walk(tree):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        for mod in modules:
            if pattern.search(mod):
                return f"{what}: `{mod}` ({_where(node)})"
    return None


def _half(tree: ast.Module, names: _Names) -> str | None:
    # Only compared against (`x.dtype == torch.float16`) it converts nothing; other uses count.
    compared = {id(e) for c in ast.walk(tree) if isinstance(c, ast.Compare) for side in
                (c.left, *c.comparators) for e in getattr(side, "elts", [side])}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Name) and id(node) not in compared and \
                _HALF.match(names.dotted(node) or ""):
            return f"uses `{names.dotted(node)}` ({_where(node)})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("half", "bfloat16") and not node.args:
            return f"casts with `.{node.func.attr}()` ({_where(node)})"
        if isinstance(node, ast.Call) and any(
                isinstance(a, ast.Constant) and isinstance(a.value, str) and
                _HALF_STRING.match(a.value)
                for a in [*node.args, *(k.value for k in node.keywords)]):
            return f"names a half dtype by a string ({_where(node)})"
    return None


def _tables(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            numbers = sum(isinstance(e, ast.Constant) and isinstance(e.value, int | float)
                          for e in node.elts)
            if numbers >= 64:
                return (f"literal table of {numbers} numbers ({_where(node)}): possible "
                        "hard-coded output")
    return None


def run_python_checks(source: str) -> list[CheckResult]:
    """Every check on a Python program (see the module doc), named like the CUDA checks."""
    tree = ast.parse(source)
    names = _Names(tree)
    cuda = _embedded_cuda(tree)
    embedded = {r.name: r for r in run_cuda_checks(cuda, embedded=True)} if cuda else {}
    kernel = bool(cuda and embedded["defines_kernel"].ok) or triton_kernels(tree, names.dotted)
    python_findings: dict[str, str | None] = {
        "preprocesses": None,
        "defines_kernel": None if kernel else
        "no CUDA __global__ kernel, and no Triton @jit function that is launched",
        "no_library_delegation": _delegation(tree, names),
        "no_fallback": _fallback(tree, names),
        "no_cached_outputs": _cached_state(tree, names),
        "no_hardcoded_tables": _tables(tree),
        "device_globals": None,
        "no_timing_tampering": _first_use(tree, names, _TIMING, "touches timing"),
        "launch_uses_given_stream": None,
        "no_threads": _imports(tree, _THREADS, "imports a thread/process module")
        or _first_use(tree, names, _THREADS, "spawns workers"),
        "no_precision_downgrade": _half(tree, names),
        "inputs_not_modified": _inputs_modified(tree),
        "no_host_output": _first_use(tree, names, _PRINT, "prints"),
        "launcher_signature": None,
    }
    results = []
    for check, severity in CHECKS:
        name = check.__name__.removeprefix("check_")
        found = python_findings.get(name)
        inner = embedded.get(name)
        if found is None and inner is not None and not inner.ok and name not in (
                "defines_kernel", "no_precision_downgrade", "launcher_signature"):
            found = f"in the embedded CUDA: {inner.reason}"
        results.append(CheckResult(name=name, ok=found is None, severity=severity,
                                   reason=found or "nothing found"))
    return results
