"""Torch/ATen compute reached from C++ (the torch part of ``check_no_library_delegation``).

A KernelBench extension may use torch for plumbing: tensor types, options and allocations
(``torch::empty(..., torch::dtype(torch::kFloat32).device(torch::kCUDA))``, ``torch::zeros``,
``a.options()``), the current stream and device guards. Compute through torch is delegation,
however it is spelled, so the check reads the preprocessed text (macros, ``typedef`` and
``using`` aliases already expanded, strings blanked) for:

* **every qualified torch/ATen name**, called or not (``auto f = torch::matmul;``,
  ``using at::mm;``, ``decltype(&at::bmm)``), with spaces or a leading ``::``, through nested
  namespaces (``torch::nn::functional::softmax``, ``at::native::mm``, ``at::cuda::blas``) and
  namespace aliases (``namespace T = torch; T::matmul``). Allowed are CamelCase types and
  enums, ``k``-constants, the options/allocation helpers below, the ``cuda`` stream/guard/device
  helpers and ``indexing``; anything in another namespace (``nn``, ``native``, ``linalg``, ...)
  or any other lowercase name is an op;
* **tensor methods that compute** (``a.mm(b)``, ``torch::zeros_like(a).addmm_(a, b)``) in host
  code (device functions cannot hold tensors, and their structs' ``w.mean()`` are not torch's);
* **unqualified op calls** in host code that the program does not define itself: argument-
  dependent lookup finds ``at::matmul`` for ``matmul(a, b)`` on ``at::Tensor`` arguments, as
  does ``using namespace torch`` (under which an op taken as a value, ``auto f = &matmul;``,
  is torch's too). Names that are also C/C++ library functions (``max``,
  ``exp``, ``sqrt``, ...) are left out: host code calls those on scalars. Known gap: such a
  call on tensors (``tanh(x)`` with ``x`` a tensor) is not caught by this text check;
* **the dispatcher** (``c10::Dispatcher::singleton().findSchemaOrThrow("aten::mm", "")``):
  an op called by its schema name, a string the checks never read, so the lookup itself is
  refused (the KernelBench dispatch watch sees the op at run time as well).
"""

from __future__ import annotations

import ast
import re

from structcover.tools.cuda_ast import parser, walk
from structcover.tools.verify.hacking_names import (
    references,
    resolve_namespace_aliases,
    uses_namespace,
)
from structcover.tools.verify.host_builtins import device_marked

#: torch/ATen functions that make or describe tensors (allocation, options), not compute.
ALLOCATION_OPTIONS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "dtype", "device", "layout", "requires_grad", "memory_format", "pinned_memory",
    # Lowercase type traits (accumulation types), not functions.
    "acc_type", "opmath_type"})
#: ``at::cuda::``/``torch::cuda::`` helpers for streams, guards and device queries.
_CUDA_PLUMBING = frozenset({
    "getCurrentCUDAStream", "getDefaultCUDAStream", "getStreamFromPool", "getStreamFromExternal",
    "getCurrentDeviceProperties", "getDeviceProperties", "current_device", "device_count",
    "set_device", "is_available", "synchronize"})
#: Namespaces whose CamelCase names (types) are plumbing; any other namespace is refused.
_PLUMBING_NAMESPACES = frozenset({"cuda", "indexing"})

#: torch ops that compute (as tensor methods, ``at::`` functions and their ``_``/``_out`` forms).
COMPUTE_OPS = frozenset("""
matmul mm bmm addmm addmv addbmm baddbmm addr einsum mv dot vdot inner outer ger tensordot kron
chain_matmul linear bilinear conv1d conv2d conv3d conv_transpose1d conv_transpose2d
conv_transpose3d convolution softmax log_softmax logsumexp sum nansum mean var std var_mean
std_mean norm frobenius_norm nuclear_norm renorm dist cdist pdist cosine_similarity
pairwise_distance relu relu6 gelu silu mish elu selu celu leaky_relu hardtanh hardswish
hardsigmoid softplus softsign glu prelu rrelu threshold logit sigmoid tanh exp exp2 expm1 log
log2 log10 log1p sqrt rsqrt pow float_power reciprocal square erf sin cos abs neg sign floor
ceil round trunc fmod remainder add sub mul div true_divide floor_divide clamp clamp_min
clamp_max clip maximum minimum fmax fmin max min amax amin aminmax argmax argmin sort argsort
topk kthvalue median cumsum cumprod cummax cummin logcumsumexp logaddexp lerp where masked_fill
masked_scatter scatter scatter_add scatter_reduce gather index_select index_add take
take_along_dim layer_norm group_norm batch_norm instance_norm rms_norm embedding dropout
max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d
adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
adaptive_max_pool3d scaled_dot_product_attention cross_entropy nll_loss mse_loss l1_loss
smooth_l1_loss huber_loss kl_div binary_cross_entropy binary_cross_entropy_with_logits
hinge_embedding_loss margin_ranking_loss triplet_margin_loss cosine_embedding_loss
soft_margin_loss multi_margin_loss poisson_nll_loss any all count_nonzero triu tril cross
""".split())
#: Compute ops that are also C/C++ library functions (host code calls these on scalars).
_STD_NAMES = frozenset("""
abs exp exp2 expm1 log log2 log10 log1p sqrt pow sin cos tanh erf sign floor ceil round trunc
fmod remainder fmax fmin max min sort any all clamp lerp div norm where
""".split())

#: An operator called through the dispatcher by its schema name (``"aten::mm"``, a string the
#: checks never read): every op is reachable that way.
_DISPATCHER = re.compile(r"\bc10\s*::\s*Dispatcher\b|\bDispatcher\s*::\s*singleton\b|"
                         r"\bfindSchema(?:OrThrow)?\b|\bfindOp\b|\bcallBoxed\b|"
                         r"\bOperatorHandle\b|\bc10\s*::\s*OperatorName\b")
#: Op names (and their in-place/out forms) that unqualified code can only mean as torch's.
_UNQUALIFIED_OPS = frozenset(f"{op}{suffix}" for op in COMPUTE_OPS - _STD_NAMES
                             for suffix in ("", "_", "_out"))
_QUALIFIED = re.compile(r"\b(torch|at)\s*::\s*((?:\w+\s*::\s*)*\w+)")
_METHOD = re.compile(r"(?:\.|->)\s*(\w+)\s*(?:<[^;(){}]*>\s*)?\(")
_CALL = re.compile(r"(?<![\w.:])(?<!->)\b(\w+)\s*(?:<[^;(){}]*>\s*)?\(")
_DEFINED = re.compile(r"\b(\w+)\s*\([^;{}]*\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[^;{}]*)?\{")
_NOT_A_TYPE = frozenset({"return", "co_return", "co_yield", "else", "case", "throw", "new",
                         "delete", "sizeof", "decltype", "do", "and", "or", "not"})


def _op_name(name: str) -> str:
    """``addmm_`` and ``mm_out`` name the ops ``addmm`` and ``mm``."""
    return name.removesuffix("_out").removesuffix("_")


def _allowed(parts: list[str]) -> bool:
    """Whether the path after ``torch::``/``at::`` is plumbing (see the module doc)."""
    *scopes, last = parts
    if any(not (s in _PLUMBING_NAMESPACES or s[:1].isupper()) for s in scopes):
        return False
    if last[:1].isupper() or re.fullmatch(r"k[A-Z]\w*", last) or last in _PLUMBING_NAMESPACES:
        return True
    if scopes and scopes[-1] == "cuda":
        return last in _CUDA_PLUMBING
    return last in ALLOCATION_OPTIONS


def _resolve_aliases(text: str) -> str:
    """``text`` with namespace aliases of torch/ATen spelled out, and their declarations blanked
    (a use is reported at the use, by its full name)."""
    return resolve_namespace_aliases(text, ("torch", "at"))


def _host_text(text: str) -> str:
    """``text`` with the bodies of device functions blanked (newlines kept)."""
    src = text.encode("utf-8", "surrogatepass")
    spans = [(n.start_byte, n.end_byte) for n in walk(parser().parse(src).root_node)
             if n.type == "function_definition" and device_marked(n, src)]
    out = bytearray(src)
    for start, end in spans:
        out[start:end] = re.sub(rb"[^\n]", b" ", src[start:end])
    return out.decode("utf-8", "surrogatepass")


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def torch_compute(text: str) -> str | None:
    """The first torch/ATen compute in one preprocessed pass, described; None when none."""
    if m := _DISPATCHER.search(text):
        return (f"calls a torch op through the dispatcher by name: `{m.group(0)}` "
                f"(line {_line(text, m.start())})")
    if not re.search(r"\b(?:torch|at)\b", text):
        return None
    text = _resolve_aliases(text)
    for m in _QUALIFIED.finditer(text):
        parts = re.split(r"\s*::\s*", m.group(2))
        if not _allowed(parts):
            name = "::".join([m.group(1), *parts])
            return f"calls a torch op: `{name}` (line {_line(text, m.start())})"
    host = _host_text(text)
    for m in _METHOD.finditer(host):
        if _op_name(m.group(1)) in COMPUTE_OPS:
            return (f"calls a torch op as a tensor method: `.{m.group(1)}(` "
                    f"(line {_line(host, m.start())})")
    # The program's own functions of an op's name (host or device: a misparsed kernel's calls
    # to its own `__device__ relu` may be read as host text).
    defined = set(_DEFINED.findall(text))
    for m in _CALL.finditer(host):
        name = m.group(1)
        if _op_name(name) not in COMPUTE_OPS or _op_name(name) in _STD_NAMES or name in defined:
            continue
        before = re.search(r"(\w+|\S)\s*$", host[:m.start()])
        if before and (before.group(1) == ">" or re.fullmatch(r"\w+", before.group(1))
                       and before.group(1) not in _NOT_A_TYPE):
            continue  # a declaration (`torch::Tensor matmul(...);`), not a call
        return (f"calls a torch op unqualified (argument-dependent lookup or `using namespace`): "
                f"`{name}(` (line {_line(host, m.start())})")
    # Under `using namespace torch;` an op taken as a value (`auto f = &matmul;`) is torch's
    # (calls were judged above, with argument-dependent lookup).
    if uses_namespace(text, "torch") or uses_namespace(text, "at"):
        if found := references(text, _UNQUALIFIED_OPS, calls=False):
            return f"takes a torch op as a value under `using namespace`: {found}"
    return None


def extension_sources(tree: ast.Module) -> list[str]:
    """The string constants a Python module passes to ``load_inline`` as ``cpp_sources`` or
    ``cuda_sources`` (directly, in a list, or through a module-level name): C++ that a
    delegation may hide in without looking like CUDA (no ``__global__``, no ``#include``)."""
    bound: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node.value

    def strings(value: ast.expr | None, depth: int = 0) -> list[str]:
        if value is None or depth > 4:
            return []
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return [value.value]
        if isinstance(value, ast.List | ast.Tuple):
            return [s for e in value.elts for s in strings(e, depth + 1)]
        if isinstance(value, ast.Name):
            return strings(bound.get(value.id), depth + 1)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            return strings(value.left, depth + 1) + strings(value.right, depth + 1)
        return []

    found: list[str] = []
    for call in ast.walk(tree):
        if isinstance(call, ast.Call):
            for kw in call.keywords:
                if kw.arg in ("cpp_sources", "cuda_sources"):
                    found += strings(kw.value)
    return found
