"""The registered features of a Triton program, from its kernels and its host code.

Kernel-side measures come from :class:`~structcover.tools.features.triton_walk.KernelWalker`
(one walk per kernel); host-side ones (launches per forward, torch calls left in the
forward) from the functions ``ModelNew.forward`` reaches. Every concept maps onto the
feature the CUDA extractor fills for it, so the ``pattern.*`` rules apply unchanged; the
mapping is in docs/FEATURES.md ("Triton").
"""

from __future__ import annotations

import ast
import re
from typing import Any

from structcover.tools.features.triton_access import stride_rules
from structcover.tools.features.triton_ast import TritonModule, canonical, dotted, parse_module
from structcover.tools.features.triton_walk import KernelStats, KernelWalker

#: torch calls that only allocate or describe tensors (not work left to the library).
_ALLOC = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
          "full", "full_like", "tensor", "as_tensor", "arange", "device", "manual_seed",
          "is_tensor", "is_floating_point", "finfo", "iinfo", "Size", "get_device_properties",
          "cdiv", "numel", "set_device", "current_device", "synchronize", "randn", "rand",
          "randint", "equal"}
_HEAVY = re.compile(r"^(?:matmul|mm|bmm|addmm|baddbmm|linear|conv\w*|einsum|"
                    r"scaled_dot_product_attention|softmax|log_softmax)$")
_HEAVY_MODULES = re.compile(r"^(?:Linear|Conv\w+|MultiheadAttention|Softmax|LSTM|GRU)$")
_TORCH_HEADS = ("torch", "F", "nn")


def triton_feature_values(text: str) -> dict[str, Any]:
    """Feature values of a Triton program (only the features Triton defines).

    Raises:
        SyntaxError, ValueError: The text is not valid Python (the caller reports it).
    """
    module = parse_module(text)
    kernels = [k for k in module.kernels.values() if not k.is_helper]
    helpers = [k for k in module.kernels.values() if k.is_helper]
    stats: list[tuple[Any, KernelStats]] = []
    for k in kernels:
        rules = stride_rules(k.params, [lc.args for lc in k.launches])
        stats.append((k, KernelWalker(module, k, rules).run()))
    out: dict[str, Any] = {
        "kernel.count": len(kernels),
        "kernel.has_custom_kernel": bool(kernels),
        "kernel.device_functions": len(helpers),
        "ast.nodes": sum(1 for _ in ast.walk(module.tree)),
        "branch.divergent": 0,
    }
    out.update(_memory(stats))
    out.update(_compute(stats))
    out.update(_launch(kernels, stats))
    out.update(_host(module))
    return out


def _memory(stats: list[tuple[Any, KernelStats]]) -> dict[str, Any]:
    acc = [a for _, s in stats for a in s.accesses]
    by = {c: sum(1 for a in acc if a[1] == c)
          for c in ("coalesced", "strided", "broadcast", "indirect", "unknown")}
    loads = sum(1 for a in acc if a[0] == "load")
    stores = len(acc) - loads
    c, s = by["coalesced"], by["strided"]
    return {
        "mem.global_accesses": len(acc), "mem.global_loads": loads, "mem.global_stores": stores,
        "mem.global_strided_loads": sum(1 for a in acc if a[0] == "load" and a[1] == "strided"),
        "mem.global_strided_stores": sum(1 for a in acc if a[0] == "store"
                                         and a[1] == "strided"),
        **{f"mem.global_{k}": v for k, v in by.items()},
        "mem.coalesced_fraction": c / (c + s) if c + s else None,
        # Triton picks the vector width itself from runtime specialization (pointer
        # alignment, divisibility, dtype): the source does not fix it (docs/FEATURES.md).
        "mem.vector_width_global": 1 if acc else 0,
    }


def _compute(stats: list[tuple[Any, KernelStats]]) -> dict[str, Any]:
    ss = [s for _, s in stats]
    dots = sum(s.dots for s in ss)
    red = sum(s.reductions for s in ss)
    accum = [a for s in ss for a in s.accumulators.values()]
    known = [e for e, _ in accum if e]
    tiled = any((e or 0) >= 2 or (e is None and nd >= 2) for e, nd in accum)
    flops = 0.0
    nbytes = 0.0
    exact = True
    for s in ss:
        flops += s.flops
        for f in s.dot_flops:
            if f is None:
                exact = False
            else:
                flops += f
        nbytes += sum((e or 1) * 4 * w for _, _, e, w in s.accesses)
    return {
        "tc.used": dots > 0, "triton.dots": dots,
        "triton.dot_acc_fp32": any(s.dot_fp32 for s in ss),
        "triton.reductions": red,
        # Block reductions lower to warp shuffles (plus shared memory across warps).
        "warp.shuffles": red,
        "warp.shuffles_in_loops": 0,
        "warp.shuffle_reduction": red > 0,
        "atomics.global": sum(s.atomics for s in ss),
        "reduce.atomic": any(s.atomics for s in ss),
        "sync.block_barriers": sum(s.barriers for s in ss),
        "loop.count": sum(s.loops for s in ss),
        "loop.max_depth": max((s.max_depth for s in ss), default=0),
        "loop.unroll_pragmas": sum(s.static_unroll for s in ss),
        "branch.count": sum(s.branches for s in ss),
        "branch.ternary": sum(s.selects for s in ss),
        "math.fast_intrinsics": sum(s.fast_math for s in ss),
        "reg.accumulators": max(known, default=0),
        "reg.tiled": tiled,
        "fusion.kernel_stages": max((s.reductions + len(s.math_fns) for s in ss), default=0),
        "triton.block_pointers": sum(s.block_pointers for s in ss),
        "triton.block_elements": max((s.block_elements for s in ss), default=0),
        "triton.grouped_ordering": any(s.grouped for s in ss),
        "intensity.flop_per_byte": flops / nbytes if exact and nbytes else None,
    }


def _launch(kernels: list[Any], stats: list[tuple[Any, KernelStats]]) -> dict[str, Any]:
    warps = [w for k in kernels for w in k.num_warps]
    stages = [st for k in kernels for st in k.num_stages]
    stages += [s.range_stages for _, s in stats if s.range_stages]
    pipelined = [k for k, s in stats if s.loads_in_loops
                 and max([*k.num_stages, s.range_stages, 0]) >= 2]
    stage_count = max((max([*k.num_stages, s.range_stages]) for k, s in stats
                       if k in pipelined), default=0)
    # Tensor descriptors are TMA: asynchronous bulk copies into shared memory.
    tma = any(_uses_descriptors(k) for k in kernels)
    return {
        "launch.count": sum(len(k.launches) for k in kernels),
        "launch.block_size": float(32 * max(warps)) if warps else None,
        "launch.distinct_block_sizes": len(set(warps)),
        "triton.num_warps": max(warps, default=0),
        "triton.num_stages": max(stages, default=0),
        "triton.autotune_configs": sum(len(k.autotune_configs) for k in kernels),
        "pipeline.stages": stage_count,
        "pipeline.double_buffered": stage_count >= 2,
        "pipeline.async_copy": tma,
    }


def _uses_descriptors(k: Any) -> bool:
    return any(isinstance(n, ast.Call) and (dotted(n.func) or "").rsplit(".", 1)[-1] in (
        "make_tensor_descriptor", "load_tensor_descriptor", "_experimental_descriptor_load")
        for n in ast.walk(k.node))


# -- host side ---------------------------------------------------------------------------------
def _entry(module: TritonModule) -> list[ast.FunctionDef] | None:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return [item]
    return None


def _classes(module: TritonModule) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.walk(module.tree) if isinstance(n, ast.ClassDef)}


def _callee(module: TritonModule, call: ast.Call) -> list[ast.FunctionDef]:
    """Host functions a call can run: module functions, self methods, Function.apply."""
    name = dotted(call.func) or ""
    parts = name.split(".")
    if len(parts) == 1 and parts[0] in module.functions and parts[0] not in module.kernels:
        return [module.functions[parts[0]]]
    classes = _classes(module)
    if len(parts) == 2 and parts[1] == "apply" and parts[0] in classes:
        return [f for f in classes[parts[0]].body
                if isinstance(f, ast.FunctionDef) and f.name == "forward"]
    if len(parts) == 2 and parts[0] == "self":
        model = classes.get("ModelNew")
        if model is not None:
            return [f for f in model.body if isinstance(f, ast.FunctionDef)
                    and f.name == parts[1]]
    return []


class _HostScan:
    """Launches (one path: ``if``/``else`` arms count as their largest) and torch calls."""

    def __init__(self, module: TritonModule, heavy_attrs: set[str]):
        self.m, self.heavy_attrs = module, heavy_attrs
        self.lib = 0
        self.heavy = 0
        self.seen: set[int] = set()

    def function(self, fn: ast.FunctionDef, depth: int = 0) -> int:
        if id(fn) in self.seen or depth > 6:
            return 0
        self.seen.add(id(fn))
        return self.body(fn.body, depth)

    def body(self, stmts: list[ast.stmt], depth: int) -> int:
        n = 0
        for s in stmts:
            if isinstance(s, ast.If):
                n += self.exprs(s.test, depth)
                n += max(self.body(s.body, depth), self.body(s.orelse, depth))
            elif isinstance(s, ast.For | ast.While | ast.With | ast.Try):
                n += self.exprs(s.iter if isinstance(s, ast.For) else None, depth)
                n += self.body(s.body, depth) + self.body(getattr(s, "orelse", []), depth)
            elif isinstance(s, ast.FunctionDef):
                continue
            else:
                n += self.exprs(s, depth)
        return n

    def exprs(self, node: ast.AST | None, depth: int) -> int:
        if node is None:
            return 0
        n = 0
        for sub in ast.walk(node):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.MatMult):
                self.lib += 1
                self.heavy += 1
            if not isinstance(sub, ast.Call):
                continue
            if isinstance(sub.func, ast.Subscript):
                k = (dotted(sub.func.value) or "").rsplit(".", 1)[-1]
                if k in self.m.kernels:
                    n += 1
                continue
            name = canonical(sub.func, self.m.aliases) or ""
            parts = name.split(".")
            if parts[0] in _TORCH_HEADS and len(parts) > 1 and parts[-1] not in _ALLOC \
                    and not name.startswith(("torch.cuda", "nn.Module", "torch.testing")):
                self.lib += 1
                if _HEAVY.match(parts[-1]):
                    self.heavy += 1
            if len(parts) == 2 and parts[0] == "self" and parts[1] in self.heavy_attrs:
                self.lib += 1
                self.heavy += 1
            for fn in _callee(self.m, sub):
                n += self.function(fn, depth + 1)
        return n


def _heavy_attrs(module: TritonModule) -> set[str]:
    model = _classes(module).get("ModelNew")
    out: set[str] = set()
    if model is None:
        return out
    for node in ast.walk(model):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            head = (dotted(node.value.func) or "").rsplit(".", 1)[-1]
            for t in node.targets:
                if isinstance(t, ast.Attribute) and _HEAVY_MODULES.match(head):
                    out.add(t.attr)
    return out


def _host(module: TritonModule) -> dict[str, Any]:
    scan = _HostScan(module, _heavy_attrs(module))
    entry = _entry(module)
    if entry is not None:
        launches = sum(scan.function(f) for f in entry)
    else:
        # No ModelNew: every host function (and module code) is part of the program.
        body = [s for s in module.tree.body if not isinstance(s, ast.ClassDef)]
        launches = scan.body(body, 0)
        for fn in module.functions.values():
            if fn.name not in module.kernels:
                launches += scan.function(fn)
    return {
        "lib.calls": scan.lib,
        "lib.reference_library": scan.lib > 0,
        "lib.delegates_heavy_op": scan.heavy > 0,
        "fusion.launches_per_forward": launches + scan.heavy,
    }


def triton_features(text: str) -> dict[str, Any]:
    """The registered features a Triton program has (:func:`triton_feature_values`).

    Raises:
        SyntaxError: ``text`` is not Python (``extract_values`` catches it and never raises).
    """
    return triton_feature_values(text)
